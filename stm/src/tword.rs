//! `TWord<T>`: the inline fast path for small `Copy` values.
//!
//! A value that fits in 64 bits (an integer, a float, a bool, an id, a packed pair) is stored
//! in an `AtomicU64` beside the versioned lock, instead of behind a pointer. A read is then
//! three loads of adjacent words (lock, value, lock) on one cache line, with no epoch pin, no
//! pointer chase and no clone; a write buffers the 64 bits, with no allocation; the commit
//! stores them with `Release`. The TL2 protocol is unchanged — the value word plays the role
//! of the pointer in [`TVar`](crate::TVar) — so a `TWord` and a `TVar` can be mixed freely
//! in one transaction. The `stm` bench measures both (`cargo bench --bench stm -- --figures`;
//! see also the crate documentation's "Cost" section).
//!
//! [`Word`] says how a type packs into 64 bits; it is implemented for the primitive integer
//! and float types and `bool`, and user types may implement it (the conversion must round-trip).

use crate::StmError;
use crate::primitive::{AtomicU64, Guard, Ordering};
use crate::transaction::Transaction;
use crate::var::{Var, sealed};
use crate::vlock::{VLock, is_locked};
use crate::writeset::{Payload, WriteOps};
use std::fmt;
use std::marker::PhantomData;

/// A `Copy` type that packs into 64 bits. `from_word(to_word(x)) == x` must hold.
pub trait Word: Copy + Send + Sync + 'static {
    /// Packs the value.
    fn to_word(self) -> u64;
    /// Unpacks a value packed by [`Word::to_word`].
    fn from_word(word: u64) -> Self;
}

macro_rules! int_word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            #[inline]
            fn to_word(self) -> u64 { self as u64 }
            #[inline]
            fn from_word(word: u64) -> Self { word as $t }
        }
    )*};
}
int_word!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl Word for f64 {
    #[inline]
    fn to_word(self) -> u64 {
        self.to_bits()
    }
    #[inline]
    fn from_word(word: u64) -> Self {
        f64::from_bits(word)
    }
}

impl Word for f32 {
    #[inline]
    fn to_word(self) -> u64 {
        u64::from(self.to_bits())
    }
    #[inline]
    fn from_word(word: u64) -> Self {
        f32::from_bits(word as u32)
    }
}

impl Word for bool {
    #[inline]
    fn to_word(self) -> u64 {
        u64::from(self)
    }
    #[inline]
    fn from_word(word: u64) -> Self {
        word != 0
    }
}

/// A transactional variable holding a small `Copy` value inline in one atomic word.
///
/// ```
/// use timewarp_stm::{TWord, atomically};
/// let hits = TWord::new(0u64);
/// atomically(|tx| tx.modify(&hits, |h| h + 1));
/// assert_eq!(hits.load(), 1);
/// ```
pub struct TWord<T: Word> {
    lock: VLock,
    bits: AtomicU64,
    _value: PhantomData<T>,
}

impl<T: Word> TWord<T> {
    /// A new variable holding `value`, at version 0.
    pub fn new(value: T) -> Self {
        TWord {
            lock: VLock::new(),
            bits: AtomicU64::new(value.to_word()),
            _value: PhantomData,
        }
    }

    /// Reads the current committed value outside any transaction (linearisable; waits while
    /// a committer holds the lock).
    pub fn load(&self) -> T {
        let mut spins = 0;
        loop {
            let w1 = self.lock.load();
            if !is_locked(w1) {
                let bits = self.bits.load(Ordering::Acquire);
                if self.lock.load() == w1 {
                    return T::from_word(bits);
                }
            }
            crate::clock::relax(&mut spins);
        }
    }

    /// Consumes the variable and returns its value.
    pub fn into_inner(self) -> T {
        self.load()
    }

    #[inline]
    pub(crate) fn lock(&self) -> &VLock {
        &self.lock
    }

    #[inline]
    pub(crate) fn load_bits(&self) -> u64 {
        // `Acquire` keeps the reader's second lock load after this load (sequence lock).
        self.bits.load(Ordering::Acquire)
    }

    const OPS: WriteOps = WriteOps { install, discard };
}

/// SAFETY contract: see [`WriteOps::install`]; `target` is the value word of a live `TWord`.
/// (The commit stores inline payloads itself, without this call; it is kept for
/// uniformity.)
unsafe fn install(target: *const (), payload: Payload, _guard: Option<&Guard>) {
    if let Payload::Bits(bits) = payload {
        // SAFETY: per the contract `target` points to the `bits` word of a `TWord` borrowed
        // by the transaction.
        unsafe { &*(target as *const AtomicU64) }.store(bits, Ordering::Release);
    }
}

/// Inline payloads own nothing.
unsafe fn discard(_payload: Payload) {}

impl<T: Word> sealed::Sealed for TWord<T> {}

impl<T: Word> Var for TWord<T> {
    type Value = T;

    #[inline(always)]
    fn tx_read<'env>(&'env self, tx: &mut Transaction<'env>) -> Result<T, StmError> {
        tx.read_word(self).map(T::from_word)
    }

    #[inline(always)]
    fn tx_write<'env>(&'env self, tx: &mut Transaction<'env>, value: T) -> Result<(), StmError> {
        tx.check_writable()?;
        // The target of an inline write is the value word itself (see `Payload::Bits`).
        tx.buffer_write(
            &self.lock,
            &self.bits as *const AtomicU64 as *const (),
            Payload::Bits(value.to_word()),
            &Self::OPS,
        );
        Ok(())
    }

    #[inline(always)]
    fn tx_modify<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        f: impl FnOnce(T) -> T,
    ) -> Result<(), StmError> {
        tx.modify_word(
            self,
            &self.bits as *const AtomicU64 as *const (),
            &Self::OPS,
            f,
        )
    }
}

impl<T: Word + fmt::Debug> fmt::Debug for TWord<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TWord").field(&self.load()).finish()
    }
}

impl<T: Word + Default> Default for TWord<T> {
    fn default() -> Self {
        TWord::new(T::default())
    }
}
