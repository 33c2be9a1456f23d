//! `TVar<T>`: a transactional variable holding any `Clone + Send + Sync` value.
//!
//! The value lives in a heap cell reached through an atomically swapped pointer, next to the
//! variable's TL2 versioned write-lock. A published value is never mutated: a commit boxes
//! the new value (the box was made when the transaction wrote it), swaps the pointer while
//! holding the write-lock, and retires the old box. A reader loads the pointer between two
//! loads of the lock word and may dereference it only after the second load agreed, so user
//! code only ever sees a value belonging to its transaction's snapshot.
//!
//! Reclamation. A reader that loaded the old pointer may still be looking at the old value when
//! the commit swaps it out, so the old box is handed to crossbeam-epoch (`defer_destroy`) and
//! freed once every thread that was pinned at the swap has unpinned. Each transaction attempt
//! is pinned for its whole duration, which is what makes the references handed out by
//! [`Transaction::read_with`](crate::Transaction::read_with) valid. Under `cfg(loom)` the old
//! box goes to a retire list owned by the `TVar` instead, freed when the `TVar` is dropped —
//! see [`primitive`](crate::primitive) for why.
//!
//! For small `Copy` values [`TWord`](crate::TWord) avoids the box and the epoch entirely.

use crate::StmError;
use crate::primitive::{Guard, Ordering};
use crate::transaction::Transaction;
use crate::var::{Var, sealed};
use crate::vlock::{VLock, is_locked};
use crate::writeset::{Payload, WriteOps};
use std::fmt;

/// The pointer to the current value, with its reclamation scheme.
#[cfg(not(loom))]
struct Slot<T> {
    ptr: crossbeam_epoch::Atomic<T>,
}

#[cfg(not(loom))]
impl<T> Slot<T> {
    fn new(value: T) -> Self {
        Slot {
            ptr: crossbeam_epoch::Atomic::new(value),
        }
    }

    /// The current value. `Acquire` pairs with the `Release` half of [`Slot::install`]'s swap,
    /// so the boxed value's contents are visible.
    #[inline]
    fn load(&self, guard: &Guard) -> *const T {
        self.ptr.load(Ordering::Acquire, guard).as_raw()
    }

    /// Publishes `value` and retires the previous one. Called only by the holder of the
    /// variable's write-lock.
    #[inline]
    fn install(&self, value: Box<T>, guard: &Guard) {
        let old = self
            .ptr
            .swap(crossbeam_epoch::Owned::from(value), Ordering::AcqRel, guard);
        // SAFETY: `old` was the published value and is now unreachable from the slot; only
        // threads pinned before this swap can still hold it, and `defer_destroy` frees it
        // only after all of them have unpinned. It is never null (the slot always holds a
        // value) and it is retired exactly once, by the lock holder that replaced it.
        crate::reclaim::retired(1);
        let old = old.as_raw().cast_mut();
        // SAFETY: as above, the closure runs only after every thread pinned at the swap has
        // unpinned, and it holds the only remaining pointer to the box (made by `Owned`, so
        // `Box::from_raw` takes it back once). It may run on another thread: the values of a
        // `TVar` are `Send + 'static` (its public bounds), the only kind that reaches here.
        unsafe {
            guard.defer_unchecked(move || {
                drop(Box::from_raw(old));
                crate::reclaim::freed(1);
            })
        };
    }

    fn into_inner(self) -> T {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: we own the slot (by value), so no other thread can reach the pointer; it
        // is non-null and was made by `Owned`, so `into_owned` takes back the box once. The
        // `ManuallyDrop` keeps `Drop` from freeing it a second time.
        let owned = unsafe { std::ptr::read(&this.ptr).into_owned() };
        *owned.into_box()
    }
}

#[cfg(not(loom))]
impl<T> Drop for Slot<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self` means no transaction borrows the variable, so nobody can load
        // the pointer any more; readers that loaded an *older* pointer hold values retired to
        // the epoch collector, not this one. The current value is freed exactly once here.
        unsafe {
            let guard = crossbeam_epoch::unprotected();
            let cur = self.ptr.load(Ordering::Relaxed, guard);
            if !cur.is_null() {
                drop(cur.into_owned());
            }
        }
    }
}

#[cfg(loom)]
struct Slot<T> {
    ptr: crate::primitive::AtomicPtr<T>,
    /// Old values; touched only by the holder of the write-lock, so the `std` mutex never
    /// contends and loom need not see it.
    retired: std::sync::Mutex<Vec<Box<T>>>,
}

#[cfg(loom)]
impl<T> Slot<T> {
    fn new(value: T) -> Self {
        Slot {
            ptr: crate::primitive::AtomicPtr::new(Box::into_raw(Box::new(value))),
            retired: std::sync::Mutex::new(Vec::new()),
        }
    }

    #[inline]
    fn load(&self, _guard: &Guard) -> *const T {
        self.ptr.load(Ordering::Acquire)
    }

    fn install(&self, value: Box<T>, _guard: &Guard) {
        let old = self.ptr.swap(Box::into_raw(value), Ordering::AcqRel);
        // SAFETY: `old` came from `Box::into_raw` (in `new` or an earlier `install`) and is
        // now unreachable from the slot; it is re-boxed exactly once and kept alive in the
        // retire list until the variable is dropped, so readers holding it stay valid.
        let old = unsafe { Box::from_raw(old) };
        self.retired
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(old);
    }

    fn into_inner(mut self) -> T {
        let p = self
            .ptr
            .with_mut(|p| std::mem::replace(p, std::ptr::null_mut()));
        // SAFETY: we own the slot, `p` came from `Box::into_raw` and the slot now holds null,
        // so `Drop` will not free it again.
        *unsafe { Box::from_raw(p) }
    }
}

#[cfg(loom)]
impl<T> Drop for Slot<T> {
    fn drop(&mut self) {
        let p = self.ptr.with_mut(|p| *p);
        if !p.is_null() {
            // SAFETY: `&mut self`: nobody can reach the pointer any more; it came from
            // `Box::into_raw` and is freed exactly once here.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// A transactional variable holding a `T` behind an atomically swapped pointer.
///
/// Read and write it inside [`atomically`](fn@crate::atomically) with
/// [`Transaction::read`], [`Transaction::read_with`] and [`Transaction::write`]; read it alone
/// with [`TVar::load`].
///
/// ```
/// use timewarp_stm::{TVar, atomically};
/// let names = TVar::new(vec!["a".to_string()]);
/// atomically(|tx| tx.modify(&names, |mut v| { v.push("b".into()); v }));
/// assert_eq!(names.load(), ["a", "b"]);
/// ```
pub struct TVar<T> {
    lock: VLock,
    slot: Slot<T>,
}

