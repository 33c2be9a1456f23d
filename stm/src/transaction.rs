//! One transaction attempt: TL2's read, write and commit (Dice, Shalev & Shavit 2006,
//! section 2), plus the irrevocable mode that makes the retry loop starvation-free.
//!
//! **Start.** The attempt samples the global clock: its read version `rv`.
//!
//! **Read.** If the variable is in the write set, the pending value is returned
//! (read-your-own-writes). Otherwise: load the lock word `w1`; abort if it is locked or its
//! version is newer than `rv`; load the value (the `TWord` bits or the `TVar` pointer); load
//! the lock word again and abort unless it is still `w1`. Only then is the value handed to user
//! code. So every value an attempt ever sees was committed at or before `rv` and not overwritten
//! by `rv`: all of them belong to the snapshot at `rv`, and the attempt is *opaque* — even an
//! attempt that will later abort never observes an inconsistent state. A read-write attempt
//! records the variable in its read set; a read-only attempt records nothing, because its
//! snapshot at `rv` is already its serialisation point.
//!
//! **Write.** The value is buffered in the write set (see [`writeset`](crate::writeset)).
//!
//! **Commit** (read-write, non-empty write set):
//! 1. sort the write set by lock address and lock each variable with a bounded spin; if one
//!    stays busy, release what was taken and abort (`LockBusy`) — nobody waits forever, so
//!    committers cannot deadlock;
//! 2. take the write version `wv` by incrementing the clock; if an irrevocable transaction is
//!    running, release and abort (`Irrevocable`);
//! 3. unless `wv == rv + 1` (no commit happened since the start, so nothing read can have
//!    changed), validate the read set: each variable must be unlocked (or locked by us) with a
//!    version `<= rv`; otherwise release and abort (`CommitValidation`);
//! 4. for each written variable, publish the value, then release the lock stamped with `wv`.
//!
//! The attempt serialises at `wv` (read-only ones at `rv`).
//!
//! **Irrevocable mode.** After `K` conflicts ([`TxOptions::irrevocable_after`](crate::TxOptions))
//! the next attempt first takes the FIFO irrevocability ticket and sets the clock's irrevocable
//! bit ([`clock`](crate::clock)). From then on no normal committer can take a write version
//! and write back. Committers that took theirs *before* the bit was set had already locked
//! their whole write set, so the irrevocable attempt, which waits for a variable's lock to be
//! free before reading it, sees either all or none of each such commit, and after it no
//! change at all. Its reads therefore need no version check and no validation; its commit
//! waits (unboundedly, but only for committers that are finishing or giving up) for its locks,
//! takes `wv` and writes back. It cannot abort. Closures may still call
//! [`Transaction::retry`], which ends the irrevocable attempt without committing.

use crate::clock::{globals, relax};
use crate::error::{AbortCause, StmError};
use crate::primitive::{Guard, pin, spin_loop, stm_thread_local, yield_now};
use crate::tvar::TVar;
use crate::tword::{TWord, Word};
use crate::var::Var;
use crate::vlock::{VLock, is_locked, version};
use crate::writeset::{Payload, WriteOps, WriteSet};
use std::cell::Cell;
use std::marker::PhantomData;

/// How many times a committer retries a busy write lock before aborting.
#[cfg(not(loom))]
const LOCK_SPINS: u32 = 64;
#[cfg(loom)]
const LOCK_SPINS: u32 = 2;

/// The kind of an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// No read set; a write either upgrades in place (no read yet) or aborts the attempt.
    ReadOnly,
    /// TL2 proper.
    ReadWrite,
    /// Holds the irrevocability token; cannot abort on conflicts.
    Irrevocable,
}

/// The reusable per-thread buffers of a transaction.
#[derive(Default)]
struct Buffers {
    reads: Vec<*const VLock>,
    writes: WriteSet,
}

stm_thread_local! {
    /// `None` while a transaction of this thread runs (so nesting is detected).
    static BUFFERS: Cell<Option<Buffers>> = Cell::new(Some(Buffers::default()));
}

