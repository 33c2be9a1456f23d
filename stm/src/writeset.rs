//! The write set: the buffered writes of one transaction attempt (TL2 section 2, "writes are
//! buffered in a write set and applied at commit").
//!
//! Each entry names the variable's versioned lock (its identity and the lock-order key), the
//! variable itself (type-erased), the pending value and a small table of functions that know
//! the value's type: `install` publishes it at commit, `discard` frees it on abort. A pending
//! [`TVar`](crate::TVar) value is already boxed, so at commit the box simply becomes the new
//! published version — a write costs one allocation, the one any pointer-swapping design needs.
//! A pending [`TWord`](crate::TWord) value is its 64 bits, no allocation at all.
//!
//! Reads must see the transaction's own writes, so every read first asks the write set. Most
//! transactions write a handful of variables, so the lookup is tuned for that: up to `SMALL`
//! entries are simply compared (cheaper than hashing); beyond that a 64-bit Bloom filter
//! answers "not written" for most reads in one AND; up to `LINEAR` entries are then scanned
//! linearly; beyond that a hash index (address -> entry) is kept. At commit the entries are
//! sorted by lock address — the global lock order that prevents two committers from waiting
//! on each other in a cycle — and later lookups binary-search. (A commit of exactly two
//! entries, the common transfer, just locks the lower address first and leaves them in place.) The vectors and the index are
//! reused from attempt to attempt and from transaction to transaction (see
//! [`atomically`](fn@crate::atomically)), so a transaction in steady state allocates nothing but
//! its pending `TVar` values.

use crate::primitive::Guard;
use crate::vlock::VLock;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Up to this many entries the write set is searched linearly without consulting the Bloom
/// filter (which is only kept beyond this size).
pub(crate) const SMALL: usize = 4;
/// Up to this many entries the write set is searched linearly.
pub(crate) const LINEAR: usize = 8;

/// A pending value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Payload {
    /// An inline word (a `TWord`; the entry's `target` is then the variable's value word, an
    /// `AtomicU64`, which the commit stores directly), or nothing once a boxed value has been
    /// installed.
    Bits(u64),
    /// A `Box<T>` turned into a raw pointer (a `TVar<T>`), owned by the entry.
    Boxed(*mut ()),
}

/// What the write set needs to know about a value's type.
pub(crate) struct WriteOps {
    /// Publishes `payload` into the variable at `target`; takes ownership of a boxed payload.
    /// SAFETY contract: `target` is the variable the entry was made for, still borrowed by the
    /// transaction; `payload` was made by that variable's `tx_write`; the caller holds the
    /// variable's write lock; `guard` is `Some` if the variable needs one (a `TVar`, whose
    /// `tx_write` pinned the transaction).
    pub(crate) install: unsafe fn(target: *const (), payload: Payload, guard: Option<&Guard>),
    /// Frees a payload that will not be installed. SAFETY contract: `payload` was made by the
    /// variable's `tx_write` and is not used again.
    pub(crate) discard: unsafe fn(payload: Payload),
}

/// One buffered write.
pub(crate) struct WriteEntry {
    pub(crate) lock: *const VLock,
    pub(crate) target: *const (),
    pub(crate) payload: Payload,
    pub(crate) ops: &'static WriteOps,
    /// The lock word seen when the commit locked this variable.
    pub(crate) seen: u64,
}

/// A hasher for addresses: one multiply (Fibonacci hashing).
#[derive(Default)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type Index = HashMap<usize, u32, BuildHasherDefault<AddrHasher>>;

/// The write set (see the module essay).
#[derive(Default)]
pub(crate) struct WriteSet {
    entries: Vec<WriteEntry>,
    bloom: u64,
    index: Index,
    /// Whether `index` holds entries (the set grew past `LINEAR` since the last clear).
    indexed: bool,
    sorted: bool,
    /// How many entries hold a `Payload::Boxed` that is still owned by the set (not yet
    /// installed): when none do, [`WriteSet::clear`] only resets the length.
    boxed: u32,
}

