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
//! * every spin or wait loop calls [`spin_loop`] or [`yield_now`], which under loom is
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
    pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

    /// Under loom nothing is reclaimed while a `TVar` lives, so the guard is empty; it still
    /// ties the lifetime of a reference to the transaction attempt, as the real one does.
    pub(crate) struct Guard;

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
