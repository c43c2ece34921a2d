//! The one-line-per-object displays of queues (`-Q`, `-q`) and servers (`-B`).

use pbs_proto::StatusObject;

use pbs_core::cnum::atol;

use crate::jobs::{SizeUnit, convert_size};
use crate::text::{left, left_cut, right, right_cut, star};

/// Width of the count columns (`NUML`).
const NUM: usize = 5;

/// Counts of a `state_count` value in the order the tables show them: queued, running,
/// held, waiting, transit, exiting. Read like OpenPBS's `states()`: an unknown key makes
/// the parser lose its footing, so every later key is skipped too.
fn state_counts(text: &str) -> [Vec<u8>; 6] {
    let mut counts: [Vec<u8>; 6] = std::array::from_fn(|_| b"0".to_vec());
    let bytes = text.as_bytes();
    let mut c = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    while c < bytes.len() {
        let start = c;
        while c < bytes.len() && bytes[c] != b':' {
            c += 1;
        }
        if c >= bytes.len() {
            break;
        }
        let slot = match &bytes[start..c] {
            b"Queued" => Some(0),
            b"Running" => Some(1),
            b"Held" => Some(2),
            b"Waiting" => Some(3),
            b"Transit" => Some(4),
            b"Exiting" => Some(5),
            _ => None,
        };
        c += 1;
        let value_start = c;
        while c < bytes.len() && bytes[c] != b' ' {
            c += 1;
        }
        if let Some(slot) = slot {
            counts[slot] = star(&bytes[value_start..c], NUM).into_owned();
            if c < bytes.len() {
                c += 1;
            }
        }
    }
    counts
}

fn is_true(value: &str) -> bool {
    matches!(value, "TRUE" | "True" | "true" | "1")
}

/// The `-Q` header.
pub(crate) fn queue_header(out: &mut Vec<u8>) {
    out.extend_from_slice(b"Queue              Max   Tot Ena Str   Que   Run   Hld   Wat   Trn   Ext Type\n");
    out.extend_from_slice(b"---------------- ----- ----- --- --- ----- ----- ----- ----- ----- ----- ----\n");
}

/// The `-Q` rows.
pub(crate) fn queue_rows(out: &mut Vec<u8>, queues: &[StatusObject]) {
    for queue in queues {
        let mut max: Vec<u8> = b"0".to_vec();
        let mut total: Vec<u8> = b"0".to_vec();
        let (mut enabled, mut started) = ("no", "no");
        let mut counts = state_counts("");
        let mut kind: Vec<u8> = b"not defined".to_vec();
        for attr in &queue.attrs {
            match attr.0.as_str() {
                "max_running" => max = star(attr.1.as_bytes(), NUM).into_owned(),
                "total_jobs" => total = star(attr.1.as_bytes(), NUM).into_owned(),
                "enabled" => enabled = if is_true(&attr.1) { "yes" } else { "no" },
                "started" => started = if is_true(&attr.1) { "yes" } else { "no" },
                "state_count" => counts = state_counts(&attr.1),
                "queue_type" => kind = star(attr.1.as_bytes(), 4).into_owned(),
                _ => {}
            }
        }
        left(out, &star(queue.name.as_bytes(), 16), 16);
        for value in [&max, &total] {
            out.push(b' ');
            right(out, value, NUM);
        }
        for value in [enabled, started] {
            out.push(b' ');
            right(out, value.as_bytes(), 3);
        }
        for value in &counts {
            out.push(b' ');
            right(out, value, NUM);
        }
        out.push(b' ');
        left(out, &kind, 4);
        out.push(b'\n');
    }
}

/// The `-B` header.
pub(crate) fn server_header(out: &mut Vec<u8>) {
    out.extend_from_slice(b"Server             Max   Tot   Que   Run   Hld   Wat   Trn   Ext Status\n");
    out.extend_from_slice(b"---------------- ----- ----- ----- ----- ----- ----- ----- ----- -----------\n");
}

