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
//! So the engine keeps a **lead**, between a floor ([`LEAD_TIGHT`] or [`LEAD_FLOOR`], or the
//! window if smaller; see "Rollbacks") and the window, that entities use instead of the window,
//! and raises it on the one signal that says it is too short: a worker that finds no entity to
//! run, after it has looked for a while (its back-off completed), while the workers are
//! hungry (see "Starving"), doubles it ([`Lead::starved`]), but not again before the GVT has
//! moved a lead past the last doubling (until then the entities have not run into the room it
//! gave them), however many workers starve. After [`CALM_TICKS`] of GVT without such a worker
//! it is halved, down to the floor ([`Lead::settle`]). One worker never starves while an
//! entity can step, so it stays at the floor; many workers on few busy entities raise it
//! towards the window. (A first version
//! doubled it at every starving worker and halved it only after four of its own lengths: two
//! workers starving together at the start of a run took it to the window and kept it there for
//! a simulated second or two. A second doubled it once per GVT value: once batches ended only
//! at collisions, two workers starving at three GVT values in a row took it from 32 to the
//! window; over `bouncing` 500's 120 s it was raised 335 times and lowered 334, and the peak
//! resident set rose with each new high, +18% from 20 s to 120 s.)
//!
//! ## Starving
//!
//! A worker's back-off completes after a few microseconds without a task, and on two workers
//! that happens now and then on every scene, when one entity holds the GVT back and the other
//! worker has caught up with the lead: `bouncing` 500 raised its lead 20-39 times every 10
//! simulated seconds, between 32 and 128 ticks, while its workers were idle for 0.1% of their
//! time (`parallel` 2000 0.1%, `avalanche` 300 0.3%, `pyramids` 1100 0.3%; 2026-11-27, the
//! 2-core development machine). The raises bought nothing: with them capped at 32 or 64 ticks
//! those scenes ran in the same wall time (medians of 5, within 2%), but they cost memory, and
//! memory that depended on the machine's load, as starving depends on how the workers are
//! scheduled: the live heap of `bouncing` 500 was 16-22 MiB while the lead stayed low and 24-31
//! MiB (peaks of 39 and 51 MiB) in stretches where it rose, so a run whose first 20 s were
//! quiet and whose later ones were not failed the memory check of `tests/warp_memory.rs`
//! (peak resident set +10.6% to +29% from 20 s to 120 s in 6 of 10 runs, either backend;
//! with the raises capped at 32 ticks, 6 runs of 6 within +3.2%).
//!
//! So a starving worker raises the lead only while the workers are **hungry**: the last
//! measured stretch ([`MEASURED_TICKS`] of GVT, see "Rollbacks") had its workers looking for a
//! task and not finding one for more than one nanosecond in [`HUNGRY`] (5%) of their time. A
//! worker reports how long it looked ([`Lead::idled`]) when it finds a task and whenever its
//! back-off completes, and the end of a stretch sets the reported time against the workers
//! times the stretch's wall time (one clock reading a stretch). A lead raised for a worker or
//! two looking for a moment would be raised for nothing; one raised for workers idle a twentieth
//! of their time could give them that twentieth. The first stretch is not hungry: the workers
//! of a fresh run, all starving at once, do not raise it. (Measured against the rule without
//! hunger, 2026-11-27, two workers, medians of 5 alternating runs: wall time 0.94-1.05x on
//! `bouncing` 500 and 2000, `parallel` and `cylinders` 2000, `pyramids` 1100 and `avalanche`
//! 300, either backend, all within the noise; `bouncing` 500 over 120 s raised its lead 1-3
//! times instead of about 300, its live heap stayed at 15-19 MiB (at most 27 MiB) and the
//! memory check passed 8 runs of 8, +0.1% to +8.6%, and 3 of 3 with two busy loops competing
//! for the cores (+0.1% to +6.1%; it failed so before). Sixteen workers on the two cores still
//! raise it: `bouncing` 500 over 2 s, 25 raises against 26.)
//!
//! ## Rollbacks
//!
//! The floor itself moves between two values. A turn costs about ten thousand instructions
//! besides its ticks (the TVHT's section and its sweep, the GVT records, the scheduling), so
//! where nothing collides entities should step far in few turns; where bodies collide, every
//! tick further ahead is a tick more to roll back when an event comes from the past. So the
//! lead measures the share of the work that is rolled back: each entity's rollback reports its
//! rolled-back body-ticks ([`Lead::rolled_back`]), and at the end of every stretch of
//! [`MEASURED_TICKS`] of GVT ([`Lead::settle`]) that count is set against the body-ticks the
//! GVT passed. More than one in [`TIGHTEN`] makes the floor [`LEAD_TIGHT`] (8 ticks) for the
//! rest of the run and halves the lead down to it at once; until then, a stretch with fewer
//! than one in [`LOOSEN`] makes it [`LEAD_FLOOR`] (64) and raises a lead below it. Collisions
//! come in bursts, and quiet stretches say little about the next one: loosened again after
//! four quiet stretches in a row, the floor of `bouncing` 500 went back and forth 33 times in
//! 120 s (16 in a row: 8-13 times), and its memory with it (`tests/warp_memory.rs`: the peak
//! resident set grew 7-17% from 20 s to 120 s, against 0-11% with a floor that stays tight).
//! A run starts tight: the workers of a fresh run all starve at once and double the
//! lead, which from 64 went to 128 and 256 and rolled back twice as much in the first half
//! second of `bouncing`. An entity also computes at most the floor's ticks a turn
//! ([`Lead::floor`], at most [`super::entity::BATCH`]).
//!
//! Measured on the 2-core development machine (2026-11-27) against the fixed floor of 32 and
//! batches of 32 ticks: one worker, callgrind, 500 bodies, `parallel` 13% fewer instructions
//! (11.6% with contact groups), `cylinders` 4.5%, `bouncing` (tight) and `avalanche` as
//! before; two workers, N = 2000 over 0.5 s, wall time 0.83-0.87x on `parallel`, 0.83-0.92x
//! on `cylinders`, within the noise (0.93-1.06x) on `bouncing` (500 over 5 s, 2000 over 0.5
//! s), `avalanche` 300 and `pyramids` 1100, either backend. It costs memory where the lead is
//! loose: `parallel` 2000 over 1 s on one worker peaked at 147 MB of resident set against 85
//! MB. The floor of 64 without the measure rolled back two to three times as many ticks on
//! `bouncing` and `avalanche` and made `avalanche` 1.13-1.16x slower.
//!
//! The lead is one atomic word read with relaxed loads: any value between 1 and the window is
//! correct (committed frames are bit-identical for any window, DESIGN.md), so no ordering is
//! needed and no protocol rests on it.

