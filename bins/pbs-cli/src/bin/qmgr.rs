//! `qmgr`: the administrator's command language (`create|delete|set|unset|list|print` on
//! server, queues, nodes, schedulers, resources and hooks), from `-c` or from stdin.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal, Write as _};
use std::process::ExitCode;

use clap::Parser;
use pbs_client::{Client, ClientError};
use pbs_core::attr::{ObjectKind, Write as AttrWrite, split_name};
use pbs_proto::{MgrAttr, MgrCommand, MgrObject, MgrOp, ReplyBody, Request, StatusObject};

const USAGE: &str = "Usage: qmgr [-a] [-c command] [-e] [-n] [-z] [server...]\n";

#[derive(Parser, Debug)]
#[command(name = "qmgr", disable_help_flag = true, disable_version_flag = true)]
struct Args {
    /// Abort on the first error.
    #[arg(short = 'a')]
    abort: bool,
    #[arg(short = 'c')]
    command: Option<String>,
    /// Echo each command.
    #[arg(short = 'e')]
    echo: bool,
    /// Parse only, do not execute.
    #[arg(short = 'n')]
    no_execute: bool,
    /// Quiet: no error messages.
    #[arg(short = 'z')]
    quiet: bool,
    #[arg(long = "version")]
    version: bool,
    servers: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Manage(MgrCommand),
    List,
    Print,
    /// `import hook NAME CONTENT-TYPE ENCODING FILE|-`.
    Import,
    /// `export hook NAME CONTENT-TYPE ENCODING [FILE]`.
    Export,
    Help,
    Quit,
}

/// A parsed command.
#[derive(Debug, PartialEq)]
struct Command {
    verb: Verb,
    object: MgrObject,
    names: Vec<String>,
    attrs: Vec<MgrAttr>,
    /// What an import or export moves.
    transfer: Option<Transfer>,
}

/// The arguments of `import hook` and `export hook` after the hook's name.
#[derive(Debug, PartialEq)]
struct Transfer {
    content_type: String,
    encoding: String,
    /// The file (`-` or none: stdin for an import, stdout for an export).
    file: Option<String>,
}

/// A syntax error: where in the line the caret goes.
#[derive(Debug, PartialEq)]
struct SyntaxError {
    position: usize,
}

fn verb_of(word: &str) -> Option<Verb> {
    Some(match word {
        "c" | "create" => Verb::Manage(MgrCommand::Create),
        "d" | "delete" => Verb::Manage(MgrCommand::Delete),
        "s" | "set" => Verb::Manage(MgrCommand::Set),
        "u" | "unset" => Verb::Manage(MgrCommand::Unset),
        "l" | "list" => Verb::List,
        "p" | "print" => Verb::Print,
        "i" | "import" => Verb::Import,
        "e" | "export" => Verb::Export,
        "h" | "help" | "?" => Verb::Help,
        "q" | "quit" | "exit" => Verb::Quit,
        _ => return None,
    })
}

fn object_of(word: &str) -> Option<MgrObject> {
    Some(match word {
        "s" | "server" => MgrObject::Server,
        "q" | "queue" => MgrObject::Queue,
        "n" | "node" => MgrObject::Node,
        "sched" => MgrObject::Sched,
        "r" | "resource" => MgrObject::Resource,
        "h" | "hook" => MgrObject::Hook,
        _ => return None,
    })
}

/// The next whitespace-separated word at or after `pos`: (start, end).
fn next_word(line: &str, pos: usize) -> Option<(usize, usize)> {
    let rest = &line[pos..];
    let start = pos + rest.len() - rest.trim_start().len();
    if start >= line.len() {
        return None;
    }
    let end = line[start..].find(char::is_whitespace).map(|i| start + i).unwrap_or(line.len());
    Some((start, end))
}

