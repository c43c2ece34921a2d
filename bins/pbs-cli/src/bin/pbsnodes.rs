//! `pbsnodes`: lists nodes (`-a`, `-v`, operands, `-l` for the down or offline ones, `-H`,
//! `-S` summaries, `-F json|dsv`) and marks them (`-o` offline, `-r` clear offline, `-C`
//! comment; the deprecated `-c` and `-d`), with OpenPBS's messages and exit statuses.
//!
//! Without `-v`, OpenPBS lists *hosts*: its client library groups the server's vnodes by
//! `resources_available.host` (see `pbsnodes/hosts.rs`), so this does the same.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

#[path = "pbsnodes/format.rs"]
mod format;
#[path = "pbsnodes/hosts.rs"]
mod hosts;
// qstat's cJSON-layout writer and printf helpers; pbsnodes uses only some of their parts.
#[allow(dead_code)]
#[path = "qstat/json.rs"]
mod json;
#[path = "pbsnodes/options.rs"]
mod options;
#[cfg(test)]
#[path = "pbsnodes/tests.rs"]
mod tests;
#[allow(dead_code)]
#[path = "qstat/text.rs"]
mod text;

use std::io::Write as _;
use std::process::ExitCode;

use pbs_client::{Client, ClientError};
use pbs_core::Pbse;
use pbs_proto::{MgrAttr, MgrCommand, MgrObject, MgrOp, StatusObject};

use crate::format::{Json, SummaryStyle};
use crate::hosts::Hosts;
use crate::options::{Format, Oper, Options, UsageError};

/// OpenPBS keeps at most this many bytes of a `-C` comment (an 80-byte buffer).
const MAX_COMMENT: usize = 79;

/// The text OpenPBS prints for a failed request: the server's, else `Error N`.
fn error_text(error: &ClientError) -> Option<String> {
    match error {
        ClientError::Server { message, .. } | ClientError::Refused { message, .. } if !message.is_empty() => {
            Some(message.clone())
        }
        ClientError::Server { .. } | ClientError::Refused { .. } => None,
        other => Some(other.to_string()),
    }
}

/// `cmp_node_name`: an operand names a node if equal, or if it is the node's name followed
/// by a domain (`n1.example.com` names `n1`).
fn names_node(operand: &str, node: &str) -> bool {
    operand == node || operand.strip_prefix(node).is_some_and(|rest| rest.starts_with('.'))
}

/// One run of the command.
struct Session<'a> {
    prog: &'a str,
    options: Options,
    client: Client,
    /// `-s`, else the server of pbs.conf: named in JSON and stripped from `-Sj` job ids.
    server: String,
    /// The server's vnodes grouped into hosts, fetched once when first needed.
    hosts: Option<Result<Hosts, String>>,
    out: Vec<u8>,
    json_nodes: Vec<(String, Json)>,
    summary_header_done: bool,
    failed: bool,
}

