//! `select` (`2:ncpus=4:mem=1gb+1:ngpus=1`) and `place` (`scatter:excl`) specifications,
//! each chunk resource with its comparison (`color!=green`, `os_ver>=rhel6`: conditional
//! requests, see docs/job-sets.md), and how an OR-ed select's text (`A||B`) splits into its
//! alternatives, bounded, below the resource definitions that canonicalize a `select`
//! value and the `orselect` requests built on both.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// A select or place text that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error("illegal select specification")]
    Syntax,
    /// The same resource twice in one chunk (PBSE_DUPRESC).
    #[error("duplicated resource within a section of a select specification, resource is {0}")]
    DuplicateResource(String),
}

/// How a chunk resource is compared with a vnode's: `=` asks for the value (an amount of a
/// consumable, the value of a non-consumable); the others are conditions on a
/// non-consumable's value (`color!=green`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    /// The operator as a select writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Cmp::Eq => "=",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }

    /// Whether `have` compared with the wanted value (`have.cmp(wanted)`) satisfies the
    /// operator.
    pub fn holds(self, order: Ordering) -> bool {
        match self {
            Cmp::Eq => order == Ordering::Equal,
            Cmp::Ne => order != Ordering::Equal,
            Cmp::Lt => order == Ordering::Less,
            Cmp::Le => order != Ordering::Greater,
            Cmp::Gt => order == Ordering::Greater,
            Cmp::Ge => order != Ordering::Less,
        }
    }

    /// The operator at the start of `text` and its length: the two-character ones first.
    fn lead(text: &str) -> Option<(Cmp, usize)> {
        let bytes = text.as_bytes();
        Some(match (bytes.first()?, bytes.get(1)) {
            (b'<', Some(b'=')) => (Cmp::Le, 2),
            (b'>', Some(b'=')) => (Cmp::Ge, 2),
            (b'!', Some(b'=')) => (Cmp::Ne, 2),
            (b'<', _) => (Cmp::Lt, 1),
            (b'>', _) => (Cmp::Gt, 1),
            (b'=', _) => (Cmp::Eq, 1),
            _ => return None,
        })
    }
}

impl fmt::Display for Cmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One resource of a chunk: `name`, its operator and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRes {
    name: String,
    cmp: Cmp,
    value: String,
}

impl ChunkRes {
    /// `name=value`.
    pub fn eq(name: &str, value: &str) -> ChunkRes {
        ChunkRes { name: name.to_string(), cmp: Cmp::Eq, value: value.to_string() }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn cmp(&self) -> Cmp {
        self.cmp
    }

    pub fn value(&self) -> &str {
        &self.value
    }
}

/// One `+`-separated section: `count` chunks, each asking for `resources`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    count: u32,
    resources: Vec<ChunkRes>,
}

impl Chunk {
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Every resource of the chunk, in the order written, conditions included.
    pub fn resources(&self) -> &[ChunkRes] {
        &self.resources
    }

    /// The value this chunk asks for a resource with `=`, if any (a condition such as
    /// `host!=n1` is not a value asked for).
    pub fn get(&self, resource: &str) -> Option<&str> {
        self.resources.iter().find(|r| r.name == resource && r.cmp == Cmp::Eq).map(|r| r.value.as_str())
    }

    /// Whether the chunk names a resource, with any operator.
    pub fn names(&self, resource: &str) -> bool {
        self.resources.iter().any(|r| r.name == resource)
    }

    /// The resources asked for with an operator other than `=`.
    pub fn conditions(&self) -> impl Iterator<Item = &ChunkRes> {
        self.resources.iter().filter(|r| r.cmp != Cmp::Eq)
    }
}

/// A whole select specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select {
    chunks: Vec<Chunk>,
}

fn is_resource_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl Select {
    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// One chunk asking for `resources`.
    pub fn single(resources: Vec<(String, String)>) -> Select {
        let resources = resources.into_iter().map(|(name, value)| ChunkRes { name, cmp: Cmp::Eq, value }).collect();
        Select { chunks: vec![Chunk { count: 1, resources }] }
    }

    /// Adds each `default_chunk` resource to every chunk that does not name it (a
    /// condition on a resource stands in for its default too).
    pub fn with_default_chunk(mut self, defaults: &[(String, String)]) -> Self {
        for chunk in &mut self.chunks {
            for (resource, value) in defaults {
                if !chunk.names(resource) {
                    chunk.resources.push(ChunkRes::eq(resource, value));
                }
            }
        }
        self
    }

    /// The sum over all chunks of an integer resource, `None` if no chunk asks for it.
    pub fn total(&self, resource: &str) -> Option<u64> {
        let mut total = None;
        for chunk in &self.chunks {
            if let Some(value) = chunk.get(resource) {
                let each: u64 = value.parse().unwrap_or(0);
                total = Some(total.unwrap_or(0u64).saturating_add(each.saturating_mul(u64::from(chunk.count))));
            }
        }
        total
    }

    /// The number of chunks (`Resource_List.nodect`).
    pub fn nodect(&self) -> u64 {
        self.chunks.iter().map(|c| u64::from(c.count)).sum()
    }
}

