//! Property tests of frame decoding, for everything a peer can send: requests, the
//! handshake, the scheduler's and the moms' frames, and the frames the mom reads. Any bytes
//! decode to an error or a message, never a panic; every message reads back as it was
//! written; and the async codec bounds a frame before buffering it.
#![allow(clippy::unwrap_used)]

use std::io::Cursor;

use bytes::BytesMut;
use pbs_proto::codec::{encode_frame, length_codec};
use pbs_proto::mom::{FromMom, JobLaunch, MomJob, ToMom, Usage};
use pbs_proto::sched::{Action, FromSched, JobUpdate, RunDecision, SchedChange, SchedQueue, ToSched};
use pbs_proto::{
    Attr, CompareOp, Criterion, Hello, HelloReply, MgrAttr, MgrCommand, MgrObject, MgrOp, Reply, Request, RequestFrame,
    Role, read_frame,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use tokio_util::codec::Decoder;

const MAX: usize = 64 * 1024;

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["\\PC{0,12}", any::<String>(), "[0-9\\[\\]\\-.a-z]{0,12}"]
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    vec(text(), 0..4)
}

fn attrs() -> impl Strategy<Value = Vec<Attr>> {
    vec((text(), text()).prop_map(|(n, v)| Attr(n, v)), 0..4)
}

fn compare_op() -> impl Strategy<Value = CompareOp> {
    prop_oneof![
        Just(CompareOp::Eq),
        Just(CompareOp::Ne),
        Just(CompareOp::Gt),
        Just(CompareOp::Ge),
        Just(CompareOp::Lt),
        Just(CompareOp::Le)
    ]
}

fn mgr_attr() -> impl Strategy<Value = MgrAttr> {
    (text(), prop_oneof![Just(MgrOp::Set), Just(MgrOp::Incr), Just(MgrOp::Decr)], text())
        .prop_map(|(name, op, value)| MgrAttr { name, op, value })
}

fn mgr_command() -> impl Strategy<Value = MgrCommand> {
    prop_oneof![Just(MgrCommand::Create), Just(MgrCommand::Delete), Just(MgrCommand::Set), Just(MgrCommand::Unset)]
}

fn mgr_object() -> impl Strategy<Value = MgrObject> {
    prop_oneof![
        Just(MgrObject::Server),
        Just(MgrObject::Queue),
        Just(MgrObject::Node),
        Just(MgrObject::Sched),
        Just(MgrObject::Resource),
        Just(MgrObject::Hook)
    ]
}

