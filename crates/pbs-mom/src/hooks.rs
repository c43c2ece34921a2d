//! Execution hooks on this mom: the set the server sent (kept in `mom_priv/hooks`, root-only,
//! and in memory, so a restarted mom has it before the server links again), the job and
//! vnodes a hook sees at an execjob event, and running the hooks of one event in order in
//! the mom's pool of warm interpreters, with their verdict logged as OpenPBS's mom logs it.
//! A `user=pbsuser` hook runs as the job's owner at `execjob_prologue` and
//! `execjob_epilogue` (as root at the other events, as OpenPBS's mom); the `pbs` module and
//! runner they import are in `mom_priv/hooks_lib`, which users may read but not change.

use std::collections::BTreeMap;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use pbs_core::hookattr::HookEvent;
use pbs_core::hookattr::{FAIL_CLEAR_VNODES, FAIL_OFFLINE_VNODES, FAIL_RESTART_CYCLE, USER_OWNER};
use pbs_hooks::{Defs, Event, HookRun, JobData, Owner, Pool, Requestor, RunError, Value};
use pbs_proto::mom::{JobLaunch, MomHook, Usage};

use crate::error::MomError;

/// The file the set is kept in, under `mom_priv/hooks`.
const SET_FILE: &str = "hooks.json";

/// Where the `pbs` module and runner are installed, under `mom_priv`: beside the root-only
/// `hooks` (whose bodies users must not read), since an owner's interpreter imports them.
/// `mom_priv` is 0711, this 0755, its files 0644, all root's.
pub const LIB_DIR: &str = "hooks_lib";

/// Interpreters at most: one per CPU, up to four.
const MAX_INTERPRETERS: usize = 4;

/// One hook as this mom runs it.
#[derive(Clone, Debug)]
struct Run {
    /// Its name, body, alarm and `debug`.
    hook: HookRun,
    events: Vec<HookEvent>,
    order: i64,
    offline_vnodes: bool,
    restart_cycle: bool,
    clear_vnodes: bool,
    /// `user=pbsuser`: runs as the job's owner at the events that allow it.
    as_owner: bool,
}

impl Run {
    fn from_wire(hook: &MomHook) -> Run {
        Run {
            hook: HookRun {
                name: hook.name.clone(),
                script: hook.script.as_str().into(),
                alarm: hook.alarm.max(1),
                debug: hook.debug,
            },
            events: hook.events.iter().filter_map(|e| e.parse().ok()).collect(),
            order: hook.order,
            offline_vnodes: hook.fail_action.split(',').any(|a| a.trim() == FAIL_OFFLINE_VNODES),
            restart_cycle: hook.fail_action.split(',').any(|a| a.trim() == FAIL_RESTART_CYCLE),
            clear_vnodes: hook.fail_action.split(',').any(|a| a.trim() == FAIL_CLEAR_VNODES),
            as_owner: hook.user == USER_OWNER,
        }
    }
}

/// What running the hooks of one event came to.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Their verdict.
    pub verdict: Verdict,
    /// The hooks that asked for a new scheduling cycle
    /// (`pbs.server().scheduler_restart_cycle()`), in the order they ran.
    pub restart_cycle: Vec<String>,
    /// One of the hooks that ran has `fail_action=clear_vnodes_upon_recovery`.
    pub clear_vnodes: bool,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome { verdict: Verdict::Accept, restart_cycle: Vec::new(), clear_vnodes: false }
    }
}

/// What the hooks of one event decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every hook accepted (or none ran).
    Accept,
    /// A hook called `reject()`.
    Reject,
    /// A hook raised, ran past its alarm or its interpreter failed.
    Error {
        /// The hook.
        hook: String,
        /// Its `fail_action` includes `offline_vnodes`.
        offline: bool,
        /// Its `fail_action` includes `scheduler_restart_cycle`.
        restart_cycle: bool,
    },
}

/// The mom's execution hooks and the interpreters that run them.
pub struct MomHooks {
    dir: PathBuf,
    runs: Mutex<Arc<[Run]>>,
    pool: Pool,
    node: String,
    host: String,
}

