//! `printjob [-a] (jobid|file)...` and `printjob -s jobid`: the mom's view of a job, read
//! from its records file (`PBS_HOME/mom_priv/jobs/<jobid>.JB`), in OpenPBS's layout
//! (`pbs_mom::printjob`); `-s` prints the job's script. Root only, as OpenPBS's. On the
//! server's host (its store under `PBS_HOME/server_priv`) a job id is the server's record
//! of the job, whatever its state, as OpenPBS's server printjob reads its database.
//!
//! A binary of the mom's package, not of the q-commands': it reads the mom's records
//! format, and the statically linked q-commands should not carry the mom's code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "Usage: printjob [-a] (jobid|file)\n       printjob -s jobid\n       printjob --version\n";

/// The command line, read as OpenPBS's getopt loop reads `as`: the clap struct of the
/// options it takes.
#[derive(clap::Parser, Debug, Default, PartialEq, Eq)]
#[command(name = "printjob", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Leave out the attributes.
    #[arg(short = 'a')]
    no_attributes: bool,
    /// Print the job's script.
    #[arg(short = 's')]
    script: bool,
    /// Job ids or records files.
    operands: Vec<String>,
}

/// Reads the command line; `Err` is what to print before exiting 1.
fn parse(argv: &[String]) -> Result<Args, String> {
    let mut args = Args::default();
    let mut errors = String::new();
    let mut options_done = false;
    for arg in argv {
        match arg.strip_prefix('-').filter(|letters| !options_done && !letters.is_empty()) {
            Some("-") => options_done = true,
            Some(letters) => {
                for letter in letters.chars() {
                    match letter {
                        'a' if args.script => return Err(USAGE.to_string()),
                        'a' => args.no_attributes = true,
                        's' if args.no_attributes => return Err(USAGE.to_string()),
                        's' => args.script = true,
                        other => errors.push_str(&format!("printjob: invalid option -- {other}\n")),
                    }
                }
            }
            None => args.operands.push(arg.clone()),
        }
    }
    if !errors.is_empty() || args.operands.is_empty() {
        return Err(format!("{errors}{USAGE}"));
    }
    Ok(args)
}

