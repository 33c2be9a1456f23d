//! # Contact groups, tick by tick: fusion, fission, sleep, and an island's step
//!
//! Seed 001 (Mirtich), Section 4.4, and seed 000 (Koenig et al.), Section 7: bodies resting on
//! each other would exchange an event at every tick, so bodies in slow, lasting contact are
//! simulated together as one *contact group* (an island), with the island contact solver of
//! the physics core ([`crate::dynamics::solve_island`], Box2D v3's soft step, seed 002). These
//! are the per-tick rules that say which bodies form a group at each tick and how a group moves,
//! written so that the result is a pure function of the states (DESIGN.md, "Determinism is a
//! contract"): the sequential reference ([`super::reference::grouped_reference`]) applies them
//! in lock-step, and the warp engine must equal it bit for bit.
//!
//! At every tick `k` (after the run's first), in this order:
//!
//! 1. **Fission**, deferred (Box2D's split): an awake group of several bodies that is *due* at
//!    `k` (not inside a substep, rule 4) finds its contacts at `k` (the narrow phase within the
//!    group and with the static bodies, down to a gap of [`GROUP_MARGIN`] plus the substep's
//!    reach). While its touching pairs do not connect its bodies it is *flagged may-split*, and
//!    each such finding adds the ticks until it is due again (the substep's, one in flight);
//!    once it has been apart for [`SPLIT_TICKS`] ticks in a row, it splits into the connected
//!    components at `k` (in steps of [`GROUP_SUBSTEP`] ticks, at the first aligned substep that
//!    finds it apart: the step's speculative reach already keeps a parting pair for a frame). (Bodies that tumble over each other touch and part many times a
//!    second; splitting at the first parting made a group change for nearly every such touch:
//!    2,408 fissions and 2,610 fusions in 20 s of `avalanche` 300.)
//! 2. **Fusion**: two bodies of different groups, not both asleep, that are *in contact* at `k`
//!    by rule 2 of [`super::rules`] with an approach speed below [`FUSE_SPEED`] fuse their
//!    groups (transitively: the groups joined by such contacts become one). Faster contacts
//!    stay collisions between groups: kicks, events in the warp engine. So does a pair that
//!    meets within the tick rather than touching at it (an *impact*, rule 2 of
//!    [`super::rules`]) while moving at [`FUSE_SPEED`] or faster relative to each other: a
//!    grazing pass approaches slowly along its normal, but it is a collision, not a rest.
//!    A new group is due at once.
//! 3. **Kicks** between groups at `k` from the pre-event states, as for single bodies, except
//!    between two bodies that were both asleep at `k` (before rules 1 and 2: the flag is
//!    written with the state, as the TVHT entries of the warp engine carry it); a sleeping
//!    group that is kicked wakes.
//! 4. **Step in substeps.** A group solves its contacts in *substeps* of [`Rules::substep_at`]
//!    ticks: the group substep `S` ([`GROUP_SUBSTEP`]) from every multiple of `S`, and from any
//!    other tick the largest power of two that divides it (1, 2, 4, 8 from an odd tick to
//!    the next multiple of `S`), so that every group's substeps are aligned to absolute
//!    multiples of `S` whenever it was born. `S = 16` ticks of 1/960 s is a 60 Hz step: the
//!    narrow phase runs once a frame, as in rapier3d and Box2D v3, and the island solver cuts
//!    the step into solver substeps of [`SOLVER_TICKS`] (240 Hz, as theirs). A due or kicked
//!    group at `k` adds its kicks to its bodies' velocities (canonical order), then solves its own
//!    contacts and its static contacts for the `L` ticks of the substep from `k` with the
//!    island solver (its contact data prepared once, then `ceil(L / SOLVER_TICKS)` solver
//!    substeps, with the bodies' rolling resistance mixed per contact as the larger of the two,
//!    Box2D v3's rule), warm-started from its impulses of the substep before
//!    (impulses are kept per tick and scaled by the ticks of a solver substep: an accumulated
//!    impulse is a force over one solver substep).
//!    The solver moves each body by `dp` and turns it by `dq` over the substep and leaves it
//!    with velocities `v`, `w`; at tick `k + n`, `0 < n <= L`, the body is at `p + dp n / L`,
//!    turned by the normalised interpolation of the identity and `dq` at `n / L` (`dq` itself
//!    at `n = L`), with velocities `v`, `w` ([`Substep`]): the substep's start pose carried by
//!    its solved motion, one pure rule, so other entities meet the group's bodies at their tick.
//!    In between, the group is *inside the substep* and does nothing at `k + n` unless it is
//!    kicked there, or changes group; a kick inside the substep ends it, and the group solves
//!    again from that tick (in substeps of [`Rules::substep_at`] up to the next multiple of
//!    `S`). A group with no contact at all (a body in flight) moves by rules 3 and 4 of
//!    [`super::rules`]: kicks, then free flight, and is due again at the next tick. A sleeping
//!    group does not move at all.
//! 5. **Sleep**: a group whose bodies all stay slower than [`SLEEP_SPEED`] (counting the speed
//!    their spin gives their farthest point) at the end of each of its substeps (each adds its
//!    ticks) for [`TIME_TO_SLEEP`] falls asleep when it is next due; waking (a fusion with an
//!    awake group, a kick) resets its timer. Waking propagates through touching bodies because
//!    touching, slow bodies are one group. With sleep off ([`Rules::sleep`], `--sleep off`)
//!    the timer never runs and no group ever sleeps.
//!
//! The groups at the first tick of a fresh run are the bodies in resting contact there, fused
//! by rule 2 at that tick ([`initial_islands`]); a resumed run takes them from its checkpoint.
//! So no group ever changes at its birth tick (what [`super::groups::GroupGraph`] requires),
//! and a run cut and resumed at any tick makes the same groups as one that was not.

use super::groups::{components, root, union};
use super::rules::{Anchor, Gauge, Kick, PLANE_SLACK, Rules, SPAN_SLACK, SpanSweep};
use super::{BodyId, Tick};
use crate::dynamics::{
    BodyState, ConstraintBody, ConstraintPoint, ContactConstraint, SolverBody, SolverParams,
    solve_island,
};
use crate::geometry::{Aabb, Manifold, Pose, collide, shape_aabb, shape_extent};
use crate::scene::{Shape, mix_friction, mix_restitution, mix_rolling_resistance};
use glam::{Quat, Vec3};
use std::sync::Arc;

