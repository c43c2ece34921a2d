//! The parts of a job's life (`job::life`), listed once, in the order their writes go into
//! a commit: a run's accounting record before the job's own write and before what its
//! end means for other jobs (a job's `E` before its children are released), the OR-ed
//! request put back before a requeued job's write, the owner's mail (which writes nothing,
//! and asks whether a subjob's start begins its array before the arrays' part marks it), then the arrays, the dependencies,
//! runone groups and job sets, deferred start and entity limits, eligible time once every
//! job the step writes is written, and the scheduler's notice last. A new feature that
//! follows jobs is a part here, never a call from a verb.

use crate::job::life::{Life, Part};

/// The table.
pub const PARTS: &[&dyn Part] = &[
    &crate::job::accounts::Part,
    &crate::job::orselect::Part,
    &crate::job::mail::Part,
    &crate::job::array::Part,
    &crate::job::depend::Part,
    &crate::job::runone::Part,
    &crate::job::jobset::Part,
    &crate::job::deferred::Part,
    &crate::job::limits::Part,
    &crate::job::block::Part,
    &crate::job::eligible::Part,
    &crate::job::notice::Part,
];

/// A job's life through [`PARTS`]: what every verb takes its steps through.
pub const LIFE: Life<'static> = Life { parts: PARTS };