use super::Tick;
use crate::primitive::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The smallest lead (unless the window is smaller) while rollbacks are rare (see
/// "Rollbacks"). The measurements above, made when a turn cost more than its ticks do now, put
/// the best fixed window at 32-64 ticks on every scene on 1 and 2 workers.
pub const LEAD_FLOOR: Tick = 64;

/// The smallest lead while they are not, and at the start of a run. Since spans and glides a
/// turn's ticks cost little besides what a rollback throws away, and 8 ticks rolled back less
/// than 16 or 32 on every scene that tightens, at no cost in wall time on 2 workers
/// (`docs/results.md`, "2026-11-29, afternoon").
pub const LEAD_TIGHT: Tick = 8;

/// A lead is halved once the GVT has advanced this many ticks since it last changed or a
/// worker last starved.
pub const CALM_TICKS: Tick = 128;

/// The share of rolled-back work is measured over stretches of this many ticks of GVT.
pub const MEASURED_TICKS: Tick = 64;

/// A measured stretch in which more than one body-tick in `TIGHTEN` of those the GVT passed
/// was rolled back tightens the lead's floor to [`LEAD_TIGHT`].
pub const TIGHTEN: u64 = 100;

/// One with fewer than one in `LOOSEN`, before any stretch has tightened it, loosens it to
/// [`LEAD_FLOOR`].
pub const LOOSEN: u64 = 400;

/// Workers are **hungry** after a measured stretch in which more than one nanosecond in `HUNGRY`
/// of their time was spent looking for an entity to run and not finding one (see "Starving");
/// only then does a starving worker raise the lead.
pub const HUNGRY: u64 = 20;

/// The lead of one run (see the module documentation).
pub struct Lead {
    window: Tick,
    /// The floor while rollbacks are rare, and while they are not.
    loose: Tick,
    tight: Tick,
    /// Bodies of the run (the rolled-back share is of body-ticks).
    bodies: u64,
    /// Workers of the run (the idle share is of their time), and the clock of its stretches.
    workers: u64,
    clock: Instant,
    /// Idle worker-ns reported since the stretch being measured began, and the clock's ns
    /// then.
    idle: AtomicU64,
    stretch_began: AtomicU64,
    /// Whether the last measured stretch was hungry (see [`HUNGRY`]).
    hungry: AtomicBool,
    /// The floor now: `loose` or `tight`.
    floor: AtomicU64,
    /// Body-ticks rolled back since the stretch being measured began, and the GVT then.
    undone: AtomicU64,
    measured_from: AtomicU64,
    cap: AtomicU64,
    /// The GVT when the lead last changed or a worker last starved.
    since: AtomicU64,
    /// The GVT at which a starving worker last doubled it (or tried: at the window); the next
    /// doubling waits until the GVT has moved a lead past it.
    raised_at: AtomicU64,
    raised: AtomicU64,
    lowered: AtomicU64,
    tightened: AtomicU64,
}

/// How the lead moved over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeadStats {
    /// The lead at the end.
    pub lead: Tick,
    /// Times a starving worker doubled it, and times a calm stretch halved it.
    pub raised: u64,
    pub lowered: u64,
    /// Times a stretch with many rollbacks tightened its floor.
    pub tightened: u64,
}

