//! What the fuzzer sends: a seeded generator of hostile values, job ids, attributes, every
//! request kind with random fields, and byte-level mutations of frames.

use pbs_core::ObjectKind;
use pbs_proto::{
    Attr, CompareOp, Criterion, Hello, MgrAttr, MgrCommand, MgrObject, MgrOp, PROTOCOL_VERSION, Request, RequestFrame,
    Role,
};
use serde_json::{Value, json};

/// SplitMix64: small, fast, and the same sequence for the same seed on every machine.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator for one part of a run (a burst), independent of how much earlier parts
    /// drew, so a failing burst can be replayed from its number alone.
    pub(crate) fn derive(seed: u64, stream: u64, index: u64) -> Rng {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        rng.0 ^= index.wrapping_mul(0xD1B5_4A32_D192_ED03);
        rng.next();
        rng
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`0` when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    pub(crate) fn index(&mut self, len: usize) -> usize {
        usize::try_from(self.below(len as u64)).unwrap_or(0)
    }

    /// True with probability `percent`/100.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// `min` to `min + spread - 1` random bytes.
    pub(crate) fn noise(&mut self, min: usize, spread: usize) -> Vec<u8> {
        let len = min + self.index(spread);
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Values that have broken parsers somewhere: overflows, huge ranges, separators, control
/// characters, forged log lines, paths.
const NASTY: &[&str] = &[
    "",
    " ",
    "0",
    "-1",
    "-0",
    "1e308",
    "NaN",
    "inf",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "2147483648",
    "-9223372036854775809",
    "1[0-99999999999]",
    "1[0-99999999999:1]",
    "1[]",
    "[]",
    "1[",
    "1]",
    "0-99999999999",
    "0-99999999999:1",
    "1-0",
    "5-5:0",
    "1-99999999999%99999999999",
    "99999999:99:99",
    "1:2:3:4",
    "00:00:00.99999999999999999999",
    "99999999999999999999pb",
    "18446744073709551615pw",
    "1:ncpus=99999999999",
    "99999999999:ncpus=1",
    "4294967295:ncpus=4294967295:mem=18446744073709551615pb",
    "ncpus=1+",
    "+",
    ":",
    "=",
    "==",
    "a=b=c",
    "scatter:excl:excl",
    "group=",
    "(",
    "()",
    "(n1:ncpus=1",
    "(n1:ncpus=1)+(",
    "u,o,s,n,p",
    "uuuuuuuuuuuuuuuu",
    "SIGKILL",
    "suspend",
    "resume",
    "-9",
    "99999",
    "KILL",
    "root",
    "root@*",
    "nobody@localhost",
    "@",
    "@@@",
    "workq@",
    "%s%s%s%n",
    "../../../../etc/shadow",
    "/etc/passwd",
    "$(touch /tmp/pbs_fuzz_pwned)",
    "`id`",
    "\n01/01/2026 00:00:00;0001;Server@forged;Job;1.forged;forged line",
    "\r\n\r\n",
    "\0",
    "a\0b",
    "\u{202e}gnp.exe",
    "\u{feff}",
    "\u{10ffff}",
    "ü✓😀",
    "True",
    "False",
    "t",
    "y",
    "afterok:1",
    "afterok:1[]:2[0-99999999999]",
    "before:999999999999",
    "oe",
    "eo",
    "n",
];

const RESOURCES: &[&str] = &[
    "ncpus",
    "mpiprocs",
    "ompthreads",
    "mem",
    "vmem",
    "walltime",
    "cput",
    "select",
    "place",
    "nodect",
    "soft_walltime",
    "min_walltime",
    "max_walltime",
    "host",
    "arch",
    "ngpus",
    "nosuchresource",
    "",
    ".",
    "ncpus.ncpus",
];

/// Everything the fuzzer generates and the ids it has seen.
pub(crate) struct Gen {
    pub(crate) rng: Rng,
    /// Jobs someone else owns: targets for changes that must fail.
    pub(crate) protected: Vec<String>,
    /// Jobs this peer created (and may change).
    pub(crate) own: Vec<String>,
    pub(crate) server_name: String,
    /// The peer is a manager (root): object names are kept to its own `fz` objects so that
    /// what it changes can be undone.
    pub(crate) manager: bool,
    /// Huge strings the current request may still hold.
    pub(crate) huge_left: u32,
}

impl Gen {
    /// A hostile string: a nasty value, noise, a valid-looking value, or a huge one.
    pub(crate) fn string(&mut self) -> String {
        match self.rng.below(100) {
            0..=39 => self.rng.pick(NASTY).to_string(),
            40..=54 => {
                let len = self.rng.index(40);
                (0..len).map(|_| char::from(b' ' + self.rng.below(95) as u8)).collect()
            }
            55..=64 => {
                let len = self.rng.index(20);
                (0..len).filter_map(|_| char::from_u32(self.rng.below(0x11_0000) as u32)).collect()
            }
            65..=74 => self.job_id(),
            75..=84 => format!("{}", self.rng.next() >> self.rng.below(64)),
            85..=96 => {
                let word = self.rng.pick(&["fz", "a,b", "x y", "1:ncpus=1", "ok"]).to_string();
                let times = 1 + self.rng.index(2000);
                let sep = self.rng.pick(&[",", "+", ":", " ", ""]).to_string();
                vec![word; times].join(&sep)
            }
            _ => self.huge(),
        }
    }

    /// A string of 64 KiB to 4 MiB: the request limit is 16 MiB, so these arrive (one per
    /// request: more would mostly make frames the server refuses unread).
    fn huge(&mut self) -> String {
        if self.huge_left == 0 {
            return self.rng.pick(NASTY).to_string();
        }
        self.huge_left -= 1;
        let len = (64 * 1024) << self.rng.below(7);
        let unit = self.rng.pick(&["A", "1[", "(", ",", "é", "\\\""]).to_string();
        unit.repeat(len / unit.len())
    }

    /// A job id: one of the protected or own jobs, a made-up one, or a hostile one, in any
    /// of the forms users may type.
    pub(crate) fn job_id(&mut self) -> String {
        let base = match self.rng.below(10) {
            0..=3 if !self.protected.is_empty() => self.rng.pick(&self.protected).clone(),
            4..=5 if !self.own.is_empty() => self.rng.pick(&self.own).clone(),
            6 => return self.rng.pick(NASTY).to_string(),
            _ => format!("{}.{}", self.rng.below(200), self.server_name),
        };
        let seq = base.split(['.', '[']).next().unwrap_or("0").to_string();
        let server = base.split_once('.').map(|(_, s)| s.to_string()).unwrap_or_default();
        let array = match self.rng.below(14) {
            0 => "[]".to_string(),
            1 => format!("[{}]", self.rng.below(100)),
            2 => "[0-99999999999]".to_string(),
            12 => "[0-9999999999]".to_string(),
            13 => format!("[{}-4294967295:{}]", self.rng.below(10), 1 + self.rng.below(3)),
            3 => format!("[1-{}:{}]", self.rng.next() >> self.rng.below(64), 1 + self.rng.below(5)),
            4 => "[99999999999999999999]".to_string(),
            5 => format!("[{}-{}]", self.rng.below(10), self.rng.below(10)),
            _ => return if self.rng.chance(20) { seq } else { base },
        };
        if server.is_empty() || self.rng.chance(30) {
            format!("{seq}{array}")
        } else {
            format!("{seq}{array}.{server}")
        }
    }

    fn ids(&mut self) -> Vec<String> {
        match self.rng.below(20) {
            0 => vec![],
            1 => (0..self.rng.index(20_000)).map(|i| format!("{i}")).collect(),
            // One id, or a few, named thousands of times (around the per-request cap).
            2 => {
                let few: Vec<String> = (0..1 + self.rng.index(3)).map(|_| self.job_id()).collect();
                let count = 4000 + self.rng.index(200);
                few.iter().cycle().take(count).cloned().collect()
            }
            _ => (0..1 + self.rng.index(4)).map(|_| self.job_id()).collect(),
        }
    }

    fn attr_name(&mut self, kind: ObjectKind) -> String {
        match self.rng.below(10) {
            0..=5 => self.rng.pick(kind.attributes()).name.to_string(),
            6..=7 => {
                let base =
                    self.rng.pick(&["Resource_List", "resources_used", "resources_available", "resources_default"]);
                format!("{base}.{}", self.rng.pick(RESOURCES))
            }
            _ => self.string(),
        }
    }

    fn value_for(&mut self, name: &str) -> String {
        if self.rng.chance(60) {
            return self.string();
        }
        let plausible: &[&str] = match name.rsplit('.').next().unwrap_or(name) {
            "walltime" | "cput" | "soft_walltime" | "min_walltime" | "max_walltime" => {
                &["00:00:01", "99999:00:00", "-1", "1:2:3:4"]
            }
            "mem" | "vmem" => &["1gb", "18446744073709551615b", "1xb", "-1kb"],
            "select" => &[
                "1:ncpus=1",
                "2:ncpus=99999999",
                "0:ncpus=1",
                "1:ncpus=1:ncpus=2",
                // Counts that once sized the server's and the scheduler's work.
                "4000000000:ncpus=0",
                "4294967295:ncpus=0+4294967295:ncpus=0",
                "1:ncpus=1:mpiprocs=2000000000",
                "2:ncpus=1:mpiprocs=9223372036854775807:ompthreads=4294967296",
                "2:mem=4096pb",
                "3:mem=8192pb:vmem=8192pb",
            ],
            "place" => &["scatter:excl", "pack:free", "group=host", "vscatter:excl", "scatter:group=host:excl"],
            "run_count" => &["4294967295", "18446744073709551615", "9223372036854775807"],
            "Hold_Types" => &["u", "o", "s", "uos", "n", "p"],
            "Priority" => &["1023", "-1024", "1024", "99999999999"],
            "array_indices_submitted" => &["0-99999999999", "1-10", "1-100000:1", "0-4294967296"],
            "Variable_List" => &["A=1,B=2", "PBS_O_HOME=/root", "="],
            "Job_Owner" | "euser" | "egroup" => &["root@localhost", "root", "nobody"],
            "depend" => &["afterok:1", "afterany:99999999999", "before:1[]"],
            _ => &["True", "1", "x"],
        };
        self.rng.pick(plausible).to_string()
    }

    fn attrs(&mut self, kind: ObjectKind) -> Vec<Attr> {
        let count = if self.rng.chance(3) { self.rng.index(5000) } else { self.rng.index(6) };
        let mut attrs: Vec<Attr> = (0..count)
            .map(|_| {
                let name = self.attr_name(kind);
                let value = self.value_for(&name);
                Attr(name, value)
            })
            .collect();
        // The same name again, as it is or in another spelling, with another value: the
        // server must refuse it before a hook or a check reads either.
        if !attrs.is_empty() && self.rng.chance(15) {
            let Attr(name, _) = attrs[self.rng.index(attrs.len())].clone();
            let name = if self.rng.chance(50) { self.respelled(&name) } else { name };
            let value = self.value_for(&name);
            let at = self.rng.index(attrs.len() + 1);
            attrs.insert(at, Attr(name, value));
        } else if !attrs.is_empty() && self.rng.chance(10) {
            let at = self.rng.index(attrs.len());
            attrs[at].0 = self.respelled(&attrs[at].0.clone());
        }
        if kind == ObjectKind::Job && self.rng.chance(5) {
            attrs.push(Attr("depend".into(), self.long_dependency_list()));
        }
        attrs
    }

    /// `name` with the case of some of its letters changed.
    fn respelled(&mut self, name: &str) -> String {
        name.chars()
            .map(|c| {
                if self.rng.chance(40) {
                    if c.is_ascii_lowercase() { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() }
                } else {
                    c
                }
            })
            .collect()
    }

    /// A dependency list that repeats a few ids many times, or names just past the most
    /// distinct jobs a list may name.
    fn long_dependency_list(&mut self) -> String {
        let kind = *self.rng.pick(&["afterok", "afterany", "before", "runone"]);
        if self.rng.chance(50) {
            let ids = 1 + self.rng.below(3);
            let repeats = 1 + self.rng.index(150_000);
            let mut list = String::from(kind);
            for i in 0..repeats {
                list.push_str(&format!(":{}", 1 + (i as u64 % ids)));
            }
            list
        } else {
            let distinct = 4000 + self.rng.index(200);
            let ids: String = (0..distinct).map(|i| format!(":{}", 1 + i)).collect();
            format!("{kind}{ids}")
        }
    }

    fn names(&mut self) -> Vec<String> {
        (0..self.rng.index(3)).map(|_| self.string()).collect()
    }

    fn strings(&mut self) -> Vec<String> {
        (0..self.rng.index(4)).map(|_| self.string()).collect()
    }

    fn manager(&mut self) -> Request {
        let command = *self.rng.pick(&[MgrCommand::Create, MgrCommand::Delete, MgrCommand::Set, MgrCommand::Unset]);
        let object = *self.rng.pick(&[
            MgrObject::Server,
            MgrObject::Queue,
            MgrObject::Node,
            MgrObject::Sched,
            MgrObject::Resource,
            MgrObject::Hook,
        ]);
        let names = if self.manager {
            // A manager's changes stay on objects of its own, so they can be undone.
            match object {
                MgrObject::Server | MgrObject::Sched if command != MgrCommand::Create => vec![],
                _ => vec![format!("fz{}", self.rng.below(4))],
            }
        } else {
            self.names()
        };
        let count = 1 + self.rng.index(3);
        let mut attrs: Vec<MgrAttr> = (0..count)
            .map(|_| {
                let name = self.attr_name(object.kind());
                let op = *self.rng.pick(&[MgrOp::Set, MgrOp::Incr, MgrOp::Decr]);
                let value = self.value_for(&name);
                MgrAttr { name, op, value }
            })
            .collect();
        if self.rng.chance(15) {
            let mut again = attrs[0].clone();
            again.name = self.respelled(&again.name);
            attrs.push(again);
        }
        Request::Manager { command, object, names, attrs }
    }

    /// Any request kind with random fields.
    pub(crate) fn request(&mut self) -> Request {
        let b = |rng: &mut Rng| rng.chance(50);
        match self.rng.below(20) {
            0 => Request::QueueJob {
                attrs: {
                    let mut attrs = self.attrs(ObjectKind::Job);
                    // Arrays, so that subjob ranges have something to range over.
                    if self.rng.chance(30) {
                        let range = self.rng.pick(&["0-9999", "1-10000:1", "0-99", "1-5:2", "0-4999:7"]).to_string();
                        attrs.push(Attr("array_indices_submitted".into(), range));
                    }
                    attrs
                },
                script: if self.rng.chance(80) { "#!/bin/sh\ntrue\n".into() } else { self.string() },
                destination: if self.rng.chance(70) { None } else { Some(self.string()) },
            },
            1 => Request::StatusJob {
                ids: self.ids(),
                queues: if self.rng.chance(80) { vec![] } else { self.strings() },
                attrs: self.strings(),
                history: b(&mut self.rng),
                subjobs: b(&mut self.rng),
            },
            2 => Request::SelectJobs {
                // Sometimes as many criteria as a request may carry.
                criteria: (0..if self.rng.chance(5) { 4096 } else { self.rng.index(4) })
                    .map(|_| Criterion {
                        attr: self.attr_name(ObjectKind::Job),
                        op: *self.rng.pick(&[
                            CompareOp::Eq,
                            CompareOp::Ne,
                            CompareOp::Gt,
                            CompareOp::Ge,
                            CompareOp::Lt,
                            CompareOp::Le,
                        ]),
                        value: self.string(),
                    })
                    .collect(),
                history: b(&mut self.rng),
                subjobs: b(&mut self.rng),
                arrays_only: b(&mut self.rng),
            },
            3 => Request::ModifyJob { ids: self.ids(), attrs: self.attrs(ObjectKind::Job) },
            4 => Request::DeleteJob { ids: self.ids(), force: b(&mut self.rng), purge_history: b(&mut self.rng) },
            5 => Request::HoldJob { ids: self.ids(), hold_types: self.hold_types() },
            6 => Request::ReleaseJob { ids: self.ids(), hold_types: self.hold_types() },
            7 => Request::StatusServer { attrs: self.strings() },
            8 => Request::StatusQueue { names: self.names(), attrs: self.strings() },
            9 => Request::StatusNode { names: self.names() },
            10 => Request::StatusSched { names: self.names() },
            11 => Request::StatusResource { names: self.names() },
            12 => Request::StatusHook { names: self.names() },
            // Without exec_vnode a run waits for a scheduler; the fuzzer does not wait that long.
            13 => Request::RunJob {
                id: self.job_id(),
                exec_vnode: if self.rng.chance(80) { Some(self.string()) } else { None },
            },
            14 => Request::SignalJob { ids: self.ids(), signal: self.string() },
            15 => Request::RerunJob { ids: self.ids(), force: b(&mut self.rng) },
            16 => Request::MoveJob { ids: self.ids(), destination: self.string() },
            // Not Shutdown: root's would stop the server under test.
            17 => Request::OrderJob { first: self.job_id(), second: self.job_id() },
            18 => Request::MessageJob {
                id: self.job_id(),
                text: self.string(),
                stdout: b(&mut self.rng),
                stderr: b(&mut self.rng),
            },
            _ => self.manager(),
        }
    }

    fn hold_types(&mut self) -> String {
        if self.rng.chance(70) {
            self.rng.pick(&["u", "o", "s", "uos", "p", "n", ""]).to_string()
        } else {
            self.string()
        }
    }

    /// A request frame as JSON, sometimes bent out of shape: an unknown kind, an extra
    /// field, a field of the wrong type, a missing field, a huge or negative id.
    pub(crate) fn request_json(&mut self, id: u64) -> (Value, Option<Request>) {
        self.huge_left = 1;
        let request = self.request();
        let mut value = json!(RequestFrame { id, request: request.clone() });
        match self.rng.below(20) {
            0 => value["request"]["kind"] = json!(self.string()),
            1 => value["request"]["fz_extra"] = json!(self.string()),
            2 => {
                if let Some(fields) = value["request"].as_object_mut() {
                    let keys: Vec<String> = fields.keys().cloned().collect();
                    let key = self.rng.pick(&keys).clone();
                    fields.insert(key, self.wrong_type());
                }
            }
            3 => {
                if let Some(fields) = value["request"].as_object_mut() {
                    let keys: Vec<String> = fields.keys().filter(|k| *k != "kind").cloned().collect();
                    if !keys.is_empty() {
                        let key = self.rng.pick(&keys).clone();
                        fields.remove(&key);
                    }
                }
            }
            4 => value["id"] = self.wrong_type(),
            _ => return (value, Some(request)),
        }
        (value, None)
    }

    fn wrong_type(&mut self) -> Value {
        match self.rng.below(8) {
            0 => Value::Null,
            1 => json!(-1),
            2 => json!(1e308),
            3 => json!(self.string()),
            4 => json!([self.string(), 1, null, {"a": []}]),
            5 => json!({"kind": "QueueJob"}),
            6 => json!(u64::MAX),
            _ => (0..1 + self.rng.below(60)).fold(json!(1), |inner, _| json!([inner])),
        }
    }

    /// JSON text nested 1 to 100,000 levels deep (serde_json will not build such a value,
    /// so it travels as raw text spliced into a frame).
    pub(crate) fn deep_text(&mut self) -> String {
        let depth = 1 + self.rng.index(100_000);
        if self.rng.chance(50) {
            format!("{}{}", "[".repeat(depth), "]".repeat(depth))
        } else {
            format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
        }
    }

    pub(crate) fn hello(&mut self, role: Role) -> Hello {
        let version = if self.rng.chance(90) { PROTOCOL_VERSION } else { self.rng.next() as u32 };
        Hello { version, role, noise: self.noise(), auth: None }
    }

    pub(crate) fn role(&mut self) -> Role {
        match self.rng.below(5) {
            0 => Role::Scheduler,
            1 => Role::Server,
            2 => Role::Mom { node: self.string() },
            _ => Role::Client,
        }
    }

    /// A made-up first handshake message: none, zeros, junk, or random hex of the right
    /// length (48 bytes: an ephemeral key and a tag).
    pub(crate) fn noise(&mut self) -> Option<String> {
        match self.rng.below(5) {
            0 => None,
            1 => Some("00".repeat(48)),
            2 => Some(self.string()),
            _ => Some((0..96).map(|_| char::from(b"0123456789abcdef"[self.rng.index(16)])).collect()),
        }
    }
}

/// A frame for `body`: the right length prefix.
pub(crate) fn frame(body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// Flips, drops, inserts and cuts bytes of a frame.
pub(crate) fn mutate(rng: &mut Rng, mut bytes: Vec<u8>) -> Vec<u8> {
    for _ in 0..1 + rng.below(4) {
        let at = if bytes.is_empty() { 0 } else { rng.index(bytes.len()) };
        match rng.below(5) {
            0 if !bytes.is_empty() => bytes[at] ^= 1 << rng.below(8),
            1 if !bytes.is_empty() => {
                bytes.remove(at);
            }
            2 => bytes.insert(at, rng.next() as u8),
            3 => bytes.insert(at, *rng.pick(b"{}[]\",:\\0")),
            _ => bytes.truncate(at),
        }
    }
    bytes
}
