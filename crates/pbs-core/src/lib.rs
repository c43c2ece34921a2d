//! The domain model of the batch system: values (durations, sizes), resources, `select` and
//! `place`, job ids and array ranges, job states, attribute tables with their permissions, what a
//! job attribute's value may be and which command option sets it, Torque-style `nodes`
//! requests and the `select` and `place` they become, the attributes new objects start with,
//! PBSE error codes, and pbs.conf. Nothing here does I/O.

pub mod acl;
pub mod attr;
pub mod capacity;
pub mod cnum;
pub mod conf;
pub mod defaults;
pub mod depend;
pub mod duration;
pub mod entlim;
pub mod execvnode;
pub mod hookattr;
pub mod jobattr;
pub mod jobid;
pub mod jobpath;
pub mod jobset;
pub mod nfilter;
pub mod nodespec;
pub mod orselect;
pub mod pbse;
pub mod preempt;
pub mod range;
pub mod resource;
pub mod select;
pub mod sharing;
pub mod size;
pub mod stage;
pub mod state;
pub mod variables;
pub mod walltime;

pub use attr::{AttrDef, AttrType, ObjectKind, Privilege};
pub use duration::Duration;
pub use execvnode::ExecVnode;
pub use jobid::{ArrayPart, JobId};
pub use pbse::Pbse;
pub use range::{ArrayRange, IndexSet};
pub use select::{Place, Select};
pub use size::Size;
pub use state::{JobState, Substate};
