//! Resource definitions: the built-in resources, custom ones made with `qmgr create
//! resource`, their types and flags, and how a value of each type is checked and written.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::attr::{Privilege, bool_text, parse_bool};
use crate::duration::Duration;
use crate::select::{Chunk, Cmp, Place, Select};
use crate::size::Size;

/// The value type of a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    Long,
    Float,
    Size,
    Str,
    StringArray,
    Boolean,
    /// Seconds, written `HH:MM:SS` (built-in time resources only).
    Duration,
}

impl fmt::Display for ResourceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ResourceType::Long => "long",
            ResourceType::Float => "float",
            ResourceType::Size => "size",
            ResourceType::Str => "string",
            ResourceType::StringArray => "string_array",
            ResourceType::Boolean => "boolean",
            ResourceType::Duration => "duration",
        })
    }
}

/// A resource definition that cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    #[error("illegal resource name {0}")]
    BadName(String),
    #[error("illegal resource type {0}")]
    BadType(String),
    #[error("illegal resource flag {0}")]
    BadFlags(String),
    #[error("resource {0} already exists")]
    Exists(String),
    #[error("unknown resource {0}")]
    Unknown(String),
    #[error("resource {0} is built in")]
    BuiltIn(String),
    #[error("illegal value for resource {0}")]
    BadValue(String),
}

impl FromStr for ResourceType {
    type Err = ResourceError;

    fn from_str(text: &str) -> Result<Self, ResourceError> {
        match text {
            "long" => Ok(ResourceType::Long),
            "float" => Ok(ResourceType::Float),
            "size" => Ok(ResourceType::Size),
            "string" => Ok(ResourceType::Str),
            "string_array" => Ok(ResourceType::StringArray),
            "boolean" => Ok(ResourceType::Boolean),
            _ => Err(ResourceError::BadType(text.to_string())),
        }
    }
}

/// The `flag` letters of a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResourceFlags {
    /// `h`: requested per chunk and matched against vnodes.
    pub host_level: bool,
    /// `n`: consumable, tracked per vnode.
    pub consumable: bool,
    /// `f`: consumable, taken from the first vnode of the chunk only.
    pub consumable_first: bool,
    /// `q`: counted against queue and server `resources_assigned`.
    pub queue_assigned: bool,
    /// `i`: invisible to unprivileged users.
    pub invisible: bool,
    /// `r`: read-only for unprivileged users.
    pub read_only: bool,
    /// `m`: reported by MoM as a dynamic resource.
    pub mom_dynamic: bool,
}

/// Letter and field, in the order OpenPBS lists them.
const FLAG_LETTERS: [char; 7] = ['q', 'f', 'n', 'h', 'i', 'r', 'm'];

impl ResourceFlags {
    fn slot(&mut self, letter: char) -> Option<&mut bool> {
        Some(match letter {
            'h' => &mut self.host_level,
            'n' => &mut self.consumable,
            'f' => &mut self.consumable_first,
            'q' => &mut self.queue_assigned,
            'i' => &mut self.invisible,
            'r' => &mut self.read_only,
            'm' => &mut self.mom_dynamic,
            _ => return None,
        })
    }

    fn get(&self, letter: char) -> bool {
        let mut copy = *self;
        copy.slot(letter).is_some_and(|v| *v)
    }
}

impl FromStr for ResourceFlags {
    type Err = ResourceError;

    /// Parses flag letters; `n` and `f` exclude each other and need `h`, as in OpenPBS.
    fn from_str(text: &str) -> Result<Self, ResourceError> {
        let mut flags = ResourceFlags::default();
        for letter in text.chars() {
            match flags.slot(letter) {
                Some(slot) => *slot = true,
                None => return Err(ResourceError::BadFlags(text.to_string())),
            }
        }
        if (flags.consumable && flags.consumable_first)
            || ((flags.consumable || flags.consumable_first) && !flags.host_level)
            || (flags.invisible && flags.read_only)
        {
            return Err(ResourceError::BadFlags(text.to_string()));
        }
        Ok(flags)
    }
}