/// Parses one command line. `Ok(None)` for blank lines and comments.
fn parse(line: &str) -> Result<Option<Command>, SyntaxError> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(None);
    }
    let Some((vs, ve)) = next_word(line, 0) else { return Ok(None) };
    let verb = verb_of(&line[vs..ve]).ok_or(SyntaxError { position: vs })?;
    if matches!(verb, Verb::Help | Verb::Quit) {
        return Ok(Some(Command { verb, object: MgrObject::Server, names: vec![], attrs: vec![], transfer: None }));
    }
    let (os, oe) = next_word(line, ve).ok_or(SyntaxError { position: line.len() })?;
    let object = object_of(&line[os..oe]).ok_or(SyntaxError { position: os })?;
    if matches!(verb, Verb::Import | Verb::Export) {
        return parse_transfer(line, verb, object, os, oe).map(Some);
    }
    let mut names = Vec::new();
    let mut attr_start = oe;
    if let Some((ns, ne)) = next_word(line, oe) {
        let word = &line[ns..ne];
        let after = line[ne..].trim_start();
        let is_attribute =
            word.contains('=') || after.starts_with('=') || after.starts_with("+=") || after.starts_with("-=");
        // The server is usually not named, so a known attribute name there is an attribute,
        // also when a comma and more attributes follow (`unset server comment,managers`).
        let first = word.split(',').next().unwrap_or_default();
        // Likewise the default scheduler (`unset sched preempt_order`).
        let is_attr_name_alone =
            matches!(object, MgrObject::Server | MgrObject::Sched) && object.kind().find(split_name(first).0).is_some();
        if !is_attribute && !is_attr_name_alone {
            names = word
                .split(',')
                .map(|n| n.split('@').next().unwrap_or_default().to_string())
                .filter(|n| !n.is_empty())
                .collect();
            attr_start = ne;
        }
    }
    let attrs = parse_attrs(line, attr_start, verb, object.kind())?;
    if matches!(verb, Verb::Manage(MgrCommand::Set | MgrCommand::Unset)) && attrs.is_empty() {
        return Err(SyntaxError { position: line.len() });
    }
    if matches!(verb, Verb::Manage(MgrCommand::Create | MgrCommand::Delete))
        && names.is_empty()
        && object != MgrObject::Sched
    {
        return Err(SyntaxError { position: line.len() });
    }
    Ok(Some(Command { verb, object, names, attrs, transfer: None }))
}

/// The rest of `import hook NAME TYPE ENCODING FILE` or `export hook NAME TYPE ENCODING
/// [FILE]`, from the object word at `os..oe`.
fn parse_transfer(line: &str, verb: Verb, object: MgrObject, os: usize, oe: usize) -> Result<Command, SyntaxError> {
    if object != MgrObject::Hook {
        return Err(SyntaxError { position: os });
    }
    let mut words = Vec::new();
    let mut at = oe;
    while let Some((start, end)) = next_word(line, at) {
        words.push(line[start..end].to_string());
        at = end;
    }
    let wanted = if verb == Verb::Import { 4..=4 } else { 3..=4 };
    if !wanted.contains(&words.len()) {
        return Err(SyntaxError { position: line.len() });
    }
    let mut words = words.into_iter();
    let name = words.next().unwrap_or_default();
    let content_type = words.next().unwrap_or_default();
    let encoding = words.next().unwrap_or_default();
    let file = words.next().filter(|f| f != "-");
    Ok(Command {
        verb,
        object,
        names: vec![name],
        attrs: vec![],
        transfer: Some(Transfer { content_type, encoding, file }),
    })
}

