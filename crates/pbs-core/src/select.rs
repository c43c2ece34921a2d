//! `select` (`2:ncpus=4:mem=1gb+1:ngpus=1`) and `place` (`scatter:excl`) specifications.

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

/// One `+`-separated section: `count` chunks, each asking for `resources`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    count: u32,
    resources: Vec<(String, String)>,
}

impl Chunk {
    pub fn count(&self) -> u32 {
        self.count
    }

    pub fn resources(&self) -> &[(String, String)] {
        &self.resources
    }

    /// The value this chunk asks for a resource, if any.
    pub fn get(&self, resource: &str) -> Option<&str> {
        self.resources.iter().find(|(r, _)| r == resource).map(|(_, v)| v.as_str())
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
        Select { chunks: vec![Chunk { count: 1, resources }] }
    }

    /// Adds each `default_chunk` resource to every chunk that does not ask for it.
    pub fn with_default_chunk(mut self, defaults: &[(String, String)]) -> Self {
        for chunk in &mut self.chunks {
            for (resource, value) in defaults {
                if chunk.get(resource).is_none() {
                    chunk.resources.push((resource.clone(), value.clone()));
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
            let mut resources: Vec<(String, String)> = Vec::new();
            let count = if !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) {
                first.parse::<u32>().map_err(|_| SelectError::Syntax)?
            } else {
                let (name, value) = first.split_once('=').ok_or(SelectError::Syntax)?;
                resources.push((name.to_string(), value.to_string()));
                1
            };
            if count == 0 {
                return Err(SelectError::Syntax);
            }
            for part in parts {
                let (name, value) = part.split_once('=').ok_or(SelectError::Syntax)?;
                resources.push((name.to_string(), value.to_string()));
            }
            for (i, (name, value)) in resources.iter().enumerate() {
                if !is_resource_name(name) || value.is_empty() {
                    return Err(SelectError::Syntax);
                }
                if resources[..i].iter().any(|(n, _)| n == name) {
                    return Err(SelectError::DuplicateResource(name.clone()));
                }
            }
            chunks.push(Chunk { count, resources });
        }
        Ok(Select { chunks })
    }
}

impl fmt::Display for Select {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, chunk) in self.chunks.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{}", chunk.count)?;
            for (name, value) in &chunk.resources {
                write!(f, ":{name}={value}")?;
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