fn main() -> ExitCode {
    if !nix::unistd::getuid().is_root() || !nix::unistd::geteuid().is_root() {
        eprintln!("printjob must be run by root");
        return ExitCode::from(1);
    }
    let conf = match load_conf() {
        Ok(conf) => conf,
        Err(_) => {
            eprintln!("couldnot load conf file");
            return ExitCode::from(1);
        }
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv == ["--version"] {
        println!("pbs_version = {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let args = match parse(&argv) {
        Ok(args) => args,
        Err(text) => {
            eprint!("{text}");
            return ExitCode::from(1);
        }
    };
    let jobs_dir = pbs_mom::layout::Layout::new(&conf.home).jobs_dir();
    let server = conf.server.clone().unwrap_or_default();
    let server_db = conf.server_store_file();
    for operand in &args.operands {
        let given = Path::new(operand);
        // As OpenPBS: what opens as a file is a records file (not allowed with -s), anything
        // else a job id, completed with the server's name.
        let as_file = std::fs::File::open(given).is_ok();
        if as_file && args.script {
            eprint!("{USAGE}");
            return ExitCode::from(1);
        }
        let (path, job_id) = if as_file {
            (given.to_path_buf(), operand.clone())
        } else {
            let job_id = if operand.contains('.') { operand.clone() } else { format!("{operand}.{server}") };
            (jobs_dir.join(format!("{job_id}.JB")), job_id)
        };
        if !as_file && server_db.exists() {
            match server_record::read(&server_db, &job_id) {
                Ok(Some(record)) if args.script => print!("{}", record.script.unwrap_or_default()),
                Ok(Some(record)) => print!("{}", server_record::format(&job_id, &record, args.no_attributes)),
                Ok(None) => {
                    eprintln!("Job {job_id} not found");
                    return ExitCode::from(1);
                }
                Err(e) => {
                    eprintln!("printjob: cannot read the server's store {}: {e}", server_db.display());
                    return ExitCode::from(1);
                }
            }
            continue;
        }
        // An id that is not one (`../x`) names no file under the jobs directory.
        if !as_file && (!pbs_mom::layout::valid_job_id(&job_id) || !path.exists()) {
            eprintln!("Job {job_id} not found");
            return ExitCode::from(1);
        }
        if args.script {
            print!("{}", script(&path));
            continue;
        }
        match pbs_mom::printjob::format(&pbs_mom::records::read(&path), args.no_attributes) {
            Some(text) => print!("{text}"),
            None => {
                eprintln!("printjob: {}: not a job's records file", path.display());
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}

/// The job's script: the `.SC` file beside its records, else the script its launch holds.
fn script(records: &Path) -> String {
    let path: PathBuf = pbs_mom::layout::script_path_of(records);
    std::fs::read_to_string(&path).unwrap_or_else(|_| {
        pbs_mom::records::read(records).get::<pbs_mom::layout::Spec>().map(|s| s.launch.script).unwrap_or_default()
    })
}

/// The server's record of a job, read from its store as OpenPBS's server printjob reads
/// its database, and printed in that printjob's layout.
mod server_record {
    use std::fmt::Write as _;
    use std::path::Path;

    /// A job as the server stores it.
    #[derive(Debug, Default, serde::Deserialize)]
    pub(crate) struct Record {
        #[serde(default)]
        pub(crate) array: bool,
        #[serde(default)]
        pub(crate) index: Option<u64>,
        pub(crate) state: char,
        pub(crate) substate: u16,
        pub(crate) queue: String,
        pub(crate) attrs: Vec<(String, String)>,
        #[serde(skip)]
        pub(crate) script: Option<String>,
    }

    /// The record of `job_id` (`12.server`, `12[].server`, `12[3].server`), `None` when the
    /// server has none (a subjob still queued has none: it is an index of its array). The
    /// store is opened read-only: the server may be running.
    pub(crate) fn read(store: &Path, job_id: &str) -> Result<Option<Record>, String> {
        let Ok(id) = job_id.parse::<pbs_core::JobId>() else { return Ok(None) };
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = rusqlite::Connection::open_with_flags(store, flags).map_err(|e| e.to_string())?;
        let Ok(seq) = i64::try_from(id.seq()) else { return Ok(None) };
        let row: Result<(String, Option<String>), rusqlite::Error> = match *id.array() {
            pbs_core::ArrayPart::Index(index) => {
                let Ok(index) = i64::try_from(index) else { return Ok(None) };
                conn.query_row("SELECT record, NULL FROM subjobs WHERE seq = ?1 AND idx = ?2", (seq, index), |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
            }
            _ => {
                conn.query_row("SELECT record, script FROM jobs WHERE seq = ?1", [seq], |r| Ok((r.get(0)?, r.get(1)?)))
            }
        };
        let (text, script) = match row {
            Ok(row) => row,
            Err(rusqlite::Error::QueryReturnedNoRows) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let mut record: Record = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        // `12` names a job, `12[]` an array: the other's name is unknown, as to qstat.
        if record.array != matches!(id.array(), pbs_core::ArrayPart::Parent) && record.index.is_none() {
            return Ok(None);
        }
        record.script = script;
        Ok(Some(record))
    }

    /// OpenPBS's numbers of the job states (`JOB_STATE_*`); a suspended job is a running
    /// one there.
    fn state_number(letter: char) -> u32 {
        match letter {
            'T' => 0,
            'Q' => 1,
            'H' => 2,
            'W' => 3,
            'R' | 'S' | 'U' => 4,
            'E' => 5,
            'X' => 6,
            'B' => 7,
            'M' => 8,
            _ => 9,
        }
    }

    /// `ji_svrflags` as OpenPBS's server keeps them, from what the record says: created
    /// here, nodes held while it runs, suspended, run before, array or subjob.
    fn svrflags(record: &Record, get: impl Fn(&str) -> Option<String>) -> u32 {
        let mut flags = 0x01;
        let holds_nodes = matches!(record.state, 'R' | 'S' | 'U' | 'E') && get("exec_vnode").is_some();
        if holds_nodes {
            flags |= 0x1000;
        }
        if record.state == 'S' {
            flags |= 0x200;
        }
        if !holds_nodes && get("run_count").and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n > 0) {
            flags |= 0x04;
        }
        if record.array {
            flags |= 0x10000;
        }
        if record.index.is_some() {
            flags |= 0x20000;
        }
        flags
    }

    /// The text printjob prints for `record`; `no_attributes` is `-a`. The attributes go
    /// in the order OpenPBS's database gives them: shorter names first, then by bytes.
    pub(crate) fn format(job_id: &str, record: &Record, no_attributes: bool) -> String {
        let get = |name: &str| record.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let state = state_number(record.state);
        let substate = record.substate;
        let flags = svrflags(record, get);
        let rule = "---------------------------------------------------";
        let mut out = String::new();
        let _ = writeln!(out, "{rule}\njobid:\t{job_id}\n{rule}");
        let _ = writeln!(out, "state:\t\t0x{state:x}");
        let _ = writeln!(out, "substate:\t0x{substate:x} ({substate})");
        let _ = writeln!(out, "svrflgs:\t0x{flags:x} ({flags})");
        let _ = writeln!(out, "stime:\t\t{}", get("stime").unwrap_or_else(|| "0".into()));
        let _ = writeln!(out, "obittime:\t\t0");
        let _ = writeln!(out, "file base:\t");
        let _ = writeln!(out, "queue:\t\t{}", record.queue);
        let _ = writeln!(out, "union type exec:");
        let _ = writeln!(out, "\texits\t{}", get("Exit_status").unwrap_or_else(|| "0".into()));
        if !no_attributes {
            out.push_str("--attributes--\n");
            let mut attrs: Vec<(String, String)> = record.attrs.clone();
            attrs.push(("job_state".into(), record.state.to_string()));
            attrs.push(("substate".into(), substate.to_string()));
            attrs.push(("queue".into(), record.queue.clone()));
            attrs.sort_by(|(a, _), (b, _)| a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes())));
            for (name, value) in attrs {
                let _ = writeln!(out, "{name} = {value}");
            }
        }
        out.push('\n');
        out
    }
}

fn load_conf() -> anyhow::Result<pbs_core::conf::PbsConf> {
    let path = std::env::var("PBS_CONF_FILE").unwrap_or_else(|_| pbs_core::conf::DEFAULT_CONF_FILE.to_string());
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e.into()),
    };
    let env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("PBS_")).collect();
    Ok(pbs_core::conf::PbsConf::parse(&text, &env)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(argv: &[&str]) -> Result<Args, String> {
        parse(&argv.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    /// printjob_jobid.txt's layout from a server record: the header, `union type exec`,
    /// and the attributes shorter names first.
    #[test]
    fn a_server_record_prints_in_openpbs_server_layout() {
        let text = r#"{"seq":7,"array":false,"state":"H","substate":20,"queue":"workq",
            "attrs":[["Job_Name","held"],["Resource_List.ncpus","1"],["ctime","100"],["Hold_Types","u"],["etime","100"]]}"#;
        let record: server_record::Record = serde_json::from_str(text).unwrap();
        let printed = server_record::format("7.vm", &record, false);
        let rule = "---------------------------------------------------";
        assert_eq!(
            printed,
            format!(
                "{rule}\njobid:\t7.vm\n{rule}\nstate:\t\t0x2\nsubstate:\t0x14 (20)\nsvrflgs:\t0x1 (1)\n\
                 stime:\t\t0\nobittime:\t\t0\nfile base:\t\nqueue:\t\tworkq\nunion type exec:\n\texits\t0\n\
                 --attributes--\nctime = 100\netime = 100\nqueue = workq\nJob_Name = held\nsubstate = 20\n\
                 job_state = H\nHold_Types = u\nResource_List.ncpus = 1\n\n"
            )
        );
        assert!(server_record::format("7.vm", &record, true).ends_with("\texits\t0\n\n"));
    }

    #[test]
    fn options_as_openpbs_reads_them() {
        let ok = |a: bool, s: bool, ops: &[&str]| {
            Ok(Args { no_attributes: a, script: s, operands: ops.iter().map(|o| o.to_string()).collect() })
        };
        assert_eq!(parsed(&["1.vm"]), ok(false, false, &["1.vm"]));
        assert_eq!(parsed(&["-a", "1.vm"]), ok(true, false, &["1.vm"]));
        assert_eq!(parsed(&["-s", "1.vm"]), ok(false, true, &["1.vm"]));
        // printjob_usage.txt
        assert_eq!(parsed(&[]), Err(USAGE.to_string()));
        assert_eq!(parsed(&["-a", "-s", "1"]), Err(USAGE.to_string()));
        assert_eq!(parsed(&["-x", "1"]), Err(format!("printjob: invalid option -- x\n{USAGE}")));
    }
}
