//! Statistics cheap enough to leave on: per-thread counters summed on demand.
//!
//! Seed 004 (parallel transactional ODE) judges its STM by the abort ratio and the read- and
//! write-set sizes; the engine's benchmarks report the same figures. Counting must not add
//! contention to the very thing it measures, so each thread owns a block of counters that only
//! it writes (a relaxed load and store, no atomic read-modify-write, no shared cache line), and
//! a transaction adds its counts to the block once, when its `atomically` call ends. Blocks are
//! registered in a global list; [`stats`] sums them under the list's mutex, and a thread that
//! exits folds its block into a "retired" total. [`reset_stats`] does not write to other threads'
//! blocks (that would race with their owners); it records a baseline that later snapshots
//! subtract.
//!
//! Counts from attempts still running are not included; a snapshot taken while transactions
//! run is a consistent sum of finished `atomically` calls per thread, not a global instant.

use crate::error::AbortCause;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Counter indices.
pub(crate) const COMMITS: usize = 0;
pub(crate) const READ_ONLY_COMMITS: usize = 1;
pub(crate) const IRREVOCABLE_COMMITS: usize = 2;
pub(crate) const READS: usize = 3;
pub(crate) const READ_SET: usize = 4;
pub(crate) const WRITE_SET: usize = 5;
const ABORTS: usize = 6;
const N: usize = ABORTS + AbortCause::ALL.len();

pub(crate) fn abort_index(cause: AbortCause) -> usize {
    ABORTS
        + match cause {
            AbortCause::ReadConflict => 0,
            AbortCause::LockBusy => 1,
            AbortCause::CommitValidation => 2,
            AbortCause::Irrevocable => 3,
            AbortCause::ReadOnlyUpgrade => 4,
            AbortCause::Explicit => 5,
        }
}

/// Counts of one `atomically` call, added to the thread's block at the end.
pub(crate) type Local = [u64; N];

struct Block([AtomicU64; N]);

struct Registry {
    live: Vec<Arc<Block>>,
    retired: [u64; N],
    baseline: [u64; N],
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    retired: [0; N],
    baseline: [0; N],
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This thread's block; on thread exit its counts move to `retired`.
struct Handle(Arc<Block>);

impl Handle {
    fn register() -> Self {
        let block = Arc::new(Block(std::array::from_fn(|_| AtomicU64::new(0))));
        registry().live.push(block.clone());
        Handle(block)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let mut r = registry();
        for (t, c) in r.retired.iter_mut().zip(&self.0.0) {
            *t += c.load(Ordering::Relaxed);
        }
        r.live.retain(|b| !Arc::ptr_eq(b, &self.0));
    }
}

// Always `std`, also under loom: the counters never influence the protocol (see primitive.rs).
std::thread_local! {
    static HANDLE: Handle = Handle::register();
}

/// Adds one call's counts to this thread's block.
pub(crate) fn add(local: &Local) {
    let _ = HANDLE.try_with(|h| {
        for (c, &v) in h.0.0.iter().zip(local) {
            if v != 0 {
                // Only this thread writes its block: load + store is exact and cheaper than
                // an atomic add.
                c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
            }
        }
    });
}

fn totals(r: &Registry) -> [u64; N] {
    let mut sum = r.retired;
    for b in &r.live {
        for (s, c) in sum.iter_mut().zip(&b.0) {
            *s = s.wrapping_add(c.load(Ordering::Relaxed));
        }
    }
    sum
}

/// A snapshot of the STM's counters (since the start of the process or the last
/// [`reset_stats`]), summed over all threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Committed transactions (all kinds).
    pub commits: u64,
    /// Of those, the ones that wrote nothing.
    pub read_only_commits: u64,
    /// Of those, the ones that ran irrevocably.
    pub irrevocable_commits: u64,
    /// Reads performed by committed attempts (sum; [`Stats::mean_reads`] divides by commits).
    pub reads: u64,
    /// Read-set entries kept by committed read-write attempts (sum).
    pub read_set: u64,
    /// Write-set entries of committed attempts (sum; [`Stats::mean_write_set`]).
    pub write_set: u64,
    /// Aborts because a read found a locked or newer variable.
    pub aborts_read_conflict: u64,
    /// Aborts because a write lock stayed busy at commit.
    pub aborts_lock_busy: u64,
    /// Aborts because the read set was invalidated before commit.
    pub aborts_commit_validation: u64,
    /// Aborts because an irrevocable transaction was running at commit.
    pub aborts_irrevocable: u64,
    /// Re-runs of read-only transactions that wrote.
    pub aborts_read_only_upgrade: u64,
    /// Re-runs asked for by [`Transaction::retry`](crate::Transaction::retry).
    pub aborts_explicit: u64,
}

