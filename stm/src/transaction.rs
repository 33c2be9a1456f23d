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
//! A locked variable is re-checked a few times before giving up (its committer is usually a
//! few hundred instructions from releasing it). A variable newer than `rv` triggers a
//! *snapshot extension*: sample the clock as `rv'`, then check that every variable in the read
//! set is still unlocked at a version `<= rv`; if so, nothing read has changed up to a moment
//! after `rv'`, so all reads belong to the snapshot at `rv'` too, and the attempt continues
//! with `rv = rv'`. Without a read set (a read-only first attempt that has already read) it
//! aborts; a read-only retry keeps a read set so that it can extend.
//!
//! **Write.** The value is buffered in the write set (see [`writeset`](crate::writeset)).
//!
//! **Commit** (read-write, non-empty write set):
//! 1. sort the write set by lock address and lock each variable with a bounded spin; if one
//!    stays busy, release what was taken and abort (`LockBusy`) — nobody waits forever, so
//!    committers cannot deadlock (a write set of two entries is not reordered: the lower
//!    address is simply locked first);
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
use crate::primitive::{AtomicU64, Guard, Ordering, pin, spin_loop, stm_thread_local, yield_now};
use crate::stats;
use crate::tvar::TVar;
use crate::tword::{TWord, Word};
use crate::var::Var;
use crate::vlock::{VLock, is_locked, version};
use crate::writeset::{Payload, WriteOps, WriteSet};
use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

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

/// The reusable per-thread buffers of a transaction, and the thread's statistics block.
struct Buffers {
    reads: Vec<*const VLock>,
    writes: WriteSet,
    stats: Arc<stats::Block>,
    /// How many more read-only transactions of this thread keep a read set from their first
    /// attempt (see [`Transaction::read_only_hint`]).
    read_only_hint: u32,
    /// Writes buffered by this thread's attempts since it last flushed its epoch garbage
    /// (see [`Transaction::finish`]).
    since_flush: usize,
}

/// After this many buffered writes a thread flushes its deferred frees to crossbeam-epoch's
/// global queue and runs a collection step (one bag's worth).
const FLUSH_EVERY: usize = 64;

/// After a read-only transaction of a thread met a newer version, this many of the thread's
/// next read-only transactions keep a read set (renewed each time one needs it again).
const READ_ONLY_HINT: u32 = 16;

impl Buffers {
    fn new() -> Self {
        Buffers {
            reads: Vec::new(),
            writes: WriteSet::default(),
            stats: stats::this_thread_block(),
            read_only_hint: 0,
            since_flush: 0,
        }
    }
}

/// A thread's buffers, lent to one transaction at a time.
struct ThreadBuffers {
    in_use: Cell<bool>,
    bufs: UnsafeCell<Buffers>,
}

stm_thread_local! {
    static BUFFERS: ThreadBuffers = ThreadBuffers {
        in_use: Cell::new(false),
        bufs: UnsafeCell::new(Buffers::new()),
    };
}

/// A transaction attempt, handed to the closure given to [`atomically`](fn@crate::atomically).
///
/// `'env` is the lifetime of the variables the transaction may touch: they must outlive the
/// whole `atomically` call, because the commit still uses them after the closure has returned.
/// A `Transaction` cannot leave its thread.
pub struct Transaction<'env> {
    rv: u64,
    mode: Mode,
    doomed: Option<AbortCause>,
    holds_token: bool,
    /// Whether reads are recorded in the read set: always for a read-write attempt, and for a
    /// read-only one that asked for it (a retry, so that its snapshot can be extended).
    record_reads: bool,
    nreads: u64,
    extensions: u64,
    /// The buffers: this thread's (borrowed from the thread-local, marked in use), or, during
    /// thread teardown when the thread-local is gone, a private heap copy.
    bufs: NonNull<Buffers>,
    /// The thread-local the buffers were borrowed from; null for a private copy.
    lender: *const ThreadBuffers,
    guard: Option<Guard>,
    _env: PhantomData<*mut &'env ()>,
}