/// `a = v, b += w, c -= x` (or bare names for unset), from byte `pos` of `line`.
fn parse_attrs(line: &str, pos: usize, verb: Verb, kind: ObjectKind) -> Result<Vec<MgrAttr>, SyntaxError> {
    let mut attrs = Vec::new();
    let bytes = line.as_bytes();
    let mut i = pos;
    let skip_space = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_space(&mut i);
        if i >= bytes.len() {
            break;
        }
        let name_start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'.' | b'-')) {
            i += 1;
        }
        let name = &line[name_start..i];
        if name.is_empty() {
            return Err(SyntaxError { position: i });
        }
        skip_space(&mut i);
        let op = if line[i..].starts_with("+=") {
            i += 2;
            Some(MgrOp::Incr)
        } else if line[i..].starts_with("-=") {
            i += 2;
            Some(MgrOp::Decr)
        } else if line[i..].starts_with('=') {
            i += 1;
            Some(MgrOp::Set)
        } else {
            None
        };
        let mut value = String::new();
        let value_start;
        let mut quoted = false;
        match op {
            Some(_) => {
                skip_space(&mut i);
                value_start = i;
                if i < bytes.len() && (bytes[i] == b'"' || bytes[i] == b'\'') {
                    let quote = bytes[i];
                    quoted = true;
                    let close = line[i + 1..].find(quote as char).ok_or(SyntaxError { position: line.len() })?;
                    value.push_str(&line[i + 1..i + 1 + close]);
                    i += close + 2;
                } else {
                    let end = line[i..].find(',').map(|e| i + e).unwrap_or(line.len());
                    value.push_str(line[i..end].trim_end());
                    i = end;
                }
                if value.is_empty() {
                    return Err(SyntaxError { position: value_start });
                }
            }
            None => {
                value_start = name_start;
                if verb != Verb::Manage(MgrCommand::Unset) && verb != Verb::List {
                    return Err(SyntaxError { position: i });
                }
            }
        }
        let (base, _) = split_name(name);
        if kind.find(base).is_none() {
            return Err(SyntaxError { position: value_start });
        }
        // Entity limits are checked here, as OpenPBS's qmgr does, so a malformed one is a
        // syntax error pointing at its fault rather than a refusal from the server.
        if op.is_some()
            && pbs_core::entlim::ATTRS.contains(&base)
            && let Some(at) = pbs_core::entlim::syntax_error_at(&value)
        {
            return Err(SyntaxError { position: value_start + usize::from(quoted) + at });
        }
        // An attribute set again replaces what came before it in the line, as OpenPBS's
        // server applies them in turn; the server takes each name once.
        if matches!(op, None | Some(MgrOp::Set)) {
            attrs.retain(|earlier: &MgrAttr| !earlier.name.eq_ignore_ascii_case(name));
        }
        attrs.push(MgrAttr { name: name.to_string(), op: op.unwrap_or(MgrOp::Set), value });
        skip_space(&mut i);
        if i < bytes.len() {
            if bytes[i] != b',' {
                return Err(SyntaxError { position: i });
            }
            i += 1;
        }
    }
    Ok(attrs)
}

fn kind_title(object: MgrObject) -> &'static str {
    match object {
        MgrObject::Server => "Server",
        MgrObject::Queue => "Queue",
        MgrObject::Node => "Node",
        MgrObject::Sched => "Sched",
        MgrObject::Resource => "Resource",
        MgrObject::Hook => "Hook",
    }
}

/// `list`: `<Kind> <name>`, `    attr = value` lines, a blank line.
fn format_list(object: MgrObject, objects: &[StatusObject], only: &[MgrAttr], out: &mut String) {
    for o in objects {
        let _ = writeln!(out, "{} {}", kind_title(object), o.name);
        for attr in &o.attrs {
            if only.is_empty() || only.iter().any(|a| a.name == attr.0 || split_name(&attr.0).0 == a.name) {
                let _ = writeln!(out, "    {} = {}", attr.0, attr.1);
            }
        }
        out.push('\n');
    }
}

/// A value as `print` writes it: quoted when it holds blanks or commas.
fn print_value(value: &str) -> String {
    if value.contains(|c: char| c.is_whitespace() || c == ',') { format!("\"{value}\"") } else { value.to_string() }
}

fn writable(kind: ObjectKind, name: &str) -> bool {
    let (base, _) = split_name(name);
    kind.find(base).is_some_and(|(_, def)| def.write != AttrWrite::ReadOnly)
}

fn print_resources(resources: &[StatusObject], out: &mut String) {
    if resources.is_empty() {
        return;
    }
    out.push_str("#\n# Create resources and set their properties.\n#\n");
    for r in resources {
        let _ = write!(out, "#\n# Create and define resource {}\n#\ncreate resource {}\n", r.name, r.name);
        for attr in &r.attrs {
            let _ = writeln!(out, "set resource {} {} = {}", r.name, attr.0, print_value(&attr.1));
        }
    }
}

fn print_queues(queues: &[StatusObject], out: &mut String) {
    if queues.is_empty() {
        return;
    }
    out.push_str("#\n# Create queues and set their attributes.\n#\n");
    for q in queues {
        let _ = write!(out, "#\n# Create and define queue {}\n#\ncreate queue {}\n", q.name, q.name);
        for attr in q.attrs.iter().filter(|a| writable(ObjectKind::Queue, &a.0)) {
            let _ = writeln!(out, "set queue {} {} = {}", q.name, attr.0, print_value(&attr.1));
        }
    }
}

