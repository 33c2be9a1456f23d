//! Section statistics for the run summary, cheap enough to leave on.
//!
//! Every critical section adds to a few counters: sections run, attempts (an STM section that
//! aborted and re-ran counts each run; a lock section is one attempt), keys named, and mutexes
//! taken by the lock backend. Like the STM crate's own counters, they must not add contention
//! to what they measure, so they are striped: each thread adds to one of [`STRIPES`]
//! cache-padded blocks, chosen once per thread, and [`stats`] sums the blocks. The STM's own
//! commit and abort counts come from `timewarp_stm::stats()` (process-wide) and are attached to
//! the snapshot in builds that carry the STM.
//!
//! These are plain `std` atomics even under loom (see the engine's `primitive` module): they
//! never influence a decision.

use crossbeam::utils::CachePadded;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How many counter blocks threads are spread over.
pub const STRIPES: usize = 16;

const SECTIONS: usize = 0;
const ATTEMPTS: usize = 1;
const KEYS: usize = 2;
const LOCKS: usize = 3;
const N: usize = 4;

type Block = CachePadded<[AtomicU64; N]>;

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const BLOCK: Block = CachePadded::new([ZERO; N]);
static BLOCKS: [Block; STRIPES] = [BLOCK; STRIPES];
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

std::thread_local! {
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
}

/// Adds one finished section's counts.
pub(crate) fn add_section(attempts: u64, keys: u64, locks: u64) {
    let s = STRIPE.try_with(|s| *s).unwrap_or(0);
    let b = &BLOCKS[s];
    b[SECTIONS].fetch_add(1, Ordering::Relaxed);
    b[ATTEMPTS].fetch_add(attempts, Ordering::Relaxed);
    b[KEYS].fetch_add(keys, Ordering::Relaxed);
    if locks != 0 {
        b[LOCKS].fetch_add(locks, Ordering::Relaxed);
    }
}

/// A snapshot of the section counters since the start of the process (compare two with
/// [`SyncStats::since`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Critical sections completed (both backends).
    pub sections: u64,
    /// Runs of section closures: equal to `sections` for the lock backend; for the STM,
    /// `attempts - sections` sections were aborted and re-run.
    pub attempts: u64,
    /// Distinct keys named by completed sections (sum).
    pub keys: u64,
    /// Mutexes taken by the lock backend (one per key per section).
    pub lock_acquisitions: u64,
    /// The STM's process-wide counters (commits, aborts by cause, set sizes); it also counts
    /// transactions run outside the seam.
    #[cfg(feature = "stm")]
    pub stm: timewarp_stm::Stats,
}

impl SyncStats {
    /// The counts accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &SyncStats) -> SyncStats {
        SyncStats {
            sections: self.sections.wrapping_sub(earlier.sections),
            attempts: self.attempts.wrapping_sub(earlier.attempts),
            keys: self.keys.wrapping_sub(earlier.keys),
            lock_acquisitions: self
                .lock_acquisitions
                .wrapping_sub(earlier.lock_acquisitions),
            #[cfg(feature = "stm")]
            stm: self.stm.since(&earlier.stm),
        }
    }

    /// Section attempts that were aborted and re-run, over all attempts (0 when none ran).
    pub fn retry_ratio(&self) -> f64 {
        if self.attempts == 0 {
            0.0
        } else {
            (self.attempts - self.sections) as f64 / self.attempts as f64
        }
    }

    /// Mean keys per section.
    pub fn mean_keys(&self) -> f64 {
        if self.sections == 0 {
            0.0
        } else {
            self.keys as f64 / self.sections as f64
        }
    }
}

/// The section counters summed over all threads (a sum of finished sections, not an instant).
pub fn stats() -> SyncStats {
    let mut c = [0u64; N];
    for b in &BLOCKS {
        for (s, a) in c.iter_mut().zip(b.iter()) {
            *s = s.wrapping_add(a.load(Ordering::Relaxed));
        }
    }
    SyncStats {
        sections: c[SECTIONS],
        attempts: c[ATTEMPTS],
        keys: c[KEYS],
        lock_acquisitions: c[LOCKS],
        #[cfg(feature = "stm")]
        stm: timewarp_stm::stats(),
    }
}
