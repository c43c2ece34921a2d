//! `qstat`: status of jobs (default table, alternate table `-a`/`-n`/`-s`..., full `-f`,
//! `-F json|dsv`), of queues (`-Q`, `-q`) and of the server (`-B`), in OpenPBS's formats.
//!
//! Operands are handled one after the other as OpenPBS does (errors per operand, the exit
//! status of the last failure), except that consecutive job ids go to the server in one
//! request. Output goes through one buffer written to stdout in large pieces.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

#[path = "qstat/full.rs"]
mod full;
#[path = "qstat/jobs.rs"]
mod jobs;
#[path = "qstat/json.rs"]
mod json;
#[path = "qstat/options.rs"]
mod options;
#[path = "qstat/queues.rs"]
mod queues;
#[path = "qstat/text.rs"]
mod text;

use std::io::Write as _;
use std::process::ExitCode;

use pbs_client::{Client, ClientError, StatusReply};
use pbs_core::{JobId, Pbse};
use pbs_proto::{IdError, Request, StatusObject};

use crate::full::Kind;
use crate::jobs::{AltOptions, Header, Layout};
use crate::options::{Format, Mode, Options, Stop};

/// The version reported by `--version` and in JSON output.
const VERSION: &str = env!("CARGO_PKG_VERSION");

pbs_cli::command_main!(command);

