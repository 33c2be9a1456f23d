//! # Runs: entries shared by buckets, counted by holds rather than by copies
//!
//! A run (see `bucket.rs`) is one allocation of a body's entries at consecutive ticks, shared
//! by every bucket its ticks' cells hash to. Something must say when it can be freed. An `Arc`
//! says it by counting *copies* of the reference, and that is what makes it dear here: under
//! the STM a section copies every bucket it names, so each copy would bump the count of every
//! run the bucket holds, and dropping the copy (or the version it replaced) would take them
//! back down; with two workers those counts live in cache lines the other core wrote last.
//!
//! So a run counts **holds**: the buckets that hold it in their current (committed) version,
//! plus what the write request that made it reserved while the request runs. A [`RunRef`] is
//! a plain pointer, copied for free with its bucket. Holds change only outside sections, after
//! they commit, by what the section says it did. A request makes each run with one hold for
//! itself and one for every bucket its section names (no bucket can take a run twice), so the
//! count is never below the buckets that hold the run, however the section and others
//! interleave; after the section it gives back what its buckets did not take and its own
//! ([`RunRef::settle`]). A section that drops a run from a bucket (a delete clearing its last
//! bit, a sweep behind the floor) returns it, and its caller lets go of that hold
//! ([`RunRef::release`]). A section that runs several times (the STM) returns only what its
//! last, committed run did, so each hold is counted once. When the count reaches zero the run
//! is **retired**: it is freed once no thread can still be looking at it, by crossbeam-epoch.
//! (Why reserve: were the buckets' holds added only after the commit, to a count of one, a
//! sweep that dropped a fresh run from one of its buckets in between, which the table allows
//! when the floor overtakes a write, would take the count to zero while other buckets held
//! the run. The engine never writes behind the floor, so no test can make it happen there.)
//!
//! ## Why a look at a run is safe
//!
//! Entries are read only through a bucket, in a section, or in a copy of the table taken while
//! the thread is pinned ([`Tvht::validate`](super::Tvht::validate) and its kin pin first).
//!
//! * *Locks.* A section holds the mutex of the bucket it looks in, so the bucket's hold on the
//!   run stands until the section ends (dropping it needs the mutex, and letting go of the hold
//!   comes later still): the count is at least one, the run is not retired.
//! * *STM.* An attempt is pinned from its first read of a slot to its end (`timewarp_stm`,
//!   `Transaction::ensure_pinned`), and a section reads all its slots first. Its copy of a
//!   bucket is of the version current when it read it. If the run was retired after the attempt
//!   pinned, the epoch keeps it until the attempt unpins. If it was retired before, every
//!   commit that dropped it from a bucket happened before the retirement (it precedes its own
//!   release, which precedes the last one), so the versions that held it had been replaced
//!   before the attempt pinned, and an attempt pinned later reads only versions after them
//!   (that is crossbeam-epoch's own contract for the replaced versions, which it frees the same
//!   way).
//!
//! The count never reaches zero while a bucket holds the run: until the request settles, the
//! count is its own hold plus its reservation less the holds let go, and only a bucket that
//! took the run can let one go; after, it is the buckets that hold the run.
//!
//! Under `cfg(loom)` crossbeam-epoch cannot be used (its collector and thread-locals are
//! invisible to loom), so a retired run is kept in the table's graveyard and freed when the
//! table is dropped, as the STM does with replaced values under loom; the counting itself is
//! loom atomics, and the TVHT and rollback models check it at the end of every interleaving
//! ([`Tvht::validate_at_rest`](super::Tvht::validate_at_rest): every run's count equals the
//! buckets that hold it).

use super::TvhtEntry;
use crate::primitive::{AtomicUsize, Ordering};
use std::ptr::NonNull;

/// A run's allocation: its entries and its holds.
struct RunData {
    holds: AtomicUsize,
    entries: Box<[TvhtEntry]>,
}

/// A pointer to a run: copied with the buckets that hold it, counted by holds (see the module
/// documentation), compared by address.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct RunRef(NonNull<RunData>);

// SAFETY: a run's entries are immutable after it is made and its count is an atomic, so
// sharing the pointer between threads shares only immutable data and an atomic; when the
// pointee may be freed is the protocol's concern (module documentation), not the thread's.
unsafe impl Send for RunRef {}
// SAFETY: as for `Send`: `&RunRef` gives access to nothing mutable but the atomic count.
unsafe impl Sync for RunRef {}

impl std::fmt::Debug for RunRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RunRef({:p})", self.0)
    }
}

impl RunRef {
    /// A new run of `entries`, with one hold for its request and `reserved` for the buckets it
    /// may be put in ([`RunRef::settle`] gives back what is not used).
    pub(super) fn new(entries: Box<[TvhtEntry]>, reserved: usize) -> RunRef {
        let data = Box::new(RunData {
            holds: AtomicUsize::new(reserved + 1),
            entries,
        });
        RunRef(NonNull::from(Box::leak(data)))
    }

    /// The run's entries.
    #[inline]
    pub(super) fn entries(&self) -> &[TvhtEntry] {
        // SAFETY: `self` was reached through a bucket in a section, through a copy of the
        // table taken while pinned, or through the request that holds a hold on it: in each
        // case the run is not freed while the caller looks (module documentation, "Why a look
        // at a run is safe"), and its entries are never written after `new`.
        unsafe { &self.0.as_ref().entries }
    }

