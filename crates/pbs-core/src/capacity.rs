//! The counts inside a job's request (chunks, `mpiprocs`) held to what nodes really have,
//! and sums of a request's amounts that refuse to wrap: the one rule the server, the
//! scheduler and the mom share, so that no count a user writes sizes their work.
//!
//! A chunk takes a cpu, or none at all; so the most chunks (and `PBS_NODEFILE` lines, one
//! per `mpiprocs`) a set of vnodes can ever give one job is one per cpu plus one per vnode
//! for chunks that ask for no cpu. A request past that can never run there, and nothing is
//! allocated or walked for it.

use crate::select::{Chunk, Select};

/// What a set of vnodes can ever give one job in chunks and processes (see the module
/// documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slots(pub u64);

impl Slots {
    /// The slots of `vnodes` vnodes having `ncpus` cpus between them.
    pub fn of(vnodes: u64, ncpus: u64) -> Slots {
        Slots(vnodes.saturating_add(ncpus))
    }
}

/// A request that asks for more than its nodes can ever give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Exceeds {
    /// More chunks than slots.
    #[error("{asked} chunks, more than the {slots} the nodes can hold")]
    Chunks {
        /// Chunks asked for.
        asked: u64,
        /// What the nodes can hold.
        slots: u64,
    },
    /// More MPI processes than slots.
    #[error("{asked} mpiprocs, more than the {slots} the nodes can hold")]
    Mpiprocs {
        /// Processes asked for.
        asked: u64,
        /// What the nodes can hold.
        slots: u64,
    },
}

/// The `mpiprocs` of one chunk: as asked, else one for a chunk with cpus (`ncpus`
/// defaults to 1), none for a chunk of `ncpus=0`.
pub fn chunk_mpiprocs(chunk: &Chunk) -> u64 {
    if let Some(value) = chunk.get("mpiprocs") {
        return value.parse().unwrap_or(0);
    }
    match chunk.get("ncpus").map(|v| v.parse::<u64>()) {
        Some(Ok(0)) => 0,
        _ => 1,
    }
}

/// The chunks and processes of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Chunks (`nodect`).
    pub chunks: u64,
    /// `mpiprocs` over every chunk.
    pub mpiprocs: u64,
}

impl Counts {
    /// The counts of a select; sums that would wrap stand at `u64::MAX`, which no set of
    /// nodes holds.
    pub fn of(select: &Select) -> Counts {
        let mut counts = Counts::default();
        for chunk in select.chunks() {
            let n = u64::from(chunk.count());
            counts.chunks = counts.chunks.saturating_add(n);
            counts.mpiprocs = counts.mpiprocs.saturating_add(chunk_mpiprocs(chunk).saturating_mul(n));
        }
        counts
    }

    /// Whether nodes with `slots` can ever hold these counts.
    pub fn check(&self, slots: Slots) -> Result<(), Exceeds> {
        if self.chunks > slots.0 {
            return Err(Exceeds::Chunks { asked: self.chunks, slots: slots.0 });
        }
        if self.mpiprocs > slots.0 {
            return Err(Exceeds::Mpiprocs { asked: self.mpiprocs, slots: slots.0 });
        }
        Ok(())
    }
}

/// A sum of a request's amounts that does not fit in 63 bits (the amounts schedulers and
/// limits compare), where a wrapped sum would pass for a small one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the total of {0} is too large")]
pub struct Overflow(pub String);

/// The sum over all chunks of `resource` (each chunk's amount, read by `amount`, times its
/// count), `None` if no chunk asks for it; an error where it would pass `i64::MAX`.
pub fn checked_total(
    select: &Select,
    resource: &str,
    amount: impl Fn(&str) -> Option<u64>,
) -> Result<Option<u64>, Overflow> {
    let mut total: Option<u64> = None;
    for chunk in select.chunks() {
        let Some(value) = chunk.get(resource) else { continue };
        let each = amount(value).unwrap_or(0);
        let sum = each
            .checked_mul(u64::from(chunk.count()))
            .and_then(|part| part.checked_add(total.unwrap_or(0)))
            .filter(|sum| i64::try_from(*sum).is_ok())
            .ok_or_else(|| Overflow(resource.to_string()))?;
        total = Some(sum);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(select: &str) -> Counts {
        Counts::of(&select.parse().unwrap())
    }

    #[test]
    fn counts_read_chunks_and_processes() {
        assert_eq!(counts("2:ncpus=4+1:ncpus=1:mpiprocs=8"), Counts { chunks: 3, mpiprocs: 10 });
        assert_eq!(counts("3:ncpus=0"), Counts { chunks: 3, mpiprocs: 0 });
        assert_eq!(counts("4000000000:ncpus=0").chunks, 4_000_000_000);
        assert_eq!(counts("4000000000:mpiprocs=4000000000").mpiprocs, 16_000_000_000_000_000_000);
        assert_eq!(counts("4000000000:mpiprocs=18446744073709551615").mpiprocs, u64::MAX);
    }

    #[test]
    fn slots_bound_chunks_and_processes() {
        let slots = Slots::of(2, 8);
        assert_eq!(counts("10:ncpus=0").check(slots), Ok(()));
        assert_eq!(counts("11:ncpus=0").check(slots), Err(Exceeds::Chunks { asked: 11, slots: 10 }));
        assert_eq!(
            counts("1:ncpus=1:mpiprocs=2000000000").check(slots),
            Err(Exceeds::Mpiprocs { asked: 2_000_000_000, slots: 10 })
        );
        assert_eq!(counts("1:ncpus=1:mpiprocs=4").check(slots), Ok(()));
    }

    #[test]
    fn totals_refuse_to_wrap() {
        let size = |v: &str| v.parse::<crate::Size>().ok().map(|s| s.to_bytes());
        let select: Select = "2:mem=4096pb".parse().unwrap();
        assert_eq!(checked_total(&"1:mem=4096pb".parse().unwrap(), "mem", size), Ok(Some(1 << 62)));
        assert_eq!(checked_total(&select, "mem", size), Err(Overflow("mem".into())));
        let select: Select = "2:mem=1gb+1:ncpus=2".parse().unwrap();
        assert_eq!(checked_total(&select, "mem", size), Ok(Some(2 << 30)));
        assert_eq!(checked_total(&select, "vmem", size), Ok(None));
    }
}
