//! # timewarp-stm: a TL2 software transactional memory
//!
//! This crate guards the Timewarp engine's shared structures (the TVHT, the GVT buffer and the
//! island graph; see `DESIGN.md`, "The guard") when the engine is built with the `stm` feature.
//! It implements **TL2** — *Transactional Locking II*, Dice, Shalev and Shavit, DISC 2006 — the
//! STM design that the parallel transactional ODE of seed 004
//! (`seeds/004_fd02640a34618ec7.txt`) also builds on.
//!
//! ## TL2 in one page
//!
//! * A **global version clock** ([`clock`]) counts commits that write.
//! * Every transactional variable carries a **versioned write-lock** ([`vlock`]): one word,
//!   `version << 1 | locked`, where the version is the clock value of the commit that last
//!   wrote it.
//! * A transaction samples the clock when it starts: its **read version** `rv`. It reads a
//!   variable only if its lock is free and its version `<= rv`, checking the lock word again
//!   after reading the value ([`transaction`]). It never reads anything newer than its
//!   snapshot, so it never needs to re-check earlier reads while it runs.
//! * Writes are **buffered** in a write set ([`writeset`]); reads see the transaction's own
//!   pending writes.
//! * At **commit** it locks its write set in a fixed global order (by address) with a bounded
//!   spin, increments the clock to get its write version `wv`, re-validates its read set
//!   (skipped when `wv == rv + 1`: nobody committed in between), writes back, and releases
//!   each lock stamped with `wv`. Read-only transactions keep no read set and commit for free.
//!
//! One addition to the paper's algorithm: **snapshot extension** (from LSA, Riegel, Felber &
//! Fetzer 2006, and TinySTM). A read that finds a version newer than `rv` does not abort at
//! once: if the transaction has a read set and every variable in it is still unlocked at a
//! version `<= rv`, nothing it read has changed, so it moves `rv` to the current clock and
//! goes on. This is what keeps long read-only audits from aborting over and over; to allow
//! it, a read-only transaction that had to retry keeps a read set on its later attempts, and
//! while a thread's recent read-only transactions keep meeting newer versions, its next ones
//! keep a read set from their first attempt. Read-only transactions that run without
//! conflicts keep none, as in TL2.
//!
//! ## What this crate guarantees
//!
//! * **Serialisability**: committed transactions behave as if they ran one at a time, in the
//!   order of their write versions (read-only ones at their read versions).
//! * **Opacity**: *every* attempt, including one that will abort, observes only a consistent
//!   snapshot — the committed state at its `rv`, plus its own writes. A closure may rely on
//!   invariants of the shared state (e.g. "x + y == 100") even before it commits: it never sees
//!   a state in which they are broken by a half-applied commit, so it never divides by a
//!   zero that "cannot happen", indexes out of bounds, or loops forever on inconsistent data.
//!   The loom model `readonly_vs_writer` and the test `tests/opacity.rs` check this.
//! * **Progress**: aborts are retried with bounded exponential back-off and jitter; after `K`
//!   conflict aborts ([`TxOptions::irrevocable_after`], default
//!   [`DEFAULT_IRREVOCABLE_AFTER`]) the transaction runs **irrevocably**: it takes a FIFO ticket,
//!   sets a bit in the clock word that stops other commits from writing back, and cannot abort.
//!   If every transaction closure terminates and does not call [`Transaction::retry`], every
//!   [`atomically`](fn@atomically) call returns after at most `K` aborted attempts plus one irrevocable attempt
//!   (which waits behind at most one irrevocable attempt of each other thread). This is a
//!   blocking guarantee for threads that get scheduled, not lock-freedom. See [`atomically`](fn@atomically).
//! * **No deadlock**: commit-time locking is bounded (a busy lock aborts the committer), and
//!   the only unbounded waits (irrevocable reads and commit, the ticket) wait for threads that
//!   themselves never wait unboundedly.
//!
//! ## What transaction closures must not do
//!
//! A closure runs once per attempt, possibly many times, and only the committed attempt's
//! writes to [`TVar`]s and [`TWord`]s take effect. So a closure must not have side effects
//! outside transactional variables (I/O, messages, writes to `Mutex`-guarded or atomic state,
//! pushing to an outer `Vec`): return what it computed, and act on it after `atomically`
//! returns. It must propagate the [`StmError`]s of reads and writes with `?` (swallowing them
//! is harmless — a doomed attempt stays doomed — but pointless). It must not call `atomically`
//! again on the same thread (transactions do not nest; doing so panics). Values stored in
//! `TVar`s should be immutable data: a `TVar<Arc<Mutex<_>>>` would let a closure mutate shared
//! state outside the protocol.
//!
//! ## Two kinds of variable
//!
//! [`TVar<T>`] holds any `T: Clone + Send + Sync + 'static` behind an atomically swapped
//! pointer; old values are reclaimed with crossbeam-epoch. [`TWord<T>`] holds a [`Word`] (a
//! `Copy` value that packs into 64 bits) inline in an atomic word: no allocation, no epoch pin,
//! no pointer chase; the `stm` bench measures the difference. Both can be mixed in one
//! transaction.
//!
//! ```
//! use timewarp_stm::{TVar, TWord, atomically, atomically_read_only};
//!
//! let accounts: Vec<TWord<i64>> = (0..4).map(|_| TWord::new(100)).collect();
//! let log = TVar::new(Vec::<(usize, usize, i64)>::new());
//!
//! // A transfer: all or nothing.
//! atomically(|tx| {
//!     let from = tx.read(&accounts[0])?;
//!     if from < 30 {
//!         return Ok(false);
//!     }
//!     tx.write(&accounts[0], from - 30)?;
//!     tx.modify(&accounts[3], |b| b + 30)?;
//!     tx.modify(&log, |mut l| { l.push((0, 3, 30)); l })?;
//!     Ok(true)
//! });
//!
//! // An audit sees a consistent snapshot, always.
//! let total = atomically_read_only(|tx| {
//!     accounts.iter().map(|a| tx.read(a)).sum::<Result<i64, _>>()
//! });
//! assert_eq!(total, 400);
//! assert_eq!(log.load(), vec![(0, 3, 30)]);
//! ```
//!
//! ## Loom
//!
//! Under `RUSTFLAGS="--cfg loom"` the [`primitive`] module swaps every atomic, thread-local,
//! global and yield for loom's, so the models in `loom-tests/` run this very code. Under loom,
//! replaced `TVar` values are retired to a per-variable list freed on drop instead of to
//! crossbeam-epoch, whose global collector and `std` thread-locals loom cannot see or reset
//! between executions (see [`primitive`]). For negative controls, `--cfg
//! timewarp_stm_broken="no_read_validation"`, `="no_commit_validation"`,
//! `="no_irrevocable_wait"` and `="no_extension_validation"` each remove one check, and the
//! loom models must then fail (`loom-tests/run-models.sh` checks that they do).
//!
//! ## Statistics
//!
//! [`stats`](fn@stats) sums per-thread counters: commits, aborts by [`AbortCause`], read and write-set
//! sizes, irrevocable runs. They are cheap enough to leave on ([`stats` module](mod@stats)).
//!
//! ## Cost
//!
//! A single-thread transfer between two `TWord` accounts (two `modify` calls) executes about
//! 350 instructions including the caller's loop, of which three are atomic read-modify-writes
//! (two lock CASes and the clock's `fetch_add`); on the 2-core development machine that is
//! roughly 35 ns, against roughly 11 ns for two index-ordered `Mutex`es and 250 ns for
//! `stm-core`. The hot path is shaped for that count: one thread-local access per
//! `atomically` call (the buffers and the statistics block hang off it), reused buffers (no
//! allocation for `TWord`s), small write sets searched without hashing, a two-entry commit
//! that locks in address order without sorting, statistics as plain per-thread stores, and
//! every rare path (spinning on a busy lock, releasing locks, validation, the irrevocable
//! commit, panics) out of line. A `TVar` transfer costs about four times as much: the boxed
//! value's allocation, the epoch pin and the deferred free dominate. Measure with
//! `cargo bench --bench stm -- --figures` (timings) or, for repeatable instruction counts on a
//! shared machine, `valgrind --tool=callgrind` on `stm/examples/transfers.rs`.

pub mod primitive;
#[cfg(not(loom))]
pub mod reclaim;

pub mod atomically;
pub mod backoff;
pub mod clock;
pub mod error;
pub mod stats;
pub mod transaction;
pub mod tvar;
pub mod tword;
pub mod var;
pub mod vlock;
pub mod writeset;

pub use atomically::{
    DEFAULT_IRREVOCABLE_AFTER, TxOptions, atomically, atomically_read_only, atomically_with,
    try_atomically,
};
pub use error::{AbortCause, StmError};
pub use stats::{Stats, reset_stats, stats, thread_stats};
pub use transaction::Transaction;
pub use tvar::TVar;
pub use tword::{TWord, Word};
pub use var::Var;