impl FromStr for Select {
    type Err = SelectError;

    fn from_str(text: &str) -> Result<Self, SelectError> {
        let mut chunks = Vec::new();
        for section in text.split('+') {
            let mut parts = section.split(':');
            let first = parts.next().unwrap_or_default();
            let mut resources: Vec<ChunkRes> = Vec::new();
            let count = if !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) {
                first.parse::<u32>().map_err(|_| SelectError::Syntax)?
            } else {
                resources.push(chunk_res(first)?);
                1
            };
            if count == 0 {
                return Err(SelectError::Syntax);
            }
            for part in parts {
                resources.push(chunk_res(part)?);
            }
            for (i, res) in resources.iter().enumerate() {
                if resources[..i].iter().any(|r| r.name == res.name) {
                    return Err(SelectError::DuplicateResource(res.name.clone()));
                }
            }
            chunks.push(Chunk { count, resources });
        }
        Ok(Select { chunks })
    }
}

/// `name OP value`: the name ends at the first operator character, so `mem>=1gb` is `mem`
/// `>=` `1gb` and `color==x` is `color` `=` `=x`, as `=` alone always read.
fn chunk_res(part: &str) -> Result<ChunkRes, SelectError> {
    let at = part.find(['=', '<', '>', '!']).ok_or(SelectError::Syntax)?;
    let name = &part[..at];
    let (cmp, len) = Cmp::lead(&part[at..]).ok_or(SelectError::Syntax)?;
    let value = &part[at + len..];
    if !is_resource_name(name) || value.is_empty() {
        return Err(SelectError::Syntax);
    }
    Ok(ChunkRes { name: name.to_string(), cmp, value: value.to_string() })
}

/// The most alternatives one request may OR together (`A||B`, see `orselect`): the seed's
/// use cases have "less than 10"; a longer list is refused before anything is parsed, so
/// its cost is bounded.
pub const MAX_ALTERNATIVES: usize = 32;

/// The separator of OR-ed alternatives, in `select` and in `job_wide`.
pub const OR: &str = "||";

/// Whether a select (or job_wide) text ORs alternatives.
pub fn is_ored(text: &str) -> bool {
    text.contains(OR)
}

/// The alternatives an OR-ed text names, in order (one for a text that is not OR-ed);
/// `None` for more than [`MAX_ALTERNATIVES`], counted before anything is split, so 1,000
/// alternatives cost one scan.
pub fn alternatives(text: &str) -> Option<Vec<&str>> {
    (text.matches(OR).count() < MAX_ALTERNATIVES).then(|| text.split(OR).collect())
}

/// The canonical text of a `select` value, each alternative of an OR-ed one in its own
/// canonical form; `None` when an alternative does not parse or there are more than
/// [`MAX_ALTERNATIVES`].
pub fn canonical_text(value: &str) -> Option<String> {
    let parts = alternatives(value)?.into_iter().map(|part| part.parse::<Select>().ok().map(|s| s.to_string()));
    Some(parts.collect::<Option<Vec<_>>>()?.join(OR))
}

impl fmt::Display for Select {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, chunk) in self.chunks.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{}", chunk.count)?;
            for res in &chunk.resources {
                write!(f, ":{}{}{}", res.name, res.cmp, res.value)?;
            }
        }
        Ok(())
    }
}

/// How chunks are laid out on hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Arrangement {
    #[default]
    Free,
    Pack,
    Scatter,
    VScatter,
}

/// Whether the job shares its hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sharing {
    #[default]
    Default,
    Excl,
    Shared,
    ExclHost,
}

/// A place specification: `[arrangement][:sharing][:group=resource]`, any order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Place {
    pub arrangement: Arrangement,
    pub sharing: Sharing,
    pub group: Option<String>,
}

impl FromStr for Place {
    type Err = SelectError;