/// A group splits once its bodies have been disconnected this many ticks in a row (one frame).
pub const SPLIT_TICKS: u32 = 16;
/// A group's substep in ticks ([`Rules::group_substep`], rule 4): 16 ticks of 1/960 s, a
/// 60 Hz step, chosen by measurement among 2, 4, 8 and 16 (`docs/results.md`): every one keeps
/// the piles standing and lets them sleep, and 16 costs least.
pub const GROUP_SUBSTEP: u64 = 16;
/// The island solver cuts a group's substep into solver substeps of at most this many ticks:
/// 240 Hz, the rate of rapier3d's and Box2D v3's default (a 60 Hz step in 4 substeps). Chosen
/// by measurement between 2 and 4 (`docs/results.md`): both keep the piles standing and let
/// `avalanche` 300 fall asleep, and 4 costs less.
pub const SOLVER_TICKS: u64 = 4;
/// Contacts approaching slower than this (m/s) fuse their groups. Chosen by measurement
/// (`docs/results.md`, "2026-11-29, afternoon"): each contact of a moving pile that stays a
/// kick ends the substep of the group it hits and rolls it back, so the higher, the fewer
/// events and the cheaper a pile; but at the island solver's restitution threshold
/// ([`crate::dynamics::RESTITUTION_THRESHOLD`]) `avalanche` 300's heap fuses into one group
/// that is still awake long after 20 s (as the frame engine's island of it is), where just
/// below it the heap's groups fall asleep one by one.
pub const FUSE_SPEED: f32 = 0.9;
/// Within a group, contacts are kept down to this gap (m): touching pairs stay edges while
/// they rest, and the solver's speculative points stop an approach before it penetrates.
pub const GROUP_MARGIN: f32 = 0.005;
/// Bodies whose surfaces are at most this far apart (m) at the first tick, and at rest against
/// each other, start in one group ([`resting_pairs`]): shapes laid out touching, up to the
/// rounding of their positions (a tenth of a millimetre on a 10 m scene in f32 is a few
/// thousand ulps), not a gap they would fall through.
pub const RESTING_GAP: f32 = 1e-4;
/// A body may sleep when its speed plus the speed of its farthest point from spinning
/// (`|v| + extent |w|`, as Box2D v3 measures it) is at most this (m/s).
pub const SLEEP_SPEED: f32 = 0.05;
/// A group sleeps once all its bodies have been slow this long (s).
pub const TIME_TO_SLEEP: f32 = 0.5;

/// The other side of a contact in a group: a dynamic body, or a static one (scene index, with
/// this bit set), so that static contacts sort after dynamic ones.
pub const STATIC_SIDE: u32 = 1 << 31;

/// A contact kept by a group: `(body, other)` with `body < other` for two dynamic bodies.
pub type PairKey = (BodyId, u32);

/// A contact group: its bodies and what it carries from tick to tick besides their states
/// (saved in checkpoints, floats as their bits).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Island {
    /// Ascending.
    pub bodies: Vec<BodyId>,
    /// Consecutive ticks all its bodies were slow (always 0 with sleep off, [`Rules::sleep`]).
    pub rest_ticks: u64,
    /// Consecutive ticks its touching pairs did not connect its bodies (may split when > 0).
    pub apart_ticks: u32,
    pub asleep: bool,
    /// Its contacts of the last step with their impulses (the warm start), by key.
    pub warm: Warm,
    /// Each body's anchor (rule 4 of [`super::rules`]), in the order of `bodies`: the one its
    /// pre-event state at this tick flies from, or, inside a substep, the substep's start pose
    /// with its solved velocities. A step of the solver, a kick and a change of group make new
    /// ones; falling asleep anchors the bodies where they stop.
    pub anchors: Vec<Anchor>,
    /// The solver substep it is inside (rule 4), if any: then its anchors are at the
    /// substep's first tick, and it stands at a tick before `until`. `None`: due.
    pub substep: Option<Substep>,
}

/// A group's contacts of its last step with their impulses, ascending by key: what its next
/// step warm-starts from. Made by a step and never changed after, so the islands of the ticks
/// that carry it unchanged share one copy (an island is copied whenever its tick changes it,
/// and a pile's contacts were most of each copy). Empty, it holds nothing.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(from = "Vec<(PairKey, Manifold)>", into = "Vec<(PairKey, Manifold)>")]
pub struct Warm(Option<Arc<Vec<(PairKey, Manifold)>>>);

impl From<Vec<(PairKey, Manifold)>> for Warm {
    fn from(v: Vec<(PairKey, Manifold)>) -> Warm {
        Warm((!v.is_empty()).then(|| Arc::new(v)))
    }
}

impl From<Warm> for Vec<(PairKey, Manifold)> {
    fn from(w: Warm) -> Vec<(PairKey, Manifold)> {
        w.0.map(Arc::unwrap_or_clone).unwrap_or_default()
    }
}

impl std::ops::Deref for Warm {
    type Target = [(PairKey, Manifold)];
    fn deref(&self) -> &Self::Target {
        self.0.as_deref().map_or(&[], |v| v.as_slice())
    }
}

/// A solver substep in progress (rule 4 of the module): the island solved its contacts at its
/// anchors' tick `k0` for the ticks `k0 + 1 ..= until`; body `i` moves from its anchor's pose
/// by `moves[i]` over them, with its anchor's velocities (the solved ones).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Substep {
    pub until: Tick,
    pub moves: Vec<Move>,
}

/// What the solver did to one body over a substep: moved it by `position`, turned it by
/// `rotation` (applied before its start rotation).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Move {
    pub position: Vec3,
    pub rotation: Quat,
}

impl Move {
    /// The state at tick `k0 + n` (`0 < n <= len`) of a body whose substep of `len` ticks
    /// started at `anchor` (at `k0`, with the solved velocities): the share `n / len` of the
    /// move, the whole of it at `n = len` (the solver's end state bit for bit).
    #[inline]
    pub fn state(&self, anchor: &BodyState, n: u64, len: u64) -> BodyState {
        debug_assert!(n > 0 && n <= len);
        let (position, turn) = if n == len {
            (anchor.position + self.position, self.rotation)
        } else {
            let f = n as f32 / len as f32;
            (
                anchor.position + self.position * f,
                Quat::IDENTITY.lerp(self.rotation, f),
            )
        };
        BodyState {
            position,
            rotation: (turn * anchor.rotation).normalize(),
            ..*anchor
        }
    }
}