impl MomHooks {
    /// Opens `priv_dir/hooks` (created root-only), installs the `pbs` module and runner in
    /// its `lib`, and loads the set kept there.
    pub fn open(
        priv_dir: &Path,
        python: Option<PathBuf>,
        server_name: &str,
        node: &str,
        host: &str,
    ) -> Result<MomHooks, MomError> {
        let dir = priv_dir.join("hooks");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| MomError::io(format!("creating {}", dir.display()), e))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| MomError::io(format!("chmod {}", dir.display()), e))?;
        // The earlier layout had the module in `hooks/lib`, out of the owners' reach.
        let old_lib = dir.join("lib");
        if old_lib.is_dir() {
            if let Err(e) = std::fs::remove_dir_all(&old_lib) {
                tracing::warn!("cannot remove {}: {e}", old_lib.display());
            }
        }
        let lib = priv_dir.join(LIB_DIR);
        pbs_hooks::install(&lib).map_err(|e| MomError::io(format!("installing {}", lib.display()), e))?;
        let size = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_INTERPRETERS);
        let pool = Pool::new(pbs_hooks::pool::runner_in(&lib), python, size, "pbs_mom");
        pool.set_defs(1, &defs(server_name));
        let hooks = MomHooks {
            runs: Mutex::new(Arc::from(Vec::new())),
            pool,
            node: node.to_string(),
            host: host.to_string(),
            dir,
        };
        let kept = hooks.load();
        *hooks.lock() = kept.iter().map(Run::from_wire).collect();
        Ok(hooks)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Arc<[Run]>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn load(&self) -> Vec<MomHook> {
        let path = self.dir.join(SET_FILE);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                tracing::warn!("cannot read {}: {e}", path.display());
                return Vec::new();
            }
        };
        match serde_json::from_slice::<Vec<MomHook>>(&text) {
            Ok(hooks) => {
                if !hooks.is_empty() {
                    tracing::info!("{} execution hooks read from {}", hooks.len(), path.display());
                }
                hooks
            }
            Err(e) => {
                tracing::warn!("ignoring {}: {e}", path.display());
                Vec::new()
            }
        }
    }

    /// Replaces the set with the server's: in memory at once (a start that follows runs
    /// with it), then on disk.
    pub fn replace(&self, hooks: Vec<MomHook>) {
        let runs: Arc<[Run]> = hooks.iter().map(Run::from_wire).collect();
        let changed = {
            let mut current = self.lock();
            let changed = current.len() != runs.len() || current.iter().zip(runs.iter()).any(|(a, b)| a.hook != b.hook);
            *current = runs;
            changed
        };
        if changed {
            let names: Vec<&str> = hooks.iter().map(|h| h.name.as_str()).collect();
            tracing::info!(
                "execution hooks from the server: {}",
                if names.is_empty() { "none".to_string() } else { names.join(",") }
            );
        }
        if !hooks.is_empty() {
            self.pool.warm();
        }
        if let Err(e) = self.write(&hooks) {
            tracing::warn!("cannot keep the execution hooks in {}: {e}", self.dir.display());
        }
    }

    fn write(&self, hooks: &[MomHook]) -> std::io::Result<()> {
        let text = serde_json::to_vec(hooks).map_err(std::io::Error::other)?;
        let path = self.dir.join(SET_FILE);
        let temporary = self.dir.join(format!(".{SET_FILE}.tmp"));
        let mut file =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temporary)?;
        std::io::Write::write_all(&mut file, &text)?;
        file.sync_data()?;
        std::fs::rename(&temporary, &path)
    }

    /// The hooks of `event`, in `order`, then name.
    fn runs_of(&self, event: HookEvent) -> Vec<Run> {
        let mut runs: Vec<Run> = self.lock().iter().filter(|r| r.events.contains(&event)).cloned().collect();
        runs.sort_by(|a, b| a.order.cmp(&b.order).then_with(|| a.hook.name.cmp(&b.hook.name)));
        runs
    }

    /// Whether any hook runs at `event`.
    pub fn any(&self, event: HookEvent) -> bool {
        self.lock().iter().any(|r| r.events.contains(&event))
    }

    /// Runs the hooks of `event` for job `job_id`, in order, until one does not accept. A
    /// `user=pbsuser` hook runs as the job's owner where `event` allows it; an owner that
    /// cannot be resolved here fails the hook as an exception would.
    pub async fn run(&self, event: HookEvent, job_id: &str, job: HookJob) -> Outcome {
        let mut outcome = Outcome::default();
        outcome.verdict = self.run_asking(event, Some((job_id, job)), &mut outcome).await;
        outcome
    }

    /// Runs the exechost_startup hooks, which see this mom's vnode and no job.
    pub async fn run_startup(&self) -> Outcome {
        let mut outcome = Outcome::default();
        outcome.verdict = self.run_asking(HookEvent::ExechostStartup, None, &mut outcome).await;
        outcome
    }

    async fn run_asking(&self, event: HookEvent, job: Option<(&str, HookJob)>, outcome: &mut Outcome) -> Verdict {
        // What the hooks' log lines name: the job, or at a host event this node.
        let (object_type, object_name) = match &job {
            Some((job_id, _)) => ("Job", job_id.to_string()),
            None => ("Node", self.node.clone()),
        };
        let (job, launch_owner) = match job {
            Some((_, HookJob { data, owner })) => (Some(data), Some(owner)),
            None => (None, None),
        };
        let job_id = object_name.as_str();
        let mut owner: Option<Result<Owner, String>> = None;
        let runs = self.runs_of(event);
        if runs.is_empty() {
            return Verdict::Accept;
        }
        let mut vnode = BTreeMap::new();
        vnode.insert("Mom".to_string(), self.host.clone());
        vnode.insert("ntype".to_string(), "PBS".to_string());
        let vnodes: BTreeMap<String, BTreeMap<String, String>> = [(self.node.clone(), vnode)].into_iter().collect();
        let mom = Requestor { user: "pbs_mom".to_string(), host: self.host.clone() };
        for run in runs {
            outcome.clear_vnodes |= run.clear_vnodes;
            let hook_event =
                Event { job: job.clone(), vnodes: Some(vnodes.clone()), ..Event::new(&run.hook, event.name(), &mom) };
            let as_owner = run.as_owner && event.runs_as_owner();
            let failed = |alarm: bool| {
                let text = if alarm {
                    format!("alarm call while running {event} hook '{}', request rejected", run.hook.name)
                } else {
                    format!("{event} hook '{}' encountered an exception, request rejected", run.hook.name)
                };
                tracing::info!(event = "0008", object_type, object_name = job_id, "{text}");
                // Run as the job's owner, the hook's process is the owner's to stop or
                // kill: its failure fails this job's event, never the node for everyone.
                if as_owner && run.offline_vnodes {
                    tracing::info!(
                        event = "0008",
                        object_type = "Hook",
                        object_name = run.hook.name.as_str(),
                        "fail_action offline_vnodes not applied: the hook ran as the job's owner"
                    );
                }
                Verdict::Error {
                    hook: run.hook.name.clone(),
                    offline: run.offline_vnodes && !as_owner,
                    restart_cycle: run.restart_cycle,
                }
            };
            let run_as = if as_owner {
                if owner.is_none() {
                    owner = Some(match &launch_owner {
                        Some(launch) => resolve_owner(launch).await,
                        None => Err("hook cannot run as the job's owner: no job".to_string()),
                    });
                }
                match &owner {
                    Some(Ok(owner)) => Some(owner),
                    Some(Err(why)) => {
                        tracing::info!(event = "0008", object_type, object_name = job_id, "{why}");
                        return failed(false);
                    }
                    None => return failed(false),
                }
            } else {
                None
            };
            let answer = match self.pool.run_as(run_as, hook_event).await {
                Ok(answer) => answer,
                Err(RunError::Alarm) => return failed(true),
                Err(RunError::Crashed(why) | RunError::Unavailable(why)) => {
                    tracing::warn!(object_type = "Hook", object_name = run.hook.name.as_str(), "{why}");
                    return failed(false);
                }
            };
            for entry in &answer.log {
                let mask = format!("{:04x}", entry.level & 0xffff);
                match &entry.job {
                    Some(job) => tracing::info!(
                        event = mask.as_str(),
                        object_type = "Job",
                        object_name = job.as_str(),
                        "{}",
                        entry.msg
                    ),
                    None => {
                        tracing::info!(
                            event = mask.as_str(),
                            object_type = "Hook",
                            object_name = "pbs_python",
                            "{}",
                            entry.msg
                        )
                    }
                }
            }
            if answer.restart_cycle {
                outcome.restart_cycle.push(run.hook.name.clone());
            }
            if answer.alarm {
                return failed(true);
            }
            if let Some(exception) = &answer.exception {
                tracing::info!(
                    event = "0100",
                    object_type = "Hook",
                    object_name = run.hook.name.as_str(),
                    "{exception}"
                );
                return failed(false);
            }
            if !answer.accepted {
                tracing::info!(
                    event = "0400",
                    object_type = "Hook",
                    object_name = run.hook.name.as_str(),
                    "{event} request rejected by '{}'",
                    run.hook.name
                );
                if let Some(message) = &answer.reject_message {
                    tracing::info!(event = "0008", object_type, object_name = job_id, "{message}");
                }
                return Verdict::Reject;
            }
        }
        Verdict::Accept
    }
}