fn command() -> ExitCode {
    pbs_cli::reset_sigpipe();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let options = match options::parse(&argv) {
        Ok(options) => options,
        Err(Stop::Version) => {
            println!("pbs_version = {VERSION}");
            return ExitCode::SUCCESS;
        }
        Err(Stop::Usage(text)) => {
            eprint!("{text}");
            return ExitCode::from(2);
        }
    };
    let mut session = Session::new(now());
    let status = match options.mode {
        Mode::Jobs => session.jobs(&options),
        Mode::Queues => session.queues(&options),
        Mode::Servers => session.servers(&options),
    };
    session.spill(0);
    std::mem::forget(session);
    // OpenPBS does not count "history is not enabled" as a failure.
    if status == Pbse::JOBHISTNOTSET.0 { ExitCode::SUCCESS } else { pbs_cli::exit_code(status) }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Output is written out whenever this much has been gathered.
const SPILL_AT: usize = 1 << 17;

/// Objects formatted between two looks at the output's size.
const CHUNK: usize = 64;

/// Why processing of the operands stopped early.
enum Halt {
    /// No connection (the message is printed): exit with this status.
    NoServer(u32),
    /// `Unauthorized Request`: OpenPBS stops at the first one.
    Perm,
}

/// One qstat run: the connection (made when first needed), the output so far and the
/// status of the last failure.
struct Session {
    client: Option<Client>,
    out: Vec<u8>,
    /// OpenPBS's `any_failed`: the last error code (1 for malformed operands).
    failed: u32,
    now: i64,
}

impl Session {
    fn new(now: i64) -> Session {
        Session { client: None, out: Vec::with_capacity(SPILL_AT + (1 << 16)), failed: 0, now }
    }

    /// Writes the output gathered so far once it passes `threshold` bytes, so that big
    /// listings stream through a buffer of bounded size.
    fn spill(&mut self, threshold: usize) {
        if self.out.len() >= threshold && !self.out.is_empty() {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(&self.out);
            let _ = stdout.flush();
            self.out.clear();
        }
    }

    fn client(&mut self) -> Result<&mut Client, Halt> {
        if self.client.is_none() {
            match pbs_cli::connect("qstat") {
                Ok(client) => self.client = Some(client),
                Err(_) => return Err(Halt::NoServer(Pbse::NOSERVER.0)),
            }
        }
        self.client.as_mut().ok_or(Halt::NoServer(Pbse::NOSERVER.0))
    }

    /// The server name (suffix of job ids), from the connection.
    fn server_name(&mut self) -> Result<String, Halt> {
        Ok(self.client()?.server_name().to_string())
    }

    /// The default server's name without connecting, for JSON output when nothing needed a
    /// connection.
    fn default_server(&mut self) -> String {
        if let Some(client) = self.client.as_mut() {
            return client.server_name().to_string();
        }
        pbs_cli::load_conf().ok().and_then(|c| c.server).unwrap_or_else(pbs_cli::local_host_name)
    }

    /// Sends a status request; a failure of the whole request is reported as OpenPBS does
    /// for the operand (`qstat: <message> <operand>`).
    fn status(&mut self, request: Request, operand: &str) -> Result<Option<StatusReply>, Halt> {
        let client = self.client()?;
        match client.status(request) {
            Ok(reply) => Ok(Some(reply)),
            Err(ClientError::Server { code, message }) => {
                eprintln!("qstat: {message} {operand}");
                self.failed = code.0;
                if code == Pbse::PERM { Err(Halt::Perm) } else { Ok(None) }
            }
            Err(e) => {
                eprintln!("qstat: {e}");
                Err(Halt::NoServer(e.pbse().0))
            }
        }
    }

    // ---- jobs ----

    fn jobs(&mut self, options: &Options) -> u32 {
        let mut listing = JobListing::new(options);
        if let Err(Halt::NoServer(code)) = self.job_operands(options, &mut listing) {
            self.failed = code;
        }
        self.show_jobs(options, listing);
        self.failed
    }

    fn job_operands(&mut self, options: &Options, listing: &mut JobListing) -> Result<(), Halt> {
        if options.operands.is_empty() {
            return self.job_query(options, listing, Query::All);
        }
        let mut operands = options.operands.clone();
        if options.sort_ids {
            if operands.iter().any(|o| !is_job_id(o)) {
                eprintln!("qstat: Express option can only be used with job ids");
                self.failed = 1;
                return Ok(());
            }
            operands.sort_by_key(|o| sort_key(o));
        }
        let mut batch: Vec<String> = Vec::new();
        for operand in &operands {
            if is_job_id(operand) {
                let Some((id, at_server)) = split_job_operand(operand) else {
                    self.flush_ids(options, listing, &mut batch)?;
                    eprintln!("qstat: illegally formed job identifier: {operand}");
                    self.failed = 1;
                    continue;
                };
                let server = match at_server {
                    Some(server) => server.to_string(),
                    None => self.server_name()?,
                };
                batch.push(id.with_server(&server).to_string());
                continue;
            }
            self.flush_ids(options, listing, &mut batch)?;
            match parse_destination(operand) {
                Some(("", _server)) => self.job_query(options, listing, Query::All)?,
                Some((queue, _server)) => self.job_query(options, listing, Query::Queue(queue.to_string()))?,
                None => {
                    eprintln!("qstat: illegally formed destination: {operand}");
                    self.failed = 1;
                }
            }
        }
        self.flush_ids(options, listing, &mut batch)
    }

    fn flush_ids(&mut self, options: &Options, listing: &mut JobListing, batch: &mut Vec<String>) -> Result<(), Halt> {
        if batch.is_empty() {
            return Ok(());
        }
        let ids = std::mem::take(batch);
        self.job_query(options, listing, Query::Ids(ids))
    }

    /// One status request for jobs and what comes of it: rows kept for display, errors
    /// printed.
    fn job_query(&mut self, options: &Options, listing: &mut JobListing, query: Query) -> Result<(), Halt> {
        if listing.header.is_none() && listing.needs_server_header {
            let request = Request::StatusServer { attrs: vec!["comment".into(), "max_job_sequence_id".into()] };
            let server = match self.client()?.status(request) {
                Ok(reply) => reply.objects.into_iter().next(),
                Err(e) => {
                    // OpenPBS gives up on the operand when the server cannot be queried.
                    eprintln!("qstat: {e}");
                    self.failed = e.pbse().0;
                    return Ok(());
                }
            };
            listing.header = Some(ServerHeader {
                name: self.server_name()?,
                comment: server.as_ref().and_then(|s| s.get("comment")).map(String::from),
                incr: server
                    .as_ref()
                    .and_then(|s| s.get("max_job_sequence_id"))
                    .and_then(|v| v.parse::<u64>().ok())
                    .is_some_and(|max| max > 9_999_999),
            });
        }
        let selecting = !matches!(query, Query::Ids(_));
        let attrs = request_attrs(options, selecting);
        let (ids, queues, operand) = match &query {
            Query::All => (Vec::new(), Vec::new(), String::new()),
            Query::Queue(queue) => (Vec::new(), vec![queue.clone()], queue.clone()),
            Query::Ids(ids) => (ids.clone(), Vec::new(), String::new()),
        };
        let request =
            Request::StatusJob { ids: ids.clone(), queues, attrs, history: options.history, subjobs: options.subjobs };
        let Some(reply) = self.status(request, &operand)? else {
            listing.first_done = true;
            return Ok(());
        };
        let StatusReply { mut objects, mut errors } = reply;
        let mut halt = None;
        if let Some(perm_at) = errors.iter().position(|e| e.code == Pbse::PERM.0) {
            // OpenPBS stops at the first operand it may not see: drop what came after it.
            let perm_operand = ids.iter().position(|id| *id == errors[perm_at].id).unwrap_or(ids.len());
            let owners = operand_of_each(&objects, &ids);
            objects = objects.into_iter().zip(owners).filter(|(_, k)| *k < perm_operand).map(|(o, _)| o).collect();
            errors.truncate(perm_at + 1);
            halt = Some(Halt::Perm);
        }
        for error in &errors {
            self.report(error);
        }
        if selecting {
            objects.retain(|job| listing.filter.keeps(job));
        }
        if let Some(wanted) = &listing.strip_to {
            for job in &mut objects {
                job.attrs.retain(|a| attr_wanted(wanted, &a.0));
            }
        }
        if !listing.first_done {
            listing.first_done = true;
            let first_failed = match &query {
                Query::Ids(ids) => errors.iter().any(|e| ids.first() == Some(&e.id)),
                _ => false,
            };
            listing.print_header = !objects.is_empty() && !first_failed;
        }
        if options.alt.t && options.alternate_jobs() {
            objects = jobs::sort_by_estimate(objects, self.now);
        }
        listing.jobs.extend(objects);
        match halt {
            Some(halt) => Err(halt),
            None => Ok(()),
        }
    }

    /// Prints a per-job error the way qstat does and remembers its code.
    fn report(&mut self, error: &IdError) {
        eprintln!("{}", error_line(error));
        self.failed = error.code;
    }

    fn show_jobs(&mut self, options: &Options, listing: JobListing) {
        let JobListing { jobs, header, print_header, .. } = listing;
        let header = header.unwrap_or_default();
        let layout = Layout { wide: options.wide, incr: header.incr };
        let mut json_jobs = false;
        if options.alternate_jobs() {
            let alt = AltOptions {
                layout,
                nodes: options.alt.n,
                comments: options.alt.s,
                one_line: options.alt.one_line,
                estimated: options.alt.t,
                unit: options.alt.unit(),
            };
            if print_header {
                jobs::alt_header(
                    &mut self.out,
                    Header { server: &header.name, comment: header.comment.as_deref() },
                    alt,
                );
            }
            for chunk in jobs.chunks(CHUNK) {
                jobs::alt_rows(&mut self.out, chunk, alt, self.now);
                self.spill(SPILL_AT);
            }
        } else if !options.full {
            if print_header && options.format == Format::Default {
                jobs::default_header(&mut self.out, layout, options.percent, header.comment.as_deref());
            }
            for chunk in jobs.chunks(CHUNK) {
                jobs::default_rows(&mut self.out, chunk, layout, options.percent);
                self.spill(SPILL_AT);
            }
        } else if options.format == Format::Json {
            json_jobs = true;
        } else {
            for chunk in jobs.chunks(CHUNK) {
                match options.format {
                    Format::Dsv => full::dsv(&mut self.out, Kind::Job, chunk, &options.delimiter),
                    _ => full::text(&mut self.out, Kind::Job, chunk, options.wide),
                }
                self.spill(SPILL_AT);
            }
        }
        if options.format == Format::Json {
            self.json("Jobs", Kind::Job, json_jobs.then_some(&jobs[..]));
        }
        // Freeing tens of thousands of small strings just before exiting is wasted time.
        std::mem::forget(jobs);
    }

    fn json(&mut self, key: &str, kind: Kind, objects: Option<&[StatusObject]>) {
        let server = self.default_server();
        let value_of = |name: &str, value: &str| full::shown_value(kind, name, value).into_owned();
        json::prologue(&mut self.out, self.now, VERSION, &server);
        if let Some(objects) = objects.filter(|o| !o.is_empty()) {
            json::section_start(&mut self.out, key);
            for (i, object) in objects.iter().enumerate() {
                json::member(&mut self.out, object, i == 0, &value_of);
                self.spill(SPILL_AT);
            }
            json::section_end(&mut self.out);
        }
        json::epilogue(&mut self.out);
    }

    // ---- queues and servers ----

    fn queues(&mut self, options: &Options) -> u32 {
        // Each operand names a queue (`queue`, `queue@server`; `@server` for all of them);
        // `None` marks a malformed one.
        let targets: Vec<Option<String>> = if options.operands.is_empty() {
            vec![Some(String::new())]
        } else {
            options.operands.iter().map(|o| parse_destination(o).map(|(queue, _)| queue.to_string())).collect()
        };
        let mut state = ObjectListing::default();
        for target in targets {
            let Some(name) = target else {
                eprintln!("qstat: illegal 'destination' value");
                self.failed = 1;
                continue;
            };
            let names = if name.is_empty() { Vec::new() } else { vec![name.clone()] };
            let reply = match self.status(Request::StatusQueue { names, attrs: Vec::new() }, &name) {
                Ok(Some(reply)) => reply,
                Ok(None) => continue,
                Err(Halt::Perm) => break,
                Err(Halt::NoServer(code)) => {
                    self.failed = code;
                    break;
                }
            };
            if reply.objects.is_empty() {
                continue;
            }
            if options.alt.q {
                let server = self.server_name().unwrap_or_default();
                queues::queue_limits(&mut self.out, &server, &reply.objects, options.alt.unit());
            } else {
                state.show(&mut self.out, options, Kind::Queue, reply.objects);
            }
        }
        if options.format == Format::Json {
            self.json("Queue", Kind::Queue, Some(&state.json));
        }
        self.failed
    }

    fn servers(&mut self, options: &Options) -> u32 {
        let targets: Vec<String> =
            if options.operands.is_empty() { vec![String::new()] } else { options.operands.clone() };
        let mut state = ObjectListing::default();
        for target in targets {
            let reply = match self.status(Request::StatusServer { attrs: Vec::new() }, &target) {
                Ok(Some(reply)) => reply,
                Ok(None) => continue,
                Err(Halt::Perm) => break,
                Err(Halt::NoServer(code)) => {
                    self.failed = code;
                    break;
                }
            };
            if !reply.objects.is_empty() {
                state.show(&mut self.out, options, Kind::Server, reply.objects);
            }
        }
        if options.format == Format::Json {
            self.json("Server", Kind::Server, Some(&state.json));
        }
        self.failed
    }
}

/// Queue or server objects shown so far: the header goes above the first table.
#[derive(Default)]
struct ObjectListing {
    header_done: bool,
    json: Vec<StatusObject>,
}

impl ObjectListing {
    fn show(&mut self, out: &mut Vec<u8>, options: &Options, kind: Kind, objects: Vec<StatusObject>) {
        if !options.full && !self.header_done && options.format == Format::Default {
            if kind == Kind::Queue {
                queues::queue_header(out);
            } else {
                queues::server_header(out);
            }
        }
        self.header_done = true;
        match (options.full, options.format) {
            (false, _) if kind == Kind::Queue => queues::queue_rows(out, &objects),
            (false, _) => queues::server_rows(out, &objects),
            (true, Format::Default) => full::text(out, kind, &objects, options.wide),
            (true, Format::Dsv) => full::dsv(out, kind, &objects, &options.delimiter),
            (true, Format::Json) => self.json.extend(objects),
        }
    }
}

/// What one job status request covers.
enum Query {
    /// Every job (no operand, or `@server`).
    All,
    /// The jobs of a queue.
    Queue(String),
    /// Jobs named by id (full form).
    Ids(Vec<String>),
}

/// The server's details the job tables use.
#[derive(Default)]
struct ServerHeader {
    name: String,
    comment: Option<String>,
    /// `max_job_sequence_id` above 9999999: wider id columns.
    incr: bool,
}

/// Jobs gathered over all operands, and what decides the header.
struct JobListing {
    jobs: Vec<StatusObject>,
    /// Fetched before the first job request when a table is shown.
    header: Option<ServerHeader>,
    needs_server_header: bool,
    /// The first request has been answered.
    first_done: bool,
    /// OpenPBS prints the header only with the first operand's jobs: if that operand has
    /// none, later ones are listed without it.
    print_header: bool,
    filter: Filter,
    /// Attributes outside the display's request, added for filtering, to drop again.
    strip_to: Option<Vec<&'static str>>,
}

impl JobListing {
    fn new(options: &Options) -> JobListing {
        let table = options.alternate_jobs() || !options.full;
        let filter = Filter::new(options);
        let strip_to = match &options.attrs {
            Some(list) if options.full && filter.extra_attrs().iter().any(|a| !attr_wanted(list, a)) => {
                Some(list.clone())
            }
            _ => None,
        };
        JobListing {
            jobs: Vec::new(),
            header: None,
            needs_server_header: table,
            first_done: false,
            print_header: false,
            filter,
            strip_to,
        }
    }
}

/// The selection OpenPBS asks the server for when operands are not job ids (`-i`, `-r`,
/// `-H`, `-u`, `-J`), applied here to the listed jobs.
struct Filter {
    states: Vec<&'static str>,
    users: Vec<Vec<String>>,
    arrays_only: bool,
    subjobs: bool,
}

impl Filter {
    fn new(options: &Options) -> Filter {
        Filter {
            states: options.states.clone(),
            users: options
                .users
                .iter()
                .map(|list| list.split(',').map(|u| u.trim().to_string()).filter(|u| !u.is_empty()).collect())
                .collect(),
            arrays_only: options.arrays_only,
            subjobs: options.subjobs,
        }
    }

    /// Attributes the filter reads.
    fn extra_attrs(&self) -> Vec<&'static str> {
        let mut attrs = Vec::new();
        if !self.states.is_empty() {
            attrs.push("job_state");
        }
        if !self.users.is_empty() {
            attrs.push("Job_Owner");
        }
        attrs
    }

    fn keeps(&self, job: &StatusObject) -> bool {
        let kind = array_kind(&job.name);
        if !self.subjobs && kind == ArrayKind::Subjob {
            return false;
        }
        if self.arrays_only {
            // `-J` lists array parents; with `-t`, their subjobs only.
            let wanted = if self.subjobs { ArrayKind::Subjob } else { ArrayKind::Parent };
            if kind != wanted {
                return false;
            }
        }
        let state = job.get("job_state").and_then(|s| s.chars().next());
        if !self.states.iter().all(|set| state.is_some_and(|s| set.contains(s))) {
            return false;
        }
        let owner = job.get("Job_Owner").unwrap_or("");
        self.users.iter().all(|list| list.iter().any(|entry| owner_matches(owner, entry)))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArrayKind {
    Plain,
    Parent,
    Subjob,
}

fn array_kind(id: &str) -> ArrayKind {
    let head = id.split('.').next().unwrap_or(id);
    match head.split_once('[') {
        None => ArrayKind::Plain,
        Some((_, "]")) => ArrayKind::Parent,
        Some(_) => ArrayKind::Subjob,
    }
}

/// `-u` entries: `user` matches the owner's user name, `user@host` also the host (a
/// leading `*` matching any host prefix).
fn owner_matches(owner: &str, entry: &str) -> bool {
    let (user, host) = owner.split_once('@').unwrap_or((owner, ""));
    match entry.split_once('@') {
        None => user == entry,
        Some((want_user, want_host)) => {
            user == want_user
                && match want_host.strip_prefix('*') {
                    Some(suffix) => host.ends_with(suffix),
                    None => host.eq_ignore_ascii_case(want_host),
                }
        }
    }
}

/// The attributes a job request names: the display's list plus what the filter reads
/// (selection requests only); empty for all. Tables read only a few resources, so for them
/// `resources_used` and `Resource_List` are narrowed to those: less for the server to send.
fn request_attrs(options: &Options, selecting: bool) -> Vec<String> {
    let Some(list) = &options.attrs else { return Vec::new() };
    let table = options.alternate_jobs() || !options.full;
    let mut attrs: Vec<String> = Vec::with_capacity(list.len() + 8);
    for name in list {
        match *name {
            "resources_used" if table => attrs.extend(TABLE_USED.iter().map(|r| r.to_string())),
            "Resource_List" if table => attrs.extend(TABLE_REQUESTED.iter().map(|r| r.to_string())),
            other => attrs.push(other.to_string()),
        }
    }
    if selecting {
        for extra in Filter::new(options).extra_attrs() {
            if !attr_wanted(list, extra) {
                attrs.push(extra.to_string());
            }
        }
    }
    attrs
}

/// The used resources the job tables show.
const TABLE_USED: &[&str] = &["resources_used.cput", "resources_used.walltime"];
/// The requested resources the job tables show.
const TABLE_REQUESTED: &[&str] = &[
    "Resource_List.nodect",
    "Resource_List.ncpus",
    "Resource_List.mppe",
    "Resource_List.mem",
    "Resource_List.walltime",
    "Resource_List.cput",
];

/// Whether an attribute request list (base or full names) covers `name`.
fn attr_wanted(list: &[&str], name: &str) -> bool {
    let base = name.split('.').next().unwrap_or(name);
    list.iter().any(|w| *w == name || *w == base)
}

/// For each object, the index of the requested id it answers (by sequence number, in
/// order, as the server answers ids in the order given).
fn operand_of_each(objects: &[StatusObject], ids: &[String]) -> Vec<usize> {
    let seq = |s: &str| s.bytes().take_while(u8::is_ascii_digit).collect::<Vec<u8>>();
    let mut at = 0;
    objects
        .iter()
        .map(|object| {
            let wanted = seq(&object.name);
            while at < ids.len() && seq(&ids[at]) != wanted {
                at += 1;
            }
            at
        })
        .collect()
}

/// The line qstat prints for a job the server could not report: `prt_job_err`'s form, or
/// the hint to use `-x` for a finished job.
fn error_line(error: &IdError) -> String {
    if error.code == Pbse::HISTJOBID.0 {
        format!("qstat: {} {}, use -x or -H to obtain historical job information", error.id, error.message)
    } else if error.message.is_empty() {
        format!("qstat: Server returned error {} for job {}", error.code, error.id)
    } else {
        format!("qstat: {} {}", error.message, error.id)
    }
}

/// OpenPBS's `pbs_isjobid`: an operand starting with a digit is a job id.
fn is_job_id(operand: &str) -> bool {
    operand.trim_start_matches(' ').starts_with(|c: char| c.is_ascii_digit())
}

/// `12`, `12.server`, `12[].server`, `12@server`: the id and the `@server` part.
fn split_job_operand(operand: &str) -> Option<(JobId, Option<&str>)> {
    let (id, server) = match operand.split_once('@') {
        Some((id, server)) if !server.is_empty() => (id, Some(server)),
        Some(_) => return None,
        None => (operand, None),
    };
    let id: JobId = id.trim_start_matches(' ').parse().ok()?;
    Some((id, server))
}

/// `-E` order: by server, sequence number, then array index.
fn sort_key(operand: &str) -> (String, i64, i64) {
    let (id, at_server) = operand.split_once('@').unwrap_or((operand, ""));
    let (head, server) = id.split_once('.').unwrap_or((id, at_server));
    let (seq, index) = head.split_once('[').unwrap_or((head, ""));
    (server.to_string(), pbs_core::cnum::atol(seq), pbs_core::cnum::atol(index))
}

/// `queue`, `queue@server`, `@server` -> (queue, server); `None` if malformed.
fn parse_destination(operand: &str) -> Option<(&str, Option<&str>)> {
    let (queue, server) = match operand.split_once('@') {
        Some((queue, server)) => (queue, Some(server)),
        None => (operand, None),
    };
    let bad = |s: &str, max: usize| s.len() > max || s.contains(char::is_whitespace);
    if bad(queue, 15) || server.is_some_and(|s| bad(s, 255)) {
        return None;
    }
    Some((queue, server))
}

#[cfg(test)]
#[path = "qstat/tests.rs"]
mod tests;