fn print_server_attrs(server: &[StatusObject], out: &mut String) {
    out.push_str("#\n# Set server attributes.\n#\n");
    for s in server {
        for attr in s.attrs.iter().filter(|a| writable(ObjectKind::Server, &a.0)) {
            let _ = writeln!(out, "set server {} = {}", attr.0, print_value(&attr.1));
        }
    }
}

fn print_scheds(scheds: &[StatusObject], out: &mut String) {
    for s in scheds {
        let _ = write!(out, "#\n# Create and define scheduler {}\n#\ncreate sched {}\n", s.name, s.name);
        let target = if s.name == "default" { String::new() } else { format!(" {}", s.name) };
        for attr in &s.attrs {
            let _ = writeln!(out, "set sched{target} {} = {}", attr.0, print_value(&attr.1));
        }
    }
}

fn print_nodes(nodes: &[StatusObject], out: &mut String) {
    for n in nodes {
        let _ = write!(out, "#\n# Create and define node {}\n#\ncreate node {}\n", n.name, n.name);
        for attr in n.attrs.iter().filter(|a| writable(ObjectKind::Node, &a.0)) {
            let _ = writeln!(out, "set node {} {} = {}", n.name, attr.0, print_value(&attr.1));
        }
    }
}

/// `print hook`: each hook's attributes as commands, then its body and configuration
/// file as base64 imports (`bodies` has both for each hook, in order).
fn print_hooks(hooks: &[StatusObject], bodies: &[(String, String)], out: &mut String) {
    if hooks.is_empty() {
        return;
    }
    out.push_str("#\n# Create hooks and set their properties.\n#\n");
    for (hook, (python, config)) in hooks.iter().zip(bodies) {
        let _ = write!(out, "#\n# Create and define hook {}\n#\ncreate hook {}\n", hook.name, hook.name);
        for attr in &hook.attrs {
            let _ = writeln!(out, "set hook {} {} = {}", hook.name, attr.0, print_value(&attr.1));
        }
        for (content_type, encoded) in [("application/x-python", python), ("application/x-config", config)] {
            let _ = writeln!(out, "import hook {} {content_type} base64 -", hook.name);
            if !encoded.is_empty() {
                out.push_str(encoded);
                out.push('\n');
            }
            out.push('\n');
        }
    }
}

fn export(client: &mut Client, name: &str, content_type: &str, encoding: &str) -> Result<String, ClientError> {
    let request =
        Request::ExportHook { name: name.into(), content_type: content_type.into(), encoding: encoding.into() };
    match client.request(request)?.body {
        ReplyBody::Text(text) => Ok(text),
        _ => Err(ClientError::Protocol),
    }
}

fn status_request(object: MgrObject, names: Vec<String>) -> Request {
    match object {
        MgrObject::Server => Request::StatusServer { attrs: vec![] },
        MgrObject::Queue => Request::StatusQueue { names, attrs: vec![] },
        MgrObject::Node => Request::StatusNode { names },
        MgrObject::Sched => Request::StatusSched { names },
        MgrObject::Resource => Request::StatusResource { names },
        MgrObject::Hook => Request::StatusHook { names },
    }
}

/// A failed command: what to print and the exit status.
struct Failure {
    message: String,
    status: u8,
}

fn server_failure(names: &[String], e: &ClientError, listing: bool) -> Failure {
    let code = e.pbse().0;
    let trailer = if e.pbse() == pbs_core::Pbse::HOOKERROR {
        "qmgr: hook error returned from server\n".to_string()
    } else {
        format!("qmgr: Error ({code}) returned from server\n")
    };
    let message = format!("qmgr obj={} svr=default: {e}\n{trailer}", names.join(","));
    // OpenPBS exits 1 when a list or print fails, and with the error's low byte otherwise.
    let status = if listing { 1 } else { (code & 0xff) as u8 };
    Failure { message, status }
}

