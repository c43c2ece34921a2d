//! Torque-style `nodes` requests (`2:ppn=4`, `host1+host2`, `1:ppn=2:blue#excl`): what a
//! value may hold, the node and cpu counts OpenPBS reads from it, and the `select` and
//! `place` its server makes of a job's `Resource_List.nodes` (`decode_nodes`,
//! `validate_nodespec`, `ctnodes`, `ctcpus`, `set_node_ct` and `cvt_nodespec_to_select`).
//!
//! The rules are OpenPBS's, quirks included, so that a job converted here asks for what it
//! would ask under OpenPBS: a sub-spec without a count repeats the previous sub-spec's count,
//! properties come out in the reverse of their order in the spec, and `#shared` leaves
//! `place` to its default. Counts are held to `i32::MAX` (OpenPBS reads them into an `int`).

use crate::Pbse;
use crate::cnum::atol;

/// A `nodes` value OpenPBS refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NodespecError {
    /// A character a nodes value may not hold where it stands (`decode_nodes`).
    #[error("illegal attribute or resource value")]
    Syntax,
    /// A value that is not a node specification (`validate_nodespec`).
    #[error("node(s) specification error")]
    Spec,
    /// A job-wide `ncpus` that does not fit the specification's tasks (`set_node_ct`).
    #[error("ncpus does not fit the node specification")]
    Ncpus,
}

impl NodespecError {
    /// The code OpenPBS's server answers with.
    pub fn pbse(self) -> Pbse {
        match self {
            NodespecError::Syntax | NodespecError::Ncpus => Pbse::BADATVAL,
            NodespecError::Spec => Pbse::BADNODESPEC,
        }
    }
}

/// What a job's `nodes` becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversion {
    /// `Resource_List.select`, e.g. `2:ncpus=4:mpiprocs=4`.
    pub select: String,
    /// `Resource_List.place`: `scatter`, `scatter:excl`, or none (`#shared`: OpenPBS's
    /// `scatter:share` is not a place it can read, so the job gets the default, `free`).
    pub place: Option<&'static str>,
    /// The job-wide `ncpus`: the one given, else the spec's tasks.
    pub ncpus: u64,
}

/// Checks the characters of a `nodes` value as OpenPBS decodes it: each part starts with a
/// letter or digit and holds letters, digits and `- . = _` (a part starting with a digit
/// only letters and digits), parts joined by `+`, `:` or `#`. An empty value unsets it.
pub fn check_syntax(value: &str) -> Result<(), NodespecError> {
    let b = value.as_bytes();
    if b.is_empty() {
        return Ok(());
    }
    let mut i = 0;
    loop {
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let first = *b.get(i).filter(|c| c.is_ascii_alphanumeric()).ok_or(NodespecError::Syntax)?;
        i += 1;
        let inner =
            |c: u8| c.is_ascii_alphanumeric() || (!first.is_ascii_digit() && matches!(c, b'-' | b'.' | b'=' | b'_'));
        while b.get(i).is_some_and(|c| inner(*c)) {
            i += 1;
        }
        match b.get(i) {
            None => return Ok(()),
            Some(b'+' | b':' | b'#') => i += 1,
            Some(_) => return Err(NodespecError::Syntax),
        }
    }
}

/// Checks that `value` is a node specification (`validate_nodespec`): `+`-separated
/// sub-specs of a count and/or `:`-separated properties, `ppn=N` (N > 0) and `cpp=N` or
/// `ncpus=N`, then optional `#` modifiers.
pub fn validate(value: &str) -> Result<(), NodespecError> {
    let b = value.as_bytes();
    let mut pos = 0;
    while pos < b.len() {
        parse_subspec(b, &mut pos)?;
        match b.get(pos) {
            Some(b'+') => pos += 1,
            Some(b'#') | None => break,
            Some(_) => return Err(NodespecError::Spec),
        }
    }
    Ok(())
}

/// The number of nodes a spec asks for (`ctnodes`): each sub-spec's leading count, or one.
pub fn node_count(value: &str) -> u64 {
    let mut count: u64 = 0;
    for part in value.split('+') {
        let part = part.trim_start();
        let digits = part.bytes().take_while(u8::is_ascii_digit).count();
        let after = part.as_bytes().get(digits);
        let n = if digits > 0 && !after.is_some_and(u8::is_ascii_alphabetic) {
            u64::try_from(atol(part)).unwrap_or(0)
        } else {
            1
        };
        count = count.saturating_add(n);
    }
    count
}

