//! # The lead: how far past the GVT entities speculate, under the window
//!
//! Seed 000 bounds optimism by a fixed window: an entity steps at most to `LVT_ub = GVT +
//! window` (Section 3). The window is the scene's (`world.window`, DESIGN.md's scene file); it
//! is an upper bound, and nothing in the protocol needs entities to go that far: a committed
//! state does not depend on how far anyone speculated (each entity already halves its own
//! `reach` after a rollback, [`super::entity`]). How far is worth it is a matter of speed, and
//! it pulls two ways:
//!
//! * **Too far** costs memory and cache. Every tick an entity is ahead holds its states in its
//!   queue and an entry per cell of each body's box in the TVHT, and the STM copies buckets that
//!   hold all those ticks. On the 2-core development machine (2026-11-24, `window` 32, 64 and
//!   256 in otherwise equal scene files, two rounds, 1 and 2 workers) a window of 256 took
//!   3-4x the memory of 32 and was slower on every scene measured: `cylinders` 2000 over 1.5 s
//!   7.4 s at 32 against 14.3 s at 256 on one worker, `parallel` 2000 2.7 s at 64 against
//!   4.3-5.6 s, `pyramids` 1100 1.6-1.7 s against 2.3-2.4 s on two workers. Far ahead, more
//!   of the work is also thrown away by rollbacks.
//! * **Too short** starves workers: when the entities holding the GVT back are fewer than the
//!   workers, the others have nothing to do but wait. That is what a long window is for (the
//!   paper's slack), and it matters more the more workers there are.
//!
//! So the engine keeps a **lead**, between [`LEAD_FLOOR`] (or the window, if smaller) and the
//! window, that entities use instead of the window, and adapts it to the one signal that says
//! it is too short: a worker that finds no entity to run, after it has looked for a while
//! (its back-off completed), doubles it ([`Lead::starved`]), but not again before the GVT has
//! moved a lead past the last doubling (until then the entities have not run into the room it
//! gave them), however many workers starve. After [`CALM_TICKS`] of GVT without such a worker
//! it is halved, down to the floor ([`Lead::settle`]). One worker never starves while an entity can step, so it
//! stays at the floor; many workers on few busy entities raise it towards the window. (A
//! first version doubled it at every starving worker and halved it only after four of its own
//! lengths: two workers starving together at the start of a run took it to the window and
//! kept it there for a simulated second or two. A second doubled it once per GVT value: once
//! batches ended only at collisions, two workers starving at three GVT values in a row took it
//! from 32 to the window; over `bouncing` 500's 120 s it was raised 335 times and lowered 334,
//! and the peak resident set rose with each new high, +18% from 20 s to 120 s.)
//!
//! The lead is one atomic word read with relaxed loads: any value between 1 and the window is
//! correct (committed frames are bit-identical for any window, DESIGN.md), so no ordering is
//! needed and no protocol rests on it.

use super::Tick;
use crate::primitive::{AtomicU64, Ordering};

/// The smallest lead (unless the window is smaller): the measurements above put the best fixed
/// window at 32-64 ticks on every scene on 1 and 2 workers.
pub const LEAD_FLOOR: Tick = 32;

/// A lead is halved once the GVT has advanced this many ticks since it last changed or a
/// worker last starved.
pub const CALM_TICKS: Tick = 4 * LEAD_FLOOR;

/// The lead of one run (see the module documentation).
pub struct Lead {
    window: Tick,
    floor: Tick,
    cap: AtomicU64,
    /// The GVT when the lead last changed or a worker last starved.
    since: AtomicU64,
    /// The GVT at which a starving worker last doubled it (or tried: at the window); the next
    /// doubling waits until the GVT has moved a lead past it.
    raised_at: AtomicU64,
    raised: AtomicU64,
    lowered: AtomicU64,
}

/// How the lead moved over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeadStats {
    /// The lead at the end.
    pub lead: Tick,
    /// Times a starving worker doubled it, and times a calm stretch halved it.
    pub raised: u64,
    pub lowered: u64,
}

impl Lead {
    /// The lead of a run with `window` (taken as 1 if 0), starting at the floor.
    pub fn new(window: Tick) -> Lead {
        Lead::with_floor(window, LEAD_FLOOR)
    }

    /// A lead fixed at the window (never moves: for models and tests of the window itself).
    pub fn fixed(window: Tick) -> Lead {
        Lead::with_floor(window, Tick::MAX)
    }