#[inline]
fn bloom_bit(lock: *const VLock) -> u64 {
    1u64 << ((lock as usize as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58)
}

impl WriteSet {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[inline]
    pub(crate) fn entries(&self) -> &[WriteEntry] {
        &self.entries
    }

    #[inline]
    pub(crate) fn entries_mut(&mut self) -> &mut [WriteEntry] {
        &mut self.entries
    }

    /// The entry for the variable with this lock, if it was written.
    #[inline(always)]
    pub(crate) fn find(&self, lock: *const VLock) -> Option<usize> {
        if self.entries.len() <= SMALL {
            return self.entries.iter().position(|e| e.lock == lock);
        }
        self.find_large(lock)
    }

    /// `find` beyond `SMALL` entries (out of line, so that the compiler does not hoist its
    /// hashing into every small lookup).
    #[inline(never)]
    fn find_large(&self, lock: *const VLock) -> Option<usize> {
        if self.bloom & bloom_bit(lock) == 0 {
            return None;
        }
        if self.sorted {
            return self
                .entries
                .binary_search_by_key(&(lock as usize), |e| e.lock as usize)
                .ok();
        }
        if !self.indexed {
            return self.entries.iter().position(|e| e.lock == lock);
        }
        self.index.get(&(lock as usize)).map(|&i| i as usize)
    }

    /// The pending payload of entry `i`.
    #[inline]
    pub(crate) fn payload(&self, i: usize) -> Payload {
        self.entries[i].payload
    }

    /// Replaces the inline payload of entry `i` (a `TWord`'s; nothing to free).
    #[inline(always)]
    pub(crate) fn set_payload(&mut self, i: usize, payload: Payload) {
        debug_assert!(matches!(self.entries[i].payload, Payload::Bits(_)));
        debug_assert!(matches!(payload, Payload::Bits(_)));
        self.entries[i].payload = payload;
    }

    /// Buffers a write of a variable that is not in the set yet (the caller has just
    /// searched for it).
    #[inline(always)]
    pub(crate) fn push_new(
        &mut self,
        lock: *const VLock,
        target: *const (),
        payload: Payload,
        ops: &'static WriteOps,
    ) {
        debug_assert!(!self.sorted, "no writes after the commit has begun");
        debug_assert!(self.find(lock).is_none());
        if let Payload::Boxed(_) = payload {
            self.boxed += 1;
        }
        self.entries.push(WriteEntry {
            lock,
            target,
            payload,
            ops,
            seen: 0,
        });
        if self.entries.len() > SMALL {
            self.grown();
        }
    }

    /// Buffers a write, replacing (and discarding) an earlier pending value of the same variable.
    #[inline(always)]
    pub(crate) fn insert(
        &mut self,
        lock: *const VLock,
        target: *const (),
        payload: Payload,
        ops: &'static WriteOps,
    ) {
        debug_assert!(!self.sorted, "no writes after the commit has begun");
        if let Some(i) = self.find(lock) {
            let old = std::mem::replace(&mut self.entries[i].payload, payload);
            // SAFETY: `old` was made by this variable's `tx_write` (same lock, same entry) and
            // was never installed; it is dropped here and not used again.
            unsafe { (ops.discard)(old) };
            return;
        }
        self.push_new(lock, target, payload, ops);
    }

    /// Adds the last entry to the Bloom filter and (beyond `LINEAR`) to the hash index,
    /// building each when the set first outgrows the size that does without it.
    #[inline(never)]
    fn grown(&mut self) {
        let n = self.entries.len();
        if n == SMALL + 1 {
            self.bloom = self.entries.iter().fold(0, |b, e| b | bloom_bit(e.lock));
        } else {
            self.bloom |= bloom_bit(self.entries[n - 1].lock);
        }
        if n <= LINEAR {
            return;
        }
        if !self.indexed {
            self.index.clear();
            for (i, e) in self.entries.iter().enumerate() {
                self.index.insert(e.lock as usize, i as u32);
            }
            self.indexed = true;
        } else {
            self.index
                .insert(self.entries[n - 1].lock as usize, (n - 1) as u32);
        }
    }

    /// Marks every boxed payload as installed (the commit's write-back replaced each one with
    /// `Bits(0)`), so that [`WriteSet::clear`] has nothing to free.
    #[inline]
    pub(crate) fn all_installed(&mut self) {
        self.boxed = 0;
    }

    /// Sorts the entries into lock order (by lock address) for the commit.
    #[inline]
    pub(crate) fn sort_for_commit(&mut self) {
        if !self.sorted {
            match self.entries.len() {
                0 | 1 => {}
                2 => {
                    if self.entries[0].lock > self.entries[1].lock {
                        self.entries.swap(0, 1);
                    }
                }
                _ => self.entries.sort_unstable_by_key(|e| e.lock as usize),
            }
            self.sorted = true;
        }
    }

    /// Forgets every entry, freeing the pending values that were not installed; keeps the
    /// allocations for the next attempt.
    #[inline]
    pub(crate) fn clear(&mut self) {
        if self.boxed != 0 {
            self.discard_boxed();
        }
        // `WriteEntry` owns nothing itself (its payload is freed above): this only resets the
        // length.
        self.entries.clear();
        self.bloom = 0;
        self.sorted = false;
        if self.indexed {
            self.index.clear();
            self.indexed = false;
        }
    }

    /// Frees the boxed payloads that were not installed.
    #[inline(never)]
    fn discard_boxed(&mut self) {
        for e in &mut self.entries {
            if let Payload::Boxed(_) = e.payload {
                let payload = std::mem::replace(&mut e.payload, Payload::Bits(0));
                // SAFETY: each payload still in the set was made by its variable's `tx_write`
                // and not installed (install replaces it with `Bits(0)`); it is replaced by
                // `Bits(0)` here, so it is freed once. (Inline payloads own nothing.)
                unsafe { (e.ops.discard)(payload) };
            }
        }
        self.boxed = 0;
    }

    /// Checks the invariants: the Bloom filter covers every entry, no variable appears twice,
    /// the index (when used) maps every entry to itself, sorted means sorted, `boxed` counts
    /// the boxed payloads.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let boxed = self
            .entries
            .iter()
            .filter(|e| matches!(e.payload, Payload::Boxed(_)))
            .count();
        if boxed != self.boxed as usize {
            return Err(format!("{boxed} boxed payloads, counted {}", self.boxed));
        }
        if self.indexed != (self.entries.len() > LINEAR) && !self.entries.is_empty() {
            return Err("index in use does not match the size".into());
        }
        for (i, e) in self.entries.iter().enumerate() {
            if self.entries.len() > SMALL && self.bloom & bloom_bit(e.lock) == 0 {
                return Err(format!("entry {i} missing from the Bloom filter"));
            }
            if self.find(e.lock) != Some(i) {
                return Err(format!("entry {i} not found at its own position"));
            }
        }
        if self.sorted && !self.entries.is_sorted_by_key(|e| e.lock as usize) {
            return Err("write set marked sorted but out of order".into());
        }
        Ok(())
    }
}