/// Every request kind with arbitrary fields.
fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        (attrs(), text(), option::of(text())).prop_map(|(attrs, script, destination)| Request::QueueJob {
            attrs,
            script,
            destination
        }),
        (texts(), texts(), texts(), any::<bool>(), any::<bool>()).prop_map(|(ids, queues, attrs, history, subjobs)| {
            Request::StatusJob { ids, queues, attrs, history, subjobs }
        }),
        (
            vec((text(), compare_op(), text()).prop_map(|(attr, op, value)| Criterion { attr, op, value }), 0..3),
            any::<bool>(),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(criteria, history, subjobs, arrays_only)| Request::SelectJobs {
                criteria,
                history,
                subjobs,
                arrays_only
            }),
        (texts(), attrs()).prop_map(|(ids, attrs)| Request::ModifyJob { ids, attrs }),
        (texts(), any::<bool>(), any::<bool>()).prop_map(|(ids, force, purge_history)| Request::DeleteJob {
            ids,
            force,
            purge_history
        }),
        (texts(), text()).prop_map(|(ids, hold_types)| Request::HoldJob { ids, hold_types }),
        (texts(), text()).prop_map(|(ids, hold_types)| Request::ReleaseJob { ids, hold_types }),
        texts().prop_map(|attrs| Request::StatusServer { attrs }),
        (texts(), texts()).prop_map(|(names, attrs)| Request::StatusQueue { names, attrs }),
        texts().prop_map(|names| Request::StatusNode { names }),
        texts().prop_map(|names| Request::StatusSched { names }),
        texts().prop_map(|names| Request::StatusResource { names }),
        texts().prop_map(|names| Request::StatusHook { names }),
        (text(), option::of(text())).prop_map(|(id, exec_vnode)| Request::RunJob { id, exec_vnode }),
        (texts(), text()).prop_map(|(ids, signal)| Request::SignalJob { ids, signal }),
        (texts(), any::<bool>()).prop_map(|(ids, force)| Request::RerunJob { ids, force }),
        (texts(), text()).prop_map(|(ids, destination)| Request::MoveJob { ids, destination }),
        (text(), text()).prop_map(|(first, second)| Request::OrderJob { first, second }),
        (text(), text(), any::<bool>(), any::<bool>()).prop_map(|(id, text, stdout, stderr)| Request::MessageJob {
            id,
            text,
            stdout,
            stderr
        }),
        text().prop_map(|id| Request::WaitJob { id }),
        (text(), any::<bool>(), any::<bool>()).prop_map(|(manner, scheduler, moms)| Request::Shutdown {
            manner,
            scheduler,
            moms
        }),
        (mgr_command(), mgr_object(), texts(), vec(mgr_attr(), 0..3))
            .prop_map(|(command, object, names, attrs)| Request::Manager { command, object, names, attrs }),
    ]
}

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![
        Just(Role::Client),
        Just(Role::Scheduler),
        Just(Role::Server),
        text().prop_map(|node| Role::Mom { node })
    ]
}

fn usage() -> impl Strategy<Value = Usage> {
    (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>(), any::<u32>(), any::<u32>()).prop_map(
        |(cput, walltime, mem_kb, vmem_kb, ncpus, cpupercent)| Usage {
            cput,
            walltime,
            mem_kb,
            vmem_kb,
            ncpus,
            cpupercent,
        },
    )
}

fn from_mom() -> impl Strategy<Value = FromMom> {
    let job = (text(), any::<bool>(), any::<i64>(), option::of(any::<i32>()), usage()).prop_map(
        |(job_id, sister, session_id, exit_status, usage)| MomJob { job_id, sister, session_id, exit_status, usage },
    );
    prop_oneof![
        (any::<u32>(), any::<u64>(), text(), text(), text(), vec(job, 0..3)).prop_map(
            |(ncpus, mem_kb, arch, host, version, jobs)| FromMom::NodeStatus {
                ncpus,
                mem_kb,
                arch,
                host,
                version,
                jobs
            }
        ),
        (text(), any::<i64>()).prop_map(|(job_id, session_id)| FromMom::JobStarted { job_id, session_id }),
        (text(), usage()).prop_map(|(job_id, usage)| FromMom::JobUsage { job_id, usage }),
        (text(), any::<i32>(), usage()).prop_map(|(job_id, exit_status, usage)| FromMom::JobEnded {
            job_id,
            exit_status,
            usage
        }),
        (text(), text(), any::<u32>(), any::<u64>()).prop_map(|(job_id, signal, code, ask)| FromMom::SignalResult {
            job_id,
            signal,
            code,
            ask
        }),
        (text(), any::<bool>()).prop_map(|(job_id, out)| FromMom::Staging { job_id, direction: direction(out) }),
        (text(), any::<bool>(), text()).prop_map(|(job_id, out, message)| FromMom::StageFailed {
            job_id,
            direction: direction(out),
            message
        }),
        Just(FromMom::Pong),
    ]
}

fn direction(out: bool) -> pbs_proto::mom::StageDirection {
    if out { pbs_proto::mom::StageDirection::Out } else { pbs_proto::mom::StageDirection::In }
}

