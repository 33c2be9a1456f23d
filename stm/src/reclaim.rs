//! Bounded garbage: the values retired by commits and not yet freed.
//!
//! Every commit of a [`TVar`](crate::TVar) retires the value it replaces to crossbeam-epoch,
//! which frees it once every thread pinned at the swap has unpinned. An attempt is pinned for
//! its whole duration, so when threads outnumber cores a thread preempted in the middle of an
//! attempt holds the epoch back until the scheduler runs it again, and meanwhile the others
//! keep retiring. Measured before this module: the warp engine on `bouncing` 500 with 64
//! workers on 2 cores held from 130 MiB to 1.2 GiB of heap from one second to the next, almost
//! all of it retired TVHT buckets, and the peak resident set crept up with run length as ever
//! longer stalls met ever busier moments.
//!
//! So the collector's backlog is counted (values retired minus values freed) and bounded: a
//! thread that finishes a transaction (and flushes, see `Transaction::finish`) while the
//! backlog is above [`LIMIT`] yields the processor (it is unpinned then) until collection
//! brings the backlog down or [`MAX_WAITS`] yields have passed. That lets the preempted, pinned
//! threads run and unpin, and throttles the retiring ones: the backlog stays near the limit,
//! whatever the number of threads. The wait is bounded, so a thread never waits forever on a
//! collection that cannot happen (a thread pinned for long only slows the others down).
//!
//! Measured with the limit (`bouncing` 500, 64 workers, 6 simulated seconds, one run each):
//! peak RSS 0.76 GB against 2.05 GB without it, wall time 25.5 s against 26.2 s. Sleeping
//! 50 µs instead of yielding bounded it as well but cost a third more wall time. The count is
//! of values, not bytes, and a TVHT bucket of a crowded cell holds the entries of 16 ticks: on
//! `bouncing` 2000 with 64 workers a backlog at the first limit, 16k values, held about 1.4 GB
//! (live heap 1.4-2.1 GB against 0.53-0.55 GB with 2 workers, whose backlog stays at 100-250
//! values). With the limit at 2k values (6 simulated seconds, one run each): peak RSS 1.77 GB
//! against 3.06 GB, live heap 0.71-0.80 GB at 3 and 6 s against 0.81-1.48 GB, wall 40.9 s
//! against 48.2 s. Fewer than 2k values awaiting collection is the normal state with as many
//! workers as cores, so the limit only bites when threads outnumber them.

use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

/// Retired values not yet freed above which a finishing thread waits for collection.
pub const LIMIT: isize = 1 << 11;

/// How many times a thread gives the processor away before it goes on regardless.
pub const MAX_WAITS: u32 = 256;

static BACKLOG: AtomicIsize = AtomicIsize::new(0);

/// A thread's retirements and frees not yet added to [`BACKLOG`]: counted locally and added
/// [`BATCH`] at a time, so that commits on many cores do not all hit one shared counter (the
/// count is late by at most `BATCH` per thread; a thread that exits adds what it has).
struct Pending(Cell<isize>);

impl Drop for Pending {
    fn drop(&mut self) {
        BACKLOG.fetch_add(self.0.get(), Ordering::Relaxed);
    }
}

thread_local! {
    static PENDING: Pending = const { Pending(Cell::new(0)) };
}

const BATCH: isize = 32;

#[inline]
fn count(n: isize) {
    // A thread being torn down (its local already gone) adds directly.
    if PENDING
        .try_with(|p| {
            let v = p.0.get() + n;
            if v.abs() >= BATCH {
                BACKLOG.fetch_add(v, Ordering::Relaxed);
                p.0.set(0);
            } else {
                p.0.set(v);
            }
        })
        .is_err()
    {
        BACKLOG.fetch_add(n, Ordering::Relaxed);
    }
}

/// Counts `n` values handed to the collector.
#[inline]
pub(crate) fn retired(n: isize) {
    count(n);
}

/// Counts `n` values the collector freed.
#[inline]
pub(crate) fn freed(n: isize) {
    count(-n);
}

/// Values retired and not yet freed, give or take the few each thread has not yet added (a
/// momentary count).
pub fn backlog() -> isize {
    BACKLOG.load(Ordering::Relaxed)
}

/// Called by a thread that is not pinned: while the backlog is above [`LIMIT`], pins briefly
/// to flush its bag and run a collection step, then yields the processor, at most
/// [`MAX_WAITS`] times.
pub(crate) fn throttle() {
    for _ in 0..MAX_WAITS {
        if backlog() <= LIMIT {
            return;
        }
        crossbeam_epoch::pin().flush();
        if backlog() <= LIMIT {
            return;
        }
        std::thread::yield_now();
    }
}
