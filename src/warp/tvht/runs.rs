//! # Runs: entries shared by buckets, counted by holds rather than by copies
//!
//! What is said here of a run holds as well for a span record's anchor (`span.rs`): one
//! allocation shared by the copies of the record in every record-half bucket of the span,
//! counted by the same holds, made by its write request ([`NewAnchor`]) and let go of by the
//! sections that drop the record (a cut, a sweep, a write that clears what the floor left). The
//! types are generic ([`HeldRef`], [`NewHeld`]); [`RunRef`] and [`AnchorRef`] name their two
//! uses. (As an `Arc`, an anchor's count was bumped and dropped for every span record of every
//! bucket a section copied: on two workers, a tenth of `parallel`'s time.)
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
//! a plain pointer, cloned for free with its bucket (a clone is not a hold: see "The types
//! that carry it", below). Holds change only outside sections, after they commit, by what the
//! section says it did. A request makes each run with one hold for
//! itself and one for every bucket its section names (no bucket can take a run twice), so the
//! count is never below the buckets that hold the run, however the section and others
//! interleave; after the section it gives back what its buckets did not take and its own
//! ([`NewHeld::settle`]). A section that drops a run from a bucket (a delete clearing its last
//! bit, a sweep behind the floor) returns it, and its caller lets go of that hold
//! ([`HeldRef::release`]). A section that runs several times (the STM) returns only what its
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
//! the thread is pinned (a [`Snapshot`]), or by the request that made the run, through its own
//! hold ([`NewRun`]).
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
//! * *A snapshot.* The thread pins, then copies every bucket in one section (either case
//!   above), and stays pinned while it reads the copies: a run retired after the pin is kept by
//!   the epoch, and one retired before it was in no bucket version the copy read.
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
//!
//! ## The types that carry it
//!
//! The argument above is carried by types, after crossbeam-epoch, where a pointer loaded from
//! an `Atomic` under a `&'g Guard` is a `Shared<'g, T>` whose referent cannot outlive the
//! guard. Here the guard is a [`Look`], and a run's entries are borrowed against it:
//! [`RunRef::entries`]`(&self, look: &'g Look) -> &'g [TvhtEntry]`. Only two things make a
//! `Look`: a section, whose closure gets one from `Tvht::section` (locks held, or the STM
//! attempt pinned, until the closure returns), and a [`Snapshot`], which pins the thread before
//! it copies the buckets and keeps the pin as long as it lives. Its constructor is `unsafe` and
//! is called there only, so a run's entries can be read only where "Why a look at a run is
//! safe" holds, and a reference to them cannot leave the section's closure or outlive the
//! snapshot; a `Look` is neither `Send` nor `Sync`, as the locks and the pin behind it belong
//! to the thread. The run a write request makes is a [`NewRun`], which owns the request's
//! hold, like crossbeam's `Owned`: its entries are borrowed from it, with no `Look`, and it is
//! consumed when the request settles.
//!
//! What the types do not say is that the `RunRef` read with a `Look` came from the buckets
//! that `Look` covers (crossbeam leaves the same to `unsafe` at `Shared::deref`; a generative
//! brand tying each bucket to its section would not fit `Table<Bucket>`). It holds by the
//! module's shape: a bucket is copied out of a section only by [`Snapshot::take`], and a
//! `RunRef` lives only in a bucket, in a `NewRun` (private), among the keys `holders` counts
//! from a snapshot's buckets (or the dropped table's), or on its way from a committed section
//! to [`HeldRef::release`], where it is not read.
//!
//! A [`RunRef`] is not `Copy`: taking one out of a bucket is a visible `clone`. It is `Clone`
//! because the STM copies every bucket a section reads, runs and all, and that copy must stay
//! a copy of words: so a clone is **not a hold**, and gives no right to read the run (that is
//! the `Look`'s). Holds are counted apart, by the count in the run; the functions that let go
//! of one ([`HeldRef::release`], [`NewHeld::settle`]) are `unsafe`, and each caller says whose
//! hold it gives up.

use super::TvhtEntry;
use super::bucket::Bucket;
use crate::primitive::{AtomicUsize, Ordering};
use crate::sync::Table;
use crate::warp::rules::Anchor;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// A shared allocation counted by holds: a run's entries, or a span record's anchor.
struct HeldData<T> {
    holds: AtomicUsize,
    value: T,
}