fn to_mom() -> impl Strategy<Value = ToMom> {
    prop_oneof![
        (text(), text(), text(), texts(), option::of(any::<u64>()), any::<u32>()).prop_map(
            |(job_id, user, script, arguments, walltime, ncpus)| ToMom::RunJob {
                launch: Box::new(JobLaunch {
                    job_id,
                    user,
                    script,
                    arguments,
                    walltime,
                    ncpus,
                    ..JobLaunch::default()
                })
            }
        ),
        (text(), text(), any::<u64>()).prop_map(|(job_id, signal, ask)| ToMom::SignalJob { job_id, signal, ask }),
        (text(), any::<u32>()).prop_map(|(job_id, kill_delay)| ToMom::KillJob { job_id, kill_delay }),
        text().prop_map(|job_id| ToMom::ForgetJob { job_id }),
        Just(ToMom::Ping),
    ]
}

fn from_sched() -> impl Strategy<Value = FromSched> {
    let action = prop_oneof![
        (text(), text()).prop_map(|(job_id, exec_vnode)| Action::Run(RunDecision {
            job_id,
            exec_vnode,
            alternative: None
        })),
        (text(), attrs()).prop_map(|(job_id, attrs)| Action::Update(JobUpdate { job_id, attrs })),
    ];
    (any::<u64>(), option::of(any::<u64>()), vec(action, 0..6))
        .prop_map(|(cycle, qrun, actions)| FromSched::Decisions { cycle, qrun, actions })
}

fn to_sched() -> impl Strategy<Value = ToSched> {
    let change = prop_oneof![
        text().prop_map(|id| SchedChange::JobGone { id }),
        text().prop_map(|name| SchedChange::NodeGone { name }),
        text().prop_map(|name| SchedChange::QueueGone { name }),
        (text(), attrs()).prop_map(|(name, attrs)| SchedChange::Queue { queue: SchedQueue { name, attrs } }),
        attrs().prop_map(|attrs| SchedChange::Server { attrs }),
        attrs().prop_map(|attrs| SchedChange::Sched { attrs }),
        vec((text(), text()), 0..4).prop_map(|defs| SchedChange::Resources { defs }),
    ];
    prop_oneof![
        (vec(change, 0..4), any::<bool>()).prop_map(|(changes, cycle)| ToSched::Changes { changes, cycle }),
        (any::<u64>(), text()).prop_map(|(qrun, job_id)| ToSched::RunNow { qrun, job_id }),
        any::<u64>().prop_map(|cycle| ToSched::DecisionsApplied { cycle, errors: vec![] }),
    ]
}

/// Reads `bytes` as one frame of every type a peer may send; none may panic.
fn decode_all(bytes: &[u8]) {
    let _ = read_frame::<RequestFrame>(&mut Cursor::new(bytes), MAX);
    let _ = read_frame::<Hello>(&mut Cursor::new(bytes), MAX);
    let _ = read_frame::<HelloReply>(&mut Cursor::new(bytes), MAX);
    let _ = read_frame::<Reply>(&mut Cursor::new(bytes), MAX);
    let _ = read_frame::<FromMom>(&mut Cursor::new(bytes), MAX);
    let _ = read_frame::<ToMom>(&mut Cursor::new(bytes), MAX);
    let _ = read_frame::<FromSched>(&mut Cursor::new(bytes), MAX);
    let _ = read_frame::<ToSched>(&mut Cursor::new(bytes), MAX);
    let _ = read_frame::<serde_json::Value>(&mut Cursor::new(bytes), MAX);
    let mut codec = length_codec(MAX);
    let mut buf = BytesMut::from(bytes);
    while let Ok(Some(frame)) = codec.decode(&mut buf) {
        assert!(frame.len() <= MAX);
        let _ = serde_json::from_slice::<RequestFrame>(&frame);
    }
}