/// Why a read could not be served from the snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadFail {
    /// Locked by a committer (and still locked after a short wait).
    Locked,
    /// Written after the snapshot (version > rv): the snapshot may be extended.
    Stale,
    /// Changed while it was being read.
    Changed,
}

/// How many times a reader re-checks a locked variable before giving up (the holder is
/// committing and will release it within a few hundred instructions, unless descheduled).
#[cfg(not(loom))]
const READ_LOCK_SPINS: u32 = 32;
#[cfg(loom)]
const READ_LOCK_SPINS: u32 = 0;

/// The read protocol of one variable (see the module essay). `load` reads the payload.
#[inline(always)]
fn validated_load<P>(
    rv: u64,
    mode: Mode,
    lock: &VLock,
    load: impl Fn() -> P,
) -> Result<P, ReadFail> {
    if mode == Mode::Irrevocable {
        return Ok(irrevocable_load(lock, load));
    }
    let mut w1 = lock.load();
    if cfg!(timewarp_stm_broken = "no_read_validation") {
        // Deliberately broken (negative control): no version check, no re-check.
        if is_locked(w1) {
            return Err(ReadFail::Locked);
        }
        return Ok(load());
    }
    let mut spins = 0;
    while is_locked(w1) {
        // Under loom the limit is 0 (no waiting), which clippy finds absurd.
        #[allow(clippy::absurd_extreme_comparisons)]
        if spins >= READ_LOCK_SPINS {
            return Err(ReadFail::Locked);
        }
        spins += 1;
        spin_loop();
        w1 = lock.load();
    }
    if version(w1) > rv {
        return Err(ReadFail::Stale);
    }
    let p = load();
    if lock.load() != w1 {
        return Err(ReadFail::Changed);
    }
    Ok(p)
}

/// The read of an irrevocable attempt. No commit can stamp a version newer than its start any
/// more; it only waits out committers that locked before the irrevocable bit was set.
#[cold]
#[inline(never)]
fn irrevocable_load<P>(lock: &VLock, load: impl Fn() -> P) -> P {
    let mut spins = 0;
    loop {
        let w1 = lock.load();
        if !is_locked(w1) {
            let p = load();
            if lock.load() == w1 {
                return p;
            }
        }
        relax(&mut spins);
    }
}

/// The panic of a nested `atomically`.
#[cold]
#[inline(never)]
fn nested() -> ! {
    panic!(
        "timewarp-stm: `atomically` was called inside a transaction on the same thread; \
         transactions do not nest (compose the inner code as a function of `&mut Transaction`)"
    )
}

/// Buffers for a transaction run during thread teardown, when the thread-local is gone
/// (freed by the transaction's drop).
#[cold]
#[inline(never)]
fn private_buffers() -> NonNull<Buffers> {
    NonNull::from(Box::leak(Box::new(Buffers::new())))
}

/// Frees buffers made by [`private_buffers`].
///
/// # Safety
/// `bufs` came from `private_buffers` and is not used again.
#[cold]
#[inline(never)]
unsafe fn free_private_buffers(bufs: NonNull<Buffers>) {
    // SAFETY: per the contract, `bufs` is a leaked box, freed once here.
    drop(unsafe { Box::from_raw(bufs.as_ptr()) });
}

/// Tries once to lock the variable of `e`, then spins a bounded while; records the word it
/// replaced. `false` if the lock stayed busy.
#[inline(always)]
fn lock_entry(e: &mut crate::writeset::WriteEntry) -> bool {
    // SAFETY: the lock belongs to a variable borrowed for 'env, alive during commit.
    let lock = unsafe { &*e.lock };
    let w = lock.load();
    if !is_locked(w) && lock.try_lock(w) {
        e.seen = w;
        return true;
    }
    match lock_bounded(lock) {
        Some(seen) => {
            e.seen = seen;
            true
        }
        None => false,
    }
}