impl fmt::Display for ResourceFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for letter in FLAG_LETTERS {
            if self.get(letter) {
                write!(f, "{letter}")?;
            }
        }
        Ok(())
    }
}

/// One resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceDef {
    pub name: String,
    pub rtype: ResourceType,
    pub flags: ResourceFlags,
    pub builtin: bool,
    /// Only managers may set it on a job (`soft_walltime`).
    pub manager_only_set: bool,
    /// A running job's value may be altered (OpenPBS's ALTRUN: the time limits). Custom
    /// resources may be.
    pub alter_running: bool,
}

/// The built-in resources a running job's `Resource_List` may change (ALTRUN in OpenPBS).
const ALTER_RUNNING_BUILTINS: [&str; 5] = ["cput", "walltime", "min_walltime", "max_walltime", "soft_walltime"];

fn is_resource_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 256
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl ResourceDef {
    /// A custom resource as `qmgr create resource <name> type=<t>,flag=<f>` defines it.
    pub fn custom(name: &str, rtype: &str, flags: &str) -> Result<Self, ResourceError> {
        if !is_resource_name(name) {
            return Err(ResourceError::BadName(name.to_string()));
        }
        let rtype: ResourceType = rtype.parse()?;
        let flags: ResourceFlags = flags.parse()?;
        // Consumable resources must be countable.
        if (flags.consumable || flags.consumable_first || flags.queue_assigned)
            && !matches!(rtype, ResourceType::Long | ResourceType::Float | ResourceType::Size)
        {
            return Err(ResourceError::BadFlags(flags.to_string()));
        }
        Ok(ResourceDef {
            name: name.to_string(),
            rtype,
            flags,
            builtin: false,
            manager_only_set: false,
            alter_running: true,
        })
    }

    fn builtin(name: &str, rtype: ResourceType, flags: &str) -> Self {
        let flags = flags.parse().unwrap_or_default();
        ResourceDef {
            name: name.to_string(),
            rtype,
            flags,
            builtin: true,
            manager_only_set: name == "soft_walltime",
            alter_running: ALTER_RUNNING_BUILTINS.contains(&name),
        }
    }

    /// Whether a client at `level` may set this resource on a job: `r` leaves users only
    /// reading it and `i` nothing (OpenPBS's NO_USER_SET and operator-only permissions);
    /// `soft_walltime` is the managers'.
    pub fn writable_by(&self, level: Privilege) -> bool {
        if self.manager_only_set {
            return level >= Privilege::Manager;
        }
        level >= Privilege::Operator || !(self.flags.read_only || self.flags.invisible)
    }

    /// Whether a client at `level` may see this resource (in a job's or an object's
    /// resource lists) or name it in a chunk: not an ordinary user, for an `i` resource.
    pub fn readable_by(&self, level: Privilege) -> bool {
        level >= Privilege::Operator || !self.flags.invisible
    }

    /// Checks a value against the resource's type and returns it in canonical form.
    pub fn normalize(&self, value: &str) -> Result<String, ResourceError> {
        let bad = || ResourceError::BadValue(self.name.clone());
        let trimmed = value.trim();
        match self.name.as_str() {
            // An OR-ed select (`A||B`) keeps each alternative's canonical form.
            "select" => return crate::select::canonical_text(value).ok_or_else(bad),
            "place" => return value.parse::<Place>().map(|_| value.to_string()).map_err(|_| bad()),
            "nodes" if value.is_empty() => return Err(bad()),
            "nodes" => return crate::nodespec::check_syntax(value).map(|()| value.to_string()).map_err(|_| bad()),
            "nfilter" => return crate::nfilter::NFilter::parse(value).map(|_| value.to_string()).map_err(|_| bad()),
            _ => {}
        }
        match self.rtype {
            ResourceType::Long => {
                let n: i64 = trimmed.parse().map_err(|_| bad())?;
                if n < 0 && self.builtin {
                    return Err(bad());
                }
                Ok(n.to_string())
            }
            ResourceType::Float => {
                let x: f64 = trimmed.parse().map_err(|_| bad())?;
                if !x.is_finite() {
                    return Err(bad());
                }
                Ok(trimmed.to_string())
            }
            ResourceType::Size => trimmed.parse::<Size>().map(|s| s.to_string()).map_err(|_| bad()),
            ResourceType::Duration => trimmed.parse::<Duration>().map(|d| d.to_string()).map_err(|_| bad()),
            ResourceType::Boolean => parse_bool(trimmed).map(|b| bool_text(b).to_string()).ok_or_else(bad),
            ResourceType::Str | ResourceType::StringArray => {
                if value.is_empty() {
                    return Err(bad());
                }
                Ok(value.to_string())
            }
        }
    }
}