/// The cpus a spec asks for (`ctcpus`): per sub-spec nodes x `ppn` x `cpp`, and whether a
/// `cpp` or `ncpus` fixes the cpus per task. A zero factor makes OpenPBS answer 1.
pub fn cpu_count(value: &str) -> (u64, bool) {
    let mut total: u64 = 0;
    let mut has_cpp = false;
    for part in value.split('+') {
        let b = part.as_bytes();
        let mut pos = 0;
        let (mut nodes, mut cpp, mut ppn) = (1u64, 1u64, 1u64);
        if let Ok(Some(n)) = number(b, &mut pos, true) {
            nodes = n;
            if pos < b.len() {
                pos += 1;
            }
        }
        while let Ok(name) = property(b, &mut pos) {
            let lower = name.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("ppn=") {
                match u64::try_from(atol(v)) {
                    Ok(n) if n > 0 => ppn = n,
                    _ => return (1, has_cpp),
                }
            }
            if let Some(v) = lower.strip_prefix("cpp=").or_else(|| lower.strip_prefix("ncpus=")) {
                has_cpp = true;
                match u64::try_from(atol(v)) {
                    Ok(n) if n > 0 => cpp = n,
                    _ => return (1, has_cpp),
                }
            }
            if b.get(pos) != Some(&b':') {
                break;
            }
            pos += 1;
        }
        total = total.saturating_add(nodes.saturating_mul(cpp).saturating_mul(ppn));
    }
    (total, has_cpp)
}

/// Converts a job's `nodes` to its `select` and `place` as OpenPBS's server does at
/// submission (`set_node_ct` then `cvt_nodespec_to_select`).
///
/// `ncpus` is the job-wide `ncpus` the submitter gave beside the spec, if any: it must be a
/// multiple of the spec's tasks (exactly their number when a `cpp` is given), and each
/// chunk then gets its share. `mem_kb` is a job-wide `mem` the submitter gave, split evenly
/// between the nodes. `is_node` says whether a property names a node, which becomes
/// `host=NAME` rather than `NAME=True`.
pub fn convert(
    value: &str,
    ncpus: Option<u64>,
    mem_kb: Option<u64>,
    is_node: impl Fn(&str) -> bool,
) -> Result<Conversion, NodespecError> {
    check_syntax(value)?;
    validate(value)?;
    // set_node_ct: the ncpus the job gets when it gave none, else the check of the one given.
    let (tasks, has_cpp) = cpu_count(value);
    let ncpus = match ncpus {
        Some(given) => {
            check_ncpus(given, tasks, has_cpp)?;
            given
        }
        None => tasks,
    };
    let spec = expand_modifiers(value);
    let (tasks, has_cpp) = cpu_count(&spec);
    check_ncpus(ncpus, tasks, has_cpp)?;
    let per_task = if !has_cpp && ncpus / tasks > 1 { ncpus / tasks } else { 1 };
    let mem_each = mem_kb.map(|kb| kb / node_count(&spec).max(1));

    let b = spec.as_bytes();
    let mut pos = 0;
    let mut select = String::new();
    let mut count: u64 = 1;
    loop {
        let part = parse_subspec(b, &mut pos)?;
        // OpenPBS keeps the count of the sub-spec before when one gives none.
        if let Some(n) = part.count {
            count = n;
        }
        let cpus = part.np.checked_mul(per_task).filter(|n| *n <= MAX_COUNT).ok_or(NodespecError::Spec)?;
        select.push_str(&format!("{count}:ncpus={cpus}"));
        if let Some(kb) = mem_each {
            select.push_str(&format!(":mem={kb}KB"));
        }
        // A property named twice (`blue#blue`) is asked once; two hosts for one chunk can
        // never be placed, and a select naming a resource twice does not parse.
        let mut seen: Vec<&str> = Vec::new();
        let mut host = None;
        for name in &part.properties {
            if seen.contains(&name.as_str()) {
                continue;
            }
            seen.push(name);
            if is_node(name) {
                if host.replace(name).is_some() {
                    return Err(NodespecError::Spec);
                }
                select.push_str(&format!(":host={name}"));
            } else {
                select.push_str(&format!(":{name}=True"));
            }
        }
        if part.ppn != 1 {
            select.push_str(&format!(":mpiprocs={}", part.ppn));
        }
        if b.get(pos) != Some(&b'+') {
            break;
        }
        pos += 1;
        select.push('+');
    }
    let place = if value.contains("#excl") {
        Some("scatter:excl")
    } else if value.contains("#shared") {
        None
    } else {
        Some("scatter")
    };
    Ok(Conversion { select, place, ncpus })
}

/// The largest count OpenPBS can hold (an `int`).
const MAX_COUNT: u64 = i32::MAX as u64;

fn check_ncpus(ncpus: u64, tasks: u64, has_cpp: bool) -> Result<(), NodespecError> {
    if tasks == 0 || (has_cpp && ncpus != tasks) || ncpus % tasks != 0 {
        return Err(NodespecError::Ncpus);
    }
    Ok(())
}

