//! The engine's concurrency primitives, switched between `std` and `loom`.
//!
//! Like `timewarp_stm::primitive` (and crossbeam's own `primitive` modules), this file is the one
//! place where the engine's shared-memory code names a mutex, an atomic or a yield. A normal
//! build gets `std`'s; a build with `RUSTFLAGS="--cfg loom"` gets loom's mocks, so loom models
//! explore every interleaving of the real [`sync`](crate::sync) seam, TVHT and GVT buffer code
//! rather than of a copy. The STM crate's primitives are private to it (its transactions switch
//! themselves); what the engine adds on top — the lock backend's per-slot mutexes, the TVHT's
//! prune floor and its runs' hold counts, the GVT word, the committed-frame hand-off — lives here.
//!
//! Counters that never influence a decision (the section statistics of
//! [`sync::stats`](crate::sync::stats)) are deliberately plain `std` atomics, as in the STM
//! crate: loom has nothing to explore there.

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
    #[cfg_attr(not(feature = "locks"), allow(unused_imports))]
    pub(crate) use std::sync::{Mutex, MutexGuard};

    /// Gives the processor to another thread (used where a caller waits for progress).
    #[inline]
    #[allow(dead_code)]
    pub(crate) fn yield_now() {
        std::thread::yield_now()
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
    #[cfg_attr(not(feature = "locks"), allow(unused_imports))]
    pub(crate) use loom::sync::{Mutex, MutexGuard};

    /// Under loom a wait must be visible to the scheduler.
    #[inline]
    #[allow(dead_code)]
    pub(crate) fn yield_now() {
        loom::thread::yield_now()
    }
}

pub(crate) use imp::*;