/// The attribute and resource types interpreters need: the job attributes and the
/// built-in resources (a custom resource reads as text on a mom).
fn defs(server_name: &str) -> Defs {
    pbs_hooks::definitions(server_name, &pbs_core::resource::ResourceRegistry::new())
}

fn encode_variables(variables: &[(String, String)]) -> String {
    let escape = |text: &str| text.replace('\\', "\\\\").replace(',', "\\,");
    variables.iter().map(|(k, v)| format!("{}={}", escape(k), escape(v))).collect::<Vec<_>>().join(",")
}

fn size_text(bytes: u64) -> String {
    if bytes % 1024 == 0 { format!("{}kb", bytes / 1024) } else { format!("{bytes}b") }
}

/// An execjob event's job: what its hooks see, and what its owner is resolved from when a
/// `user=pbsuser` hook runs as the owner.
#[derive(Clone, Debug)]
pub struct HookJob {
    /// The job as hooks see it.
    pub data: JobData,
    /// The launch's owner fields (`user`, `uid`, `root_allowed`, `group`) alone.
    owner: JobLaunch,
}

/// The owner a `user=pbsuser` hook runs as, checked as the shepherd checks a job's
/// (`owner::hook_owner`), off the runtime's threads (a password lookup may block).
async fn resolve_owner(launch: &JobLaunch) -> Result<Owner, String> {
    let launch = launch.clone();
    match tokio::task::spawn_blocking(move || crate::owner::hook_owner(&launch)).await {
        Ok(Ok(owner)) => Ok(owner),
        Ok(Err(e)) => Err(format!("hook cannot run as the job's owner: {e}")),
        Err(e) => Err(format!("hook cannot run as the job's owner: {e}")),
    }
}

