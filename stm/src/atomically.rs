//! The retry loop: run a transaction closure until an attempt commits.
//!
//! [`atomically`] runs the closure in a fresh attempt; if the closure returns `Err` (a read
//! conflict, propagated with `?`) or the commit fails, the attempt is rolled back and, after a
//! [back-off](crate::backoff), run again. The closure therefore runs *at least once and
//! possibly many times*, and only the last run's effects on transactional variables are kept:
//! it must not have other side effects (I/O, sending messages, touching non-transactional shared
//! state), or those would happen once per attempt.
//!
//! **Progress.** After [`TxOptions::irrevocable_after`] conflict aborts (default
//! [`DEFAULT_IRREVOCABLE_AFTER`]) the next attempt runs irrevocably (see
//! [`transaction`](crate::transaction)): it waits for its FIFO ticket, and then it cannot
//! abort. So, as long as every transaction closure terminates and does not call
//! [`Transaction::retry`], every `atomically` call returns after at most `K` aborted attempts,
//! followed by one irrevocable attempt that waits behind at most one irrevocable attempt per
//! other thread (FIFO) and for committers that are finishing. This is starvation freedom for
//! the scheduled threads; it is a blocking guarantee, not lock freedom — an irrevocable
//! transaction that is descheduled holds up every writer's commit until it runs again.
//!
//! Aborts caused by an irrevocable transaction do not count towards `K` (they wait for it to
//! finish instead); neither do the re-run of a read-only transaction that wrote, nor explicit
//! retries.
//!
//! Transactions do not nest: calling `atomically` from inside a transaction closure on the same
//! thread panics with a message saying so. Write the inner code as a function of
//! `&mut Transaction` and call it from the outer closure instead.

use crate::backoff::Backoff;
use crate::clock::globals;
use crate::error::{AbortCause, StmError};
use crate::stats;
use crate::transaction::{Mode, Transaction};

/// The default number of conflict aborts after which an attempt runs irrevocably.
pub const DEFAULT_IRREVOCABLE_AFTER: u32 = 16;

/// How a transaction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxOptions {
    /// Start as read-only: no read set is kept. A write after a read re-runs the transaction
    /// as read-write (correct, but wasted work), so set this only for transactions that do
    /// not write.
    pub read_only: bool,
    /// After this many conflict aborts the next attempt runs irrevocably (0: the first attempt
    /// already does, which serialises it with every other irrevocable transaction).
    pub irrevocable_after: u32,
}

impl Default for TxOptions {
    fn default() -> Self {
        TxOptions {
            read_only: false,
            irrevocable_after: DEFAULT_IRREVOCABLE_AFTER,
        }
    }
}

impl TxOptions {
    /// Read-write, with the default irrevocability threshold.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`TxOptions::read_only`].
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Sets [`TxOptions::irrevocable_after`].
    pub fn irrevocable_after(mut self, aborts: u32) -> Self {
        self.irrevocable_after = aborts;
        self
    }
}