    /// The holds counted now (for `validate`, at rest).
    pub(super) fn holds(&self) -> usize {
        // SAFETY: as in `entries`.
        unsafe { self.0.as_ref() }.holds.load(Ordering::Acquire)
    }

    /// The request's end: of `reserved` holds, `taken` went to buckets of its committed section
    /// (none if it failed); gives back the rest and its own.
    pub(super) fn settle(self, reserved: usize, taken: usize, graveyard: &Graveyard) {
        debug_assert!(
            taken <= reserved,
            "more buckets took a run than its section named"
        );
        self.let_go_to(reserved - taken + 1, graveyard);
    }

    /// Lets go of one hold: a bucket's, dropped by a committed section. If it was the last,
    /// the run goes to `retired`, for [`Graveyard::retire_all`] (a section drops runs by the
    /// dozen: retired one by one, each was a pin and a flush of the epoch's bag, 3.5% of a
    /// `parallel` run's instructions).
    pub(super) fn release(self, retired: &mut Vec<RunRef>) {
        if self.let_go(1) {
            retired.push(self);
        }
    }

    /// Lets go of `n` holds; the last one retires the run to `graveyard`.
    fn let_go_to(self, n: usize, graveyard: &Graveyard) {
        if self.let_go(n) {
            graveyard.retire_all(vec![self]);
        }
    }

    /// Lets go of `n` holds; whether they were the last (the run is then the caller's to
    /// retire).
    fn let_go(self, n: usize) -> bool {
        // SAFETY: the caller owns the `n` holds it lets go of, so the count is at least `n` and
        // the run allocated until this decrement.
        let before = unsafe { self.0.as_ref() }
            .holds
            .fetch_sub(n, Ordering::AcqRel);
        debug_assert!(before >= n, "a run's holds went below zero");
        before == n
    }

    /// Frees the run now.
    ///
    /// # Safety
    /// No thread may look at the run again: its holds are all let go and every thread that
    /// might have reached it has unpinned (or, at the table's drop, no other thread exists).
    unsafe fn free(self) {
        // SAFETY: the allocation came from `Box::leak` in `new` and, by the caller's contract,
        // is freed once and never touched again.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }

    /// Frees the run at once if it is held by `n` buckets and nothing else: for the table's
    /// drop, which owns every bucket and shares none of them.
    pub(super) fn drop_holds_at_drop(self, n: usize) {
        // SAFETY: at the drop no other thread exists, so the count is exactly the holds of
        // the buckets being dropped and nobody looks at the run again after the last of them.
        let before = unsafe { self.0.as_ref() }
            .holds
            .fetch_sub(n, Ordering::AcqRel);
        if before == n {
            // SAFETY: as above: the last hold is gone and no thread can reach the run.
            unsafe { self.free() };
        }
    }
}

/// Where retired runs go until nobody can be looking at them (see the module documentation).
#[derive(Default)]
pub(super) struct Graveyard {
    /// Under loom: every retired run, freed when the table is dropped.
    #[cfg(loom)]
    buried: crate::primitive::Mutex<Vec<RunRef>>,
}

impl Graveyard {
    /// Retires runs whose last hold is gone: they are freed once no thread can be looking at
    /// them.
    pub(super) fn retire_all(&self, runs: Vec<RunRef>) {
        if runs.is_empty() {
            return;
        }
        #[cfg(not(loom))]
        {
            let guard = crossbeam_epoch::pin();
            // SAFETY: the runs' last holds are gone, so no current bucket version holds them
            // and no request does; a thread that can still reach one is pinned now (module
            // documentation), and the epoch runs this only after every such thread unpinned.
            unsafe {
                guard.defer_unchecked(move || {
                    for run in runs {
                        run.free();
                    }
                })
            };
            // Hand the runs to the collector at once, and let it collect. Left in the thread's
            // bag, deferred runs wait there until 64 are, and the collector frees a few bags
            // per pin: on `bouncing` 500 (2 workers, STM) the peak resident set grew from 87
            // MiB at 20 s to 109 MiB at 60 s while the live heap stayed at 21-26 MiB
            // (`tests/warp_memory.rs` failed). Flushed every time it stays at 74 MiB (76 MiB
            // with the `Arc` runs before); every 4th or 16th time, at 82-86 MiB. The time the
            // flushes take was within this machine's noise (cylinders and bouncing 2000, 1
            // and 2 workers), but one per run was 3.5% of a `parallel` run's instructions: a
            // section's or a sweep's runs are retired together (see `RunRef::release`).
            guard.flush();
        }
        #[cfg(loom)]
        self.buried
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(runs);
    }
}

#[cfg(loom)]
impl Drop for Graveyard {
    fn drop(&mut self) {
        let buried = std::mem::take(&mut *self.buried.lock().unwrap_or_else(|p| p.into_inner()));
        for run in buried {
            // SAFETY: the table is being dropped: no thread can look at any of its runs.
            unsafe { run.free() };
        }
    }
}

/// What keeps retired runs allocated while a thread reads a copy of the table outside a
/// section (see "Why a look at a run is safe").
#[cfg(not(loom))]
pub(super) type Pin = crossbeam_epoch::Guard;
/// Under loom nothing is freed before the table is dropped: no pin is needed.
#[cfg(loom)]
pub(super) struct Pin;

/// Pins the thread (see [`Pin`]).
pub(super) fn pin() -> Pin {
    #[cfg(not(loom))]
    return crossbeam_epoch::pin();
    #[cfg(loom)]
    Pin
}