/// The job as an execjob hook sees it, from its launch; with its end (exit status and
/// usage) at execjob_epilogue and execjob_end.
pub fn job_data(launch: &JobLaunch, session_id: i64, end: Option<(i32, &Usage)>) -> HookJob {
    let owner = JobLaunch {
        user: launch.user.clone(),
        uid: launch.uid,
        root_allowed: launch.root_allowed,
        group: launch.group.clone(),
        ..JobLaunch::default()
    };
    HookJob { data: job_attrs(launch, session_id, end), owner }
}

fn job_attrs(launch: &JobLaunch, session_id: i64, end: Option<(i32, &Usage)>) -> JobData {
    let mut attrs = BTreeMap::new();
    let mut text = |name: &str, value: String| {
        attrs.insert(name.to_string(), Value::Text(value));
    };
    text("Job_Name", launch.job_name.clone());
    let submit_host = launch.variables.iter().find(|(k, _)| k == "PBS_O_HOST").map(|(_, v)| v.as_str());
    text("Job_Owner", format!("{}@{}", launch.user, submit_host.unwrap_or("")));
    text("euser", launch.user.clone());
    text("egroup", launch.group.clone());
    text("queue", launch.queue.clone());
    text("job_state", if end.is_some() { "E" } else { "R" }.to_string());
    text("Output_Path", launch.output_path.clone());
    text("Error_Path", launch.error_path.clone());
    text("Join_Path", launch.join_path.clone());
    text("Keep_Files", launch.keep_files.clone());
    text("run_count", launch.run_count.to_string());
    text("Variable_List", encode_variables(&launch.variables));
    if let Some(account) = &launch.account {
        text("Account_Name", account.clone());
    }
    if let Some(umask) = &launch.umask {
        text("umask", umask.clone());
    }
    if let Some(index) = &launch.array_index {
        text("array_index", index.clone());
    }
    if let Some(array_id) = &launch.array_id {
        text("array_id", array_id.clone());
    }
    if session_id > 0 {
        text("session_id", session_id.to_string());
    }
    let mut resources = BTreeMap::new();
    resources.insert("ncpus".to_string(), launch.ncpus.to_string());
    if let Some(walltime) = launch.walltime {
        resources.insert("walltime".to_string(), pbs_core::Duration::from_secs(walltime).to_string());
    }
    if let Some(cput) = launch.cput {
        resources.insert("cput".to_string(), pbs_core::Duration::from_secs(cput).to_string());
    }
    if let Some(mem) = launch.mem {
        resources.insert("mem".to_string(), size_text(mem));
    }
    attrs.insert("Resource_List".to_string(), Value::Resources(resources));
    if let Some((exit_status, usage)) = end {
        attrs.insert("Exit_status".to_string(), Value::Text(exit_status.to_string()));
        attrs.insert("resources_used".to_string(), Value::Resources(usage_text(usage).into_iter().collect()));
    }
    JobData { id: Some(launch.job_id.clone()), attrs }
}