/// Why a chunk's condition (`color!=green`) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConditionError {
    /// An operator other than `=` on an amount the chunk takes (PBSE_CONSUMABLE_OP).
    #[error("Consumable resource can only be requested with = operator")]
    Consumable,
    /// A value the resource cannot hold, or an order asked of a boolean (PBSE_BADATVAL on
    /// `Resource_List.select`).
    #[error("illegal value for resource {0}")]
    BadValue(String),
}

impl ResourceDef {
    /// Whether a chunk takes an amount of this resource from its vnode, so that only `=`
    /// can say how much: the consumables (flag `n` or `f`) and the per-chunk process
    /// counts, which the chunk also takes as asked.
    pub fn is_taken_amount(&self) -> bool {
        self.flags.consumable || self.flags.consumable_first || matches!(self.name.as_str(), "mpiprocs" | "ompthreads")
    }
}

/// All known resources, built-in and custom, by name.
#[derive(Debug, Clone)]
pub struct ResourceRegistry {
    defs: BTreeMap<String, ResourceDef>,
    /// Names of the `i` (invisible) resources, so a status for an ordinary user filters
    /// them without a lookup per resource when there are none.
    invisible: Vec<String>,
    /// Counts definitions and removals, so a copy of the definitions made elsewhere (the
    /// hook interpreters') knows when it is stale.
    generation: u64,
}

impl Default for ResourceRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl ResourceRegistry {
    /// The built-in resources only.
    pub fn new() -> Self {
        use ResourceType::*;
        let builtins = [
            ("ncpus", Long, "nh"),
            ("mem", Size, "nh"),
            ("vmem", Size, "nh"),
            ("ngpus", Long, "nh"),
            ("mpiprocs", Long, "h"),
            ("ompthreads", Long, "h"),
            ("naccelerators", Long, "nh"),
            ("accelerator", Boolean, "h"),
            ("accelerator_model", Str, "h"),
            ("accelerator_memory", Size, "nh"),
            ("hbmem", Size, "nh"),
            ("host", Str, "h"),
            ("vnode", Str, "h"),
            ("arch", Str, "h"),
            ("aoe", Str, "h"),
            ("walltime", Duration, ""),
            ("soft_walltime", Duration, ""),
            ("min_walltime", Duration, ""),
            ("max_walltime", Duration, ""),
            ("cput", Duration, ""),
            ("pcput", Duration, ""),
            ("pmem", Size, ""),
            ("pvmem", Size, ""),
            ("file", Size, ""),
            ("nice", Long, ""),
            ("cpupercent", Long, ""),
            ("select", Str, ""),
            ("job_wide", Str, ""),
            ("place", Str, ""),
            ("nodect", Long, ""),
            ("nodes", Str, ""),
            ("software", Str, ""),
            ("site", Str, ""),
            ("start_time", Long, ""),
            ("preempt_targets", StringArray, ""),
            ("eoe", Str, ""),
            // A job's node filter (docs/job-sets.md), checked by `crate::nfilter`.
            ("nfilter", Str, ""),
        ];
        let defs = builtins
            .into_iter()
            .map(|(name, rtype, flags)| (name.to_string(), ResourceDef::builtin(name, rtype, flags)))
            .collect();
        ResourceRegistry { defs, invisible: Vec::new(), generation: 0 }
    }

