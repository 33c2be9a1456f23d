//! The global version clock and the irrevocability token (TL2, Dice, Shalev & Shavit 2006,
//! section 2; seed 004 uses the same STM design).
//!
//! TL2 orders all committed writes by one shared counter, the *global version clock*. A
//! transaction samples it when it starts (its read version `rv`); a writer increments it at
//! commit (its write version `wv`) and stamps every location it writes with `wv`. A location
//! whose stamp is at most `rv` was last written by a transaction that committed before the
//! reader started, so everything a transaction reads with stamps `<= rv` belongs to one snapshot.
//!
//! Our clock word packs one more bit: `clock = version << 1 | irrevocable`. The low bit is set
//! while an *irrevocable* transaction runs (see [`transaction`](crate::transaction)). A normal
//! committer takes its write version with one `fetch_add(2)` — the same single atomic TL2
//! uses — and looks at the bit in the value it got back: if it was set, the committer may not
//! write back and aborts. So the irrevocability check costs the fast path nothing.
//!
//! Irrevocable transactions are serialised among themselves by a FIFO *ticket lock* (two
//! counters, `next_ticket` and `now_serving`). FIFO order is what turns "after K aborts a
//! transaction runs irrevocably" into a guarantee for every thread, not only for some.
//!
//! The three words live on separate cache lines so that waiting on the ticket lock does not
//! slow down committers bumping the clock.

use crate::primitive::{AtomicU64, Ordering, spin_loop, yield_now};
use crossbeam_utils::CachePadded;

/// The irrevocable bit of the clock word.
pub(crate) const IRREVOCABLE: u64 = 1;

/// The process-wide state of the STM.
pub(crate) struct Globals {
    clock: CachePadded<AtomicU64>,
    next_ticket: CachePadded<AtomicU64>,
    now_serving: CachePadded<AtomicU64>,
}

impl Globals {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Globals {
            clock: CachePadded::new(AtomicU64::new(0)),
            next_ticket: CachePadded::new(AtomicU64::new(0)),
            now_serving: CachePadded::new(AtomicU64::new(0)),
        }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Globals {
            clock: CachePadded::new(AtomicU64::new(0)),
            next_ticket: CachePadded::new(AtomicU64::new(0)),
            now_serving: CachePadded::new(AtomicU64::new(0)),
        }
    }
}

#[cfg(not(loom))]
#[inline]
pub(crate) fn globals() -> &'static Globals {
    static GLOBALS: Globals = Globals::new();
    &GLOBALS
}

#[cfg(loom)]
pub(crate) fn globals() -> &'static Globals {
    loom::lazy_static! {
        static ref GLOBALS: Globals = Globals::new();
    }
    &GLOBALS
}

impl Globals {
    /// The current version (the read version of a transaction that starts now).
    #[inline]
    pub(crate) fn read_version(&self) -> u64 {
        self.clock.load(Ordering::Acquire) >> 1
    }

    /// Takes a write version. `Err(())` if an irrevocable transaction holds the token, in
    /// which case the caller must not write back (the version it burnt is simply never used).
    #[inline]
    pub(crate) fn take_write_version(&self) -> Result<u64, ()> {
        let c = self.clock.fetch_add(2, Ordering::AcqRel);
        if c & IRREVOCABLE != 0 && !cfg!(timewarp_stm_broken = "no_irrevocable_wait") {
            return Err(());
        }
        Ok((c >> 1) + 1)
    }

    /// Takes the write version of the irrevocable transaction (the bit stays set).
    #[inline]
    pub(crate) fn take_irrevocable_write_version(&self) -> u64 {
        let c = self.clock.fetch_add(2, Ordering::AcqRel);
        debug_assert!(c & IRREVOCABLE != 0);
        (c >> 1) + 1
    }

    /// Whether an irrevocable transaction is running now.
    #[inline]
    pub(crate) fn irrevocable_active(&self) -> bool {
        self.clock.load(Ordering::Acquire) & IRREVOCABLE != 0
    }

    /// Waits (spinning, then yielding) until no irrevocable transaction runs.
    pub(crate) fn wait_irrevocable_done(&self) {
        let mut spins = 0u32;
        while self.irrevocable_active() {
            relax(&mut spins);
        }
    }

    /// Becomes the irrevocable transaction: waits for its turn (FIFO), then sets the bit.
    /// Returns the read version at which the irrevocable transaction starts.
    pub(crate) fn acquire_irrevocable(&self) -> u64 {
        let ticket = self.next_ticket.fetch_add(1, Ordering::AcqRel);
        let mut spins = 0u32;
        while self.now_serving.load(Ordering::Acquire) != ticket {
            relax(&mut spins);
        }
        // Only the ticket holder sets or clears the bit, so `fetch_or` sees it clear.
        let c = self.clock.fetch_or(IRREVOCABLE, Ordering::AcqRel);
        debug_assert!(c & IRREVOCABLE == 0);
        c >> 1
    }

    /// Ends the irrevocable run: clears the bit, then lets the next ticket in.
    pub(crate) fn release_irrevocable(&self) {
        self.clock.fetch_and(!IRREVOCABLE, Ordering::AcqRel);
        self.now_serving.fetch_add(1, Ordering::AcqRel);
    }
}

/// One step of an unbounded wait: spin a little, then yield the processor. On a machine with
/// more threads than cores the thread we wait for may be descheduled, so spinning long is
/// wasted work.
#[inline]
pub(crate) fn relax(spins: &mut u32) {
    if *spins < 16 {
        spin_loop();
    } else {
        yield_now();
    }
    *spins = spins.saturating_add(1);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn write_versions_increase_and_irrevocable_bit_blocks_them() {
        let g = Globals::new();
        assert_eq!(g.read_version(), 0);
        assert_eq!(g.take_write_version(), Ok(1));
        assert_eq!(g.take_write_version(), Ok(2));
        assert_eq!(g.read_version(), 2);
        let rv = g.acquire_irrevocable();
        assert_eq!(rv, 2);
        assert!(g.irrevocable_active());
        assert_eq!(g.take_write_version(), Err(()));
        assert_eq!(g.take_irrevocable_write_version(), 4);
        g.release_irrevocable();
        assert!(!g.irrevocable_active());
        assert_eq!(g.take_write_version(), Ok(5));
        // A second irrevocable run gets the next ticket.
        let rv = g.acquire_irrevocable();
        assert_eq!(rv, 5);
        g.release_irrevocable();
    }
}