/// `resources_used` as text, as the server writes it.
pub fn usage_text(usage: &Usage) -> Vec<(String, String)> {
    vec![
        ("cpupercent".to_string(), usage.cpupercent.to_string()),
        ("cput".to_string(), pbs_core::Duration::from_secs(usage.cput).to_string()),
        ("mem".to_string(), format!("{}kb", usage.mem_kb)),
        ("ncpus".to_string(), usage.ncpus.to_string()),
        ("vmem".to_string(), format!("{}kb", usage.vmem_kb)),
        ("walltime".to_string(), pbs_core::Duration::from_secs(usage.walltime).to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_job_shows_its_exit_status_and_usage() {
        let launch = JobLaunch {
            job_id: "1.s".into(),
            user: "u".into(),
            variables: vec![("PBS_O_HOST".into(), "h".into()), ("A".into(), "x,y".into())],
            walltime: Some(60),
            ..JobLaunch::default()
        };
        let usage = Usage { walltime: 3, ncpus: 1, ..Usage::default() };
        let data = job_data(&launch, 7, Some((3, &usage))).data;
        assert_eq!(data.attrs.get("Exit_status"), Some(&Value::Text("3".into())));
        assert_eq!(data.attrs.get("Job_Owner"), Some(&Value::Text("u@h".into())));
        assert_eq!(data.attrs.get("Variable_List"), Some(&Value::Text("PBS_O_HOST=h,A=x\\,y".into())));
        let Some(Value::Resources(used)) = data.attrs.get("resources_used") else { panic!("resources_used") };
        assert_eq!(used.get("walltime").map(String::as_str), Some("00:00:03"));
        let Some(Value::Resources(list)) = data.attrs.get("Resource_List") else { panic!("Resource_List") };
        assert_eq!(list.get("walltime").map(String::as_str), Some("00:01:00"));
        assert_eq!(
            pbs_core::variables::decode("PBS_O_HOST=h,A=x\\,y"),
            launch.variables,
            "the list reads back as the job's"
        );
    }
}