    pub fn get(&self, name: &str) -> Option<&ResourceDef> {
        self.defs.get(name)
    }

    pub fn define(&mut self, def: ResourceDef) -> Result<(), ResourceError> {
        if self.defs.contains_key(&def.name) {
            return Err(ResourceError::Exists(def.name));
        }
        if def.flags.invisible {
            self.invisible.push(def.name.clone());
        }
        self.defs.insert(def.name.clone(), def);
        self.generation += 1;
        Ok(())
    }

    /// Removes a custom resource; built-in ones cannot be removed.
    pub fn remove(&mut self, name: &str) -> Result<ResourceDef, ResourceError> {
        match self.defs.get(name) {
            None => Err(ResourceError::Unknown(name.to_string())),
            Some(def) if def.builtin => Err(ResourceError::BuiltIn(name.to_string())),
            Some(_) => {
                self.invisible.retain(|n| n != name);
                self.generation += 1;
                self.defs.remove(name).ok_or_else(|| ResourceError::Unknown(name.to_string()))
            }
        }
    }

    /// The resources an ordinary user may not see (flag `i`).
    pub fn invisible(&self) -> &[String] {
        &self.invisible
    }

    /// Changes each time a resource is defined or removed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Every resource, built-in and custom, in name order.
    pub fn all(&self) -> impl Iterator<Item = &ResourceDef> {
        self.defs.values()
    }

    /// Checks the values of one chunk: each must be one of its resource's type (an amount
    /// too: a size that does not parse, `8eb` or `1.5gb`, would count as nothing against
    /// the limits), and the conditions (operators other than `=`) are only for
    /// non-consumables, booleans only `!=`. Unknown resources are left to the select's
    /// other checks (PBSE_UNKRESC).
    pub fn check_conditions(&self, chunk: &Chunk) -> Result<(), ConditionError> {
        for res in chunk.resources().iter().filter(|res| res.cmp() == Cmp::Eq) {
            let Some(def) = self.get(res.name()) else { continue };
            def.normalize(res.value()).map_err(|_| ConditionError::BadValue(def.name.clone()))?;
        }
        for res in chunk.conditions() {
            let Some(def) = self.get(res.name()) else { continue };
            if def.is_taken_amount() {
                return Err(ConditionError::Consumable);
            }
            let bad = || ConditionError::BadValue(def.name.clone());
            if def.rtype == ResourceType::Boolean && res.cmp() != Cmp::Ne {
                return Err(bad());
            }
            def.normalize(res.value()).map_err(|_| bad())?;
        }
        Ok(())
    }

    /// [`Self::check_conditions`] for every chunk of a select.
    pub fn check_select_conditions(&self, select: &Select) -> Result<(), ConditionError> {
        select.chunks().iter().try_for_each(|chunk| self.check_conditions(chunk))
    }

