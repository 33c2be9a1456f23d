//! The primitives the STM is built from, switched between `std` and `loom`.
//!
//! Like crossbeam-epoch's own `primitive` module, this file is the single place that names an
//! atomic type, a thread-local, a global or a yield. A normal build gets the `std` versions; a
//! build with `RUSTFLAGS="--cfg loom"` gets loom's mocks, so the loom models in `loom-tests/`
//! explore every interleaving of the REAL transaction code rather than of a copy of it.
//!
//! What loom needs from us:
//! * every word that two threads share is a loom atomic (the versioned locks, the inline values
//!   of [`TWord`](crate::TWord), the value pointer of [`TVar`](crate::TVar), the global clock and
//!   the irrevocability ticket lock). No payload is ever read through an `UnsafeCell`: values are
//!   reached through an atomically swapped pointer and are immutable once published;
//! * every spin or wait loop calls `spin_loop` or `yield_now`, which under loom is
//!   `loom::thread::yield_now`, so loom can schedule the thread we wait for;
//! * globals and thread-locals are loom's `lazy_static!`/`thread_local!`, reset for every
//!   explored execution.
//!
//! Reclamation is the one thing that differs in kind. crossbeam-epoch keeps its own global
//! collector and `std` thread-locals that loom cannot see (and cannot reset between
//! executions), so under `cfg(loom)` a replaced value is not handed to the epoch collector but
//! retired to a list owned by its `TVar` and freed when the `TVar` is dropped (see
//! [`tvar`](crate::tvar)). That is trivially safe — nothing is freed while the `TVar` is
//! borrowed — and it keeps the model about the protocol (locks, versions, clock), which is the
//! part loom can check. The epoch-based path is exercised by the `std` stress tests instead.
//!
//! **loom's blind spot.** loom 0.7's partial-order reduction remembers only the *last* access
//! to each atomic. When a thread loads a word and then stores it (every TL2 committer reads the
//! lock word before its CAS, and reads the variables it writes), its own load replaces another
//! thread's earlier load as "the last access", and the race between that earlier load and the
//! store is never explored. (A two-thread probe — one thread loads `a` then `b`, the other loads
//! both then stores both — yields a single execution.) So under loom every `load` of the
//! protocol's words is performed as a read-modify-write (`fetch_add(0)`, or `fetch_update`
//! returning the same pointer), which loom treats as a write and thus as conflicting with every
//! other access. Stores are done as `swap` for the same reason: loom orders a plain store by
//! the causality its thread has seen, so beside RMW loads it could place a store before a
//! concurrent RMW and let a later RMW read the older value — an execution no real machine
//! has. With every access an RMW, each word's modification order is total and loom explores
//! exactly the interleavings of the protocol. The price: those loads never read a stale value,
//! so the models check the protocol's interleavings, not its weak-memory orderings (those rest
//! on the sequence-lock argument in [`vlock`](crate::vlock)).
//!
//! The statistics counters are deliberately *not* switched: they are per-thread `std` atomics
//! that never influence a decision of the protocol, so loom has nothing to explore there.

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicU64, Ordering};

    /// An epoch guard: while it lives, no value that was reachable when it was made is freed.
    pub(crate) type Guard = crossbeam_epoch::Guard;

    /// Pins the current thread (see crossbeam-epoch).
    #[inline]
    pub(crate) fn pin() -> Guard {
        crossbeam_epoch::pin()
    }

    /// Gives the processor to another thread (used once spinning has not helped).
    #[inline]
    pub(crate) fn yield_now() {
        std::thread::yield_now()
    }

    /// One iteration of a busy-wait loop.
    #[inline]
    pub(crate) fn spin_loop() {
        std::hint::spin_loop()
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::Ordering;

    /// loom's `AtomicU64` whose `load` and `store` are read-modify-writes (see the module
    /// essay, "loom's blind spot").
    pub(crate) struct AtomicU64(loom::sync::atomic::AtomicU64);

    impl AtomicU64 {
        pub(crate) fn new(v: u64) -> Self {
            AtomicU64(loom::sync::atomic::AtomicU64::new(v))
        }
        #[inline]
        pub(crate) fn load(&self, order: Ordering) -> u64 {
            self.0.fetch_add(0, order)
        }
        #[inline]
        pub(crate) fn store(&self, v: u64, order: Ordering) {
            // A plain store beside RMW loads lets loom order the store before a concurrent
            // RMW it did not see, so a later RMW could read the older value: stores must be
            // RMWs too for loom to keep these words' modification order total.
            self.0.swap(v, order);
        }
        #[inline]
        pub(crate) fn compare_exchange(
            &self,
            current: u64,
            new: u64,
            success: Ordering,
            failure: Ordering,
        ) -> Result<u64, u64> {
            self.0.compare_exchange(current, new, success, failure)
        }
        #[inline]
        pub(crate) fn fetch_add(&self, v: u64, order: Ordering) -> u64 {
            self.0.fetch_add(v, order)
        }
        #[inline]
        pub(crate) fn fetch_or(&self, v: u64, order: Ordering) -> u64 {
            self.0.fetch_or(v, order)
        }
        #[inline]
        pub(crate) fn fetch_and(&self, v: u64, order: Ordering) -> u64 {
            self.0.fetch_and(v, order)
        }
    }

    /// loom's `AtomicPtr` whose `load` is a read-modify-write, like [`AtomicU64`].
    pub(crate) struct AtomicPtr<T>(loom::sync::atomic::AtomicPtr<T>);

    impl<T> AtomicPtr<T> {
        pub(crate) fn new(p: *mut T) -> Self {
            AtomicPtr(loom::sync::atomic::AtomicPtr::new(p))
        }
        #[inline]
        pub(crate) fn load(&self, order: Ordering) -> *mut T {
            match self.0.fetch_update(order, order, Some) {
                Ok(p) | Err(p) => p,
            }
        }
        #[inline]
        pub(crate) fn swap(&self, p: *mut T, order: Ordering) -> *mut T {
            self.0.swap(p, order)
        }
        pub(crate) fn with_mut<R>(&mut self, f: impl FnOnce(&mut *mut T) -> R) -> R {
            self.0.with_mut(f)
        }
    }

    /// Under loom nothing is reclaimed while a `TVar` lives, so the guard is empty; it still
    /// ties the lifetime of a reference to the transaction attempt, as the real one does.
    pub(crate) struct Guard;

    impl Guard {
        /// Nothing is deferred under loom, so there is nothing to flush.
        #[inline]
        pub(crate) fn flush(&self) {}
    }

    #[inline]
    pub(crate) fn pin() -> Guard {
        Guard
    }

    #[inline]
    pub(crate) fn yield_now() {
        loom::thread::yield_now()
    }

    /// Under loom a spin must be visible to the scheduler, or a model that waits would never
    /// let the thread it waits for run.
    #[inline]
    pub(crate) fn spin_loop() {
        loom::thread::yield_now()
    }
}

pub(crate) use imp::*;

/// Declares a thread-local: `std::thread_local!` normally, `loom::thread_local!` under loom.
macro_rules! stm_thread_local {
    ($(#[$attr:meta])* static $name:ident: $t:ty = $init:expr;) => {
        #[cfg(not(loom))]
        std::thread_local! { $(#[$attr])* static $name: $t = $init; }
        #[cfg(loom)]
        loom::thread_local! { $(#[$attr])* static $name: $t = $init; }
    };
}
pub(crate) use stm_thread_local;