impl Island {
    /// Whether this island, stepped from `before` (the same bodies), is bit for bit the
    /// same: its counters and flag equal and neither carrying contacts (a body in free
    /// flight), so the two ticks may share one copy. Contacts are never compared (their floats
    /// would need comparing by bits): an island with any is a new one.
    pub fn same_as(&self, before: &Island) -> bool {
        debug_assert_eq!(self.bodies, before.bodies);
        self.rest_ticks == before.rest_ticks
            && self.apart_ticks == before.apart_ticks
            && self.asleep == before.asleep
            && self.substep.is_none()
            && before.substep.is_none()
            && self.warm.is_empty()
            && before.warm.is_empty()
            && self
                .anchors
                .iter()
                .zip(&before.anchors)
                .all(|(a, b)| a.same_bits(b))
    }

    /// A single body, awake, flying from `anchor`.
    pub fn single(body: BodyId, anchor: Anchor) -> Island {
        Island {
            bodies: vec![body],
            rest_ticks: 0,
            apart_ticks: 0,
            asleep: false,
            warm: Warm::default(),
            anchors: vec![anchor],
            substep: None,
        }
    }

    /// Whether it is due at the tick it stands at: not inside a substep (rule 4).
    #[inline]
    pub fn due(&self) -> bool {
        self.substep.is_none()
    }

    /// Its bodies' states at tick `k + 1` inside its substep (rule 4), into `states` (in the
    /// order of `bodies`). At the substep's last tick it is due again: anchored there.
    pub fn glide(&mut self, k: Tick, states: &mut [BodyState]) {
        let sub = self.substep.as_ref().expect("inside a substep");
        let k0 = self.anchors[0].tick;
        debug_assert!(k0 <= k && k < sub.until);
        let (n, len) = (k + 1 - k0, sub.until - k0);
        for ((s, a), m) in states.iter_mut().zip(&self.anchors).zip(&sub.moves) {
            *s = m.state(&a.state, n, len);
        }
        if k + 1 == sub.until {
            self.substep = None;
            self.anchor_at(k + 1, states);
        }
    }

    /// Anchors each body at `states` (in the order of `bodies`) at tick `k`.
    fn anchor_at(&mut self, k: Tick, states: &[BodyState]) {
        for (a, s) in self.anchors.iter_mut().zip(states) {
            *a = Anchor::at(k, *s);
        }
    }

    /// Rule 5 at tick `k` for an island standing there at `states` after its step: once due
    /// with rest enough, it falls asleep where its bodies are. Returns whether it did.
    pub fn doze(&mut self, rules: &Rules, k: Tick, states: &[BodyState]) -> bool {
        // (`ticks_to_sleep` is at least 1: a moving island need not work it out.)
        if self.asleep
            || !self.due()
            || self.rest_ticks == 0
            || self.rest_ticks < ticks_to_sleep(rules)
        {
            return false;
        }
        self.asleep = true;
        self.anchor_at(k, states);
        true
    }
}

/// What changed at a tick: the groups `before` (their bodies) became the groups `after`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub tick: Tick,
    pub before: Vec<Vec<BodyId>>,
    pub after: Vec<Vec<BodyId>>,
}

impl Change {
    /// Several groups became one.
    pub fn is_fusion(&self) -> bool {
        self.before.len() > 1 && self.after.len() == 1
    }

    /// One group became several.
    pub fn is_fission(&self) -> bool {
        self.before.len() == 1 && self.after.len() > 1
    }
}

/// Ticks of rest before a group sleeps.
pub fn ticks_to_sleep(rules: &Rules) -> u64 {
    (TIME_TO_SLEEP / rules.dt).ceil() as u64
}

/// The contacts of the group `bodies` (ascending) at `states` (its bodies' states, in the
/// order of `bodies`) for a substep of `ticks` ticks: each pair
/// of its bodies and each body with each static body whose manifold has a point within
/// [`GROUP_MARGIN`] plus how far the two can close in the substep (the speculative reach that
/// keeps a fast body from stepping through a thin one, as rule 2 of [`super::rules`]),
/// ascending by key, with the impulses of `warm` carried over.
pub fn group_manifolds(
    rules: &Rules,
    bodies: &[BodyId],
    states: &[BodyState],
    warm: &[(PairKey, Manifold)],
    ticks: u64,
) -> Vec<(PairKey, Manifold)> {
    debug_assert_eq!(bodies.len(), states.len());
    // How far each body's surface can move in the substep; its box.
    let h = rules.dt * ticks as f32;
    let reach_of = |b: BodyId, s: &BodyState| {
        let spin = shape_extent(&rules.shapes[b as usize]) * s.angular_velocity.length();
        (s.velocity.length() + spin) * h
    };
    let tight_of =
        |b: BodyId, s: &BodyState| shape_aabb(&rules.shapes[b as usize], s.position, s.rotation);
    let pose = |i: usize| {
        let s = &states[i];
        Pose::new(s.position, s.rotation)
    };
    // (Room for as many contacts as last time: growing it moved every manifold found so far.)
    let mut out = Vec::with_capacity(warm.len());
    let mut keep = |key: PairKey, mut m: Manifold| {
        if m.count > 0 {
            if let Ok(i) = warm.binary_search_by_key(&key, |(k, _)| *k) {
                m.carry_impulses(&warm[i].1);
            }
            out.push((key, m));
        }
    };
    // The `i`-th body, in box `tight`, against every static body its grown box meets (a
    // plane's box is everything: the plane test of `rules` skips those the narrow phase would
    // find nothing with, so that a body far from the walls does not meet them all).
    let statics = |keep: &mut dyn FnMut(PairKey, Manifold), i: usize, tight: &Aabb, reach: f32| {
        let a = bodies[i];
        let margin = GROUP_MARGIN + reach;
        let (bx, gauge) = (tight.expanded(margin), Gauge::of(tight));
        for st in &rules.statics {
            if gauge.clear_of_plane(&st.shape, margin) || !bx.overlaps(&st.aabb) {
                continue;
            }
            let m = collide(
                &rules.shapes[a as usize],
                &pose(i),
                &st.shape,
                &Pose::new(st.state.position, st.state.rotation),
                margin,
            );
            keep((a, STATIC_SIDE | st.index), m);
        }
    };
    if let ([b], [s]) = (bodies, states) {
        // A group of one body (most of them, in a scene that is not piled up): no pairs, and
        // nothing allocated unless it touches a static body.
        if !rules.statics.is_empty() {
            statics(&mut keep, 0, &tight_of(*b, s), reach_of(*b, s));
        }
        out.sort_unstable_by_key(|(k, _)| *k);
        return out;
    }
    let reach: Vec<f32> = bodies
        .iter()
        .zip(states)
        .map(|(&b, s)| reach_of(b, s))
        .collect();
    let tight: Vec<Aabb> = bodies
        .iter()
        .zip(states)
        .map(|(&b, s)| tight_of(b, s))
        .collect();
    let boxes: Vec<Aabb> = tight
        .iter()
        .zip(&reach)
        .map(|(t, &r)| t.expanded(GROUP_MARGIN + r))
        .collect();
    for (i, j) in overlapping_pairs(&boxes) {
        let (a, b) = (bodies[i], bodies[j]);
        let m = collide(
            &rules.shapes[a as usize],
            &pose(i),
            &rules.shapes[b as usize],
            &pose(j),
            GROUP_MARGIN + reach[i] + reach[j],
        );
        keep((a, b), m);
    }
    for (i, t) in tight.iter().enumerate() {
        statics(&mut keep, i, t, reach[i]);
    }
    // (The keys are distinct: no stable sort needed.)
    out.sort_unstable_by_key(|(k, _)| *k);
    out
}