/// What a run shares: its entries.
pub(super) type Entries = Box<[TvhtEntry]>;

/// A pointer to a run, as a bucket keeps it.
pub(super) type RunRef = HeldRef<Entries>;
/// A run a write request made, until the request settles.
pub(super) type NewRun = NewHeld<Entries>;
/// A pointer to a span record's anchor, as the buckets of the span keep it (`span.rs`): the
/// same protocol as a run's entries, so that copying a bucket copies a pointer for each of its
/// span records and touches no count.
pub(super) type AnchorRef = HeldRef<Anchor>;
/// A span's anchor its write request made, until the request settles.
pub(super) type NewAnchor = NewHeld<Anchor>;

/// A pointer to a run (or an anchor), as a bucket keeps it: compared by address, counted by
/// holds (see the module documentation), its value read only against a [`Look`]. A clone
/// copies the pointer and is not a hold.
pub(super) struct HeldRef<T>(NonNull<HeldData<T>>);

impl<T> Clone for HeldRef<T> {
    fn clone(&self) -> Self {
        HeldRef(self.0)
    }
}

impl<T> PartialEq for HeldRef<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<T> Eq for HeldRef<T> {}

impl<T> std::hash::Hash for HeldRef<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

// SAFETY: a run's entries (an anchor) are immutable after it is made and its count is an
// atomic, so sharing the pointer between threads shares only immutable data of a `Send + Sync`
// type and an atomic; when the pointee may be freed is the protocol's concern (module
// documentation), not the thread's.
unsafe impl<T: Send + Sync> Send for HeldRef<T> {}
// SAFETY: as for `Send`: `&HeldRef` gives access to nothing mutable but the atomic count.
unsafe impl<T: Send + Sync> Sync for HeldRef<T> {}

impl<T> std::fmt::Debug for HeldRef<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HeldRef({:p})", self.0)
    }
}

impl RunRef {
    /// The run's entries, for as long as `look` lives.
    #[inline]
    pub(super) fn entries<'g>(&self, look: &'g Look) -> &'g [TvhtEntry] {
        self.get(look)
    }
}

impl<T> HeldRef<T> {
    /// The value, for as long as `look` lives.
    #[inline]
    pub(super) fn get<'g>(&self, _look: &'g Look) -> &'g T {
        // SAFETY: a `Look` lives only inside a section's closure, or in a `Snapshot` whose
        // thread pinned before it copied the buckets, and `self` was reached through that
        // section's buckets or that copy: so the allocation is not freed before the `Look`
        // dies (module documentation, "Why a look at a run is safe"), and its value is never
        // written after `NewHeld::new`.
        unsafe { &(*self.0.as_ptr()).value }
    }

    /// The holds counted now (for `validate`, at rest).
    pub(super) fn holds(&self, _look: &Look) -> usize {
        // SAFETY: as in `get`: the allocation lives while `look` lives.
        unsafe { self.0.as_ref() }.holds.load(Ordering::Acquire)
    }

    /// Lets go of one hold: a bucket's, dropped by a committed section. If it was the last,
    /// the allocation goes to `retired`, for [`Graveyard::retire_all`] (a section drops runs
    /// by the dozen: retired one by one, each was a pin and a flush of the epoch's bag, 3.5%
    /// of a `parallel` run's instructions).
    ///
    /// # Safety
    /// The caller owns the hold it lets go of: `self` was taken out of a bucket by a section
    /// that committed, once for each bucket that did so.
    pub(super) unsafe fn release(self, retired: &mut Vec<HeldRef<T>>) {
        // SAFETY: the caller owns the hold (this function's contract).
        if unsafe { self.let_go(1) } {
            retired.push(self);
        }
    }

    /// Lets go of `n` holds; whether they were the last (the allocation is then the caller's
    /// to retire).
    ///
    /// # Safety
    /// The caller owns the `n` holds.
    unsafe fn let_go(&self, n: usize) -> bool {
        // SAFETY: the caller owns `n` holds, so the count is at least `n` and the allocation
        // stays until this decrement.
        let before = unsafe { self.0.as_ref() }
            .holds
            .fetch_sub(n, Ordering::AcqRel);
        debug_assert!(before >= n, "a run's holds went below zero");
        before == n
    }

    /// Frees the allocation now.
    ///
    /// # Safety
    /// No thread may look at it again: its holds are all let go and every thread that might
    /// have reached it has unpinned (or, at the table's drop, no other thread exists).
    unsafe fn free(self) {
        // SAFETY: the allocation came from `Box::leak` in `NewHeld::new` and, by the caller's
        // contract, is freed once and never touched again.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }

    /// Lets go of the holds of `n` buckets, and frees the allocation at once if they were the
    /// last: for the table's drop.
    ///
    /// # Safety
    /// The caller owns `n` buckets that hold it, and no other thread can reach it: the table
    /// is being dropped, and those are its buckets, taken out of it.
    pub(super) unsafe fn drop_holds_at_drop(self, n: usize) {
        // SAFETY: the caller owns the `n` buckets' holds (this function's contract).
        if unsafe { self.let_go(n) } {
            // SAFETY: the last hold is gone and no other thread can reach the allocation.
            unsafe { self.free() };
        }
    }
}