/// The `-B` rows.
pub(crate) fn server_rows(out: &mut Vec<u8>, servers: &[StatusObject]) {
    for server in servers {
        let mut max: Vec<u8> = b"0".to_vec();
        let mut total: Vec<u8> = b"0".to_vec();
        let mut counts = state_counts("");
        let mut status: Vec<u8> = Vec::new();
        for attr in &server.attrs {
            match attr.0.as_str() {
                "max_running" => max = star(attr.1.as_bytes(), NUM).into_owned(),
                "total_jobs" => total = star(attr.1.as_bytes(), NUM).into_owned(),
                "state_count" => counts = state_counts(&attr.1),
                "server_state" => status = star(attr.1.as_bytes(), 10).into_owned(),
                _ => {}
            }
        }
        left(out, &star(server.name.as_bytes(), 16), 16);
        for value in [&max, &total] {
            out.push(b' ');
            right(out, value, NUM);
        }
        for value in &counts {
            out.push(b' ');
            right(out, value, NUM);
        }
        out.push(b' ');
        left(out, &status, 10);
        out.push(b'\n');
    }
}

/// `-q`: limits and counts per queue under a `server: <name>` line, with totals.
pub(crate) fn queue_limits(out: &mut Vec<u8>, server: &str, queues: &[StatusObject], unit: SizeUnit) {
    out.extend_from_slice(b"\nserver: ");
    out.extend_from_slice(server.as_bytes());
    out.extend_from_slice(b"\n\n");
    out.extend_from_slice(b"Queue            Memory CPU Time Walltime Node   Run   Que   Lm  State\n");
    out.extend_from_slice(b"---------------- ------ -------- -------- ---- ----- ----- ----  -----\n");
    const BLANK: &[u8] = b"  --   ";
    let (mut total_run, mut total_queued) = (0i64, 0i64);
    for queue in queues {
        let mut memory: Vec<u8> = b"--  ".to_vec();
        let (mut cput, mut walltime, mut max): (&[u8], &[u8], &[u8]) = (BLANK, BLANK, BLANK);
        let mut nodect: &[u8] = b"-- ";
        let (mut run, mut queued) = (0i64, 0i64);
        let (mut enabled, mut started) = (b'D', b'S');
        for attr in &queue.attrs {
            let value = attr.1.as_bytes();
            match attr.0.as_str() {
                "max_running" => max = value,
                "enabled" if value.first() == Some(&b'T') => enabled = b'E',
                "started" if value.first() == Some(&b'T') => started = b'R',
                "state_count" => {
                    let (q, r) = queued_and_running(&attr.1);
                    queued += q;
                    run += r;
                    total_queued += q;
                    total_run += r;
                }
                "resources_max.mem" => {
                    let mut size = convert_size(&attr.1, unit).into_bytes();
                    size.truncate(5);
                    memory = size;
                }
                "resources_max.cput" => cput = value,
                "resources_max.walltime" => walltime = value,
                "resources_max.nodect" => nodect = value,
                _ => {}
            }
        }
        left_cut(out, queue.name.as_bytes(), 16);
        out.push(b' ');
        right_cut(out, &memory, 6);
        out.push(b' ');
        right_cut(out, cput, 8);
        out.push(b' ');
        right_cut(out, walltime, 8);
        out.push(b' ');
        right_cut(out, nodect, 4);
        out.push(b' ');
        right(out, run.to_string().as_bytes(), 5);
        out.push(b' ');
        right(out, queued.to_string().as_bytes(), 5);
        out.push(b' ');
        right_cut(out, max, 4);
        out.extend_from_slice(b"   ");
        out.push(enabled);
        out.push(b' ');
        out.push(started);
        out.push(b'\n');
    }
    out.resize(out.len() + 47, b' ');
    out.extend_from_slice(b"----- -----\n");
    out.resize(out.len() + 47, b' ');
    right(out, total_run.to_string().as_bytes(), 5);
    out.push(b' ');
    right(out, total_queued.to_string().as_bytes(), 5);
    out.push(b'\n');
}

/// Queued (queued + held + waiting) and running counts, read by position after the
/// leading `Transit` as OpenPBS's `get_ct` does.
fn queued_and_running(state_count: &str) -> (i64, i64) {
    let mut values = state_count.split(':').skip(1).map(atol);
    let _transit = values.next();
    let queued: i64 = values.by_ref().take(3).sum();
    let running = values.next().unwrap_or(0);
    (queued, running)
}