impl Stats {
    fn from_counts(c: &[u64; N]) -> Self {
        let a = |cause| c[abort_index(cause)];
        Stats {
            commits: c[COMMITS],
            read_only_commits: c[READ_ONLY_COMMITS],
            irrevocable_commits: c[IRREVOCABLE_COMMITS],
            reads: c[READS],
            read_set: c[READ_SET],
            write_set: c[WRITE_SET],
            aborts_read_conflict: a(AbortCause::ReadConflict),
            aborts_lock_busy: a(AbortCause::LockBusy),
            aborts_commit_validation: a(AbortCause::CommitValidation),
            aborts_irrevocable: a(AbortCause::Irrevocable),
            aborts_read_only_upgrade: a(AbortCause::ReadOnlyUpgrade),
            aborts_explicit: a(AbortCause::Explicit),
        }
    }

    /// The aborts of one cause.
    pub fn aborts_by(&self, cause: AbortCause) -> u64 {
        match cause {
            AbortCause::ReadConflict => self.aborts_read_conflict,
            AbortCause::LockBusy => self.aborts_lock_busy,
            AbortCause::CommitValidation => self.aborts_commit_validation,
            AbortCause::Irrevocable => self.aborts_irrevocable,
            AbortCause::ReadOnlyUpgrade => self.aborts_read_only_upgrade,
            AbortCause::Explicit => self.aborts_explicit,
        }
    }

    /// All aborted attempts.
    pub fn aborts(&self) -> u64 {
        AbortCause::ALL.iter().map(|&c| self.aborts_by(c)).sum()
    }

    /// Attempts aborted by a conflict with another transaction (read conflict, busy lock,
    /// failed validation, irrevocable transaction running).
    pub fn conflict_aborts(&self) -> u64 {
        self.aborts_read_conflict
            + self.aborts_lock_busy
            + self.aborts_commit_validation
            + self.aborts_irrevocable
    }

    /// Conflict aborts over all attempts: `a / (a + c)`; 0 when nothing ran.
    pub fn abort_ratio(&self) -> f64 {
        let a = self.conflict_aborts();
        let total = a + self.commits;
        if total == 0 {
            0.0
        } else {
            a as f64 / total as f64
        }
    }

    /// Mean number of reads of a committed transaction.
    pub fn mean_reads(&self) -> f64 {
        if self.commits == 0 {
            0.0
        } else {
            self.reads as f64 / self.commits as f64
        }
    }

    /// Mean write-set size of a committed transaction that wrote.
    pub fn mean_write_set(&self) -> f64 {
        let w = self.commits - self.read_only_commits;
        if w == 0 {
            0.0
        } else {
            self.write_set as f64 / w as f64
        }
    }

    /// The counts accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &Stats) -> Stats {
        let d = |a: u64, b: u64| a.wrapping_sub(b);
        Stats {
            commits: d(self.commits, earlier.commits),
            read_only_commits: d(self.read_only_commits, earlier.read_only_commits),
            irrevocable_commits: d(self.irrevocable_commits, earlier.irrevocable_commits),
            reads: d(self.reads, earlier.reads),
            read_set: d(self.read_set, earlier.read_set),
            write_set: d(self.write_set, earlier.write_set),
            aborts_read_conflict: d(self.aborts_read_conflict, earlier.aborts_read_conflict),
            aborts_lock_busy: d(self.aborts_lock_busy, earlier.aborts_lock_busy),
            aborts_commit_validation: d(
                self.aborts_commit_validation,
                earlier.aborts_commit_validation,
            ),
            aborts_irrevocable: d(self.aborts_irrevocable, earlier.aborts_irrevocable),
            aborts_read_only_upgrade: d(
                self.aborts_read_only_upgrade,
                earlier.aborts_read_only_upgrade,
            ),
            aborts_explicit: d(self.aborts_explicit, earlier.aborts_explicit),
        }
    }
}

/// The counters summed over all threads, minus the baseline of the last [`reset_stats`].
pub fn stats() -> Stats {
    let r = registry();
    let t = totals(&r);
    let mut c = [0u64; N];
    for i in 0..N {
        c[i] = t[i].wrapping_sub(r.baseline[i]);
    }
    Stats::from_counts(&c)
}

/// Makes later [`stats`] snapshots count from now. Process-wide: concurrent tests that each
/// need exact counts should compare two snapshots with [`Stats::since`] instead.
pub fn reset_stats() {
    let mut r = registry();
    r.baseline = totals(&r);
}

/// The counters of the calling thread alone (not affected by [`reset_stats`]): exact even
/// while other threads run transactions.
pub fn thread_stats() -> Stats {
    HANDLE
        .try_with(|h| {
            let c: [u64; N] = std::array::from_fn(|i| h.0.0[i].load(Ordering::Relaxed));
            Stats::from_counts(&c)
        })
        .unwrap_or_default()
}