/// Restores the lock words of `entries`, which we locked (a commit that gives up).
#[cold]
#[inline(never)]
fn release_locks(entries: &[crate::writeset::WriteEntry]) {
    for e in entries {
        // SAFETY: the lock belongs to a variable borrowed for 'env; we hold it and restore the
        // word we replaced.
        unsafe { &*e.lock }.restore(e.seen);
    }
}

/// Locks `lock` with a bounded spin (after the commit's first try failed); returns the
/// unlocked word it replaced.
#[cold]
#[inline(never)]
fn lock_bounded(lock: &VLock) -> Option<u64> {
    let mut tries = 0;
    loop {
        if tries >= LOCK_SPINS {
            return None;
        }
        tries += 1;
        if tries % 16 == 0 {
            yield_now();
        } else {
            spin_loop();
        }
        let w = lock.load();
        if !is_locked(w) && lock.try_lock(w) {
            return Some(w);
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
    /// Borrows this thread's buffers. Panics if a transaction already runs on this thread.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        let lender = BUFFERS
            .try_with(|tb| {
                if tb.in_use.replace(true) {
                    nested();
                }
                tb as *const ThreadBuffers
            })
            .ok();
        let (bufs, lender) = match lender {
            // SAFETY: `lender` is this thread's live thread-local; `in_use` now marks its
            // buffers as lent to us alone until `drop` clears it.
            Some(tb) => (unsafe { NonNull::new_unchecked((*tb).bufs.get()) }, tb),
            None => (private_buffers(), std::ptr::null()),
        };
        Transaction {
            rv: 0,
            mode: Mode::ReadWrite,
            doomed: None,
            holds_token: false,
            record_reads: false,
            nreads: 0,
            extensions: 0,
            bufs,
            lender,
            guard: None,
            _env: PhantomData,
        }
    }

    /// The buffers.
    #[inline(always)]
    fn b(&self) -> &Buffers {
        // SAFETY: `bufs` is valid for the transaction's life (a thread-local of this thread,
        // which a `!Send` transaction cannot outlive, or our own box) and lent to us alone
        // (`in_use`); `&self` makes this borrow shared with no `&mut` alive.
        unsafe { self.bufs.as_ref() }
    }

    /// The buffers, mutably.
    #[inline(always)]
    fn bm(&mut self) -> &mut Buffers {
        // SAFETY: as in `b`; `&mut self` makes this the only borrow.
        unsafe { self.bufs.as_mut() }
    }

    /// The buffers and the guard, for the commit's write-back.
    #[inline(always)]
    fn parts(&mut self) -> (&mut Buffers, Option<&Guard>) {
        // SAFETY: as in `bm`; the buffers are not part of `self`, so borrowing `self.guard`
        // beside them does not alias.
        (unsafe { self.bufs.as_mut() }, self.guard.as_ref())
    }

    /// Starts an attempt in `mode`. For `Irrevocable`, waits for the token. A read-only
    /// attempt with `track_reads` keeps a read set so that its snapshot can be extended.
    #[inline]
    pub(crate) fn begin(&mut self, mode: Mode, track_reads: bool) {
        debug_assert!(self.b().reads.is_empty() && self.b().writes.is_empty() && !self.holds_token);
        self.mode = mode;
        self.record_reads = mode == Mode::ReadWrite || track_reads;
        self.doomed = None;
        self.nreads = 0;
        self.extensions = 0;
        debug_assert!(self.guard.is_none());
        if mode == Mode::Irrevocable {
            self.rv = globals().acquire_irrevocable();
            self.holds_token = true;
        } else {
            self.rv = globals().read_version();
        }
    }

    /// Ends an attempt (committed or not): frees pending values, forgets the sets, unpins,
    /// and gives the irrevocability token back.
    #[inline(always)]
    ///
    /// Every commit of a `TVar` retires the old value with `defer_destroy`. crossbeam-epoch
    /// frees deferred values only when a thread's local bag (64 of them) reaches the global
    /// queue, and each `pin` runs a bounded collection step only now and then; a thread that
    /// commits many `TVar`s per transaction (the engine's sections write tens of slots) retires
    /// them faster than that, and the garbage grew without bound (measured: 1.6-1.9 GB RSS
    /// after 2 simulated seconds of `cylinders` in the warp engine, against 0.13 GB with
    /// locks). So after every [`FLUSH_EVERY`] buffered writes the thread flushes: its bag goes
    /// to the global queue and a collection step runs, which frees up to eight bags whose
    /// epoch has passed, more than the one bag added. When threads outnumber cores, a thread
    /// preempted while pinned stops all collection; a flushing thread then waits (yields) for
    /// the backlog to come down, a bounded wait: see [`crate::reclaim`].
    pub(crate) fn finish(&mut self) {
        let b = self.bm();
        b.reads.clear();
        b.since_flush += b.writes.len();
        let flush = b.since_flush >= FLUSH_EVERY;
        if flush {
            b.since_flush = 0;
        }
        b.writes.clear();
        if flush && let Some(g) = self.guard.as_ref() {
            g.flush();
        }
        self.guard = None;
        #[cfg(not(loom))]
        if flush {
            crate::reclaim::throttle();
        }
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

    pub(crate) fn extensions(&self) -> u64 {
        self.extensions
    }

    /// Whether a read-only transaction should keep a read set from its first attempt: true
    /// while this thread's recent read-only transactions have been meeting newer versions
    /// (aborting, or extending their snapshot). Read-only transactions that run without
    /// conflicts thus keep no read set, as in TL2, while long ones that race with writers
    /// (audits) can extend their snapshot instead of aborting.
    pub(crate) fn read_only_hint(&self) -> bool {
        self.b().read_only_hint > 0
    }

    /// Records whether a read-only attempt met a newer version.
    pub(crate) fn update_read_only_hint(&mut self, met_newer: bool) {
        let h = &mut self.bm().read_only_hint;
        *h = if met_newer {
            READ_ONLY_HINT
        } else {
            h.saturating_sub(1)
        };
    }

    /// This thread's statistics block.
    pub(crate) fn stats_block(&self) -> &stats::Block {
        &self.b().stats
    }

    /// Pins the thread for the rest of the attempt (needed only for `TVar` values; an attempt
    /// that touches only `TWord`s never pins).
    #[inline]
    pub(crate) fn ensure_pinned(&mut self) {
        if self.guard.is_none() {
            self.guard = Some(pin());
        }
    }

    /// Tries to move the snapshot forward to now (timestamp extension, as in LSA and TinySTM):
    /// possible when every variable read so far is still unchanged, which the read set can
    /// tell. A read-only first attempt has no read set and can extend only before its first
    /// read.
    #[cold]
    #[inline(never)]
    fn try_extend(&mut self) -> bool {
        if !self.record_reads && self.nreads > 0 {
            return false;
        }
        // Sample first, validate after: everything is unchanged at validation time, which is
        // after the new snapshot's time, so the reads belong to the new snapshot too.
        let new_rv = globals().read_version();
        let rv = self.rv;
        let valid = cfg!(timewarp_stm_broken = "no_extension_validation")
            || self.b().reads.iter().all(|&lock| {
                // SAFETY: read-set locks belong to variables borrowed for 'env.
                let w = unsafe { &*lock }.load();
                !is_locked(w) && version(w) <= rv
            });
        if valid {
            self.rv = new_rv;
            self.extensions += 1;
        }
        valid
    }

    pub(crate) fn read_set_len(&self) -> usize {
        self.b().reads.len()
    }

    pub(crate) fn write_set_len(&self) -> usize {
        self.b().writes.len()
    }

    /// Marks the attempt as failed and returns the error to propagate.
    #[cold]
    #[inline(never)]
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
        if self.record_reads {
            self.bm().reads.push(lock);
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
        var.tx_modify(self, f)
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
        if let Some(i) = self.b().writes.find(lock) {
            return match self.b().writes.payload(i) {
                // SAFETY: the entry for this lock was made by `TVar::<T>::tx_write` (a lock
                // belongs to exactly one variable), so `p` is an owned, live `Box<T>` that
                // stays put until the write set is cleared, after the closure returns.
                Payload::Boxed(p) => Ok(f(unsafe { &*(p as *const T) })),
                Payload::Bits(_) => unreachable!("a TVar's pending write is always boxed"),
            };
        }
        self.ensure_pinned();
        loop {
            let Some(guard) = self.guard.as_ref() else {
                unreachable!("pinned just above")
            };
            match validated_load(self.rv, self.mode, lock, || var.load_ptr(guard)) {
                Ok(p) => {
                    self.note_read(lock);
                    // SAFETY: `p` was the published value while the lock word held an unlocked
                    // version <= rv (or, irrevocably, unlocked and unchanged); published values
                    // are never mutated, and it cannot be freed before `self.guard` unpins,
                    // which happens in `finish`, after the closure (and thus `f`) has returned.
                    return Ok(f(unsafe { &*p }));
                }
                Err(ReadFail::Stale) if self.try_extend() => continue,
                Err(_) => return Err(self.doom(AbortCause::ReadConflict)),
            }
        }
    }

    /// The inline read of a [`TWord`]: its 64 bits.
    #[inline(always)]
    pub(crate) fn read_word<T: Word>(&mut self, var: &'env TWord<T>) -> Result<u64, StmError> {
        self.check_alive()?;
        let lock = var.lock();
        if let Some(i) = self.b().writes.find(lock) {
            return match self.b().writes.payload(i) {
                Payload::Bits(b) => Ok(b),
                Payload::Boxed(_) => unreachable!("a TWord's pending write is always inline"),
            };
        }
        loop {
            match validated_load(self.rv, self.mode, lock, || var.load_bits()) {
                Ok(bits) => {
                    self.note_read(lock);
                    return Ok(bits);
                }
                Err(ReadFail::Stale) if self.try_extend() => continue,
                Err(_) => return Err(self.doom(AbortCause::ReadConflict)),
            }
        }
    }

    /// `modify` of a [`TWord`]: the read and the write with one write-set search. Same
    /// protocol as [`Transaction::read_word`] followed by [`Transaction::check_writable`] and
    /// [`Transaction::buffer_write`].
    #[inline(always)]
    pub(crate) fn modify_word<T: Word>(
        &mut self,
        var: &'env TWord<T>,
        target: *const (),
        ops: &'static WriteOps,
        f: impl FnOnce(T) -> T,
    ) -> Result<(), StmError> {
        self.check_alive()?;
        let lock = var.lock();
        if let Some(i) = self.b().writes.find(lock) {
            // Our own pending write: the attempt already wrote, so it is not read-only and
            // may write again.
            let Payload::Bits(b) = self.b().writes.payload(i) else {
                unreachable!("a TWord's pending write is always inline")
            };
            let new = Payload::Bits(f(T::from_word(b)).to_word());
            self.bm().writes.set_payload(i, new);
            return Ok(());
        }
        let bits = loop {
            match validated_load(self.rv, self.mode, lock, || var.load_bits()) {
                Ok(bits) => {
                    self.note_read(lock);
                    break bits;
                }
                Err(ReadFail::Stale) if self.try_extend() => continue,
                Err(_) => return Err(self.doom(AbortCause::ReadConflict)),
            }
        };
        let new = Payload::Bits(f(T::from_word(bits)).to_word());
        // `check_writable` without its `check_alive`: a successful read does not doom.
        if self.mode == Mode::ReadOnly {
            // The read above makes `nreads > 0`: a read-only attempt cannot upgrade in place.
            return Err(self.doom(AbortCause::ReadOnlyUpgrade));
        }
        // Not in the write set (searched above; reads do not add to it).
        self.bm().writes.push_new(lock, target, new, ops);
        Ok(())
    }

    /// Checks that the attempt may write; upgrades a read-only attempt that has not read yet.
    #[inline]
    pub(crate) fn check_writable(&mut self) -> Result<(), StmError> {
        self.check_alive()?;
        if self.mode == Mode::ReadOnly {
            if self.nreads == 0 {
                self.mode = Mode::ReadWrite;
                self.record_reads = true;
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
        self.bm().writes.insert(lock, target, payload, ops);
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
    #[inline(always)]
    pub(crate) fn commit(&mut self) -> Result<(), AbortCause> {
        if let Some(c) = self.doomed {
            return Err(c);
        }
        if self.b().writes.is_empty() {
            // Every read was of the snapshot at rv: serialised at rv.
            return Ok(());
        }
        if self.mode == Mode::Irrevocable {
            self.commit_irrevocable();
            return Ok(());
        }
        let writes = &mut self.bm().writes;
        if let [a, b] = writes.entries_mut() {
            // Two variables (a transfer): lock the lower address first without reordering
            // the entries (they stay unsorted, which lookups handle).
            let (first, second) = if a.lock < b.lock { (a, b) } else { (b, a) };
            if !lock_entry(first) {
                return Err(AbortCause::LockBusy);
            }
            if !lock_entry(second) {
                release_locks(std::slice::from_ref(first));
                return Err(AbortCause::LockBusy);
            }
        } else {
            writes.sort_for_commit();
            debug_assert_eq!(writes.validate(), Ok(()));
            let entries = writes.entries_mut();
            for i in 0..entries.len() {
                if !lock_entry(&mut entries[i]) {
                    release_locks(&entries[..i]);
                    return Err(AbortCause::LockBusy);
                }
            }
        }
        let Ok(wv) = globals().take_write_version() else {
            release_locks(self.b().writes.entries());
            return Err(AbortCause::Irrevocable);
        };
        if wv != self.rv + 1
            && !cfg!(timewarp_stm_broken = "no_commit_validation")
            && !self.validate_read_set()
        {
            release_locks(self.b().writes.entries());
            return Err(AbortCause::CommitValidation);
        }
        self.write_back(wv);
        Ok(())
    }

    /// TL2 commit-time validation (see the module essay, step 3).
    #[inline(never)]
    fn validate_read_set(&self) -> bool {
        let b = self.b();
        b.reads.iter().all(|&lock| {
            // SAFETY: read-set locks belong to variables borrowed for 'env.
            let w = unsafe { &*lock }.load();
            if is_locked(w) {
                match b.writes.find(lock) {
                    Some(i) => version(b.writes.entries()[i].seen) <= self.rv,
                    None => false,
                }
            } else {
                version(w) <= self.rv
            }
        })
    }

    /// Publishes every pending value and releases its lock stamped with `wv`.
    #[inline]
    fn write_back(&mut self, wv: u64) {
        let (b, guard) = self.parts();
        for e in b.writes.entries_mut() {
            match e.payload {
                // SAFETY: an inline payload's target is the value word of the `TWord` this
                // entry was made for (see `Payload::Bits`), borrowed for 'env.
                Payload::Bits(bits) => {
                    unsafe { &*(e.target as *const AtomicU64) }.store(bits, Ordering::Release)
                }
                Payload::Boxed(_) => {
                    let payload = std::mem::replace(&mut e.payload, Payload::Bits(0));
                    // SAFETY: `e.target` is the variable this entry was made for (borrowed for
                    // 'env), `payload` was made by its `tx_write` and is installed once (the
                    // entry now holds `Bits(0)`, which owns nothing), and we hold its lock.
                    unsafe { (e.ops.install)(e.target, payload, guard) }
                }
            }
            // SAFETY: as above; we hold this lock.
            unsafe { &*e.lock }.unlock_with_version(wv);
        }
        b.writes.all_installed();
    }

    /// The commit of an irrevocable attempt: cannot fail.
    #[cold]
    #[inline(never)]
    fn commit_irrevocable(&mut self) {
        self.bm().writes.sort_for_commit();
        for e in self.bm().writes.entries_mut() {
            // SAFETY: the lock belongs to a variable borrowed for 'env.
            e.seen = lock_unbounded(unsafe { &*e.lock });
        }
        let wv = globals().take_irrevocable_write_version();
        self.write_back(wv);
    }
}

impl Transaction<'_> {
    /// Ends the transaction after its last attempt: what `drop` does, without the drop glue
    /// (which the compiler would not inline).
    #[inline(always)]
    pub(crate) fn end(self) {
        let mut this = std::mem::ManuallyDrop::new(self);
        this.release();
        // `release` unpinned (`guard` is `None`), so no field of `this` owns anything now.
    }

    /// Finishes the attempt and gives the buffers back.
    #[inline(always)]
    fn release(&mut self) {
        self.finish();
        if self.lender.is_null() {
            // SAFETY: a null lender means `bufs` is the box leaked in `new`; freed once here.
            unsafe { free_private_buffers(self.bufs) };
        } else {
            // SAFETY: `lender` is this thread's thread-local, alive while we run on it.
            unsafe { (*self.lender).in_use.set(false) };
        }
    }
}

impl Drop for Transaction<'_> {
    // Runs on a panic in the closure (otherwise `Transaction::end` runs instead).
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::{
        AbortCause, TVar, TWord, TxOptions, atomically, atomically_read_only, atomically_with,
        thread_stats, try_atomically,
    };
    use std::sync::mpsc;

    /// Runs `scenario` (on fresh variables each time) until one run's transaction is not
    /// aborted by an irrevocable transaction of a test running beside this one, which aborts
    /// every commit while it runs (cause `Irrevocable`, even on this test's own variables: it
    /// failed so in CI and at 8 test threads) and so shows nothing of what the test checks.
    /// `scenario` returns its transaction's result and the checks of that run, which are then
    /// made for the first run not so aborted.
    fn unless_irrevocable<R, C: FnOnce(Result<R, crate::StmError>)>(
        mut scenario: impl FnMut() -> (Result<R, crate::StmError>, C),
    ) {
        for _ in 0..100 {
            let (r, check) = scenario();
            if !r
                .as_ref()
                .is_err_and(|e| e.cause() == AbortCause::Irrevocable)
            {
                return check(r);
            }
        }
        panic!("100 attempts were all aborted by irrevocable transactions of other tests");
    }

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
        unless_irrevocable(|| {
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
            assert_eq!(z.load(), 0, "an aborted commit writes nothing");
            (r, move |r: Result<(), _>| {
                assert_eq!(r.map_err(|e| e.cause()), Err(AbortCause::CommitValidation));
                let d = thread_stats().since(&before);
                assert_eq!(d.aborts_commit_validation, 1);
                assert_eq!(d.commits, 0);
            })
        });
    }

    #[test]
    fn a_doomed_attempt_stays_doomed() {
        let x = TWord::new(0u64);
        let y = TWord::new(0u64);
        let r = try_atomically(|tx| {
            let _ = tx.read(&x)?;
            std::thread::scope(|s| {
                s.spawn(|| {
                    atomically(|tx2| {
                        tx2.write(&x, 7)?;
                        tx2.write(&y, 7)
                    })
                });
            });
            // Swallow the conflict and carry on: everything after must fail too.
            assert!(tx.read(&y).is_err());
            assert!(tx.read(&x).is_err(), "later reads of a doomed attempt fail");
            assert!(tx.write(&x, 3).is_err());
            Ok(())
        });
        assert_eq!(r.map_err(|e| e.cause()), Err(AbortCause::ReadConflict));
        assert_eq!(x.load(), 7);
    }

    #[test]
    fn a_snapshot_is_extended_when_nothing_read_has_changed() {
        unless_irrevocable(|| {
            let x = TWord::new(1u64);
            let y = TWord::new(2u64);
            let z = TVar::new(0u64);
            let before = thread_stats();
            let r = try_atomically(|tx| {
                let a = tx.read(&x)?;
                // Another transaction writes y (not x) after our snapshot was taken.
                std::thread::scope(|s| {
                    s.spawn(|| atomically(|tx2| tx2.write(&y, 20)));
                });
                // y is newer than the snapshot, but x is unchanged: the snapshot moves forward
                // and the read sees the committed 20 (x = 1, y = 20 is a state that existed).
                let b = tx.read(&y)?;
                tx.write(&z, a + b)?;
                Ok((a, b))
            });
            (r, move |r| {
                assert_eq!(r, Ok((1, 20)));
                assert_eq!(z.load(), 21);
                let d = thread_stats().since(&before);
                assert_eq!(d.extensions, 1);
                assert_eq!(d.commits, 1);
            })
        });
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
        // One read-only attempt, aborted by its write, then one read-write attempt that
        // commits, unless a conflict aborts it: `x` is this test's own, but an irrevocable
        // transaction of a test running beside this one aborts every commit meanwhile (the
        // test failed once so, with 3 runs, under a loaded `cargo test`).
        let d = thread_stats().since(&before);
        assert_eq!((d.aborts_read_only_upgrade, d.commits), (1, 1));
        assert_eq!(runs, 2 + d.conflict_aborts());
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
        // Two explicit retries, then a commit; a conflict (an irrevocable transaction of a
        // test running beside this one) may abort the last attempt once more.
        let conflicts = thread_stats().since(&before).conflict_aborts();
        assert_eq!((runs, x.load()), (3 + conflicts, 1));
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
    fn a_busy_lock_aborts_a_two_variable_commit_and_releases_the_other() {
        let vars = [TWord::new(1u64), TWord::new(2u64)];
        let (lo, hi) = if vars[0].lock() as *const _ < vars[1].lock() as *const _ {
            (&vars[0], &vars[1])
        } else {
            (&vars[1], &vars[0])
        };
        // Busy second lock (the first is taken and must be given back), then busy first lock.
        for busy in [hi, lo] {
            let free = if std::ptr::eq(busy, hi) { lo } else { hi };
            let held = busy.lock().load();
            assert!(busy.lock().try_lock(held));
            let free_word = free.lock().load();
            let before = thread_stats();
            for order in [[lo, hi], [hi, lo]] {
                let r = try_atomically(|tx| {
                    tx.write(order[0], 10)?;
                    tx.write(order[1], 20)
                });
                assert_eq!(r.map_err(|e| e.cause()), Err(AbortCause::LockBusy));
                assert_eq!(free.lock().load(), free_word, "the taken lock is restored");
            }
            assert_eq!(thread_stats().since(&before).aborts_lock_busy, 2);
            busy.lock().restore(held);
            assert_eq!((lo.load() + hi.load()), 3, "nothing was written");
        }
        atomically(|tx| {
            tx.modify(lo, |v| v + 10)?;
            tx.modify(hi, |v| v + 20)
        });
        assert_eq!(lo.load() + hi.load(), 33);
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
        // Every value made, one per attempt: an attempt that another test's transaction
        // aborts (an irrevocable one aborts every commit while it runs) runs again and makes
        // another, and the aborted one's value is freed too.
        let made = AtomicUsize::new(1);
        let make = || {
            made.fetch_add(1, Ordering::SeqCst);
            Counted(drops.clone())
        };
        let v = TVar::new(Counted(drops.clone()));
        for _ in 0..100 {
            atomically(|tx| tx.write(&v, make()));
        }
        // An aborted attempt frees its pending value at once.
        let _ = try_atomically(|tx| {
            tx.write(&v, make())?;
            tx.retry::<()>()
        });
        drop(v);
        // At least 1 initial + 100 written + 1 aborted; each value made is freed exactly once.
        // Replaced values are freed once the global epoch has moved on, which every pinned
        // thread of the process holds back: with the other tests' threads oversubscribing the
        // cores that can take far longer than ten thousand yields, so the wait is bounded by
        // time (a value never freed still fails, after it).
        let made = made.load(Ordering::SeqCst);
        assert!(made >= 102, "{made} values made");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while drops.load(Ordering::SeqCst) < made && std::time::Instant::now() < deadline {
            crossbeam_epoch::pin().flush();
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(drops.load(Ordering::SeqCst), made);
    }
}