/// A run (or an anchor) a write request made, until the request settles: it owns the
/// request's own hold, so its value is read with no [`Look`] (crossbeam's `Owned`, where
/// [`HeldRef`] is its `Shared`), and the holds reserved for the buckets of the request's
/// section, which it lends them with [`NewHeld::share`]. Not `Clone`: there is one per
/// allocation, consumed by [`NewHeld::settle`].
pub(super) struct NewHeld<T>(HeldRef<T>);

impl NewRun {
    /// The run's entries.
    #[inline]
    pub(super) fn entries(&self) -> &[TvhtEntry] {
        self.get()
    }
}

impl<T: Send + Sync + 'static> NewHeld<T> {
    /// A new allocation of `value`, with one hold for its request and `reserved` for the
    /// buckets it may be put in ([`NewHeld::settle`] gives back what is not used).
    pub(super) fn new(value: T, reserved: usize) -> NewHeld<T> {
        let data = Box::new(HeldData {
            holds: AtomicUsize::new(reserved + 1),
            value,
        });
        NewHeld(HeldRef(NonNull::from(Box::leak(data))))
    }

    /// The value.
    #[inline]
    pub(super) fn get(&self) -> &T {
        // SAFETY: `self` owns the request's hold until `settle` consumes it, so the count is at
        // least one while `self` is borrowed and the allocation is not retired; its value is
        // never written after `new`.
        unsafe { &self.0.0.as_ref().value }
    }

    /// The pointer a bucket of the request's section keeps: one of the reserved holds, which
    /// the bucket takes if the section commits ([`NewHeld::settle`] counts it).
    #[inline]
    pub(super) fn share(&self) -> HeldRef<T> {
        self.0.clone()
    }

    /// Whether a bucket's `r` is this allocation.
    #[inline]
    pub(super) fn is(&self, r: &HeldRef<T>) -> bool {
        self.0 == *r
    }

    /// The request's end: of `reserved` holds, `taken` went to buckets of its committed section
    /// (none if it failed); gives back the rest and its own.
    ///
    /// # Safety
    /// `reserved` is what the allocation was made with, and `taken` counts the buckets that
    /// hold it in the committed versions of the request's section: no more than that (or a
    /// hold still in a bucket would be let go of).
    pub(super) unsafe fn settle(self, reserved: usize, taken: usize, graveyard: &Graveyard) {
        debug_assert!(
            taken <= reserved,
            "more buckets took a run than its section named"
        );
        // SAFETY: the request's own hold is `self`'s, and of the `reserved` holds the
        // buckets did not take, none is anyone else's (this function's contract).
        if unsafe { self.0.let_go(reserved - taken + 1) } {
            graveyard.retire_all(vec![self.0]);
        }
    }
}

/// What sections took out of buckets, runs and span anchors: each a bucket's hold, let go of
/// once the section commits ([`Tvht::release_dropped`](super::Tvht::release_dropped)).
#[derive(Default)]
pub(super) struct Dropped {
    pub(super) runs: Vec<RunRef>,
    pub(super) anchors: Vec<AnchorRef>,
}

impl Dropped {
    /// Adds what `other` holds.
    pub(super) fn append(&mut self, mut other: Dropped) {
        self.runs.append(&mut other.runs);
        self.anchors.append(&mut other.anchors);
    }
}

