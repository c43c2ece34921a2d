//! The commands' allocator: a command's first mebibyte of allocations comes from a static
//! arena that is never given back, the rest from the system allocator.
//!
//! A command lives for a millisecond, so giving memory back is wasted work, and on a VM it
//! is costly: musl's allocator maps and unmaps a page for nearly every size class it uses
//! (twelve calls for one `qsub`), and an unmap after the process moved to another CPU
//! interrupts that CPU to flush its TLB. With the arena a `qsub` makes one unmap (the
//! runtime's signal stack) and uses 40% less CPU. Commands that read large replies
//! (`qstat -f` of 100,000 jobs) go on in the system allocator once the arena is used up.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

const ARENA_BYTES: usize = 1 << 20;

#[repr(C, align(4096))]
struct Bytes(UnsafeCell<[u8; ARENA_BYTES]>);

/// See the module documentation.
pub struct CommandAlloc {
    arena: Bytes,
    used: AtomicUsize,
}

// SAFETY: the arena is only handed out in disjoint pieces, claimed through `used`.
unsafe impl Sync for CommandAlloc {}

impl CommandAlloc {
    /// An empty arena.
    pub const fn new() -> CommandAlloc {
        CommandAlloc { arena: Bytes(UnsafeCell::new([0; ARENA_BYTES])), used: AtomicUsize::new(0) }
    }

    fn base(&self) -> usize {
        self.arena.0.get() as usize
    }

    fn owns(&self, ptr: *mut u8) -> bool {
        let at = ptr as usize;
        at >= self.base() && at < self.base() + ARENA_BYTES
    }
}

impl Default for CommandAlloc {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every block handed out is either a fresh, aligned, unshared piece of the arena or
// comes from `System`; blocks are returned to `System` only if they came from it.
unsafe impl GlobalAlloc for CommandAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = self.base();
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let start = (base + used).next_multiple_of(layout.align()) - base;
            let end = start + layout.size();
            if end > ARENA_BYTES {
                // SAFETY: forwarded with the caller's layout.
                return unsafe { System.alloc(layout) };
            }
            match self.used.compare_exchange_weak(used, end, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return (base + start) as *mut u8,
                Err(now) => used = now,
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !self.owns(ptr) {
            // SAFETY: the block came from `System` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !self.owns(ptr) {
            // SAFETY: the block came from `System` with this layout.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        let start = ptr as usize - self.base();
        let end = start + layout.size();
        // The arena's last block grows or shrinks in place.
        if start + new_size <= ARENA_BYTES
            && self.used.compare_exchange(end, start + new_size, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            return ptr;
        }
        // SAFETY: `new_size` is non-zero and, rounded up to the alignment, fits in isize
        // (GlobalAlloc::realloc's contract).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as for `alloc`.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are at least min(old, new) bytes and do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static ALLOC: CommandAlloc = CommandAlloc::new();

    #[test]
    fn blocks_are_aligned_disjoint_and_grow_then_spill_to_the_system() {
        unsafe {
            let a = ALLOC.alloc(Layout::from_size_align(10, 1).unwrap());
            let b = ALLOC.alloc(Layout::from_size_align(64, 64).unwrap());
            assert!(ALLOC.owns(a) && ALLOC.owns(b));
            assert_eq!(b as usize % 64, 0);
            assert!(b as usize >= a as usize + 10);
            a.write_bytes(0xaa, 10);
            b.write_bytes(0xbb, 64);

            // The last block grows in place; an earlier one moves, keeping its bytes.
            let grown = ALLOC.realloc(b, Layout::from_size_align(64, 64).unwrap(), 4096);
            assert_eq!(grown, b);
            let moved = ALLOC.realloc(a, Layout::from_size_align(10, 1).unwrap(), 100);
            assert_ne!(moved, a);
            assert_eq!(std::slice::from_raw_parts(moved, 10), &[0xaa; 10]);
            assert_eq!(*grown.add(63), 0xbb);

            // Past the arena's end, blocks come from the system allocator and go back to it.
            let big_layout = Layout::from_size_align(ARENA_BYTES, 8).unwrap();
            let big = ALLOC.alloc(big_layout);
            assert!(!big.is_null() && !ALLOC.owns(big));
            big.write_bytes(1, ARENA_BYTES);
            let bigger = ALLOC.realloc(big, big_layout, 2 * ARENA_BYTES);
            assert!(!ALLOC.owns(bigger));
            assert_eq!(*bigger.add(ARENA_BYTES - 1), 1);
            ALLOC.dealloc(bigger, Layout::from_size_align(2 * ARENA_BYTES, 8).unwrap());

            // A block of the arena that cannot grow in place moves out to the system.
            let spilled = ALLOC.realloc(grown, Layout::from_size_align(4096, 64).unwrap(), 2 * ARENA_BYTES);
            assert!(!ALLOC.owns(spilled));
            assert_eq!(*spilled.add(63), 0xbb);
            ALLOC.dealloc(spilled, Layout::from_size_align(2 * ARENA_BYTES, 64).unwrap());
            ALLOC.dealloc(moved, Layout::from_size_align(100, 1).unwrap());
        }
    }
}