impl<T: Clone + Send + Sync + 'static> TVar<T> {
    /// A new variable holding `value`, at version 0 (visible to every transaction).
    pub fn new(value: T) -> Self {
        TVar {
            lock: VLock::new(),
            slot: Slot::new(value),
        }
    }

    /// Reads the current committed value outside any transaction (a linearisable single-variable
    /// read; waits while a committer holds the variable's lock).
    pub fn load(&self) -> T {
        self.load_with(T::clone)
    }

    /// Applies `f` to the current committed value outside any transaction, borrowing it
    /// instead of cloning it (the same linearisable single-variable read as [`TVar::load`]).
    /// `f` may run more than once if a committer replaces the value meanwhile; only its last
    /// result is returned.
    pub fn load_with<R>(&self, mut f: impl FnMut(&T) -> R) -> R {
        let guard = crate::primitive::pin();
        let mut spins = 0;
        loop {
            let w1 = self.lock.load();
            if !is_locked(w1) {
                let p = self.slot.load(&guard);
                // SAFETY: `p` is a published value, immutable, and stays allocated while
                // `guard` pins us (a replaced value is freed only after every guard pinned
                // before its replacement is gone); the result is used only if the lock word
                // did not change meanwhile, so it is a committed value.
                let r = f(unsafe { &*p });
                if self.lock.load() == w1 {
                    return r;
                }
            }
            crate::clock::relax(&mut spins);
        }
    }

    /// Consumes the variable and returns its value.
    pub fn into_inner(self) -> T {
        self.slot.into_inner()
    }

    #[inline]
    pub(crate) fn lock(&self) -> &VLock {
        &self.lock
    }

    /// The value pointer, loaded under `guard` (see [`Transaction`]'s read protocol).
    #[inline]
    pub(crate) fn load_ptr(&self, guard: &Guard) -> *const T {
        self.slot.load(guard)
    }

    pub(crate) const OPS: WriteOps = WriteOps {
        install: install::<T>,
        discard: discard::<T>,
    };
}

/// SAFETY contract: see [`WriteOps::install`]; `target` is a `TVar<T>` and `payload` a
/// `Payload::Boxed` made by `Box::<T>::into_raw` in [`TVar::tx_write`].
unsafe fn install<T: Clone + Send + Sync + 'static>(
    target: *const (),
    payload: Payload,
    guard: Option<&Guard>,
) {
    let Some(guard) = guard else {
        unreachable!("a transaction that wrote a TVar is pinned")
    };
    if let Payload::Boxed(p) = payload {
        // SAFETY: per the contract, `target` points to a live `TVar<T>` (borrowed for 'env by
        // the transaction) and `p` is an owned `Box<T>` that we take back exactly once.
        let (var, value) = unsafe { (&*(target as *const TVar<T>), Box::from_raw(p as *mut T)) };
        var.slot.install(value, guard);
    }
}

/// SAFETY contract: see [`WriteOps::discard`].
unsafe fn discard<T>(payload: Payload) {
    if let Payload::Boxed(p) = payload {
        // SAFETY: `p` is an owned `Box<T>` never installed (per the contract); freed once.
        drop(unsafe { Box::from_raw(p as *mut T) });
    }
}

impl<T> sealed::Sealed for TVar<T> {}

impl<T: Clone + Send + Sync + 'static> Var for TVar<T> {
    type Value = T;

    #[inline]
    fn tx_read<'env>(&'env self, tx: &mut Transaction<'env>) -> Result<T, StmError> {
        tx.read_with(self, T::clone)
    }

    #[inline]
    fn tx_write<'env>(&'env self, tx: &mut Transaction<'env>, value: T) -> Result<(), StmError> {
        tx.check_writable()?;
        tx.ensure_pinned();
        let boxed = Box::into_raw(Box::new(value)) as *mut ();
        tx.buffer_write(
            &self.lock,
            self as *const TVar<T> as *const (),
            Payload::Boxed(boxed),
            &Self::OPS,
        );
        Ok(())
    }
}

impl<T: Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for TVar<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TVar").field(&self.load()).finish()
    }
}

impl<T: Clone + Send + Sync + Default + 'static> Default for TVar<T> {
    fn default() -> Self {
        TVar::new(T::default())
    }
}