    /// Custom resources in name order.
    pub fn customs(&self) -> impl Iterator<Item = &ResourceDef> {
        self.defs.values().filter(|d| !d.builtin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(resource: &str, value: &str, expected: Option<&str>) {
        let registry = ResourceRegistry::new();
        let def = registry.get(resource).unwrap();
        assert_eq!(def.normalize(value).ok().as_deref(), expected, "{resource}={value}");
    }

    #[test]
    fn normalizes_builtin_values() {
        check("walltime", "3600", Some("01:00:00"));
        check("walltime", "abc", None);
        check("soft_walltime", "-1", None);
        check("mem", "1GB", Some("1gb"));
        check("ncpus", "4", Some("4"));
        check("ncpus", "-1", None);
        check("ncpus", "x", None);
        check("select", "2:ncpus=1", Some("2:ncpus=1"));
        check("select", "abc", None);
        check("place", "scatter", Some("scatter"));
        check("place", "nowhere", None);
        check("nodes", "2:ppn=4#excl", Some("2:ppn=4#excl"));
        check("nodes", "2:ppn=4,blue", None);
        check("nodes", "", None);
    }

    #[test]
    fn custom_resources() {
        let mut registry = ResourceRegistry::new();
        let def = ResourceDef::custom("scratch", "size", "nh").unwrap();
        assert_eq!(def.flags.to_string(), "nh");
        registry.define(def).unwrap();
        assert!(registry.define(ResourceDef::custom("scratch", "long", "").unwrap()).is_err());
        assert_eq!(registry.customs().count(), 1);
        assert!(registry.remove("ncpus").is_err());
        assert!(registry.remove("scratch").is_ok());
        assert!(ResourceDef::custom("x", "bogus", "").is_err());
        assert!(ResourceDef::custom("x", "long", "n").is_err());
        assert!(ResourceDef::custom("x", "string", "nh").is_err());
        assert!(ResourceDef::custom("1x", "long", "").is_err());
        assert!(ResourceDef::custom("x", "long", "z").is_err());
        assert!(registry.get("soft_walltime").unwrap().manager_only_set);
        assert!(ResourceDef::custom("x", "long", "ir").is_err());
    }

    #[test]
    fn conditions_only_on_what_a_chunk_does_not_take() {
        let mut registry = ResourceRegistry::new();
        for (name, rtype, flags) in
            [("color", "string", "h"), ("cores", "long", "h"), ("scratch", "size", "nh"), ("fast", "boolean", "h")]
        {
            registry.define(ResourceDef::custom(name, rtype, flags).unwrap()).unwrap();
        }
        let check = |text: &str| registry.check_select_conditions(&text.parse::<Select>().unwrap());
        assert_eq!(check("1:ncpus=4:color!=green"), Ok(()));
        assert_eq!(check("1:cores>=16:arch<=linux:host!=n1"), Ok(()));
        assert_eq!(check("1:fast!=True"), Ok(()));
        for consumable in ["1:ncpus>4", "1:ncpus=5:mem>21gb", "1:scratch<=1gb", "1:mpiprocs>1", "1:ngpus!=0"] {
            assert_eq!(check(consumable), Err(ConditionError::Consumable), "{consumable}");
        }
        assert_eq!(check("1:fast>True"), Err(ConditionError::BadValue("fast".into())));
        assert_eq!(check("1:fast!=maybe"), Err(ConditionError::BadValue("fast".into())));
        assert_eq!(check("1:cores>=lots"), Err(ConditionError::BadValue("cores".into())));
        // Each chunk on its own: the second chunk's condition is refused.
        assert_eq!(check("1:color!=red+1:mem>1gb"), Err(ConditionError::Consumable));
        assert_eq!(ConditionError::Consumable.to_string(), crate::Pbse::CONSUMABLE_OP.to_string());
        // nfilter is a job-wide resource checked by its grammar.
        let nfilter = registry.get("nfilter").unwrap();
        assert!(nfilter.normalize("resources_available['color']=='blue'").is_ok());
        assert!(nfilter.normalize("__import__('os').system('id')").is_err());
    }

    #[test]
    fn flags_r_and_i_limit_users() {
        use Privilege::{Manager, Operator, User};
        let mut registry = ResourceRegistry::new();
        let plain = ResourceDef::custom("plain", "long", "").unwrap();
        let read_only = ResourceDef::custom("ro", "long", "r").unwrap();
        let invisible = ResourceDef::custom("inv", "long", "hi").unwrap();
        assert!(plain.writable_by(User) && plain.readable_by(User));
        assert!(!read_only.writable_by(User) && read_only.readable_by(User));
        assert!(read_only.writable_by(Operator));
        assert!(!invisible.writable_by(User) && !invisible.readable_by(User));
        assert!(invisible.writable_by(Operator) && invisible.readable_by(Operator));
        let soft = registry.get("soft_walltime").unwrap().clone();
        assert!(!soft.writable_by(Operator) && soft.writable_by(Manager) && soft.readable_by(User));
        registry.define(invisible).unwrap();
        registry.define(read_only).unwrap();
        assert_eq!(registry.invisible(), ["inv".to_string()]);
        registry.remove("inv").unwrap();
        assert!(registry.invisible().is_empty());
    }
}