fn execute(client: &mut Client, command: Command, out: &mut String) -> Result<(), Failure> {
    match command.verb {
        Verb::Manage(verb) => client
            .manager(verb, command.object, command.names.clone(), command.attrs)
            .map_err(|e| server_failure(&command.names, &e, false)),
        Verb::List => {
            let reply = client
                .status(status_request(command.object, command.names.clone()))
                .map_err(|e| server_failure(&command.names, &e, true))?;
            format_list(command.object, &reply.objects, &command.attrs, out);
            match reply.errors.last() {
                Some(err) => Err(Failure {
                    message: format!(
                        "qmgr obj={} svr=default: {}\nqmgr: Error ({}) returned from server\n",
                        err.id, err.message, err.code
                    ),
                    status: 1,
                }),
                None => Ok(()),
            }
        }
        Verb::Print => {
            let names = command.names.clone();
            let fail = |e: ClientError| server_failure(&names, &e, true);
            match command.object {
                MgrObject::Server => {
                    let resources = client.status(status_request(MgrObject::Resource, vec![])).map_err(fail)?;
                    let queues = client.status(status_request(MgrObject::Queue, vec![])).map_err(fail)?;
                    let server = client.status(status_request(MgrObject::Server, vec![])).map_err(fail)?;
                    print_resources(&resources.objects, out);
                    print_queues(&queues.objects, out);
                    print_server_attrs(&server.objects, out);
                }
                MgrObject::Queue => {
                    let queues = client.status(status_request(MgrObject::Queue, names.clone())).map_err(fail)?;
                    print_queues(&queues.objects, out);
                }
                MgrObject::Sched => {
                    let scheds = client.status(status_request(MgrObject::Sched, names.clone())).map_err(fail)?;
                    print_scheds(&scheds.objects, out);
                }
                MgrObject::Node => {
                    let nodes = client.status(status_request(MgrObject::Node, names.clone())).map_err(fail)?;
                    print_nodes(&nodes.objects, out);
                }
                MgrObject::Resource => {
                    let resources = client.status(status_request(MgrObject::Resource, names.clone())).map_err(fail)?;
                    print_resources(&resources.objects, out);
                }
                MgrObject::Hook => {
                    let hooks = client.status(status_request(MgrObject::Hook, names.clone())).map_err(fail)?;
                    let mut bodies = Vec::new();
                    for hook in &hooks.objects {
                        let python = export(client, &hook.name, "application/x-python", "base64").map_err(fail)?;
                        let config = export(client, &hook.name, "application/x-config", "base64").map_err(fail)?;
                        bodies.push((python, config));
                    }
                    print_hooks(&hooks.objects, &bodies, out);
                }
            }
            Ok(())
        }
        Verb::Import => {
            let Some(transfer) = &command.transfer else { return Ok(()) };
            let content = match &transfer.file {
                Some(path) => read_hook_file(path)?,
                None => {
                    let mut text = String::new();
                    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                        .map_err(|e| Failure { message: format!("stdin - {e}\n"), status: 1 })?;
                    text
                }
            };
            let request = Request::ImportHook {
                name: command.names.first().cloned().unwrap_or_default(),
                content_type: transfer.content_type.clone(),
                encoding: transfer.encoding.clone(),
                content,
            };
            client.request(request).map(|_| ()).map_err(|e| server_failure(&command.names, &e, false))
        }
        Verb::Export => {
            let Some(transfer) = &command.transfer else { return Ok(()) };
            let name = command.names.first().cloned().unwrap_or_default();
            let text = export(client, &name, &transfer.content_type, &transfer.encoding)
                .map_err(|e| server_failure(&command.names, &e, false))?;
            match &transfer.file {
                Some(path) => std::fs::write(path, text)
                    .map_err(|e| Failure { message: format!("{path} - {}\n", io_reason(&e)), status: 1 })?,
                None => out.push_str(&text),
            }
            Ok(())
        }
        Verb::Help => {
            out.push_str(
                "General syntax: command [object [name[,name...]] [attribute[.resource] OP value[,...]]]\n\
                 Commands: create delete set unset list print help quit\n\
                 Objects: server queue node sched resource hook\n",
            );
            Ok(())
        }
        Verb::Quit => Ok(()),
    }
}

/// A hook file to import, as qmgr reads it: a regular file only.
fn read_hook_file(path: &str) -> Result<String, Failure> {
    let refuse = |reason: String| Failure { message: format!("{path} - {reason}\n"), status: 1 };
    let meta = std::fs::metadata(path).map_err(|e| refuse(io_reason(&e)))?;
    if !meta.is_file() {
        return Err(refuse("Permission denied".into()));
    }
    let bytes = std::fs::read(path).map_err(|e| refuse(io_reason(&e)))?;
    String::from_utf8(bytes).map_err(|_| refuse("not a text file".into()))
}