/// Runs `f` as a transaction until it commits and returns its value.
///
/// ```
/// use timewarp_stm::{TWord, atomically};
/// let (a, b) = (TWord::new(10i64), TWord::new(0i64));
/// let moved = atomically(|tx| {
///     let x = tx.read(&a)?;
///     tx.write(&a, x - 3)?;
///     tx.modify(&b, |y| y + 3)?;
///     Ok(3)
/// });
/// assert_eq!((moved, a.load(), b.load()), (3, 7, 3));
/// ```
///
/// The variables a transaction touches must outlive the whole call, because the commit uses
/// them after the closure has returned; one made inside the closure is rejected:
///
/// ```compile_fail
/// use timewarp_stm::{TWord, atomically};
/// atomically(|tx| {
///     let local = TWord::new(1u32);
///     tx.write(&local, 2)
/// });
/// ```
pub fn atomically<'env, R, F>(f: F) -> R
where
    F: FnMut(&mut Transaction<'env>) -> Result<R, StmError>,
{
    atomically_with(&TxOptions::default(), f)
}

/// Runs a read-only transaction: like [`atomically`] but keeps no read set.
///
/// ```
/// use timewarp_stm::{TWord, atomically_read_only};
/// let (a, b) = (TWord::new(1u32), TWord::new(2u32));
/// assert_eq!(atomically_read_only(|tx| Ok(tx.read(&a)? + tx.read(&b)?)), 3);
/// ```
pub fn atomically_read_only<'env, R, F>(f: F) -> R
where
    F: FnMut(&mut Transaction<'env>) -> Result<R, StmError>,
{
    atomically_with(&TxOptions::default().read_only(true), f)
}

/// Runs `f` as a transaction with the given options until it commits.
#[inline]
pub fn atomically_with<'env, R, F>(options: &TxOptions, mut f: F) -> R
where
    F: FnMut(&mut Transaction<'env>) -> Result<R, StmError>,
{
    let mut tx = Transaction::new();
    let mut backoff = Backoff::new();
    let mut conflicts = 0u32;
    // A read-only transaction keeps no read set, unless this thread's recent read-only
    // transactions met newer versions (see `Transaction::read_only_hint`).
    let mut track_reads = options.read_only && tx.read_only_hint();
    let mut mode = if options.read_only {
        Mode::ReadOnly
    } else {
        Mode::ReadWrite
    };
    loop {
        let attempt_mode = if conflicts >= options.irrevocable_after {
            Mode::Irrevocable
        } else {
            mode
        };
        tx.begin(attempt_mode, track_reads);
        match attempt(&mut tx, &mut f) {
            Ok(r) => {
                count_commit(&tx);
                if attempt_mode == Mode::ReadOnly {
                    tx.update_read_only_hint(tx.extensions() != 0);
                }
                tx.end();
                return r;
            }
            Err(cause) => {
                tx.stats_block().bump(stats::abort_index(cause), 1);
                if attempt_mode == Mode::ReadOnly && cause.is_conflict() {
                    tx.update_read_only_hint(true);
                }
                if tx.mode() == Mode::ReadWrite && attempt_mode == Mode::ReadOnly {
                    // Upgraded in place (wrote before reading): stay read-write.
                    mode = Mode::ReadWrite;
                }
                tx.finish();
                match cause {
                    AbortCause::ReadOnlyUpgrade => mode = Mode::ReadWrite,
                    AbortCause::Irrevocable => globals().wait_irrevocable_done(),
                    AbortCause::Explicit => backoff.pause(),
                    AbortCause::ReadConflict
                    | AbortCause::LockBusy
                    | AbortCause::CommitValidation => {
                        conflicts += 1;
                        // A read-only retry keeps a read set, so that it can extend its
                        // snapshot instead of aborting again.
                        track_reads = true;
                        backoff.pause();
                    }
                }
            }
        }
    }
}

/// Runs one attempt of `f` (read-write, never irrevocable) and commits it if it can.
/// On failure nothing was written and the error says why; the caller decides whether to run
/// it again. Useful where a conflict should change what is attempted next.
///
/// ```
/// use timewarp_stm::{TWord, try_atomically};
/// let v = TWord::new(1u8);
/// assert_eq!(try_atomically(|tx| tx.read(&v)), Ok(1));
/// ```
pub fn try_atomically<'env, R, F>(mut f: F) -> Result<R, StmError>
where
    F: FnMut(&mut Transaction<'env>) -> Result<R, StmError>,
{
    let mut tx = Transaction::new();
    tx.begin(Mode::ReadWrite, false);
    let out = attempt(&mut tx, &mut f);
    match out {
        Ok(_) => count_commit(&tx),
        Err(cause) => tx.stats_block().bump(stats::abort_index(cause), 1),
    }
    tx.end();
    out.map_err(StmError::new)
}

/// The closure, then the commit.
#[inline]
fn attempt<'env, R, F>(tx: &mut Transaction<'env>, f: &mut F) -> Result<R, AbortCause>
where
    F: FnMut(&mut Transaction<'env>) -> Result<R, StmError>,
{
    match f(tx) {
        Ok(r) => tx.commit().map(|()| r),
        Err(e) => Err(tx.failure_cause(e)),
    }
}

/// The counts of a commit that extended its snapshot or ran irrevocably.
#[cold]
#[inline(never)]
fn count_rare(tx: &Transaction<'_>, block: &stats::Block) {
    block.bump(stats::EXTENSIONS, tx.extensions());
    if tx.mode() == Mode::Irrevocable {
        block.bump(stats::IRREVOCABLE_COMMITS, 1);
    }
}

/// Counts a committed attempt in this thread's statistics block.
#[inline]
fn count_commit(tx: &Transaction<'_>) {
    let block = tx.stats_block();
    // Adding a zero is cheaper than testing for it.
    block.bump(stats::COMMITS, 1);
    block.bump(stats::READS, tx.reads_done());
    block.bump(stats::READ_SET, tx.read_set_len() as u64);
    let w = tx.write_set_len() as u64;
    block.bump(stats::WRITE_SET, w);
    if w == 0 {
        block.bump(stats::READ_ONLY_COMMITS, 1);
    }
    if tx.extensions() != 0 || tx.mode() == Mode::Irrevocable {
        count_rare(tx, block);
    }
}
