//! The versioned write-lock of one transactional variable (TL2, Dice, Shalev & Shavit 2006,
//! section 2: "a versioned write-lock per location").
//!
//! One `u64` word: `version << 1 | locked`. Readers never write it: they load it before and
//! after reading the value, and accept the value only if both loads are equal, unlocked and
//! not newer than their read version (a sequence lock). A committer locks it with one CAS from
//! an unlocked word `w` to `w | 1` (keeping the old version, which commit-time validation
//! compares), writes the value, then releases it by storing `wv << 1`, or, if it aborted,
//! by restoring `w`.
//!
//! Orderings: the locking CAS is `Acquire`, the value store and the release store are
//! `Release`; a reader's loads are `Acquire`. A reader that observes the new value therefore
//! also observes the locking CAS on its second load (the CAS is sequenced before the value
//! store it synchronises with), so it cannot accept a value written under a lock it saw free.

use crate::primitive::{AtomicU64, Ordering};

/// The lock bit.
pub(crate) const LOCKED: u64 = 1;

/// A versioned write-lock.
pub(crate) struct VLock {
    word: AtomicU64,
}

impl VLock {
    /// A fresh lock: unlocked, version 0 (older than every read version).
    pub(crate) fn new() -> Self {
        VLock {
            word: AtomicU64::new(0),
        }
    }

    /// Loads the word.
    #[inline]
    pub(crate) fn load(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    /// Tries once to lock a word last seen as `seen` (which must be unlocked).
    #[inline]
    pub(crate) fn try_lock(&self, seen: u64) -> bool {
        debug_assert!(!is_locked(seen));
        self.word
            .compare_exchange(seen, seen | LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Releases a lock we hold, stamping the location with version `wv`.
    #[inline]
    pub(crate) fn unlock_with_version(&self, wv: u64) {
        self.word.store(wv << 1, Ordering::Release);
    }

    /// Releases a lock we hold without a write: restores the word seen when locking.
    #[inline]
    pub(crate) fn restore(&self, seen: u64) {
        self.word.store(seen, Ordering::Release);
    }
}

/// Whether a word is locked.
#[inline]
pub(crate) fn is_locked(word: u64) -> bool {
    word & LOCKED != 0
}

/// The version stamped in a word.
#[inline]
pub(crate) fn version(word: u64) -> u64 {
    word >> 1
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn lock_unlock_and_restore() {
        let l = VLock::new();
        let w = l.load();
        assert!(!is_locked(w));
        assert_eq!(version(w), 0);
        assert!(l.try_lock(w));
        assert!(is_locked(l.load()));
        assert!(!l.try_lock(w), "a locked word cannot be locked again");
        l.unlock_with_version(7);
        assert_eq!(version(l.load()), 7);
        assert!(!is_locked(l.load()));
        let w = l.load();
        assert!(l.try_lock(w));
        l.restore(w);
        assert_eq!(l.load(), w);
    }
}