/// An I/O error as strerror(3) words it, without Rust's `(os error N)`.
fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Runs one line; returns the exit status it produced (0 on success) and whether to stop.
fn run_line(client: &mut Option<Client>, line: &str, args: &Args) -> (u8, bool) {
    if args.echo {
        println!("{line}");
    }
    let command = match parse(line) {
        Ok(Some(c)) => c,
        Ok(None) => return (0, false),
        Err(SyntaxError { position }) => {
            if !args.quiet {
                eprintln!("qmgr: Syntax error\n{line}\n{}^", " ".repeat(position));
            }
            return (4, false);
        }
    };
    if command.verb == Verb::Quit {
        return (0, true);
    }
    if args.no_execute {
        return (0, false);
    }
    if client.is_none() {
        match pbs_cli::connect("qmgr") {
            Ok(c) => *client = Some(c),
            Err(_) => return (3, true),
        }
    }
    let Some(connection) = client.as_mut() else { return (3, true) };
    let mut out = String::new();
    let result = execute(connection, command, &mut out);
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    match result {
        Ok(()) => (0, false),
        Err(Failure { message, status }) => {
            if !args.quiet {
                eprint!("{message}");
            }
            (status, false)
        }
    }
}

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    let args: Args = match pbs_cli::start(USAGE, 1, |a: &Args| a.version) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let mut client: Option<Client> = None;
    if let Some(command) = &args.command {
        let (status, _) = run_line(&mut client, command, &args);
        return ExitCode::from(status);
    }
    let stdin = std::io::stdin();
    let interactive = stdin.is_terminal();
    let mut last = 0;
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            print!("Qmgr: ");
            let _ = std::io::stdout().flush();
        }
        let Some(Ok(line)) = lines.next() else { break };
        let (status, stop) = run_line(&mut client, &line, &args);
        if status != 0 {
            last = status;
            if args.abort {
                break;
            }
        }
        if stop {
            break;
        }
    }
    ExitCode::from(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pbs_proto::Attr;

    fn attr(name: &str, op: MgrOp, value: &str) -> MgrAttr {
        MgrAttr { name: name.into(), op, value: value.into() }
    }

    #[test]
    fn parses_commands_and_abbreviations() {
        let c = parse("set server scheduling=False").unwrap().unwrap();
        assert_eq!(c.verb, Verb::Manage(MgrCommand::Set));
        assert_eq!((c.object, c.names.len()), (MgrObject::Server, 0));
        assert_eq!(c.attrs, vec![attr("scheduling", MgrOp::Set, "False")]);
        let c = parse("s q short queue_type=e, enabled = t,resources_max.walltime=00:10:00").unwrap().unwrap();
        assert_eq!(c.names, vec!["short"]);
        assert_eq!(c.attrs.len(), 3);
        assert_eq!(c.attrs[2], attr("resources_max.walltime", MgrOp::Set, "00:10:00"));
        let c = parse("set sched preempt_order=\"SCR 80 SC 50 S\"").unwrap().unwrap();
        assert_eq!(c.attrs, vec![attr("preempt_order", MgrOp::Set, "SCR 80 SC 50 S")]);
        let c = parse("set server managers += bob@*").unwrap().unwrap();
        assert_eq!(c.attrs, vec![attr("managers", MgrOp::Incr, "bob@*")]);
        // An attribute set again: the last value, sent once (the server takes a name once).
        let c = parse("set server comment = a, scheduling = t, COMMENT = b").unwrap().unwrap();
        assert_eq!(c.attrs, vec![attr("scheduling", MgrOp::Set, "t"), attr("COMMENT", MgrOp::Set, "b")]);
        let c = parse("create resource foo type=long, flag=nh").unwrap().unwrap();
        assert_eq!((c.object, c.names.clone()), (MgrObject::Resource, vec!["foo".to_string()]));
        let c = parse("unset server query_other_jobs").unwrap().unwrap();
        assert_eq!(c.attrs, vec![attr("query_other_jobs", MgrOp::Set, "")]);
        let c = parse("unset server comment, managers").unwrap().unwrap();
        assert_eq!(c.names, Vec::<String>::new());
        assert_eq!(c.attrs, vec![attr("comment", MgrOp::Set, ""), attr("managers", MgrOp::Set, "")]);
        let c = parse("l q workq@vm").unwrap().unwrap();
        assert_eq!((c.verb, c.names.clone()), (Verb::List, vec!["workq".to_string()]));
        assert_eq!(parse("  # comment").unwrap(), None);
        assert_eq!(parse("").unwrap(), None);
    }

    #[test]
    fn syntax_errors_point_where_openpbs_does() {
        assert_eq!(parse("set server nosuchattr=1"), Err(SyntaxError { position: 22 }));
        assert_eq!(parse("bogus server"), Err(SyntaxError { position: 0 }));
        assert_eq!(parse("set nothing a=1"), Err(SyntaxError { position: 4 }));
        assert!(parse("create queue").is_err());
        assert!(parse("set server scheduling").is_err());
        // runlimit_bad_syntax.txt: the caret under the `x`.
        assert_eq!(parse("set server max_run_res.ncpus=[x:PBS_GENERIC=1]"), Err(SyntaxError { position: 30 }));
        assert!(parse("set server max_run=[u:PBS_GENERIC=abc]").is_ok());
        assert!(parse("set queue workq max_run_soft = '[u:PBS_GENERIC=1], [g:staff=2]'").is_ok());
    }

    fn object(name: &str, attrs: &[(&str, &str)]) -> StatusObject {
        StatusObject { name: name.into(), attrs: attrs.iter().map(|(n, v)| Attr::new(*n, *v)).collect() }
    }

    #[test]
    fn list_format() {
        let mut out = String::new();
        format_list(MgrObject::Resource, &[object("set_soft_walltime", &[("type", "long")])], &[], &mut out);
        assert_eq!(out, "Resource set_soft_walltime\n    type = long\n\n");
    }

    #[test]
    fn print_format() {
        let mut out = String::new();
        print_queues(
            &[object(
                "workq",
                &[("queue_type", "Execution"), ("total_jobs", "5"), ("enabled", "True"), ("started", "True")],
            )],
            &mut out,
        );
        print_server_attrs(
            &[object("vm", &[("server_state", "Active"), ("scheduling", "True"), ("resources_default.ncpus", "1")])],
            &mut out,
        );
        assert_eq!(
            out,
            "#\n# Create queues and set their attributes.\n#\n#\n# Create and define queue workq\n#\n\
             create queue workq\nset queue workq queue_type = Execution\nset queue workq enabled = True\n\
             set queue workq started = True\n#\n# Set server attributes.\n#\nset server scheduling = True\n\
             set server resources_default.ncpus = 1\n"
        );
        let mut out = String::new();
        print_scheds(&[object("default", &[("preempt_prio", "express_queue, normal_jobs")])], &mut out);
        assert_eq!(
            out,
            "#\n# Create and define scheduler default\n#\ncreate sched default\n\
             set sched preempt_prio = \"express_queue, normal_jobs\"\n"
        );
    }
}

