//! Commands that apply one request to a list of job ids (qdel, qhold, qrls, qalter, qsig,
//! qrerun): id completion, the request, and OpenPBS's per-job error lines and exit status.

use std::process::ExitCode;

use pbs_client::Client;
use pbs_proto::Request;

use crate::{connect, exit_code, full_job_id, print_bad_job_id, print_job_error};

/// Completes every typed id with the server name. Ids that are not job ids are reported
/// the way OpenPBS's commands do (`qdel: illegally formed job identifier: abc`) and make
/// the command fail with status 1 after the others are handled.
pub fn complete_ids(cmd: &str, typed: &[String], server_name: &str) -> (Vec<String>, bool) {
    let mut ids = Vec::with_capacity(typed.len());
    let mut any_bad = false;
    for raw in typed {
        match full_job_id(raw, server_name) {
            Some(id) => ids.push(id),
            None => {
                print_bad_job_id(cmd, raw);
                any_bad = true;
            }
        }
    }
    (ids, any_bad)
}

/// Sends `make(ids)`, the last request on `client` (in several requests of at most
/// [`pbs_proto::MAX_REQUEST_IDS`] ids when there are more), and prints a line per failed
/// job. The exit status is the low byte of the last server error, else 1 if an id was
/// malformed, else 0.
pub fn run(cmd: &str, client: &mut Client, typed: &[String], mut make: impl FnMut(Vec<String>) -> Request) -> ExitCode {
    let server_name = client.server_name().to_string();
    let (ids, any_bad) = complete_ids(cmd, typed, &server_name);
    let mut status = if any_bad { ExitCode::from(1) } else { ExitCode::SUCCESS };
    let batches: Vec<&[String]> = ids.chunks(pbs_proto::MAX_REQUEST_IDS).collect();
    for (i, batch) in batches.iter().enumerate() {
        if i + 1 == batches.len() {
            client.last_request();
        }
        match client.per_id(make(batch.to_vec())) {
            Ok(errors) => {
                for error in &errors {
                    print_job_error(cmd, &error.message, &error.id);
                }
                if let Some(last) = errors.last() {
                    status = exit_code(last.code);
                }
            }
            Err(e) => {
                eprintln!("{cmd}: {e}");
                return exit_code(e.pbse().0);
            }
        }
    }
    status
}

/// The whole of a command that sends one request for its job ids, once its command line is
/// read: connects as `cmd` (its message and status if that fails), then [`run`].
pub fn connect_and_run(cmd: &str, typed: &[String], make: impl FnMut(Vec<String>) -> Request) -> ExitCode {
    match connect(cmd) {
        Ok(mut client) => run(cmd, &mut client, typed, make),
        Err(code) => code,
    }
}