    /// A lead between `floor` (at most the window) and the window, starting at the floor.
    fn with_floor(window: Tick, floor: Tick) -> Lead {
        let window = window.max(1);
        let floor = floor.min(window);
        Lead {
            window,
            floor,
            cap: AtomicU64::new(floor),
            since: AtomicU64::new(0),
            raised_at: AtomicU64::new(Tick::MAX),
            raised: AtomicU64::new(0),
            lowered: AtomicU64::new(0),
        }
    }

    /// How far past the GVT an entity may step now: `1 ..= window`.
    #[inline]
    pub fn get(&self) -> Tick {
        self.cap.load(Ordering::Relaxed)
    }

    /// A worker found no entity to run at GVT `gvt`: doubles the lead, up to the window, unless
    /// it was doubled less than a lead ago (the entities have not yet run into the room the
    /// last doubling gave them).
    pub fn starved(&self, gvt: Tick) {
        self.since.store(gvt, Ordering::Relaxed);
        let cap = self.get();
        let last = self.raised_at.load(Ordering::Relaxed);
        if last != Tick::MAX && gvt < last.saturating_add(cap) {
            return;
        }
        if self
            .raised_at
            .compare_exchange(last, gvt, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        if cap < self.window
            && self
                .cap
                .compare_exchange(
                    cap,
                    (cap * 2).min(self.window),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            self.raised.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The GVT is at `gvt`: halves the lead, down to the floor, if it has been calm for
    /// [`CALM_TICKS`].
    pub fn settle(&self, gvt: Tick) {
        let cap = self.get();
        let since = self.since.load(Ordering::Relaxed);
        if cap > self.floor
            && gvt >= since.saturating_add(CALM_TICKS)
            && self
                .cap
                .compare_exchange(
                    cap,
                    (cap / 2).max(self.floor),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            self.since.store(gvt, Ordering::Relaxed);
            self.lowered.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// How it moved.
    pub fn stats(&self) -> LeadStats {
        LeadStats {
            lead: self.get(),
            raised: self.raised.load(Ordering::Relaxed),
            lowered: self.lowered.load(Ordering::Relaxed),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_lead_starts_at_the_floor_doubles_when_starved_and_halves_when_calm() {
        let l = Lead::new(256);
        assert_eq!(l.get(), LEAD_FLOOR);
        l.starved(10);
        assert_eq!(l.get(), 2 * LEAD_FLOOR);
        // Other workers starving at the same GVT, or before the GVT has moved a lead on, do not
        // double it again: the entities have not run into its new room yet.
        l.starved(10);
        l.starved(10);
        for g in 11..10 + 2 * LEAD_FLOOR {
            l.starved(g);
        }
        assert_eq!(l.get(), 2 * LEAD_FLOOR);
        l.starved(10 + 2 * LEAD_FLOOR);
        assert_eq!(l.get(), 4 * LEAD_FLOOR);
        for g in 11 + 2 * LEAD_FLOOR..20 + 6 * LEAD_FLOOR {
            l.starved(g);
        }
        assert_eq!(l.get(), 256, "never past the window");
        let g = 19 + 6 * LEAD_FLOOR;
        // Not calm long enough yet: CALM_TICKS of GVT since the last starving worker (at g).
        l.settle(g + CALM_TICKS - 1);
        assert_eq!(l.get(), 256);
        l.settle(g + CALM_TICKS);
        assert_eq!(l.get(), 128);
        // The next halving needs another calm stretch.
        l.settle(g + 2 * CALM_TICKS - 1);
        assert_eq!(l.get(), 128);
        let mut g = g + CALM_TICKS;
        for _ in 0..10 {
            g += CALM_TICKS;
            l.settle(g);
        }
        assert_eq!(l.get(), LEAD_FLOOR, "never below the floor");
        let s = l.stats();
        assert_eq!((s.lead, s.raised, s.lowered), (LEAD_FLOOR, 3, 3));
        // A worker starving resets the calm stretch.
        l.starved(g);
        assert_eq!(l.get(), 2 * LEAD_FLOOR);
        l.settle(g + CALM_TICKS / 2);
        l.starved(g + CALM_TICKS / 2);
        l.settle(g + CALM_TICKS);
        assert_eq!(l.get(), 4 * LEAD_FLOOR);
    }

    #[test]
    fn a_small_window_is_the_lead_and_a_fixed_lead_never_moves() {
        let l = Lead::new(8);
        assert_eq!(l.get(), 8);
        l.starved(0);
        l.settle(1 << 20);
        assert_eq!(l.get(), 8);
        let f = Lead::fixed(256);
        assert_eq!(f.get(), 256);
        f.settle(1 << 20);
        f.starved(0);
        assert_eq!(f.get(), 256);
        assert_eq!(Lead::new(0).get(), 1, "a window of 0 is taken as 1");
    }
}