/// The spec with its `#` modifiers other than `excl` and `shared` added to every sub-spec
/// as properties, the last modifier first (`mod_spec`).
fn expand_modifiers(value: &str) -> String {
    let Some((spec, modifiers)) = value.split_once('#') else {
        return value.to_string();
    };
    let mut spec = spec.to_string();
    for modifier in modifiers.rsplit('#') {
        if modifier.eq_ignore_ascii_case("excl") || modifier.eq_ignore_ascii_case("shared") {
            continue;
        }
        spec = spec.split('+').map(|part| format!("{part}:{modifier}")).collect::<Vec<_>>().join("+");
    }
    spec
}

/// One sub-spec: its count if it gives one, its properties (in OpenPBS's list order, the
/// reverse of the spec's) and its tasks per node, cpus per task and cpus per node.
struct Subspec {
    count: Option<u64>,
    properties: Vec<String>,
    ppn: u64,
    np: u64,
}

fn parse_subspec(b: &[u8], pos: &mut usize) -> Result<Subspec, NodespecError> {
    let count = number(b, pos, true).map_err(|()| NodespecError::Spec)?;
    let mut part = Subspec { count, properties: Vec::new(), ppn: 1, np: 1 };
    if count.is_none() || b.get(*pos) == Some(&b':') {
        if count.is_some() {
            *pos += 1;
        }
        proplist(b, pos, &mut part).map_err(|()| NodespecError::Spec)?;
    }
    Ok(part)
}

/// A count at `pos` (`number`): `Ok(None)` when there is none there (no digit, or digits
/// followed by a letter: a name), an error for zero when `zero_bad` or past `i32::MAX`.
fn number(b: &[u8], pos: &mut usize, zero_bad: bool) -> Result<Option<u64>, ()> {
    let start = *pos;
    let end = start + b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
    if end == start || b.get(end).is_some_and(u8::is_ascii_alphabetic) {
        return Ok(None);
    }
    let digits = std::str::from_utf8(&b[start..end]).map_err(|_| ())?;
    let n: u64 = digits.parse().map_err(|_| ())?;
    if n > MAX_COUNT || (n == 0 && zero_bad) {
        return Err(());
    }
    *pos = end;
    Ok(Some(n))
}

/// A property name at `pos` (`property`): a letter or digit, then letters, digits and
/// `- _ . =`; a `/N` after it is skipped.
fn property(b: &[u8], pos: &mut usize) -> Result<String, ()> {
    if !b.get(*pos).is_some_and(u8::is_ascii_alphanumeric) {
        return Err(());
    }
    let start = *pos;
    while b.get(*pos).is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'=')) {
        *pos += 1;
    }
    let name = String::from_utf8_lossy(&b[start..*pos]).into_owned();
    if b.get(*pos) == Some(&b'/') {
        *pos += 1;
        while b.get(*pos).is_some_and(u8::is_ascii_digit) {
            *pos += 1;
        }
    }
    Ok(name)
}

