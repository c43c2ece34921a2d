//! What `qenable`, `qdisable`, `qstart` and `qstop` share: each sets one queue attribute
//! (`enabled` or `started`) on every destination named, with OpenPBS's messages: the
//! server's refusal as `<cmd>: <message> <queue>`, exit 2; a destination that does not
//! read, exit 1.

use std::process::ExitCode;

use pbs_proto::{MgrAttr, MgrCommand, MgrObject, MgrOp};

/// The command line: destinations (`queue`, `queue@server`, `@server`).
#[derive(clap::Parser, Debug)]
#[command(disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Print the version and exit.
    #[arg(long)]
    version: bool,
    /// Queues, as `queue[@server]`.
    destinations: Vec<String>,
}

/// Runs `cmd`, which sets queue attribute `attr` to `value` (`enabled`/`started`, `True`/`False`).
pub(crate) fn main(cmd: &str, attr: &str, value: &str) -> ExitCode {
    let usage = format!("Usage: {cmd} [queue][@server] ...\n       {cmd} --version\n");
    let args: Args = match pbs_cli::start(&usage, 1, |a: &Args| a.version) {
        Ok(args) => args,
        Err(code) => return code,
    };
    if args.destinations.is_empty() {
        eprint!("{usage}");
        return ExitCode::from(1);
    }
    let mut status = 0u8;
    let mut client = None;
    for destination in &args.destinations {
        let Some((queue, server)) = pbs_cli::parse_destination(destination) else {
            eprintln!("{cmd}: illegally formed destination: {destination}");
            status = 1;
            continue;
        };
        let connection = client.get_or_insert_with(|| {
            pbs_cli::try_connect().map(|(_, client)| client).map_err(|failure| {
                failure.line(cmd, |server, errno| format!("could not connect to server {server} ({errno})"))
            })
        });
        let client = match connection {
            Ok(client) => client,
            Err(line) => {
                eprintln!("{line}");
                status = 2;
                continue;
            }
        };
        let set = MgrAttr { name: attr.into(), op: MgrOp::Set, value: value.into() };
        let names = if queue.is_empty() { vec![] } else { vec![queue.to_string()] };
        if let Err(e) = client.manager(MgrCommand::Set, MgrObject::Queue, names, vec![set]) {
            let at = server.map(|s| format!("@{s}")).unwrap_or_default();
            eprintln!("{cmd}: {e} {queue}{at}");
            status = 2;
        }
    }
    ExitCode::from(status)
}