/// Rules 4 and 5 over a span, for a group of one body `b` spinning at `spin` (rad/s) flying
/// over the ticks of `sweep` ([`Rules::span`]): whether its island steps as plain flight at
/// every one of them: no static body within the reach of [`group_manifolds`] for the longest
/// substep (the same tests
/// as a tick's, on bounds of all the span's ticks, with a slack for the plane test's own
/// rounding at any of their boxes), and never slow enough to count towards rest.
pub fn span_in_flight(rules: &Rules, b: BodyId, sweep: &SpanSweep, spin: f32) -> bool {
    // Rest counts `|v| + extent |w| <= SLEEP_SPEED`: faster than that in `v` alone, never.
    if sweep.slowest <= SLEEP_SPEED {
        return false;
    }
    let turn = shape_extent(&rules.shapes[b as usize]) * spin;
    // The longest substep's reach: a due group of one looks that far at a multiple of it.
    let h = rules.dt * rules.group_substep.max(1) as f32;
    let reach = (sweep.speed + turn) * h * (1.0 + SPAN_SLACK);
    let far = sweep
        .tight
        .min
        .abs()
        .max(sweep.tight.max.abs())
        .max_element();
    let margin = GROUP_MARGIN + reach + PLANE_SLACK * far;
    let (bx, gauge) = (sweep.tight.expanded(margin), Gauge::of(&sweep.tight));
    rules
        .statics
        .iter()
        .all(|st| gauge.clear_of_plane(&st.shape, margin) || !bx.overlaps(&st.aabb))
}