/// `:`-separated properties (`proplist`): `ppn=N`, `cpp=N`/`ncpus=N`, or names.
fn proplist(b: &[u8], pos: &mut usize, part: &mut Subspec) -> Result<(), ()> {
    let mut cpp: u64 = 1;
    loop {
        let name = property(b, pos)?;
        if let Some((key, value)) = name.split_once('=') {
            let mut at = 0;
            let is_ppn = key.eq_ignore_ascii_case("ppn");
            if !is_ppn && !key.eq_ignore_ascii_case("cpp") && !key.eq_ignore_ascii_case("ncpus") {
                return Err(());
            }
            let n = match number(value.as_bytes(), &mut at, is_ppn)? {
                Some(n) if at == value.len() => n,
                _ => return Err(()),
            };
            if is_ppn {
                part.ppn = n;
            } else {
                cpp = n;
            }
            part.np = part.ppn.checked_mul(cpp).filter(|n| *n <= MAX_COUNT).ok_or(())?;
        } else {
            part.properties.insert(0, name);
        }
        if b.get(*pos) != Some(&b':') {
            return Ok(());
        }
        *pos += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(
        value: &str,
        ncpus: Option<u64>,
        mem_kb: Option<u64>,
        expected: Result<(&str, Option<&str>), NodespecError>,
    ) {
        let nodes = ["host1", "host2", "n3"];
        let got = convert(value, ncpus, mem_kb, |name| nodes.iter().any(|n| n.eq_ignore_ascii_case(name)));
        let got = got.as_ref().map(|c| (c.select.as_str(), c.place)).map_err(|e| *e);
        assert_eq!(got, expected, "nodes={value} ncpus={ncpus:?} mem={mem_kb:?}");
    }

    #[test]
    fn converts_as_openpbs() {
        check("1:ppn=2", None, None, Ok(("1:ncpus=2:mpiprocs=2", Some("scatter"))));
        check("2:ppn=4", None, None, Ok(("2:ncpus=4:mpiprocs=4", Some("scatter"))));
        check("2", None, None, Ok(("2:ncpus=1", Some("scatter"))));
        check("2:ppn=1", None, None, Ok(("2:ncpus=1", Some("scatter"))));
        check("host1+host2", None, None, Ok(("1:ncpus=1:host=host1+1:ncpus=1:host=host2", Some("scatter"))));
        check("2:ppn=4:blue", None, None, Ok(("2:ncpus=4:blue=True:mpiprocs=4", Some("scatter"))));
        check("1:ppn=2:cpp=3", None, None, Ok(("1:ncpus=6:mpiprocs=2", Some("scatter"))));
        check("HOST1:ppn=2", None, None, Ok(("1:ncpus=2:host=HOST1:mpiprocs=2", Some("scatter"))));
    }

    #[test]
    fn quirks_are_kept() {
        // Properties come out in reverse order.
        check("1:blue:red", None, None, Ok(("1:ncpus=1:red=True:blue=True", Some("scatter"))));
        // A sub-spec without a count repeats the count before it.
        check("2:ppn=2+host1", None, None, Ok(("2:ncpus=2:mpiprocs=2+2:ncpus=1:host=host1", Some("scatter"))));
        // Modifiers other than excl and shared become properties of every sub-spec.
        check("2+n3#blue", None, None, Ok(("2:ncpus=1:blue=True+2:ncpus=1:blue=True:host=n3", Some("scatter"))));
        check("1:blue#blue", None, None, Ok(("1:ncpus=1:blue=True", Some("scatter"))));
        check("1:host1:host2", None, None, Err(NodespecError::Spec));
        check("2#excl", None, None, Ok(("2:ncpus=1", Some("scatter:excl"))));
        check("2#shared", None, None, Ok(("2:ncpus=1", None)));
    }

    #[test]
    fn a_given_ncpus_is_shared_between_tasks_and_mem_between_nodes() {
        check("2", Some(8), None, Ok(("2:ncpus=4", Some("scatter"))));
        check("2:ppn=2", Some(4), None, Ok(("2:ncpus=2:mpiprocs=2", Some("scatter"))));
        check("2", Some(3), None, Err(NodespecError::Ncpus));
        check("1:ppn=2:cpp=2", Some(8), None, Err(NodespecError::Ncpus));
        check("1:ppn=2:cpp=2", Some(4), None, Ok(("1:ncpus=4:mpiprocs=2", Some("scatter"))));
        check("2", None, Some(1_048_576), Ok(("2:ncpus=1:mem=524288KB", Some("scatter"))));
    }

    #[test]
    fn refuses_what_openpbs_refuses() {
        for bad in ["0", "2:ppn=0", "2:ppn=x", "2:mem=1gb", "2:", "2-", "2:ppn=4=5", "99999999999"] {
            assert_eq!(validate(bad), Err(NodespecError::Spec), "{bad}");
        }
        for bad in ["-1", "2+", "a b", "2:ppn=4,blue", "2:@x", ""] {
            let refused = check_syntax(bad);
            assert_eq!(refused.is_err(), !bad.is_empty(), "{bad}");
        }
        assert_eq!(convert("2+", None, None, |_| false), Err(NodespecError::Syntax));
        assert_eq!(convert("0", None, None, |_| false), Err(NodespecError::Spec));
        assert_eq!(NodespecError::Spec.pbse(), Pbse::BADNODESPEC);
        assert_eq!(NodespecError::Syntax.pbse(), Pbse::BADATVAL);
        for good in ["1", "2:ppn=4", "host1+host2", "2:ppn=4:blue#excl", "2x", "1:cpp=0"] {
            assert_eq!(validate(good), Ok(()), "{good}");
            assert_eq!(check_syntax(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn counts_nodes_and_cpus() {
        assert_eq!(node_count("2:ppn=4+host1+3"), 6);
        assert_eq!(node_count("2x+1"), 2);
        assert_eq!(cpu_count("2:ppn=4+host1"), (9, false));
        assert_eq!(cpu_count("1:ppn=2:ncpus=2"), (4, true));
        assert_eq!(cpu_count("1:cpp=0"), (1, true));
        // A `/N` after a name is skipped (OpenPBS's virtual processor numbers).
        assert_eq!(validate("n3/2:ppn=2"), Ok(()));
    }
}