/// Property tests of the command-line parser: no line makes it panic, and every command,
/// written as qmgr's `print` writes it (values quoted when they hold blanks or commas),
/// parses back to itself.
#[cfg(test)]
mod props {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;
    use proptest::sample::select;

    fn object() -> impl Strategy<Value = MgrObject> {
        select(&[MgrObject::Server, MgrObject::Queue, MgrObject::Node, MgrObject::Sched, MgrObject::Resource][..])
    }

    fn verb() -> impl Strategy<Value = Verb> {
        select(
            &[
                Verb::Manage(MgrCommand::Create),
                Verb::Manage(MgrCommand::Delete),
                Verb::Manage(MgrCommand::Set),
                Verb::Manage(MgrCommand::Unset),
                Verb::List,
            ][..],
        )
    }

    /// A value as `print` writes it: plain, or with blanks and commas inside quotes.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof!["[A-Za-z0-9_.@:/][A-Za-z0-9_.@:/=+-]{0,12}", "[A-Za-z0-9_]{1,4}[ ,][A-Za-z0-9 ,_.@:+-]{0,12}"]
    }

    fn command() -> impl Strategy<Value = Command> {
        (
            verb(),
            object(),
            vec("[a-z][a-z0-9_]{0,8}", 0..3),
            vec((any::<prop::sample::Index>(), 0usize..3, value()), 0..4),
        )
            .prop_map(|(verb, object, names, attrs)| {
                let table = object.kind().attributes();
                let attrs = attrs
                    .into_iter()
                    .map(|(index, op, value)| {
                        let name = table[index.index(table.len())].name.to_string();
                        match verb {
                            Verb::Manage(MgrCommand::Unset) | Verb::List => {
                                MgrAttr { name, op: MgrOp::Set, value: String::new() }
                            }
                            // qmgr checks an entity limit's syntax itself; any value of that
                            // form stands for them all here.
                            _ if pbs_core::entlim::ATTRS.contains(&name.as_str()) => MgrAttr {
                                name,
                                op: [MgrOp::Set, MgrOp::Incr, MgrOp::Decr][op],
                                value: "[u:PBS_GENERIC=1]".into(),
                            },
                            _ => MgrAttr { name, op: [MgrOp::Set, MgrOp::Incr, MgrOp::Decr][op], value },
                        }
                    })
                    .collect();
                // The server is named only rarely, never with the name of one of its attributes.
                let names = if object == MgrObject::Server {
                    names.into_iter().map(|n| format!("srv{n}")).collect()
                } else {
                    names
                };
                Command { verb, object, names, attrs, transfer: None }
            })
            .prop_filter("a command qmgr accepts", |c| {
                let needs_attrs = matches!(c.verb, Verb::Manage(MgrCommand::Set | MgrCommand::Unset));
                let needs_names = matches!(c.verb, Verb::Manage(MgrCommand::Create | MgrCommand::Delete))
                    && c.object != MgrObject::Sched;
                // A bare word after any object but the server is its name.
                let bare_attrs = matches!(c.verb, Verb::Manage(MgrCommand::Unset) | Verb::List) && !c.attrs.is_empty();
                let ambiguous = bare_attrs && c.names.is_empty() && c.object != MgrObject::Server;
                (!needs_attrs || !c.attrs.is_empty()) && (!needs_names || !c.names.is_empty()) && !ambiguous
            })
    }

    /// The line qmgr would read for `command`.
    fn line(command: &Command) -> String {
        let verb = match command.verb {
            Verb::Manage(MgrCommand::Create) => "create",
            Verb::Manage(MgrCommand::Delete) => "delete",
            Verb::Manage(MgrCommand::Set) => "set",
            Verb::Manage(MgrCommand::Unset) => "unset",
            _ => "list",
        };
        let mut out = format!("{verb} {}", command.object.kind().qmgr_name());
        if !command.names.is_empty() {
            out.push(' ');
            out.push_str(&command.names.join(","));
        }
        let attrs: Vec<String> = command
            .attrs
            .iter()
            .map(|a| match (command.verb, a.op) {
                (Verb::Manage(MgrCommand::Unset) | Verb::List, _) => a.name.clone(),
                (_, MgrOp::Set) => format!("{} = {}", a.name, print_value(&a.value)),
                (_, MgrOp::Incr) => format!("{} += {}", a.name, print_value(&a.value)),
                (_, MgrOp::Decr) => format!("{} -= {}", a.name, print_value(&a.value)),
            })
            .collect();
        if !attrs.is_empty() {
            out.push(' ');
            out.push_str(&attrs.join(", "));
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn no_line_panics(text in prop_oneof![
            "\\PC{0,80}",
            "(c|s|u|d|l|p|set|list) (s|q|n|sched|r|h|server|queue) [a-z ,=+\"'#@.\\-]{0,40}",
            vec(any::<char>(), 0..40).prop_map(|c| c.into_iter().collect::<String>()),
        ]) {
            if let Ok(Some(command)) = parse(&text) {
                prop_assert!(command.attrs.iter().all(|a| !a.name.is_empty()));
            }
        }

        #[test]
        fn printed_commands_parse_back(command in command()) {
            let text = line(&command);
            let parsed = parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e:?}")))?;
            // An attribute set (or named) again replaces what came before it in the line.
            let replaces = matches!(command.verb, Verb::Manage(MgrCommand::Unset) | Verb::List);
            let mut expected = command;
            let mut attrs: Vec<MgrAttr> = Vec::new();
            for attr in std::mem::take(&mut expected.attrs) {
                if replaces || attr.op == MgrOp::Set {
                    attrs.retain(|earlier| !earlier.name.eq_ignore_ascii_case(&attr.name));
                }
                attrs.push(attr);
            }
            expected.attrs = attrs;
            prop_assert_eq!(parsed, Some(expected), "{}", text);
        }
    }
}