impl Session<'_> {
    fn quiet(&self) -> bool {
        self.options.quiet
    }

    /// Every vnode (`pbs_statvnode`) or host (`pbs_stathost`). `Err` is the message.
    fn list(&mut self, vnodes: bool) -> Result<Vec<StatusObject>, String> {
        if vnodes {
            return match self.client.status_nodes(Vec::new()) {
                Ok(reply) => Ok(reply.objects),
                Err(e) => Err(error_text(&e).unwrap_or_else(|| format!("Error {}", e.pbse().0))),
            };
        }
        Ok(self.hosts()?.all())
    }

    fn hosts(&mut self) -> Result<&mut Hosts, String> {
        if self.hosts.is_none() {
            let fetched = match self.client.status_nodes(Vec::new()) {
                Ok(reply) => Ok(Hosts::new(reply.objects)),
                Err(e) => Err(error_text(&e).unwrap_or_else(|| format!("Error {}", e.pbse().0))),
            };
            self.hosts = Some(fetched);
        }
        match self.hosts.as_mut() {
            Some(Ok(hosts)) => Ok(hosts),
            Some(Err(message)) => Err(message.clone()),
            None => Err(Pbse::SYSTEM.to_string()),
        }
    }

    /// One named host or vnode. `Err` is the message of `Node: X,  Error: ...`; `Ok(None)`
    /// is a server that answered with nothing, which OpenPBS passes over in silence.
    fn one(&mut self, name: &str, vnode: bool) -> Result<Option<StatusObject>, String> {
        if !vnode {
            let hosts = self.hosts()?;
            return hosts.host(name).map(Some).ok_or_else(|| Pbse::UNKNODE.to_string());
        }
        match self.client.status_nodes(vec![name.to_string()]) {
            Ok(reply) => match reply.errors.into_iter().next() {
                Some(error) => Err(error.message),
                None => Ok(reply.objects.into_iter().next()),
            },
            Err(e) => Err(error_text(&e).unwrap_or_else(|| format!("Error {}", e.pbse().0))),
        }
    }

    /// Shows one node in the format asked for.
    fn show(&mut self, node: &StatusObject) {
        let o = &self.options;
        if o.summary {
            if o.format == Format::Default && !self.summary_header_done {
                format::summary_header(&mut self.out, o.job_summary);
                self.summary_header_done = true;
            }
            let style = SummaryStyle {
                jobs: o.job_summary,
                long: o.long_summary,
                format: o.format,
                delimiter: &o.delimiter,
                server: &self.server,
            };
            if let Some(member) = format::summary(&mut self.out, node, style) {
                self.json_nodes.push((node.name.clone(), member));
            }
            return;
        }
        match o.format {
            Format::Default => format::full(&mut self.out, node),
            Format::Dsv => format::dsv(&mut self.out, node, &o.delimiter),
            Format::Json => self.json_nodes.push((node.name.clone(), format::json_node(node))),
        }
    }

    /// A named node that could not be listed.
    fn not_listed(&mut self, name: &str, message: &str) {
        if self.options.format == Format::Json {
            self.json_nodes.push((name.to_string(), format::json_error(message)));
        } else {
            eprintln!("Node: {name},  Error: {message}");
            self.failed = true;
        }
    }

    /// Sets state flags and the comment of a node (OpenPBS's `marknode`).
    fn mark(&mut self, name: &str, states: &[(&str, MgrOp)], comment: Option<&str>) {
        let mut attrs: Vec<MgrAttr> = states
            .iter()
            .map(|(state, op)| MgrAttr { name: "state".into(), op: *op, value: (*state).to_string() })
            .collect();
        if let Some(comment) = comment {
            attrs.push(MgrAttr {
                name: "comment".into(),
                op: MgrOp::Set,
                value: pbs_cli::truncate(comment, MAX_COMMENT).into(),
            });
        }
        if let Err(e) = self.client.manager(MgrCommand::Set, MgrObject::Node, vec![name.to_string()], attrs) {
            if !self.quiet() {
                match error_text(&e) {
                    Some(text) => eprintln!("Error marking node {name} - {text}"),
                    None => eprintln!("Error marking node {name} - error: {}", e.pbse().0),
                }
            }
            self.failed = true;
        }
    }

    /// Does what the options ask. Returns the exit status.
    fn run(&mut self) -> u8 {
        let oper = self.options.oper;
        let vnodes = self.options.vnodes;
        let mut listed = Vec::new();
        if vnodes || matches!(oper, Oper::All | Oper::Down | Oper::ListMarked | Oper::ListHostsWithVnodes) {
            match self.list(vnodes || oper == Oper::ListHostsWithVnodes) {
                Ok(nodes) if nodes.is_empty() => {
                    if !self.quiet() {
                        eprintln!("{}: No nodes found", self.prog);
                    }
                    return 0;
                }
                Ok(nodes) => listed = nodes,
                Err(message) => {
                    if !self.quiet() {
                        eprintln!("{}: {message}", self.prog);
                    }
                    return 1;
                }
            }
        }
        let operands = self.options.nodes.clone();
        let comment = self.options.comment.clone();
        let comment = comment.as_deref();
        match oper {
            Oper::Down => {
                for node in &listed {
                    let down = node.get("state").is_some_and(|s| s.contains("down"));
                    if operands.iter().any(|op| names_node(op, &node.name)) {
                        if !down {
                            self.mark(&node.name, &[("down", MgrOp::Incr)], comment);
                        }
                    } else if down {
                        self.mark(&node.name, &[("down", MgrOp::Decr)], comment);
                    }
                }
            }
            Oper::Clear => {
                for name in &operands {
                    self.mark(name, &[("offline", MgrOp::Decr), ("down", MgrOp::Decr)], comment);
                }
            }
            Oper::Reset => {
                for name in &operands {
                    self.mark(name, &[("offline", MgrOp::Decr)], comment);
                }
            }
            Oper::Offline => {
                for name in &operands {
                    self.mark(name, &[("offline", MgrOp::Incr)], comment);
                }
            }
            Oper::UpdateComment => {
                for name in operands.iter().filter(|n| !n.is_empty()) {
                    self.mark(name, &[], comment);
                }
            }
            Oper::All => {
                for node in &listed {
                    self.show(node);
                }
            }
            Oper::ListMarked => {
                for node in &listed {
                    format::marked(&mut self.out, node);
                }
            }
            Oper::ListSpecified => {
                for name in &operands {
                    match self.one(name, vnodes) {
                        Ok(Some(node)) => self.show(&node),
                        Ok(None) => {}
                        Err(message) => self.not_listed(name, &message),
                    }
                }
            }
            Oper::ListHostsWithVnodes => {
                for node in &listed {
                    let host = node.attrs.iter().find(|a| a.0.split_once('.').is_some_and(|(_, r)| r == "host"));
                    if host.is_some_and(|h| operands.contains(&h.1)) {
                        self.show(node);
                    }
                }
                for name in &operands {
                    if let Err(message) = self.one(name, false) {
                        self.not_listed(name, &message);
                    }
                }
            }
        }
        if self.options.format == Format::Json
            && matches!(oper, Oper::All | Oper::ListSpecified | Oper::ListHostsWithVnodes)
        {
            let version = env!("CARGO_PKG_VERSION");
            format::json_document(&mut self.out, pbs_cli::now(), version, &self.server, &self.json_nodes);
        }
        u8::from(self.failed)
    }
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let parse = |prog: &str, argv: &[String]| match options::parse(prog, argv) {
        Ok(options) => Ok((prog.to_string(), options)),
        Err(UsageError(text)) => Err(text),
    };
    let (prog, options) = match pbs_cli::parse_command_line("pbsnodes", 1, parse) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    let prog = prog.as_str();
    let (conf, client) = match pbs_cli::try_connect() {
        Ok(connected) => connected,
        Err(failure) => {
            if !options.quiet {
                let server = || match pbs_cli::load_conf() {
                    Ok(conf) => options.server.clone().unwrap_or_else(|| pbs_cli::server_name(&conf)),
                    Err(_) => options.server.clone().unwrap_or_default(),
                };
                match failure {
                    pbs_cli::ConnectFailure::NoServer { errno, .. } => {
                        eprintln!("{prog}: cannot connect to server {}, error={errno}", server());
                    }
                    pbs_cli::ConnectFailure::Conf(e) => eprintln!("{prog}: {e:#}"),
                    pbs_cli::ConnectFailure::Client(e) => {
                        eprintln!("{prog}: cannot connect to server {}, error={}", server(), e.pbse().0);
                    }
                }
            }
            return ExitCode::from(1);
        }
    };
    let server = options.server.clone().unwrap_or_else(|| pbs_cli::server_name(&conf));
    let mut session = Session {
        prog,
        options,
        client,
        server,
        hosts: None,
        out: Vec::new(),
        json_nodes: Vec::new(),
        summary_header_done: false,
        failed: false,
    };
    let status = session.run();
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(&session.out).and_then(|()| stdout.flush()).is_err() {
        return ExitCode::from(1);
    }
    ExitCode::from(status)
}