/// A transaction attempt, handed to the closure given to [`atomically`](crate::atomically).
///
/// `'env` is the lifetime of the variables the transaction may touch: they must outlive the
/// whole `atomically` call, because the commit still uses them after the closure has returned.
/// A `Transaction` cannot leave its thread.
pub struct Transaction<'env> {
    rv: u64,
    mode: Mode,
    doomed: Option<AbortCause>,
    holds_token: bool,
    nreads: u64,
    reads: Vec<*const VLock>,
    writes: WriteSet,
    guard: Option<Guard>,
    _env: PhantomData<*mut &'env ()>,
}

/// The read protocol of one variable (see the module essay). `load` reads the payload.
#[inline]
fn validated_load<P>(
    rv: u64,
    mode: Mode,
    lock: &VLock,
    load: impl Fn() -> P,
) -> Result<P, AbortCause> {
    if mode == Mode::Irrevocable {
        // No commit can stamp a version newer than our start any more; wait out committers
        // that locked before the irrevocable bit was set.
        let mut spins = 0;
        loop {
            let w1 = lock.load();
            if !is_locked(w1) {
                let p = load();
                if lock.load() == w1 {
                    return Ok(p);
                }
            }
            relax(&mut spins);
        }
    }
    let w1 = lock.load();
    if cfg!(timewarp_stm_broken = "no_read_validation") {
        // Deliberately broken (negative control): no version check, no re-check.
        if is_locked(w1) {
            return Err(AbortCause::ReadConflict);
        }
        return Ok(load());
    }
    if is_locked(w1) || version(w1) > rv {
        return Err(AbortCause::ReadConflict);
    }
    let p = load();
    if lock.load() != w1 {
        return Err(AbortCause::ReadConflict);
    }
    Ok(p)
}

/// Locks `lock` with a bounded spin; returns the unlocked word it replaced.
#[inline]
fn lock_bounded(lock: &VLock) -> Option<u64> {
    let mut tries = 0;
    loop {
        let w = lock.load();
        if !is_locked(w) && lock.try_lock(w) {
            return Some(w);
        }
        if tries >= LOCK_SPINS {
            return None;
        }
        tries += 1;
        if tries % 16 == 0 {
            yield_now();
        } else {
            spin_loop();
        }
    }
}

/// Locks `lock`, waiting as long as it takes (irrevocable commit only).
fn lock_unbounded(lock: &VLock) -> u64 {
    let mut spins = 0;
    loop {
        let w = lock.load();
        if !is_locked(w) && lock.try_lock(w) {
            return w;
        }
        relax(&mut spins);
    }
}

impl<'env> Transaction<'env> {
    /// Takes this thread's buffers. Panics if a transaction already runs on this thread.
    pub(crate) fn new() -> Self {
        let bufs = BUFFERS.with(Cell::take).unwrap_or_else(|| {
            panic!(
                "timewarp-stm: `atomically` was called inside a transaction on the same thread; \
                 transactions do not nest (compose the inner code as a function of `&mut Transaction`)"
            )
        });
        Transaction {
            rv: 0,
            mode: Mode::ReadWrite,
            doomed: None,
            holds_token: false,
            nreads: 0,
            reads: bufs.reads,
            writes: bufs.writes,
            guard: None,
            _env: PhantomData,
        }
    }

    /// Starts an attempt in `mode`. For `Irrevocable`, waits for the token.
    pub(crate) fn begin(&mut self, mode: Mode) {
        debug_assert!(self.reads.is_empty() && self.writes.is_empty() && !self.holds_token);
        self.mode = mode;
        self.doomed = None;
        self.nreads = 0;
        self.guard = Some(pin());
        if mode == Mode::Irrevocable {
            self.rv = globals().acquire_irrevocable();
            self.holds_token = true;
        } else {
            self.rv = globals().read_version();
        }
    }