impl Drop for WriteSet {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DISCARDED: AtomicUsize = AtomicUsize::new(0);

    unsafe fn install_nothing(_: *const (), _: Payload, _: Option<&Guard>) {}
    /// Test payloads are `Boxed` with a fake address 1 or 2 (never dereferenced): the
    /// discard counts add up those numbers.
    unsafe fn count_discard(p: Payload) {
        if let Payload::Boxed(b) = p {
            DISCARDED.fetch_add(b.addr(), Ordering::Relaxed);
        }
    }
    fn fake(n: usize) -> Payload {
        Payload::Boxed(std::ptr::without_provenance_mut(n))
    }
    static OPS: WriteOps = WriteOps {
        install: install_nothing,
        discard: count_discard,
    };

    #[test]
    fn lookup_replace_and_sort_for_every_size() {
        let locks: Vec<VLock> = (0..40).map(|_| VLock::new()).collect();
        for n in [1, 2, 3, SMALL, SMALL + 1, LINEAR, LINEAR + 1, 40] {
            DISCARDED.store(0, Ordering::Relaxed);
            let mut ws = WriteSet::default();
            // Insert in a scrambled order, each value once, then overwrite the even ones.
            for k in 0..n {
                let j = (k * 7) % n;
                ws.insert(&locks[j], std::ptr::null(), fake(1), &OPS);
            }
            for j in (0..n).step_by(2) {
                ws.insert(&locks[j], std::ptr::null(), fake(2), &OPS);
            }
            ws.validate().unwrap();
            assert_eq!(ws.len(), n);
            // The overwritten payloads (value 1 each) were discarded.
            assert_eq!(DISCARDED.load(Ordering::Relaxed), n.div_ceil(2));
            for (j, l) in locks.iter().enumerate() {
                let found = ws.find(l);
                assert_eq!(found.is_some(), j < n, "lock {j}, n = {n}");
                if let Some(i) = found {
                    let want = if j % 2 == 0 { 2 } else { 1 };
                    assert!(matches!(ws.payload(i), Payload::Boxed(b) if b.addr() == want));
                }
            }
            ws.sort_for_commit();
            ws.validate().unwrap();
            for l in locks.iter().take(n) {
                assert!(ws.find(l).is_some());
            }
            DISCARDED.store(0, Ordering::Relaxed);
            ws.clear();
            assert!(ws.is_empty());
            // Clearing discards the n pending values: n/2 twos and the rest ones.
            assert_eq!(DISCARDED.load(Ordering::Relaxed), 2 * n.div_ceil(2) + n / 2);
            assert!(ws.find(&locks[0]).is_none());
        }
    }
}