/// Where retired runs go until nobody can be looking at them (see the module documentation).
#[derive(Default)]
pub(super) struct Graveyard {
    /// Under loom: every retired run, freed when the table is dropped.
    #[cfg(loom)]
    buried: crate::primitive::Mutex<Vec<Box<dyn FnOnce() + Send>>>,
}

impl Graveyard {
    /// Retires runs whose last hold is gone: they are freed once no thread can be looking at
    /// them.
    pub(super) fn retire_all<T: Send + Sync + 'static>(&self, runs: Vec<HeldRef<T>>) {
        if runs.is_empty() {
            return;
        }
        #[cfg(not(loom))]
        {
            let guard = crossbeam_epoch::pin();
            // SAFETY: the runs' last holds are gone, so no current bucket version holds them
            // and no request does; a thread that can still reach one holds a `Look` and is
            // pinned now (module documentation), and the epoch runs this only after every such
            // thread unpinned.
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
            // section's or a sweep's runs are retired together (see `HeldRef::release`).
            guard.flush();
        }
        #[cfg(loom)]
        self.buried
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(runs.into_iter().map(|run| {
                Box::new(move || {
                    // SAFETY: run by `Graveyard::drop` only, when the table is being dropped:
                    // no thread can look at the run.
                    unsafe { run.free() }
                }) as Box<dyn FnOnce() + Send>
            }));
    }
}

#[cfg(loom)]
impl Drop for Graveyard {
    fn drop(&mut self) {
        let buried = std::mem::take(&mut *self.buried.lock().unwrap_or_else(|p| p.into_inner()));
        // The table is being dropped: no thread can look at any of its runs (each closure
        // frees one).
        for free in buried {
            free();
        }
    }
}

/// A look at runs: while it lives, no run that this thread reached through the table's
/// buckets is freed (crossbeam's `Guard`, whose `&'g` bounds what is read). Made only inside a
/// section ([`Look::in_section`], by `Tvht::section`) and by a [`Snapshot`]; neither `Send`
/// nor `Sync`, like the pin or the locks that stand behind it.
pub(super) struct Look {
    _not_send: PhantomData<*mut ()>,
}

impl Look {
    /// The look of a section's closure.
    ///
    /// # Safety
    /// The caller is the closure of a section of the table's buckets, and the `Look` dies
    /// before the closure returns: the section holds the mutex of every bucket it names
    /// (locks), or its attempt read every named bucket pinned and stays pinned to its end
    /// (STM). In a `timewarp_broken` build (test-only, always under loom) the closure may run
    /// on copies outside any guard; under loom no run is freed before the table is dropped.
    #[inline]
    pub(super) unsafe fn in_section() -> Look {
        Look {
            _not_send: PhantomData,
        }
    }
}

// `Look::in_section` leans on loom's graveyard where `timewarp_broken` takes the guard away.
#[cfg(all(timewarp_broken, not(loom)))]
compile_error!("`timewarp_broken` is a loom-only negative control (see `sync::broken`)");

/// What keeps retired runs allocated while a thread reads a copy of the table outside a
/// section (see "Why a look at a run is safe").
#[cfg(not(loom))]
type Pin = crossbeam_epoch::Guard;
/// Under loom nothing is freed before the table is dropped: no pin is needed.
#[cfg(loom)]
struct Pin;

/// Pins the thread (see [`Pin`]).
fn pin() -> Pin {
    #[cfg(not(loom))]
    return crossbeam_epoch::pin();
    #[cfg(loom)]
    Pin
}

/// A consistent copy of every bucket, taken with the thread pinned, and the pin: its runs can
/// be read for as long as it lives ([`Snapshot::look`]).
pub(super) struct Snapshot {
    buckets: Vec<Bucket>,
    look: Look,
    _pin: Pin,
}

impl Snapshot {
    /// Pins the thread, then copies every bucket of `table` in one section.
    pub(super) fn take(table: &Table<Bucket>) -> Snapshot {
        let pin = pin();
        Snapshot {
            buckets: table.snapshot(),
            look: Look {
                _not_send: PhantomData,
            },
            _pin: pin,
        }
    }

    /// The copies, in key order.
    pub(super) fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// The look its runs are read with: the thread was pinned before the copy was taken and
    /// stays pinned while the snapshot lives, so a run retired since then is not freed, and
    /// one retired before is in no version the copy read (module documentation).
    pub(super) fn look(&self) -> &Look {
        &self.look
    }
}