    fn from_str(text: &str) -> Result<Self, SelectError> {
        let mut place = Place::default();
        let (mut arranged, mut shared) = (false, false);
        for word in text.split(':') {
            match word {
                "free" | "pack" | "scatter" | "vscatter" if !arranged => {
                    arranged = true;
                    place.arrangement = match word {
                        "free" => Arrangement::Free,
                        "pack" => Arrangement::Pack,
                        "scatter" => Arrangement::Scatter,
                        _ => Arrangement::VScatter,
                    };
                }
                "excl" | "shared" | "exclhost" if !shared => {
                    shared = true;
                    place.sharing = match word {
                        "excl" => Sharing::Excl,
                        "shared" => Sharing::Shared,
                        _ => Sharing::ExclHost,
                    };
                }
                _ => match word.strip_prefix("group=") {
                    Some(resource) if place.group.is_none() && is_resource_name(resource) => {
                        place.group = Some(resource.to_string());
                    }
                    _ => return Err(SelectError::Syntax),
                },
            }
        }
        Ok(place)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_canonicalizes_each_ored_alternative_and_bounds_their_count() {
        assert_eq!(canonical_text("2:ncpus=4").as_deref(), Some("2:ncpus=4"));
        assert_eq!(canonical_text("ncpus=2||2:ncpus=1").as_deref(), Some("1:ncpus=2||2:ncpus=1"));
        assert_eq!(canonical_text("1:ncpus=1||"), None);
        assert_eq!(canonical_text("1:ncpus=1||bad:="), None);
        let most = vec!["1:ncpus=1"; MAX_ALTERNATIVES].join(OR);
        assert_eq!(canonical_text(&most).as_deref(), Some(most.as_str()));
        let too_many = vec!["1:ncpus=1"; MAX_ALTERNATIVES + 1].join(OR);
        assert_eq!(canonical_text(&too_many), None);
    }

    fn check(input: &str, expected: Result<&str, SelectError>) {
        let got = input.parse::<Select>().map(|s| s.to_string());
        assert_eq!(got.as_deref().map_err(Clone::clone), expected, "input {input:?}");
    }

    #[test]
    fn parses_and_prints_select() {
        check("1:ncpus=1", Ok("1:ncpus=1"));
        check("ncpus=2:mem=1gb", Ok("1:ncpus=2:mem=1gb"));
        check("2:ncpus=4+1:ngpus=1", Ok("2:ncpus=4+1:ngpus=1"));
        check("abc", Err(SelectError::Syntax));
        check("1:=mem", Err(SelectError::Syntax));
        check(":mem", Err(SelectError::Syntax));
        check("0:ncpus=1", Err(SelectError::Syntax));
        check("1:ncpus=1+", Err(SelectError::Syntax));
        check("1:ncpus=1:ncpus=2", Err(SelectError::DuplicateResource("ncpus".into())));
    }

    #[test]
    fn conditions_parse_print_and_stay_apart_from_values() {
        check("1:ncpus=4:color!=green", Ok("1:ncpus=4:color!=green"));
        check("os_ver>=rhel6:a<3:b<=4:c>5:d>=6", Ok("1:os_ver>=rhel6:a<3:b<=4:c>5:d>=6"));
        // `=` keeps reading everything after it as the value.
        check("1:color==x", Ok("1:color==x"));
        for bad in ["1:color!green", "1:color!", "1:color>=", "1:!=x", "1:co!or=x", "1:a<=1:a>2"] {
            assert!(bad.parse::<Select>().is_err(), "{bad}");
        }
        assert_eq!("1:a<=1:a>2".parse::<Select>(), Err(SelectError::DuplicateResource("a".into())));
        let select: Select = "2:ncpus=4:host!=n1:mem=1gb".parse().unwrap();
        let chunk = &select.chunks()[0];
        assert_eq!(chunk.get("host"), None);
        assert!(chunk.names("host"));
        assert_eq!(chunk.get("ncpus"), Some("4"));
        let conds: Vec<_> = chunk.conditions().map(|r| (r.name(), r.cmp(), r.value())).collect();
        assert_eq!(conds, [("host", Cmp::Ne, "n1")]);
        // A condition stands in for the resource's default.
        let select = select.with_default_chunk(&[("host".into(), "n2".into()), ("arch".into(), "linux".into())]);
        assert_eq!(select.to_string(), "2:ncpus=4:host!=n1:mem=1gb:arch=linux");
    }

    #[test]
    fn operators_compare_as_written() {
        use Ordering::{Equal, Greater, Less};
        let table = [
            (Cmp::Eq, [false, true, false]),
            (Cmp::Ne, [true, false, true]),
            (Cmp::Lt, [true, false, false]),
            (Cmp::Le, [true, true, false]),
            (Cmp::Gt, [false, false, true]),
            (Cmp::Ge, [false, true, true]),
        ];
        for (cmp, expected) in table {
            assert_eq!([cmp.holds(Less), cmp.holds(Equal), cmp.holds(Greater)], expected, "{cmp}");
        }
        // Strings compare byte by byte, as the design's example warns.
        assert!(Cmp::Gt.holds("ver_12".cmp("ver_045")));
        assert!(Cmp::Lt.holds("ver_012".cmp("ver_045")));
    }

    #[test]
    fn sums_and_defaults() {
        let select: Select = "2:ncpus=4+1:mem=1gb".parse().unwrap();
        let select = select.with_default_chunk(&[("ncpus".into(), "1".into())]);
        assert_eq!(select.to_string(), "2:ncpus=4+1:mem=1gb:ncpus=1");
        assert_eq!(select.total("ncpus"), Some(9));
        assert_eq!(select.total("ngpus"), None);
        assert_eq!(select.nodect(), 3);
    }

    #[test]
    fn parses_place() {
        let place: Place = "scatter:excl".parse().unwrap();
        assert_eq!((place.arrangement, place.sharing), (Arrangement::Scatter, Sharing::Excl));
        assert!("group=switch:pack".parse::<Place>().is_ok());
        for bad in ["", "pack:free", "bogus", "group=", "excl:excl"] {
            assert!(bad.parse::<Place>().is_err(), "{bad}");
        }
    }
}