/// Every pair `(i, j)`, `i < j`, of overlapping boxes, ascending: sort and sweep along the axis
/// on which the boxes' lower corners spread widest (the piles of `cylinders` lie in rows along
/// z). The reference's broad phase too; the pairs are the same along any axis, and a pair's
/// result never depends on the order pairs are found in.
pub fn overlapping_pairs(boxes: &[Aabb]) -> Vec<(usize, usize)> {
    let Some(first) = boxes.first() else {
        return Vec::new();
    };
    let (lo, hi) = boxes.iter().fold((first.min, first.min), |(lo, hi), b| {
        (lo.min(b.min), hi.max(b.min))
    });
    let spread = hi - lo;
    let axis = if spread.x >= spread.y && spread.x >= spread.z {
        0
    } else if spread.y >= spread.z {
        1
    } else {
        2
    };
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    order.sort_by(|&a, &b| {
        boxes[a].min[axis]
            .total_cmp(&boxes[b].min[axis])
            .then(a.cmp(&b))
    });
    let mut pairs = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        for &j in &order[k + 1..] {
            if boxes[j].min[axis] > boxes[i].max[axis] {
                break;
            }
            if boxes[i].overlaps(&boxes[j]) {
                pairs.push((i.min(j), i.max(j)));
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

/// Rule 1's timer after a due tick `k` at which a group's contacts are `m` and its touching
/// pairs make `parts` components: 0 if connected, else `apart` plus the ticks until it is due
/// again (the substep's from `k`, one if it flies).
pub fn apart_after(
    rules: &Rules,
    apart: u32,
    k: Tick,
    m: &[(PairKey, Manifold)],
    parts: usize,
) -> u32 {
    if parts == 1 {
        0
    } else if m.is_empty() {
        apart + 1
    } else {
        apart + rules.substep_at(k) as u32
    }
}

/// The touching pairs of dynamic bodies among a group's contacts.
pub fn edges(manifolds: &[(PairKey, Manifold)]) -> Vec<(BodyId, BodyId)> {
    manifolds
        .iter()
        .filter(|((_, o), _)| o & STATIC_SIDE == 0)
        .map(|((a, o), _)| (*a, *o))
        .collect()
}

/// Rule 2 between groups: dynamic bodies `a` and `b` of different groups fuse them at these
/// pre-event states (in contact, approaching slower than [`FUSE_SPEED`], and not an impact at
/// [`FUSE_SPEED`] or faster).
pub fn fuses(rules: &Rules, a: usize, sa: &BodyState, b: usize, sb: &BodyState) -> bool {
    rules
        .meeting(a, sa, b, sb)
        .is_some_and(|m| m.approach < FUSE_SPEED && !(m.impact && m.speed >= FUSE_SPEED))
}

/// Rules 1 and 2 (fission, fusion) at `tick` over all groups; the fusion candidates are
/// `candidates`, the pairs of [`contact_candidates`] at these states (the sequential
/// reference's way, which it reuses for the kicks of the tick; the warp engine learns the same
/// contacts from the TVHT). Replaces `islands` by the groups at `tick`, ascending by smallest
/// body, and returns what changed.
pub fn regroup<S: std::ops::Index<usize, Output = BodyState> + ?Sized>(
    rules: &Rules,
    islands: &mut Vec<Island>,
    states: &S,
    tick: Tick,
    candidates: &[(usize, usize)],
) -> Vec<Change> {
    let originals: Vec<Vec<BodyId>> = islands.iter().map(|i| i.bodies.clone()).collect();
    // Fission: each awake group's touching pairs at this tick.
    let mut pieces: Vec<(usize, Island)> = Vec::new();
    for (i, mut isl) in islands.drain(..).enumerate() {
        if isl.asleep || isl.bodies.len() == 1 || !isl.due() {
            pieces.push((i, isl));
            continue;
        }
        let own: Vec<BodyState> = isl.bodies.iter().map(|&b| states[b as usize]).collect();
        let m = group_manifolds(rules, &isl.bodies, &own, &isl.warm, rules.substep_at(tick));
        let parts = components(&isl.bodies, &edges(&m));
        isl.apart_ticks = apart_after(rules, isl.apart_ticks, tick, &m, parts.len());
        if isl.apart_ticks < SPLIT_TICKS {
            pieces.push((i, isl));
            continue;
        }
        for bodies in parts {
            let warm = isl
                .warm
                .iter()
                .filter(|((a, _), _)| bodies.binary_search(a).is_ok())
                .cloned()
                .collect::<Vec<_>>()
                .into();
            pieces.push((
                i,
                Island {
                    anchors: Vec::new(), // set below, with every changed group's
                    bodies,
                    rest_ticks: 0,
                    apart_ticks: 0,
                    asleep: false,
                    warm,
                    substep: None,
                },
            ));
        }
    }
    // Fusion: union of the pieces joined by a slow contact (not both asleep). (A map, not a
    // vector over every body of the scene: the warp engine calls this for the few groups of
    // one change, thousands of times a run.)
    let piece_of: std::collections::HashMap<usize, usize> = pieces
        .iter()
        .enumerate()
        .flat_map(|(p, (_, isl))| isl.bodies.iter().map(move |&b| (b as usize, p)))
        .collect();
    let mut parent: Vec<usize> = (0..pieces.len()).collect();
    for &(a, b) in candidates {
        let (pa, pb) = (piece_of[&a], piece_of[&b]);
        if pa == pb || (pieces[pa].1.asleep && pieces[pb].1.asleep) {
            continue;
        }
        if fuses(rules, a, &states[a], b, &states[b]) {
            union(&mut parent, pa, pb);
        }
    }
    // The groups at this tick, and the changes: each set of old groups whose bodies moved.
    let roots: Vec<usize> = (0..pieces.len()).map(|p| root(&mut parent, p)).collect();
    let mut merged: Vec<Option<Island>> = vec![None; pieces.len()];
    for ((_, isl), r) in pieces.into_iter().zip(roots) {
        merged[r] = Some(match merged[r].take() {
            None => isl,
            Some(mut m) => {
                m.bodies.extend(&isl.bodies);
                m.bodies.sort_unstable();
                let mut warm = Vec::from(m.warm);
                warm.extend_from_slice(&isl.warm);
                warm.sort_by_key(|(k, _)| *k);
                m.warm = warm.into();
                m.rest_ticks = 0;
                m.apart_ticks = 0;
                m.asleep = false;
                m.substep = None;
                m
            }
        });
    }
    let mut new: Vec<Island> = merged.into_iter().flatten().collect();
    new.sort_by_key(|isl| isl.bodies[0]);
    // Cluster old groups and new groups that share bodies: each cluster that is not one old
    // group staying whole is a change.
    let old_of_body: std::collections::HashMap<BodyId, usize> = originals
        .iter()
        .enumerate()
        .flat_map(|(o, bodies)| bodies.iter().map(move |&b| (b, o)))
        .collect();
    let mut link: Vec<usize> = (0..originals.len()).collect();
    for isl in &new {
        let first = old_of_body[&isl.bodies[0]];
        for b in &isl.bodies[1..] {
            union(&mut link, first, old_of_body[b]);
        }
    }
    let mut changes: Vec<Change> = Vec::new();
    let mut change_of_root: Vec<Option<usize>> = vec![None; originals.len()];
    for (o, bodies) in originals.iter().enumerate() {
        let r = root(&mut link, o);
        let c = *change_of_root[r].get_or_insert_with(|| {
            changes.push(Change {
                tick,
                before: Vec::new(),
                after: Vec::new(),
            });
            changes.len() - 1
        });
        changes[c].before.push(bodies.clone());
    }
    for isl in &new {
        let r = root(&mut link, old_of_body[&isl.bodies[0]]);
        let c = change_of_root[r].expect("every new group comes from old ones");
        changes[c].after.push(isl.bodies.clone());
    }
    changes.retain(|c| c.before != c.after);
    for c in &mut changes {
        c.before.sort();
        c.after.sort();
    }
    changes.sort_by(|x, y| x.before.cmp(&y.before));
    // A change of group is an event: the bodies of every new group fly from where they are.
    let changed: std::collections::HashSet<&[BodyId]> = changes
        .iter()
        .flat_map(|c| c.after.iter().map(Vec::as_slice))
        .collect();
    for isl in &mut new {
        if changed.contains(isl.bodies.as_slice()) {
            isl.substep = None;
            isl.anchors = isl
                .bodies
                .iter()
                .map(|&b| Anchor::at(tick, states[b as usize]))
                .collect();
        }
    }
    *islands = new;
    changes
}

/// Every pair `a < b` of dynamic bodies whose rule-1 boxes overlap at `states`: the only pairs
/// that can be in contact (rule 2) at this tick.
pub fn contact_candidates(rules: &Rules, states: &[BodyState]) -> Vec<(usize, usize)> {
    let boxes: Vec<_> = (0..rules.bodies())
        .map(|b| rules.aabb(b, &states[b]))
        .collect();
    overlapping_pairs(&boxes)
}

/// Checks that `islands` partition the bodies `0..bodies`: every body in exactly one of them.
/// (Checkpoints and the island log both hand islands over that a run will start from.)
pub fn check_partition<'a>(
    islands: impl IntoIterator<Item = &'a Island>,
    bodies: usize,
) -> Result<(), String> {
    let mut seen = vec![false; bodies];
    for isl in islands {
        for &b in &isl.bodies {
            match seen.get_mut(b as usize) {
                Some(s) if !*s => *s = true,
                Some(_) => return Err(format!("body {b} is in two islands")),
                None => return Err(format!("body {b} is not a body of the scene")),
            }
        }
    }
    match seen.iter().position(|s| !s) {
        Some(b) => Err(format!("body {b} is in no island")),
        None => Ok(()),
    }
}

/// The groups at the first tick of a fresh run: the bodies in resting contact there
/// ([`resting_pairs`]) joined, then fused by rule 2 (`candidates` as for [`regroup`]).
pub fn initial_islands(
    rules: &Rules,
    states: &[BodyState],
    candidates: &[(usize, usize)],
) -> Vec<Island> {
    let all: Vec<BodyId> = (0..rules.bodies() as BodyId).collect();
    let mut islands: Vec<Island> = components(&all, &resting_pairs(rules, states))
        .into_iter()
        .map(|bodies| Island {
            anchors: bodies
                .iter()
                .map(|&b| Anchor::at(0, states[b as usize]))
                .collect(),
            bodies,
            rest_ticks: 0,
            apart_ticks: 0,
            asleep: false,
            warm: Warm::default(),
            substep: None,
        })
        .collect();
    islands.sort_by_key(|isl| isl.bodies[0]);
    regroup(rules, &mut islands, states, 0, candidates);
    islands
}

/// The pairs of dynamic bodies in **resting contact** at the first tick (`states`, every
/// body's): a point of the island solver's contact between them ([`group_manifolds`] over one
/// tick) within [`RESTING_GAP`] of touching, and every such point's relative velocity slower
/// than [`FUSE_SPEED`]. Rule 2 fuses on contacts that make an impulse, and bodies built
/// touching and at rest make none until gravity presses them together: a pile of boxes laid
/// out touching (`pyramids`) fused row by row over its first ticks, each fusion a new group
/// and a rollback of the rows above, 1,638 of them in the first 0.02 s of `pyramids` 10010. A
/// pair that rule 1 would keep in one group (an edge of its contacts) and that rule 2 would
/// fuse the moment it pressed is one group from the start, as a 60 Hz engine's first step
/// builds its islands from touching shapes.
pub fn resting_pairs(rules: &Rules, states: &[BodyState]) -> Vec<(BodyId, BodyId)> {
    let all: Vec<BodyId> = (0..rules.bodies() as BodyId).collect();
    group_manifolds(rules, &all, states, &[], 1)
        .into_iter()
        .filter(|&((a, b), ref m)| {
            if b & STATIC_SIDE != 0 {
                return false;
            }
            let (sa, sb) = (&states[a as usize], &states[b as usize]);
            let mut near = m
                .points()
                .iter()
                .filter(|p| p.depth >= -RESTING_GAP)
                .peekable();
            near.peek().is_some()
                && near.all(|p| {
                    (sb.point_velocity(p.position) - sa.point_velocity(p.position)).length()
                        < FUSE_SPEED
                })
        })
        .map(|((a, b), _)| (a, b))
        .collect()
}

/// Rules 4 and 5: moves `island` from `k` to `k + 1`. `states` holds its bodies' states at
/// `k`, in the order of `island.bodies`; `kicks[i]` are the kicks from other groups on its
/// `i`-th body. Returns whether it fell asleep at `k + 1`.
pub fn step_island(
    rules: &Rules,
    island: &mut Island,
    k: Tick,
    states: &mut [BodyState],
    kicks: &mut [Vec<Kick>],
) -> Result<bool, String> {
    if island.asleep {
        return Ok(false);
    }
    if !island.due() && kicks.iter().all(|k| k.is_empty()) {
        island.glide(k, states);
        return Ok(island.doze(rules, k + 1, states));
    }
    let ticks = rules.substep_at(k);
    let manifolds = group_manifolds(rules, &island.bodies, states, &island.warm, ticks);
    step_island_with(rules, island, k, states, kicks, manifolds)
}

/// [`step_island`] of an awake island that is due at `k` or kicked there, given its contacts
/// at these states for the substep from `k`, as [`group_manifolds`] finds them (which the
/// fission check of rule 1 has computed already).
pub fn step_island_with(
    rules: &Rules,
    island: &mut Island,
    k: Tick,
    states: &mut [BodyState],
    kicks: &mut [Vec<Kick>],
    manifolds: Vec<(PairKey, Manifold)>,
) -> Result<bool, String> {
    debug_assert!(!island.asleep);
    if island.substep.take().is_some() {
        // Kicked inside a substep: it ends here, where the bodies are.
        island.anchor_at(k, states);
    }
    let ticks = rules.substep_at(k);
    // The states at the substep's end (rule 5 looks there).
    let mut end: Vec<BodyState>;
    let last: &[BodyState] = if manifolds.is_empty() {
        // Nothing touches: kicks, then anchored flight (rules 3 and 4), body by body; due
        // again at the next tick.
        for ((s, a), kick) in states
            .iter_mut()
            .zip(island.anchors.iter_mut())
            .zip(kicks.iter_mut())
        {
            (*a, *s) = rules.advance(a, s, k, kick);
        }
        island.warm = Warm::default();
        states
    } else {
        // A solver step is an event for every body of the group: a substep of `ticks` from
        // the post-kick states, each body then moving by the solver's move.
        let moves = solve_contacts(rules, island, states, kicks, manifolds, ticks);
        island.anchor_at(k, states);
        let sub = Substep {
            until: k + ticks,
            moves,
        };
        for ((s, a), m) in states.iter_mut().zip(&island.anchors).zip(&sub.moves) {
            *s = m.state(&a.state, 1, ticks);
        }
        if ticks == 1 {
            island.anchor_at(k + 1, states);
            states
        } else {
            end = island
                .anchors
                .iter()
                .zip(&sub.moves)
                .map(|(a, m)| m.state(&a.state, ticks, ticks))
                .collect();
            island.substep = Some(sub);
            &mut end[..]
        }
    };
    for (&b, s) in island.bodies.iter().zip(last.iter()) {
        if !(s.position.is_finite() && s.velocity.is_finite() && s.angular_velocity.is_finite()) {
            return Err(format!("body {b} has a non-finite state"));
        }
    }
    // With sleep off ([`Rules::sleep`]) nothing counts towards a sleep that never comes.
    let resting = rules.sleep
        && island.bodies.iter().zip(last.iter()).all(|(&b, s)| {
            let extent = shape_extent(&rules.shapes[b as usize]);
            s.velocity.length() + extent * s.angular_velocity.length() <= SLEEP_SPEED
        });
    let stepped = if island.due() { 1 } else { ticks };
    island.rest_ticks = if resting {
        island.rest_ticks + stepped
    } else {
        0
    };
    Ok(island.doze(rules, k + 1, states))
}

/// Rules 3 and 4 of an island with contacts: kicks (added to `states`), then one solver step
/// of its bodies and contacts over a substep of `ticks` ticks, which leaves the solved
/// velocities in `states` and returns each body's move; keeps the contacts, with their
/// impulses per tick, as the island's warm start. (Out of line: most steps have no contact,
/// and are cheaper without this one's frame.)
#[inline(never)]
fn solve_contacts(
    rules: &Rules,
    island: &mut Island,
    states: &mut [BodyState],
    kicks: &mut [Vec<Kick>],
    mut manifolds: Vec<(PairKey, Manifold)>,
    ticks: u64,
) -> Vec<Move> {
    let substeps = ticks.div_ceil(SOLVER_TICKS);
    let params = SolverParams::new(rules.dt * ticks as f32, substeps as u32, rules.gravity);
    // An accumulated impulse is one solver substep's: kept per tick, scaled by its ticks.
    let per = ticks as f32 / substeps as f32;
    if per != 1.0 {
        for (_, m) in &mut manifolds {
            m.scale_impulses(per);
        }
    }
    let mut bodies: Vec<SolverBody> = Vec::with_capacity(island.bodies.len() + 1);
    for (i, &b) in island.bodies.iter().enumerate() {
        let s = &mut states[i];
        kicks[i].sort_unstable_by_key(|k| k.other);
        for k in &kicks[i] {
            s.velocity += k.dv;
            s.angular_velocity += k.dw;
            s.position += k.dp;
        }
        bodies.push(SolverBody::new(
            s.velocity,
            s.angular_velocity,
            s.rotation,
            &rules.masses[b as usize],
        ));
    }
    let stand_in = island.bodies.len() as u32;
    bodies.push(SolverBody::STATIC);
    let local = |b: BodyId| island.bodies.binary_search(&b).expect("own body") as u32;
    let count: u32 = manifolds.iter().map(|(_, m)| m.count).sum();
    let mut points = vec![ConstraintPoint::default(); count as usize];
    let mut constraints = Vec::with_capacity(manifolds.len());
    let mut first = 0u32;
    for (ci, ((a, o), m)) in manifolds.iter().enumerate() {
        let side = |b: BodyId| ConstraintBody {
            index: local(b),
            position: states[local(b) as usize].position,
            is_static: false,
            is_round: matches!(rules.shapes[b as usize], Shape::Sphere { .. }),
            inv_inertia: rules.masses[b as usize].inv_inertia_local.x,
        };
        // The other side and the mixed materials.
        let (other, restitution, friction, resistance) = if o & STATIC_SIDE != 0 {
            let st = rules
                .statics
                .iter()
                .find(|st| st.index == o & !STATIC_SIDE)
                .expect("a static contact names a static body");
            let side = ConstraintBody {
                index: stand_in,
                position: st.state.position,
                is_static: true,
                is_round: false,
                inv_inertia: 0.0,
            };
            (
                side,
                mix_restitution(rules.restitution[*a as usize], st.restitution),
                mix_friction(rules.friction[*a as usize], st.friction),
                mix_rolling_resistance(
                    rules.rolling_resistance[*a as usize],
                    st.rolling_resistance,
                ),
            )
        } else {
            (
                side(*o),
                mix_restitution(
                    rules.restitution[*a as usize],
                    rules.restitution[*o as usize],
                ),
                mix_friction(rules.friction[*a as usize], rules.friction[*o as usize]),
                mix_rolling_resistance(
                    rules.rolling_resistance[*a as usize],
                    rules.rolling_resistance[*o as usize],
                ),
            )
        };
        constraints.push(ContactConstraint {
            rolling_resistance: resistance,
            ..ContactConstraint::new(
                side(*a),
                other,
                m,
                friction,
                restitution,
                ci as u32,
                &mut points,
                first,
            )
        });
        first += m.count;
    }
    solve_island(&params, &mut bodies, &mut constraints, &mut points);
    for c in &constraints {
        c.store_impulses(&points, &mut manifolds[c.contact as usize].1);
    }
    if per != 1.0 {
        for (_, m) in &mut manifolds {
            m.scale_impulses(1.0 / per);
        }
    }
    island.warm = manifolds.into();
    states
        .iter_mut()
        .zip(&bodies)
        .map(|(s, b)| {
            s.velocity = b.velocity.into();
            s.angular_velocity = b.angular_velocity.into();
            Move {
                position: b.delta_position.into(),
                rotation: b.delta_rotation,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::SplitMix64;
    use glam::Vec3;

    #[test]
    fn overlapping_pairs_are_exactly_the_brute_force_pairs() {
        let mut rng = SplitMix64::new(7);
        let mut unit = || (rng.next_u64() % 10_000) as f32 / 1000.0;
        // Clouds (one far from the origin), a flat pile and a row along z (swept along z), some
        // boxes touching exactly (lattice spacing equal to the box side).
        let mut sets: Vec<Vec<Aabb>> = Vec::new();
        for n in [10, 64, 65, 300] {
            let (far, spread) = if n == 65 {
                (1000.0, 0.3)
            } else {
                (0.0, n as f32 / 300.0)
            };
            sets.push(
                (0..n)
                    .map(|_| {
                        let c = Vec3::new(unit(), unit(), unit()) * spread + Vec3::splat(far);
                        Aabb::from_center_half(c, Vec3::splat(0.1 + unit() / 10.0))
                    })
                    .collect(),
            );
        }
        sets.push(
            (0..400)
                .map(|i| {
                    let c = Vec3::new((i % 20) as f32, 0.5, (i / 20) as f32 * 1.0 + 0.3);
                    Aabb::from_center_half(c, Vec3::splat(0.5))
                })
                .collect(),
        );
        sets.push(
            (0..200)
                .map(|i| {
                    let c = Vec3::new(-3.0 + unit() / 20.0, 0.5, i as f32 * 0.9);
                    Aabb::from_center_half(c, Vec3::splat(0.5))
                })
                .collect(),
        );
        for boxes in sets {
            let mut brute = Vec::new();
            for i in 0..boxes.len() {
                for j in i + 1..boxes.len() {
                    if boxes[i].overlaps(&boxes[j]) {
                        brute.push((i, j));
                    }
                }
            }
            assert!(
                brute.len() >= boxes.len() / 10,
                "too few overlaps to test: {} of {} boxes",
                brute.len(),
                boxes.len()
            );
            assert_eq!(overlapping_pairs(&boxes), brute, "{} boxes", boxes.len());
        }
    }

    /// Rule 4's substeps, walked from every tick of a few multiples of every allowed group
    /// substep `S` (1 to 16): each is a power of two of at most `S` ticks, starts at a
    /// multiple of its own length (so every group's substeps line up, whatever tick it started
    /// from), never steps over a multiple of `S`, is the whole `S` from a multiple, and a walk
    /// from any tick reaches the next multiple of `S` in at most `log2 S` substeps (expected:
    /// the multiple computed by division, not by the rule).
    #[test]
    fn substeps_realign_to_the_group_substep_within_log2_of_it_steps() {
        let (mut rules, _) = bouncing(8);
        for s in [1u64, 2, 4, 8, 16] {
            rules.group_substep = s;
            for start in 0..5 * s + 3 {
                let next = start.div_ceil(s) * s;
                let (mut k, mut steps) = (start, 0);
                while k < next {
                    let len = rules.substep_at(k);
                    assert!(
                        len.is_power_of_two() && len <= s,
                        "S {s}: {len} ticks at {k}"
                    );
                    assert_eq!(k % len, 0, "S {s}: a substep of {len} from tick {k}");
                    k += len;
                    steps += 1;
                }
                assert_eq!(k, next, "S {s}: from {start} the substeps cross a multiple");
                assert!(
                    steps <= s.trailing_zeros().max(1) as usize,
                    "S {s}: {steps} substeps from {start} to {next}"
                );
                assert_eq!(rules.substep_at(next), s, "S {s}: at the multiple {next}");
            }
        }
    }

    /// Resting contact at the first tick: the boxes of a pyramid laid out touching are one
    /// group; a row lifted by twice [`RESTING_GAP`] parts it from the row below; a box moving
    /// at twice [`FUSE_SPEED`] rests against nothing (and rule 2 does not fuse it either).
    #[test]
    fn touching_bodies_at_rest_start_in_one_group() {
        let scene = crate::scene::builtin("pyramids", Some(55)).unwrap();
        let rules = Rules::new(&scene).unwrap();
        let all: Vec<BodyId> = (0..55).collect();
        let groups = |states: &[BodyState]| {
            let pairs = contact_candidates(&rules, states);
            let mut g: Vec<Vec<BodyId>> = initial_islands(&rules, states, &pairs)
                .into_iter()
                .map(|i| i.bodies)
                .collect();
            g.sort();
            g
        };
        let laid = rules.initial.clone();
        assert_eq!(groups(&laid), vec![all.clone()]);
        // Row 1 is bodies 10..19; rows 2 to 9 rest on it.
        let mut lifted = laid.clone();
        for s in &mut lifted[10..] {
            s.position.y += 2.0 * RESTING_GAP;
        }
        let rows: Vec<Vec<BodyId>> = vec![(0..10).collect(), (10..55).collect()];
        assert_eq!(groups(&lifted), rows);
        let mut moving = laid.clone();
        moving[54].velocity.x = 2.0 * FUSE_SPEED;
        let apart: Vec<Vec<BodyId>> = vec![(0..54).collect(), vec![54]];
        assert_eq!(groups(&moving), apart);
    }

    fn bouncing(n: usize) -> (Rules, f32) {
        let scene = crate::scene::builtin("bouncing", Some(n)).unwrap();
        let half = crate::scene::bouncing_side(n) / 2.0;
        (Rules::new(&scene).unwrap(), half)
    }

    /// A group of one body takes its own way through [`group_manifolds`] (no pair search,
    /// nothing allocated unless it touches a static body); the contacts it finds are exactly
    /// those the general way finds for that body with the statics when it shares a group:
    /// 64 spheres of `bouncing` at random places in and around the box of walls.
    #[test]
    fn a_lone_body_meets_the_statics_it_meets_in_a_group() {
        let (rules, half) = bouncing(64);
        let mut rng = SplitMix64::new(11);
        let mut touching = 0;
        for round in 0..20 {
            for a in 0..rules.bodies() as BodyId {
                let mut s = rules.initial[a as usize];
                let mut unit = || rng.next_signed();
                s.position = Vec3::new(unit(), unit(), unit()) * (half + 0.2);
                s.velocity = Vec3::new(unit(), unit(), unit()) * 5.0;
                let alone = group_manifolds(&rules, &[a], &[s], &[], 4);
                let b = (a + 1 + round) % rules.bodies() as BodyId;
                let mut other = rules.initial[b as usize];
                other.position = Vec3::ZERO;
                let (bodies, states) = if a < b {
                    ([a, b], [s, other])
                } else {
                    ([b, a], [other, s])
                };
                let shared: Vec<_> = group_manifolds(&rules, &bodies, &states, &[], 4)
                    .into_iter()
                    .filter(|((x, o), _)| *x == a && o & STATIC_SIDE != 0)
                    .collect();
                assert_eq!(alone, shared, "body {a} at {:?}", s.position);
                touching += usize::from(!alone.is_empty());
            }
        }
        assert!(touching > 100, "too few bodies touched a wall: {touching}");
    }

    /// [`Island::same_as`]: free flight leaves a group of one as it was (the warp engine then
    /// shares one copy of it between the ticks); touching a wall, or slowing to rest, does not.
    #[test]
    fn only_free_flight_leaves_an_island_as_it_was() {
        let (rules, half) = bouncing(8);
        let step = |s: BodyState| {
            let before = Island::single(0, Anchor::at(0, s));
            let mut island = before.clone();
            step_island(&rules, &mut island, 0, &mut [s], &mut [Vec::new()]).unwrap();
            island.same_as(&before)
        };
        let mut s = rules.initial[0];
        s.position = Vec3::ZERO;
        s.velocity = Vec3::new(1.0, 2.0, 0.5);
        assert!(step(s), "free flight");
        let Shape::Sphere { radius } = rules.shapes[0] else {
            panic!("bouncing holds spheres")
        };
        s.position = Vec3::new(0.0, -half + radius, 0.0);
        s.velocity = Vec3::new(1.0, -2.0, 0.5);
        assert!(!step(s), "against the floor");
        s.position = Vec3::ZERO;
        s.velocity = Vec3::ZERO;
        assert!(!step(s), "at rest: its rest counter runs");
    }
}