impl Lead {
    /// The lead of a run of `bodies` bodies on `workers` workers with `window` (taken as 1 if
    /// 0), starting at the tight floor.
    pub fn new(window: Tick, bodies: usize, workers: usize) -> Lead {
        Lead::with_floors(window, (bodies, workers), LEAD_FLOOR, LEAD_TIGHT)
    }

    /// A lead fixed at the window (never moves: for models and tests of the window itself).
    pub fn fixed(window: Tick) -> Lead {
        Lead::with_floors(window, (1, 1), Tick::MAX, Tick::MAX)
    }

    /// A lead between its floor and the window, starting at `tight`; the floor is `tight` or,
    /// while few ticks are rolled back, `loose` (each at most the window).
    fn with_floors(
        window: Tick,
        (bodies, workers): (usize, usize),
        loose: Tick,
        tight: Tick,
    ) -> Lead {
        let window = window.max(1);
        let (loose, tight) = (loose.min(window), tight.min(window));
        Lead {
            window,
            loose,
            tight,
            bodies: bodies.max(1) as u64,
            workers: workers.max(1) as u64,
            clock: Instant::now(),
            idle: AtomicU64::new(0),
            stretch_began: AtomicU64::new(0),
            hungry: AtomicBool::new(false),
            floor: AtomicU64::new(tight),
            undone: AtomicU64::new(0),
            measured_from: AtomicU64::new(0),
            cap: AtomicU64::new(tight),
            since: AtomicU64::new(0),
            raised_at: AtomicU64::new(Tick::MAX),
            raised: AtomicU64::new(0),
            lowered: AtomicU64::new(0),
            tightened: AtomicU64::new(0),
        }
    }

    /// How far past the GVT an entity may step now: `1 ..= window`.
    #[inline]
    pub fn get(&self) -> Tick {
        self.cap.load(Ordering::Relaxed)
    }

    /// The lead's floor now: an entity computes at most this many ticks a turn (see
    /// "Rollbacks").
    #[inline]
    pub fn floor(&self) -> Tick {
        self.floor.load(Ordering::Relaxed)
    }