    /// Ends an attempt (committed or not): frees pending values, forgets the sets, unpins,
    /// and gives the irrevocability token back.
    pub(crate) fn finish(&mut self) {
        self.reads.clear();
        self.writes.clear();
        self.guard = None;
        if self.holds_token {
            self.holds_token = false;
            globals().release_irrevocable();
        }
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    pub(crate) fn reads_done(&self) -> u64 {
        self.nreads
    }

    pub(crate) fn read_set_len(&self) -> usize {
        self.reads.len()
    }

    pub(crate) fn write_set_len(&self) -> usize {
        self.writes.len()
    }

    /// Marks the attempt as failed and returns the error to propagate.
    #[inline]
    fn doom(&mut self, cause: AbortCause) -> StmError {
        if self.doomed.is_none() {
            self.doomed = Some(cause);
        }
        StmError::new(self.doomed.unwrap_or(cause))
    }

    /// The cause to report when the closure returned `e`.
    pub(crate) fn failure_cause(&self, e: StmError) -> AbortCause {
        self.doomed.unwrap_or(e.cause())
    }

    #[inline]
    fn check_alive(&self) -> Result<(), StmError> {
        match self.doomed {
            Some(c) => Err(StmError::new(c)),
            None => Ok(()),
        }
    }

    #[inline]
    fn note_read(&mut self, lock: &VLock) {
        self.nreads += 1;
        if self.mode == Mode::ReadWrite {
            self.reads.push(lock);
        }
    }

    /// Reads a variable (a [`TVar`] or a [`TWord`]); the value is a clone or copy.
    #[inline]
    pub fn read<V: Var>(&mut self, var: &'env V) -> Result<V::Value, StmError> {
        var.tx_read(self)
    }

    /// Buffers a write of `value` to a variable; it becomes visible to others at commit.
    #[inline]
    pub fn write<V: Var>(&mut self, var: &'env V, value: V::Value) -> Result<(), StmError> {
        var.tx_write(self, value)
    }

    /// Reads a variable, applies `f` and writes the result back.
    #[inline]
    pub fn modify<V: Var>(
        &mut self,
        var: &'env V,
        f: impl FnOnce(V::Value) -> V::Value,
    ) -> Result<(), StmError> {
        let v = var.tx_read(self)?;
        var.tx_write(self, f(v))
    }

    /// Reads a [`TVar`] by reference, without cloning its value: `f` gets the value of this
    /// transaction's snapshot (or its own pending write).
    #[inline]
    pub fn read_with<T, R>(
        &mut self,
        var: &'env TVar<T>,
        f: impl FnOnce(&T) -> R,
    ) -> Result<R, StmError>
    where
        T: Clone + Send + Sync + 'static,
    {
        self.check_alive()?;
        let lock = var.lock();
        if let Some(i) = self.writes.find(lock) {
            return match self.writes.payload(i) {
                // SAFETY: the entry for this lock was made by `TVar::<T>::tx_write` (a lock
                // belongs to exactly one variable), so `p` is an owned, live `Box<T>` that
                // stays put until the write set is cleared, after the closure returns.
                Payload::Boxed(p) => Ok(f(unsafe { &*(p as *const T) })),
                Payload::Bits(_) => unreachable!("a TVar's pending write is always boxed"),
            };
        }
        let Some(guard) = self.guard.as_ref() else {
            unreachable!("an attempt is always pinned")
        };
        match validated_load(self.rv, self.mode, lock, || var.load_ptr(guard)) {
            Ok(p) => {
                self.note_read(lock);
                // SAFETY: `p` was the published value while the lock word held an unlocked
                // version <= rv (or, irrevocably, unlocked and unchanged); published values are
                // never mutated, and it cannot be freed before `self.guard` unpins, which
                // happens in `finish`, after the closure (and thus `f`) has returned.
                Ok(f(unsafe { &*p }))
            }
            Err(c) => Err(self.doom(c)),
        }
    }

    /// The inline read of a [`TWord`]: its 64 bits.
    #[inline]
    pub(crate) fn read_word<T: Word>(&mut self, var: &'env TWord<T>) -> Result<u64, StmError> {
        self.check_alive()?;
        let lock = var.lock();
        if let Some(i) = self.writes.find(lock) {
            return match self.writes.payload(i) {
                Payload::Bits(b) => Ok(b),
                Payload::Boxed(_) => unreachable!("a TWord's pending write is always inline"),
            };
        }
        match validated_load(self.rv, self.mode, lock, || var.load_bits()) {
            Ok(bits) => {
                self.note_read(lock);
                Ok(bits)
            }
            Err(c) => Err(self.doom(c)),
        }
    }

    /// Checks that the attempt may write; upgrades a read-only attempt that has not read yet.
    #[inline]
    pub(crate) fn check_writable(&mut self) -> Result<(), StmError> {
        self.check_alive()?;
        if self.mode == Mode::ReadOnly {
            if self.nreads == 0 {
                self.mode = Mode::ReadWrite;
            } else {
                return Err(self.doom(AbortCause::ReadOnlyUpgrade));
            }
        }
        Ok(())
    }

    /// Buffers a write (after [`Transaction::check_writable`]).
    #[inline]
    pub(crate) fn buffer_write(
        &mut self,
        lock: &'env VLock,
        target: *const (),
        payload: Payload,
        ops: &'static WriteOps,
    ) {
        self.writes.insert(lock, target, payload, ops);
    }

    /// Abandons this attempt and runs the transaction again (after a back-off). This is not
    /// Haskell's blocking `retry`: it does not wait for a variable to change.
    pub fn retry<R>(&mut self) -> Result<R, StmError> {
        Err(self.doom(AbortCause::Explicit))
    }

    /// Whether this attempt runs irrevocably (it cannot abort on conflicts).
    pub fn is_irrevocable(&self) -> bool {
        self.mode == Mode::Irrevocable
    }

    /// The read version: the clock value of the snapshot this attempt reads.
    pub fn read_version(&self) -> u64 {
        self.rv
    }

    /// Tries to commit the attempt.
    pub(crate) fn commit(&mut self) -> Result<(), AbortCause> {
        if let Some(c) = self.doomed {
            return Err(c);
        }
        if self.writes.is_empty() {
            // Every read was of the snapshot at rv: serialised at rv.
            return Ok(());
        }
        if self.mode == Mode::Irrevocable {
            self.commit_irrevocable();
            return Ok(());
        }
        self.writes.sort_for_commit();
        debug_assert_eq!(self.writes.validate(), Ok(()));
        let n = self.writes.len();
        for i in 0..n {
            // SAFETY: the lock belongs to a variable borrowed for 'env, alive during commit.
            let lock = unsafe { &*self.writes.entries()[i].lock };
            match lock_bounded(lock) {
                Some(seen) => self.writes.entries_mut()[i].seen = seen,
                None => {
                    self.release_locks(i);
                    return Err(AbortCause::LockBusy);
                }
            }
        }
        let Ok(wv) = globals().take_write_version() else {
            self.release_locks(n);
            return Err(AbortCause::Irrevocable);
        };
        if wv != self.rv + 1
            && !cfg!(timewarp_stm_broken = "no_commit_validation")
            && !self.validate_read_set()
        {
            self.release_locks(n);
            return Err(AbortCause::CommitValidation);
        }
        self.write_back(wv);
        Ok(())
    }

    /// Restores the first `n` (locked) entries' lock words.
    fn release_locks(&self, n: usize) {
        for e in &self.writes.entries()[..n] {
            // SAFETY: as in `commit`; we hold this lock and restore the word we replaced.
            unsafe { &*e.lock }.restore(e.seen);
        }
    }

    /// TL2 commit-time validation (see the module essay, step 3).
    fn validate_read_set(&self) -> bool {
        self.reads.iter().all(|&lock| {
            // SAFETY: read-set locks belong to variables borrowed for 'env.
            let w = unsafe { &*lock }.load();
            if is_locked(w) {
                match self.writes.find(lock) {
                    Some(i) => version(self.writes.entries()[i].seen) <= self.rv,
                    None => false,
                }
            } else {
                version(w) <= self.rv
            }
        })
    }

    /// Publishes every pending value and releases its lock stamped with `wv`.
    fn write_back(&mut self, wv: u64) {
        let Some(guard) = self.guard.as_ref() else {
            unreachable!("an attempt is always pinned")
        };
        for e in self.writes.entries_mut() {
            let payload = std::mem::replace(&mut e.payload, Payload::Bits(0));
            // SAFETY: `e.target` is the variable this entry was made for (borrowed for 'env),
            // `payload` was made by its `tx_write` and is installed once (the entry now holds
            // `Bits(0)`, which owns nothing), and we hold its write lock.
            unsafe { (e.ops.install)(e.target, payload, guard) };
            // SAFETY: as above; we hold this lock.
            unsafe { &*e.lock }.unlock_with_version(wv);
        }
    }

    /// The commit of an irrevocable attempt: cannot fail.
    fn commit_irrevocable(&mut self) {
        self.writes.sort_for_commit();
        for e in self.writes.entries_mut() {
            // SAFETY: the lock belongs to a variable borrowed for 'env.
            e.seen = lock_unbounded(unsafe { &*e.lock });
        }
        let wv = globals().take_irrevocable_write_version();
        self.write_back(wv);
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        self.finish();
        let bufs = Buffers {
            reads: std::mem::take(&mut self.reads),
            writes: std::mem::take(&mut self.writes),
        };
        // During thread teardown the thread-local may be gone; then the buffers are dropped.
        let _ = BUFFERS.try_with(|b| b.set(Some(bufs)));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::{
        AbortCause, TVar, TWord, TxOptions, atomically, atomically_read_only, atomically_with,
        thread_stats, try_atomically,
    };
    use std::sync::mpsc;

    #[test]
    fn reads_see_own_writes_and_commit_publishes() {
        let a = TVar::new(String::from("a"));
        let n = TWord::new(5i32);
        let out = atomically(|tx| {
            assert_eq!(tx.read(&a)?, "a");
            tx.write(&a, "b".into())?;
            assert_eq!(tx.read(&a)?, "b");
            tx.write(&a, "c".into())?;
            tx.modify(&n, |x| x * 2)?;
            tx.modify(&n, |x| x + 1)?;
            let len = tx.read_with(&a, |s| s.len())?;
            Ok((tx.read(&a)?, tx.read(&n)?, len))
        });
        assert_eq!(out, ("c".to_string(), 11, 1));
        assert_eq!(a.load(), "c");
        assert_eq!(n.load(), 11);
        assert_eq!(a.into_inner(), "c");
    }

    #[test]
    fn a_read_of_a_variable_written_after_the_start_aborts() {
        let x = TWord::new(0u64);
        let y = TWord::new(0u64);
        let (to_writer, writer_rx) = mpsc::channel::<()>();
        let (to_reader, reader_rx) = mpsc::channel::<()>();
        let (x, y) = (&x, &y);
        std::thread::scope(|s| {
            s.spawn(move || {
                writer_rx.recv().unwrap();
                atomically(|tx| {
                    tx.write(x, 1)?;
                    tx.write(y, 1)
                });
                to_reader.send(()).unwrap();
            });
            let r = try_atomically(|tx| {
                let a = tx.read(x)?;
                to_writer.send(()).unwrap();
                reader_rx.recv().unwrap();
                let b = tx.read(y)?;
                Ok((a, b))
            });
            // The snapshot had x = y = 0; y = 1 is newer than it, so the read must fail
            // rather than return the inconsistent (0, 1).
            assert_eq!(r.map_err(|e| e.cause()), Err(AbortCause::ReadConflict));
        });
        assert_eq!((x.load(), y.load()), (1, 1));
    }

    #[test]
    fn commit_validation_catches_an_overwritten_read() {
        let x = TWord::new(0u64);
        let z = TWord::new(0u64);
        let before = thread_stats();
        let r = try_atomically(|tx| {
            let v = tx.read(&x)?;
            std::thread::scope(|s| {
                s.spawn(|| atomically(|tx2| tx2.write(&x, 7)));
            });
            tx.write(&z, v + 1)
        });
        assert_eq!(r.map_err(|e| e.cause()), Err(AbortCause::CommitValidation));
        assert_eq!(z.load(), 0, "an aborted commit writes nothing");
        let d = thread_stats().since(&before);
        assert_eq!(d.aborts_commit_validation, 1);
        assert_eq!(d.commits, 0);
    }

    #[test]
    fn a_doomed_attempt_stays_doomed() {
        let x = TWord::new(0u64);
        let y = TWord::new(0u64);
        let r = try_atomically(|tx| {
            let _ = tx.read(&x)?;
            std::thread::scope(|s| {
                s.spawn(|| atomically(|tx2| tx2.write(&y, 7)));
            });
            // Swallow the conflict and carry on: everything after must fail too.
            assert!(tx.read(&y).is_err());
            assert!(tx.read(&x).is_err(), "later reads of a doomed attempt fail");
            assert!(tx.write(&x, 3).is_err());
            Ok(())
        });
        assert_eq!(r.map_err(|e| e.cause()), Err(AbortCause::ReadConflict));
        assert_eq!(x.load(), 0);
    }

    #[test]
    #[should_panic(expected = "transactions do not nest")]
    fn nesting_panics_with_a_clear_message() {
        let x = TWord::new(0u64);
        atomically(|tx| {
            tx.read(&x)?;
            atomically(|tx2| tx2.read(&x));
            Ok(())
        });
    }

    #[test]
    fn read_only_transaction_that_writes_is_rerun_read_write() {
        let x = TWord::new(1u64);
        let before = thread_stats();
        let mut runs = 0;
        atomically_read_only(|tx| {
            runs += 1;
            let v = tx.read(&x)?;
            tx.write(&x, v + 1)
        });
        assert_eq!(runs, 2);
        assert_eq!(x.load(), 2);
        // A write before any read upgrades in place.
        atomically_read_only(|tx| tx.write(&x, 5));
        assert_eq!(x.load(), 5);
        let d = thread_stats().since(&before);
        assert_eq!(d.aborts_read_only_upgrade, 1);
        assert_eq!(d.commits, 2);
        assert_eq!(d.write_set, 2);
    }

    #[test]
    fn explicit_retry_reruns_and_irrevocable_mode_commits() {
        let x = TWord::new(0u64);
        let before = thread_stats();
        let mut runs = 0;
        atomically(|tx| {
            runs += 1;
            tx.modify(&x, |v| v + 1)?;
            if runs < 3 { tx.retry() } else { Ok(()) }
        });
        assert_eq!((runs, x.load()), (3, 1));
        let irrevocable = atomically_with(&TxOptions::new().irrevocable_after(0), |tx| {
            tx.modify(&x, |v| v + 10)?;
            Ok(tx.is_irrevocable())
        });
        assert!(irrevocable);
        assert_eq!(x.load(), 11);
        let d = thread_stats().since(&before);
        assert_eq!(d.aborts_explicit, 2);
        assert_eq!(d.irrevocable_commits, 1);
        assert_eq!(d.commits, 2);
        assert_eq!(d.reads, 2);
    }

    #[test]
    fn a_panicking_irrevocable_transaction_releases_everything() {
        let x = TVar::new(vec![1u8]);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            atomically_with(&TxOptions::new().irrevocable_after(0), |tx| {
                tx.write(&x, vec![2])?;
                if tx.is_irrevocable() {
                    panic!("boom");
                }
                Ok(())
            })
        }));
        assert!(r.is_err());
        assert_eq!(
            x.load(),
            vec![1],
            "nothing of the panicking attempt was committed"
        );
        // The token and the buffers were given back: both kinds of transaction still run.
        atomically_with(&TxOptions::new().irrevocable_after(0), |tx| {
            tx.write(&x, vec![3])
        });
        atomically(|tx| {
            tx.modify(&x, |mut v| {
                v.push(4);
                v
            })
        });
        assert_eq!(x.load(), vec![3, 4]);
    }

    #[test]
    fn replaced_and_final_values_are_freed() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        #[derive(Clone)]
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let v = TVar::new(Counted(drops.clone()));
        for _ in 0..100 {
            atomically(|tx| tx.write(&v, Counted(drops.clone())));
        }
        // An aborted attempt frees its pending value at once.
        let _ = try_atomically(|tx| {
            tx.write(&v, Counted(drops.clone()))?;
            tx.retry::<()>()
        });
        drop(v);
        // 1 initial + 100 written + 1 aborted, and each clone made by `drops.clone()` was moved.
        for _ in 0..10_000 {
            if drops.load(Ordering::SeqCst) == 102 {
                break;
            }
            crossbeam_epoch::pin().flush();
            std::thread::yield_now();
        }
        assert_eq!(drops.load(Ordering::SeqCst), 102);
    }
}