/// Flips, drops, inserts and truncates bytes of a valid frame.
fn mutate(mut bytes: Vec<u8>, edits: &[(u8, usize, u8)]) -> Vec<u8> {
    for &(op, at, byte) in edits {
        let at = if bytes.is_empty() { 0 } else { at % bytes.len() };
        match op % 4 {
            0 if !bytes.is_empty() => bytes[at] ^= byte | 1,
            1 if !bytes.is_empty() => {
                bytes.remove(at);
            }
            2 => bytes.insert(at, byte),
            _ => bytes.truncate(at),
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_request_reads_back(id in any::<u64>(), request in request()) {
        let frame = RequestFrame { id, request };
        let bytes = encode_frame(&frame).unwrap();
        let back: RequestFrame = read_frame(&mut Cursor::new(&bytes), MAX).unwrap().unwrap();
        prop_assert_eq!(back, frame);
    }

    #[test]
    fn handshake_frames_read_back(version in any::<u32>(), role in role(), proof in text()) {
        let hello = Hello { version, role, noise: Some(proof.clone()), auth: None };
        let back: Hello = read_frame(&mut Cursor::new(encode_frame(&hello).unwrap()), MAX).unwrap().unwrap();
        prop_assert_eq!(back, hello);
        let answer = HelloReply::Handshake { noise: proof };
        let back: HelloReply = read_frame(&mut Cursor::new(encode_frame(&answer).unwrap()), MAX).unwrap().unwrap();
        prop_assert_eq!(back, answer);
    }

    #[test]
    fn daemon_frames_read_back(from_mom in from_mom(), to_mom in to_mom(), from_sched in from_sched(), to_sched in to_sched()) {
        let back: FromMom = read_frame(&mut Cursor::new(encode_frame(&from_mom).unwrap()), MAX).unwrap().unwrap();
        prop_assert_eq!(back, from_mom);
        let back: ToMom = read_frame(&mut Cursor::new(encode_frame(&to_mom).unwrap()), MAX).unwrap().unwrap();
        prop_assert_eq!(back, to_mom);
        let back: FromSched = read_frame(&mut Cursor::new(encode_frame(&from_sched).unwrap()), MAX).unwrap().unwrap();
        prop_assert_eq!(back, from_sched);
        let back: ToSched = read_frame(&mut Cursor::new(encode_frame(&to_sched).unwrap()), MAX).unwrap().unwrap();
        prop_assert_eq!(back, to_sched);
    }

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..256)) {
        decode_all(&bytes);
    }

    #[test]
    fn mutated_frames_never_panic(
        id in any::<u64>(),
        request in request(),
        from_mom in from_mom(),
        from_sched in from_sched(),
        edits in vec((any::<u8>(), any::<usize>(), any::<u8>()), 1..6),
    ) {
        decode_all(&mutate(encode_frame(&RequestFrame { id, request }).unwrap(), &edits));
        decode_all(&mutate(encode_frame(&from_mom).unwrap(), &edits));
        decode_all(&mutate(encode_frame(&from_sched).unwrap(), &edits));
    }

    #[test]
    fn deep_nesting_is_an_error(depth in 1usize..20_000, open in prop_oneof![Just(b'['), Just(b'{')]) {
        let body: Vec<u8> = if open == b'[' {
            [vec![b'['; depth], vec![b']'; depth]].concat()
        } else {
            [b"{\"a\":".repeat(depth), b"1".to_vec(), vec![b'}'; depth]].concat()
        };
        let mut bytes = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        bytes.extend(&body);
        prop_assert!(read_frame::<RequestFrame>(&mut Cursor::new(&bytes), usize::MAX).is_err());
        decode_all(&bytes);
    }

    #[test]
    fn an_oversized_length_is_refused_before_reading(len in (MAX as u32 + 1)..=u32::MAX, tail in vec(any::<u8>(), 0..16)) {
        let mut bytes = len.to_be_bytes().to_vec();
        bytes.extend(&tail);
        prop_assert!(read_frame::<RequestFrame>(&mut Cursor::new(&bytes), MAX).is_err());
        let mut buf = BytesMut::from(&bytes[..]);
        prop_assert!(length_codec(MAX).decode(&mut buf).is_err());
    }
}