    /// The clock's nanoseconds now.
    fn now(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    /// A worker has been looking for an entity to run for `idle` (since it last said so).
    pub fn idled(&self, idle: Duration) {
        self.idle
            .fetch_add(idle.as_nanos() as u64, Ordering::Relaxed);
    }

    /// A worker has found no entity to run for a while, at GVT `gvt`: if the workers are hungry
    /// (see "Starving"), doubles the lead, up to the window, unless it was doubled less than a
    /// lead ago (the entities have not yet run into the room the last doubling gave them).
    pub fn starved(&self, gvt: Tick) {
        if !self.hungry.load(Ordering::Relaxed) {
            return;
        }
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

    /// Whether `idle` worker-ns are more than one in [`HUNGRY`] of the workers' time over
    /// `elapsed` ns.
    fn over_share(&self, idle: u64, elapsed: u64) -> bool {
        u128::from(idle) * u128::from(HUNGRY) > u128::from(elapsed) * u128::from(self.workers)
    }

    /// An entity rolled back `body_ticks` (ticks times its bodies).
    pub fn rolled_back(&self, body_ticks: u64) {
        self.undone.fetch_add(body_ticks, Ordering::Relaxed);
    }

    /// The GVT is at `gvt`: at the end of a measured stretch, tightens or loosens the floor by
    /// the share of the stretch's body-ticks rolled back; halves the lead, down to the floor,
    /// if it has been calm for [`CALM_TICKS`].
    pub fn settle(&self, gvt: Tick) {
        self.settle_at(gvt, self.now());
    }

    /// [`Lead::settle`] at the clock's `now` ns.
    fn settle_at(&self, gvt: Tick, now: u64) {
        self.measure(gvt, now);
        let floor = self.floor.load(Ordering::Relaxed);
        let cap = self.get();
        let since = self.since.load(Ordering::Relaxed);
        if cap > floor
            && gvt >= since.saturating_add(CALM_TICKS)
            && self
                .cap
                .compare_exchange(
                    cap,
                    (cap / 2).max(floor),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            self.since.store(gvt, Ordering::Relaxed);
            self.lowered.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Ends the stretch being measured if it is [`MEASURED_TICKS`] long (only one caller does):
    /// many rollbacks in it tighten the floor for good and halve the lead down to it at once;
    /// few, in a run never tightened, loosen it and raise a lead below it. Its idle share says
    /// whether the workers are hungry until the next one ends.
    fn measure(&self, gvt: Tick, now: u64) {
        let from = self.measured_from.load(Ordering::Relaxed);
        if gvt < from.saturating_add(MEASURED_TICKS)
            || self
                .measured_from
                .compare_exchange(from, gvt, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let idle = self.idle.swap(0, Ordering::Relaxed);
        let began = self.stretch_began.swap(now, Ordering::Relaxed);
        self.hungry.store(
            self.over_share(idle, now.saturating_sub(began)),
            Ordering::Relaxed,
        );
        let undone = self.undone.swap(0, Ordering::Relaxed);
        let passed = self.bodies.saturating_mul(gvt - from);
        if undone.saturating_mul(TIGHTEN) > passed {
            if self.floor.swap(self.tight, Ordering::Relaxed) != self.tight {
                self.tightened.fetch_add(1, Ordering::Relaxed);
            }
            let tight = self.tight;
            let halved = |cap: Tick| (cap > tight).then(|| (cap / 2).max(tight));
            let _ = self
                .cap
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, halved);
        } else if undone.saturating_mul(LOOSEN) < passed
            && self.tightened.load(Ordering::Relaxed) == 0
        {
            self.floor.store(self.loose, Ordering::Relaxed);
            self.cap.fetch_max(self.loose, Ordering::Relaxed);
        }
    }

    /// How it moved.
    pub fn stats(&self) -> LeadStats {
        LeadStats {
            lead: self.get(),
            raised: self.raised.load(Ordering::Relaxed),
            lowered: self.lowered.load(Ordering::Relaxed),
            tightened: self.tightened.load(Ordering::Relaxed),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A worker starving at `gvt` while the workers are hungry (the hunger rule itself:
    /// below).
    fn starve(l: &Lead, gvt: Tick) {
        l.hungry.store(true, Ordering::Relaxed);
        l.starved(gvt);
    }

    #[test]
    fn the_lead_starts_at_the_floor_doubles_when_starved_and_halves_when_calm() {
        // One floor, so that only the workers move it (the floor's own moves: below).
        let l = Lead::with_floors(256, (1, 1), LEAD_FLOOR, LEAD_FLOOR);
        assert_eq!(l.get(), LEAD_FLOOR);
        starve(&l, 10);
        assert_eq!(l.get(), 2 * LEAD_FLOOR);
        // Other workers starving at the same GVT, or before the GVT has moved a lead on, do not
        // double it again: the entities have not run into its new room yet.
        starve(&l, 10);
        starve(&l, 10);
        for g in 11..10 + 2 * LEAD_FLOOR {
            starve(&l, g);
        }
        assert_eq!(l.get(), 2 * LEAD_FLOOR);
        starve(&l, 10 + 2 * LEAD_FLOOR);
        assert_eq!(l.get(), 4 * LEAD_FLOOR);
        for g in 11 + 2 * LEAD_FLOOR..20 + 6 * LEAD_FLOOR {
            starve(&l, g);
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
        // Doubled from the floor to the window, and halved back.
        let steps = (256 / LEAD_FLOOR).ilog2() as u64;
        assert_eq!((s.lead, s.raised, s.lowered), (LEAD_FLOOR, steps, steps));
        // A worker starving resets the calm stretch.
        starve(&l, g);
        assert_eq!(l.get(), 2 * LEAD_FLOOR);
        l.settle(g + CALM_TICKS / 2);
        // Too soon after the last doubling to double again, but not calm.
        starve(&l, g + CALM_TICKS / 2);
        l.settle(g + CALM_TICKS);
        assert_eq!(
            l.get(),
            2 * LEAD_FLOOR,
            "a worker starved half a calm stretch ago"
        );
        l.settle(g + CALM_TICKS / 2 + CALM_TICKS);
        assert_eq!(l.get(), LEAD_FLOOR);
    }

    #[test]
    fn the_floor_follows_the_share_of_rolled_back_work() {
        let bodies = 100;
        // The body-ticks the GVT passes in one measured stretch.
        let passed = bodies as u64 * MEASURED_TICKS;
        let l = Lead::new(256, bodies, 2);
        assert_eq!(
            (l.get(), l.floor()),
            (LEAD_TIGHT, LEAD_TIGHT),
            "a run starts tight"
        );
        // A stretch is measured only once it is over.
        l.settle(MEASURED_TICKS - 1);
        assert_eq!((l.get(), l.floor()), (LEAD_TIGHT, LEAD_TIGHT));
        // Nothing rolled back: the floor loosens, and the lead rises to it.
        l.settle(MEASURED_TICKS);
        assert_eq!((l.get(), l.floor()), (LEAD_FLOOR, LEAD_FLOOR));
        // Exactly one body-tick in TIGHTEN is not more than one in TIGHTEN, and not fewer than
        // one in LOOSEN: nothing changes.
        l.rolled_back(passed / TIGHTEN / 2);
        l.rolled_back(passed / TIGHTEN / 2);
        l.settle(2 * MEASURED_TICKS);
        assert_eq!((l.get(), l.floor()), (LEAD_FLOOR, LEAD_FLOOR));
        // Workers starving take it to the window; one body-tick more than that tightens the
        // floor and halves the lead at once (not all the way down).
        starve(&l, 2 * MEASURED_TICKS);
        starve(&l, 2 * MEASURED_TICKS + 2 * LEAD_FLOOR);
        assert_eq!(l.get(), 256);
        l.rolled_back(passed / TIGHTEN + 1);
        l.settle(3 * MEASURED_TICKS);
        assert_eq!((l.get(), l.floor()), (128, LEAD_TIGHT));
        assert_eq!(l.stats().tightened, 1);
        // Tight for good: calm stretches do not loosen it again, and the workers' calm
        // stretches halve the lead down to it, no further.
        let mut g = 3 * MEASURED_TICKS;
        for _ in 0..8 {
            g += CALM_TICKS;
            l.settle(g);
        }
        assert_eq!((l.get(), l.floor()), (LEAD_TIGHT, LEAD_TIGHT));
        l.rolled_back(passed);
        l.settle(g + MEASURED_TICKS);
        assert_eq!(
            l.stats().tightened,
            1,
            "tightening a tight floor is not counted"
        );

        // Another run: what was counted goes with its stretch, and a stretch counts its own
        // length.
        let m = Lead::new(256, bodies, 2);
        m.rolled_back(passed / LOOSEN);
        m.settle(MEASURED_TICKS);
        assert_eq!(
            m.floor(),
            LEAD_TIGHT,
            "one in LOOSEN is not fewer: still tight"
        );
        // The share that would tighten a stretch of MEASURED_TICKS is too small for one twice
        // as long, though not small enough to loosen.
        m.rolled_back(passed / TIGHTEN + 1);
        m.settle(3 * MEASURED_TICKS);
        assert_eq!(m.floor(), LEAD_TIGHT);
        m.rolled_back(2 * passed / LOOSEN - 1);
        m.settle(5 * MEASURED_TICKS);
        assert_eq!(
            (m.get(), m.floor()),
            (LEAD_FLOOR, LEAD_FLOOR),
            "fewer: loose"
        );
        assert_eq!(m.stats().tightened, 0);
    }

    #[test]
    fn only_hungry_workers_raise_the_lead() {
        // Two workers, times in ns of the lead's clock; the first stretch began at 0.
        let l = Lead::with_floors(256, (100, 2), LEAD_TIGHT, LEAD_TIGHT);
        let ms = 1_000_000;
        // Nothing is measured yet: workers starving at the start of a run do not raise it.
        l.idled(Duration::from_millis(5));
        l.starved(10);
        assert_eq!(l.get(), LEAD_TIGHT);
        // A stretch ends: 5 ms idle of 2 x 10 ms of the workers' time is more than one in 20:
        // the workers are hungry, and the next starving worker doubles the lead.
        l.settle_at(MEASURED_TICKS, 10 * ms);
        l.starved(MEASURED_TICKS);
        assert_eq!((l.get(), l.stats().raised), (2 * LEAD_TIGHT, 1));
        // The next stretch, 10 ms to 30 ms: exactly one in 20 (2 ms of 40) is not more.
        l.idled(Duration::from_millis(2));
        l.settle_at(2 * MEASURED_TICKS, 30 * ms);
        let g = 2 * MEASURED_TICKS + 2 * LEAD_TIGHT;
        l.starved(g);
        assert_eq!(l.get(), 2 * LEAD_TIGHT, "not hungry: not raised");
        // Nor does a starving worker that is not hungry count against calm: the lead is
        // halved a calm stretch after the last raise (at GVT 64).
        l.settle_at(MEASURED_TICKS + CALM_TICKS, 31 * ms);
        assert_eq!(l.get(), LEAD_TIGHT);
        // One nanosecond more over a stretch is: hungry until the next stretch ends, whatever
        // the idle time since.
        l.idled(Duration::from_nanos(2 * ms + 1));
        l.settle_at(4 * MEASURED_TICKS, 51 * ms);
        l.starved(4 * MEASURED_TICKS);
        assert_eq!(l.get(), 2 * LEAD_TIGHT);
        l.settle_at(5 * MEASURED_TICKS, 90 * ms);
        l.starved(5 * MEASURED_TICKS + 2 * LEAD_TIGHT);
        assert_eq!(l.get(), 2 * LEAD_TIGHT, "the stretch after was not hungry");
        assert_eq!(l.stats().raised, 2);
    }

    #[test]
    fn a_small_window_is_the_lead_and_a_fixed_lead_never_moves() {
        let l = Lead::new(8, 10, 2);
        assert_eq!(l.get(), 8);
        starve(&l, 0);
        l.rolled_back(1 << 30);
        l.settle(1 << 20);
        assert_eq!((l.get(), l.floor()), (8, 8));
        let f = Lead::fixed(256);
        assert_eq!(f.get(), 256);
        f.settle(1 << 20);
        starve(&f, 0);
        f.rolled_back(1 << 30);
        f.settle(1 << 21);
        assert_eq!((f.get(), f.floor()), (256, 256));
        assert_eq!(Lead::new(0, 1, 1).get(), 1, "a window of 0 is taken as 1");
    }
}
