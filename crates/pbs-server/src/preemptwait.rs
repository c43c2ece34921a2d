//! Runs a PreemptJobs request (a manager's, or the scheduler's one per cycle) through its
//! rounds: each round asks every involved mom at once under one pending entry, waits for
//! the last answer or its deadline outside the lock, and applies the answers like any
//! handler's effects. The rules are `job::preempt`'s; this only waits.

use std::sync::Arc;
use std::time::Duration;

use pbs_proto::Preempted;

use crate::job::preempt::Ask;
use crate::server::Server;
use crate::state::links::Asked;

/// How long a round waits for its moms: one that has not answered by then fails its own
/// jobs' method (suspension refused: the next method is tried), never the whole list. The
/// same time a qsig waits.
const ROUND_DEADLINE: Duration = Duration::from_secs(10);

/// Preempts the jobs `ids` names; every id with its method's letter or `0`.
pub async fn preempt(server: &Arc<Server>, ids: &[String]) -> Vec<Preempted> {
    let mut preemption = crate::job::preempt::begin(&server.lock().state, ids, now());
    // Each round starts each job's next method; a job has at most four, and a checkpoint
    // takes a second round for the job's end, so five rounds.
    while !crate::job::preempt::done(&preemption) {
        let (ask, answered, round, sent) = {
            let mut guard = server.lock();
            let shared = &mut *guard;
            let mut round = crate::job::preempt::step(&mut shared.state, &mut preemption, now());
            if round.items.is_empty() {
                break;
            }
            let asked = round
                .items
                .iter()
                .map(|(_, node, job_id, _)| Asked::Mom { node: node.clone(), job_id: job_id.clone() });
            let (ask, answered) = crate::state::links::open_ask(&mut shared.links, asked.collect());
            let mut effects = std::mem::take(&mut round.effects);
            let mut signals = Vec::new();
            for (_, node, job_id, what) in &round.items {
                let signal = match what {
                    Ask::Suspend => "suspend",
                    Ask::Checkpoint => "checkpoint_abort",
                    Ask::End(_) => {
                        // Answered by the job's end, which its kill (among the effects) or
                        // its checkpoint brings.
                        crate::state::links::await_end(&mut shared.links, job_id, ask);
                        continue;
                    }
                };
                signals.push((node.as_str(), job_id.as_str(), signal));
            }
            // One frame per mom: each stops all its jobs after one pass over its processes.
            effects.to_moms.extend(crate::job::signal::frames(signals, ask));
            let sent = server.apply_effects(shared, effects);
            (ask, answered, round, sent)
        };
        let _ = sent.done().await;
        let _ = tokio::time::timeout(ROUND_DEADLINE, answered).await;
        let applied = {
            let mut guard = server.lock();
            let shared = &mut *guard;
            let answers: Vec<Option<Result<(), u32>>> = crate::state::links::close_ask(&mut shared.links, ask)
                .into_iter()
                .map(|answer| answer.map(|outcome| outcome.map_err(|e| e.code.0)))
                .collect();
            let effects = crate::job::preempt::answered(&mut shared.state, &mut preemption, &round, &answers, now());
            server.apply_effects(shared, effects)
        };
        let _ = applied.done().await;
    }
    crate::job::preempt::results(&preemption)
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}
