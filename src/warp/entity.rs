//! # An entity: a body, or a contact group, on its own clock (step, resolve, rollback)
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Section 5, Figure 5 and Algorithms 2-7; contact groups
//! after seed 001 (Mirtich), Section 4.4. An entity holds a fixed set of bodies — one body, or,
//! with contact groups, the bodies of one island (a group never changes its bodies: a fusion
//! or a fission ends it and makes new entities, [`Entity::regroup`]) — and its state queue:
//! for every tick `s_base ..= s_lvt` the pre-event states of its bodies, each already written
//! into the TVHT under a fresh tag, plus, for a group, the island's own state at that tick
//! (rest and split timers, sleep, the warm-start impulses). It also holds the contacts it knows
//! at those ticks and the set of its messages still waiting for an ack (`Pending`). One call
//! of [`Entity::run`] is one turn of the state machine, run by a worker of the scheduler; it
//! never blocks:
//!
//! * **Messages** (the `receive` of Algorithms 2-4), each addressed to one of its bodies. An
//!   *event* at `k` is valid when the receiver's entry at `k` is still the one the contact
//!   joined (same tag); it is added to the contacts at `k` (`Input`/`Done` of the paper are one
//!   map here: contacts at ticks `<= LVT` have been applied, the one at `LVT` is applied by the
//!   next step) and, if `k < LVT`, the entity **rolls back** to `k`. A stale event (its entry
//!   was deleted since) is dropped: the receiver's delete returned that contact and an
//!   antievent for it is already on its way to the sender. An *antievent* removes the matching
//!   instance, rolling back to its tick if that is in the past. Events and antievents are acked
//!   after that, whether valid or stale.
//! * **Rollback** to `r` (Algorithms 4 and 7): delete the entries after `r` from the TVHT in one
//!   section; for each contact the delete returns that was a collision, send an antievent to
//!   the other body; forget the contacts after `r`; take back the GVT records after `r`,
//!   newest first; truncate the state queue to `s_r`. The recursion of the paper happens
//!   across entities: the antievents make their receivers roll back in turn.
//! * **Step** (Algorithms 5 and 6): from `s_LVT` and the contacts at `LVT` compute the states
//!   up to `LVT_ub` (each body flying from its anchor between events, rule 4 of
//!   [`super::rules`]: a single body keeps its anchor per tick beside its state, a group's
//!   island holds its bodies') (at most [`BATCH`] ticks a turn, or the lead's floor), write them into the
//!   TVHT in one section, which stops at the first tick that meets a contact that is a collision
//!   (rules in [`super::rules`]; boxes that overlap while the bodies do not touch are recorded
//!   and passed: they change nothing). Every such collision becomes an event to the other body
//!   and a pending ack. The states computed past that tick are thrown away, so the batch adapts:
//!   after a write that stopped at its `i`-th tick the next batch is `i` ticks, after a full
//!   write it doubles (up to [`BATCH`]). A body resting on another meets a contact every tick: it
//!   then computes one tick a turn instead of 64 and its section names the buckets of one tick,
//!   not of three slices. Only a matter of speed, like `reach`: a committed state does not depend
//!   on how many ticks anyone computed ahead. A group steps by the rules of
//!   [`super::group_rules`] (its own contacts solved together by the island solver in substeps
//!   of [`Rules::substep_at`] ticks, aligned to multiples of the group substep; kicks from
//!   other groups): it solves at a tick where it is due (or kicked), and inside a substep its
//!   bodies follow the substep's rule ([`Island::glide`]) with no narrow phase and no solver,
//!   each tick still written to the TVHT, so that other entities meet them at their tick. A
//!   rollback into a substep keeps the island of its ticks, which holds the substep's start
//!   and its moves until the GVT passes it.
//! * **Spans** (issue #31; Koenig et al., seed 000, Section 3: "objects that are sufficiently
//!   isolated in spacetime are able to take larger time steps"; Mirtich, seed 001, Section 3.3:
//!   swept volumes over intervals). A single body, or a group of one whose step at `LVT` is
//!   plain flight (no contact known there; an island awake, not resting, without warm start),
//!   flies from its anchor ([`Rules::flight`]): if nothing but flight lies ahead — every static
//!   body out of reach over the whole span ([`Rules::span_clear_of_statics`], and for a group
//!   [`span_in_flight`]: no static contact, never slow enough to count towards rest) — it writes
//!   ticks `LVT + 1 ..= LVT + L` as one TVHT *span record* ([`Tvht::write_span`]: its anchor
//!   and a box that holds its box at every one of those ticks, [`Rules::span_aabb`]) instead of
//!   an entry per tick. The table refines it to the tick against everything else there, and the
//!   span stops, like a batch, at the first tick that touches another body: the contact is at
//!   its tick, computed from both bodies' states there, exactly as tick by tick (the table
//!   refines a pair by narrowing and halving their common interval). `L` is the longest that
//!   fits: at most the window past the GVT (not only the entity's reach: a span costs one
//!   record however long, and a rollback cuts it in one section) and the run's `max_span`,
//!   and within an eighth of the longest whose box covers at most [`SPAN_CELLS`] cells (or
//!   twice the cells of its shortest span, if those are more) and clears the static bodies.
//!   Where that test fails, a single body's span goes on past it tick by tick (the issue's
//!   "per-tick tests only where it fails"), each tick asking rule 2b as a step would
//!   ([`Rules::static_kicks`]), through ticks with no static kick and to the first tick with
//!   one, where it ends (those kicks make the next anchor, at the next LVT); after every
//!   [`STATIC_TICKS`] ticks so tested the span-wide test takes the rest again, up to
//!   [`STATIC_TESTS`] ticks tested. So a ball flies into each bounce and out of it (leaving a
//!   wall in [`STATIC_TICKS`] at a time, slow balls in `bouncing` wrote so many short spans
//!   that the buckets about the walls held a tenth more of the heap after 600 s); not a body
//!   that touches another at the LVT (in a pile such spans did not pay). Under [`MIN_SPAN`]
//!   ticks the body steps tick by tick. There is no shorter limit after a
//!   contact or a rollback: Koenig's dynamic step size shrinks a step that went wrong, but
//!   here a span costs per span, not per tick, and a cut one costs a section, so a limit
//!   that fell after each stop and doubled back after each success only multiplied the spans
//!   (see `docs/results.md`). Only a matter of speed: the state at a tick is
//!   `flight(anchor, tick)` either way. Its timeline keeps the span as one segment
//!   ([`Timeline::push_span`]); a rollback into it cuts the record at the rollback tick
//!   ([`Tvht::cut_span`]) and gets back the contacts of the ticks it removed, as a delete
//!   does.
//! * **Glides** (issue #32): a group's bodies inside a substep of its island solver follow
//!   one pure rule ([`Move::state`](super::group_rules::Move::state)) from the substep's start,
//!   so they too are written as span records, one per body, their anchors carrying the
//!   solver's move ([`Anchor::glide`](super::rules::Anchor::glide); a glide's box,
//!   [`Rules::span`]: its positions move monotonically along the move, in f32 too). When its
//!   solver steps it at a due tick into a substep (a whole group substep from a multiple of
//!   it, or one of the shorter ones that realign it after a kick or a birth between two
//!   multiples, [`Rules::substep_at`]) of which at least
//!   [`MIN_GLIDE`] ticks are left, awake (at rest or not: a glide passes over its
//!   group's own earlier records in its buckets by a field test), the group writes the ticks
//!   before and glides the substep's ticks from there at once, through the substep's last
//!   tick unless it falls asleep there (the island there, due again, is the glide's last:
//!   [`Timeline::push_glide`]). A glide stops, like a span, at the first tick that touches
//!   another entity's body; the next step takes that tick's contacts as kicks, as tick by
//!   tick. No static test: static contacts are the solver's. The solve at a tick that the
//!   write of the ticks before met a contact at is done again with it (only the tick the step
//!   started from had its contacts known). Only a matter of speed: the states are those of
//!   the tick-by-tick step, bit for bit.
//! * **Resolve**: the entity does not stop stepping while its events wait for acks (its
//!   states are speculative anyway and any message can roll them back), but it does not
//!   **record** a tick `t` in the GVT buffer while any event or antievent it sent at a tick
//!   `<= t` is unacked. That is what makes a committed tick final: an event at `t` can only
//!   come from an entity that has not recorded `t`, and an antievent at `t` from one that is
//!   still waiting for its ack, so neither can reach a tick the GVT has passed.
//! * **Ending** (contact groups only): a group whose step from `LVT` meets a change of groups
//!   at `LVT` — a slow contact with another group (fusion) or its own bodies apart long enough
//!   (deferred fission) — does not step: it stays at `LVT` ([`Entity::ending`]) until a message
//!   changes its mind or the engine makes the change with [`Entity::regroup`]: at once, if it
//!   may be made speculatively (below), else once the tick is committed, when the states there
//!   are final. The island graph of [`super::groups`] records each change.
//! * **Speculative changes** (issue #5, item 4: rollback across fusion and fission). A change at
//!   `t` is made before `t` is committed when `t` is less than [`SPECULATION_LEAD`] ticks ahead
//!   of the GVT and every group of it is ready ([`Entity::ready_to_change`]: at LVT `t`, born
//!   before `t`, `t` recorded, so every message it sent at or before `t` is acknowledged and
//!   it knows every contact at `t` that another entity has written so far). The parents wait
//!   in the engine's graveyard; the new groups are marked speculative and step at most
//!   [`SPECULATIVE_REACH`] ticks past their birth until it is committed. A contact at `t` that
//!   an entity writes later, or a rollback of a contact the parents used, reaches a new group
//!   as a message about its birth tick or before, which makes it hold its messages and ask for
//!   an undo ([`Turn::Undo`]). The engine then rolls the island graph back to the tick before its
//!   birth ([`super::groups::GroupGraph::rollback`]): each group born since in that lineage
//!   takes back everything it did after its birth ([`Entity::undone`]: entries, naps,
//!   records, antievents for its collisions), and each parent lives again at the tick it ended
//!   ([`Entity::revive`]) with the messages sent from its bodies that still wait for acks and
//!   the held ones. Mirtich's scheme (seed 001, Section 4.4) with rollback across both.
//! * **Naps** (contact groups, issue #5): a group asleep at `LVT` with nothing to wake it there
//!   does not compute or write tick after tick. It writes one *sleep record* per body
//!   ([`Tvht::sleep`]) that puts it in the TVHT at every tick up to the window (however long,
//!   a nap costs its records, like a span), and keeps its unchanged states once in its queue
//!   (a still segment of its [`Timeline`]); the record is extended by the next nap, and
//!   stops, like a write, at the first tick where an awake body meets it. A rollback into a
//!   nap cuts its records ([`Tvht::wake`]) and closes it: what is stepped again after that is
//!   written anew, under a new tag.

use super::group_rules::{
    Island, PairKey, SPLIT_TICKS, apart_after, edges, fuses, group_manifolds, overlapping_pairs,
    span_in_flight, step_island_with,
};
use super::groups::components;
use super::island_log::IslandLog;
use super::lead::Lead;
use super::message::{Instance, Msg};
use super::rules::{Anchor, Kick, Rules};
use super::timeline::Timeline;
use super::tvht::{BodyEntry, Contact, ContactKey, SpanEntry, Step, Tvht, TvhtEntry, WriteBuffers};
use super::{BodyId, EntityId, GvtBuffer, Tick};
use crate::dynamics::BodyState;
use crate::geometry::{Aabb, Manifold};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// At most this many ticks are computed and written per turn, so that messages are read often;
/// and at most the lead's floor ([`Lead::floor`]: 64 ticks, 32 while many ticks are rolled
/// back). A turn costs about ten thousand instructions besides its ticks: batches of 64
/// rather than 32 took 13% off the instructions of `parallel` (see "Rollbacks" in
/// [`super::lead`]).
pub const BATCH: u64 = 64;

/// A change of groups is made before its tick is committed only if that tick is less than
/// this many ticks ahead of the GVT (see "Speculative changes"): further ahead, the change was
/// undone more often than not (`avalanche` 300, 3 s, 2 workers: 700 of 1,340 with no limit,
/// 20-40 at 16 ticks, and a quarter more wall time).
pub const SPECULATION_LEAD: u64 = 16;

/// A span shorter than this is not worth its record: the body steps tick by tick instead.
pub const MIN_SPAN: u64 = 4;

/// A span's box covers at most this many TVHT cells (its record is copied into the bucket of
/// each): a longer span of a fast body is cut until it fits. A body whose shortest span
/// covers more (large for its cells, or far from the origin, where a sweep's f32 slack is
/// wide) may cover twice what its shortest span does. 16 rather than 8: a body that flies a
/// long window (`parallel`'s) takes spans of seconds, each costing a little more for its
/// cells and far less per second; in windows of 256 ticks it changes nothing
/// (`docs/results.md`, "2026-11-29, evening").
pub const SPAN_CELLS: u64 = 16;

/// How many ticks a single body's span tests one by one against the static bodies, past what
/// the span-wide test clears, before it tries the span-wide test on the rest again (see
/// "Spans" in the module documentation).
pub const STATIC_TICKS: u64 = 16;

/// At most this many ticks of a span are tested one by one against the static bodies (see
/// [`STATIC_TICKS`]).
pub const STATIC_TESTS: u64 = 64;

/// The fewest ticks a group glides (see "Glides"): a shorter stretch of a substep is stepped
/// tick by tick with the ticks around it.
pub const MIN_GLIDE: u64 = 2;

/// A group born of a change not yet committed steps at most this many ticks past its birth
/// until its birth is committed: an undo then throws little away. (`pyramids` 1100, 2 s, 2
/// workers: a fusion at tick 1 undone after its group had stepped 250 ticks took up to 28 ms
/// to take back; unbounded, the run took twice as long.)
pub const SPECULATIVE_REACH: u64 = 8;

/// What an entity needs from the engine during a turn.
pub struct Env<'a> {
    pub rules: &'a Rules,
    pub tvht: &'a Tvht,
    pub gvt: &'a GvtBuffer,
    /// The last tick to simulate.
    pub end: Tick,
    /// With contact groups and checkpoints: where a group logs its island at the ticks it
    /// records that the log wants ([`IslandLog`]).
    pub islands: Option<&'a IslandLog>,
    /// How far past the GVT entities step now (at most the window; see [`super::lead`]).
    pub lead: &'a Lead,
    /// The longest span a body flies as one record (see "Spans"; 0: none).
    pub max_span: u64,
}

/// Why a turn ended: what would let the entity go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// It can step further at once.
    Ready,
    /// It is at `LVT_ub` (or it is a group ending at its `LVT`): it waits until the GVT
    /// reaches this tick, which is past the GVT now and at most its `LVT` (so the GVT can
    /// reach it without this entity stepping: waiting cannot deadlock).
    WaitGvt(Tick),
    /// It waits for messages only (acks, or nothing at all at the end of the run).
    WaitMessages,
    /// A group born of a speculative change got a message at a tick at or before its birth:
    /// the change must be undone (by the engine: [`Entity::undone`], [`Entity::revive`]) and
    /// the message handed to its parents. It holds the messages from that one on.
    Undo(Tick),
}

/// Counters of one entity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntityStats {
    pub events: u64,
    pub antievents: u64,
    pub rollbacks: u64,
    pub rolled_back_ticks: u64,
    /// Entity-ticks written into the TVHT as entries (a span's ticks are counted below).
    pub tvht_writes: u64,
    pub turns: u64,
    /// Sum of `LVT - GVT` over turns (mean = sum / turns).
    pub lead_sum: u64,
    /// Group-ticks stepped asleep (no integration).
    pub asleep_ticks: u64,
    /// Naps written or extended (sleep-record sections), and naps cut by a rollback.
    pub naps: u64,
    pub nap_cuts: u64,
    /// Spans written (see "Spans"), the ticks they held when written, and spans cut by a
    /// rollback.
    pub spans: u64,
    pub span_ticks: u64,
    pub span_cuts: u64,
    /// Of those spans, glides of a group inside a substep (see "Glides"), and their
    /// group-ticks.
    pub glides: u64,
    pub glide_ticks: u64,
}

impl EntityStats {
    /// Adds `o` to these counters.
    pub fn add(&mut self, o: &EntityStats) {
        self.events += o.events;
        self.antievents += o.antievents;
        self.rollbacks += o.rollbacks;
        self.rolled_back_ticks += o.rolled_back_ticks;
        self.tvht_writes += o.tvht_writes;
        self.turns += o.turns;
        self.lead_sum += o.lead_sum;
        self.asleep_ticks += o.asleep_ticks;
        self.naps += o.naps;
        self.nap_cuts += o.nap_cuts;
        self.spans += o.spans;
        self.span_ticks += o.span_ticks;
        self.span_cuts += o.span_cuts;
        self.glides += o.glides;
        self.glide_ticks += o.glide_ticks;
    }
}

/// Buffers a turn fills and empties again: each worker keeps one set and lends it to the
/// entity it runs ([`Entity::run`]), so that they exist once per worker rather than once per
/// entity (2000 entities each keeping room for a batch of records and entries held tens of
/// megabytes that only a running turn uses, and the kernel zeroed every page of it).
#[derive(Default)]
pub struct Scratch {
    kicks: Vec<Vec<Kick>>,
    /// The states computed by a step, as TVHT entries (`bodies.len()` per tick).
    entries: Vec<BodyEntry>,
    /// What a TVHT write works in.
    tvht: WriteBuffers,
    /// A single body's anchors at the ticks a step computed.
    anchors: Vec<Anchor>,
    /// The tick after the LVT, if `kicks[1]` holds the body's static kicks there as a span
    /// that went no further found them ([`Entity::fly`]): the step that follows takes them
    /// rather than asking again. Set and taken within one step.
    probed: Option<Tick>,
}

/// A message sent and not acked yet, as an entity keeps it.
pub type PendingMsg = (Instance, Kind, BodyId);

/// What an entity whose birth was undone hands on ([`Entity::undone`]).
pub struct UndoneEntity {
    pub pending: Vec<PendingMsg>,
    pub stash: Vec<(BodyId, Msg)>,
    pub next_tag: u64,
    pub stats: EntityStats,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Event,
    Antievent,
}

/// A body or a contact group simulated on its own clock.
pub struct Entity {
    /// Its smallest body (the TVHT's entity id and the engine's slot).
    id: EntityId,
    /// Ascending; fixed for the entity's life.
    bodies: Vec<BodyId>,
    /// Stepped by the contact-group rules ([`super::group_rules`]) rather than the single-body
    /// rules of [`super::rules`].
    grouped: bool,
    /// The tick its group was made at (no group change is decided at it).
    birth: Tick,
    /// Whether its entries at `base` are in the TVHT (a new group's are: its parents wrote them).
    started: bool,
    /// Its bodies at every tick `base ..= lvt` ([`Timeline`]): states, boxes and tags, and a
    /// single body's anchor or a group's island (as it stands before the rules of that tick,
    /// shared between ticks it does not change, holding the group's anchors).
    line: Timeline,
    next_tag: u64,
    /// Collisions known at ticks `base ..= lvt`.
    contacts: BTreeMap<ContactKey, Contact>,
    /// Messages sent and not acked yet, ordered by tick.
    /// Each with the body it was sent from: its ack comes back addressed to that body, which
    /// tells which new group waits for it when this one splits (an instance may join two of
    /// this group's own bodies, sent while they were in different groups).
    pending: BTreeSet<(Instance, Kind, BodyId)>,
    /// Ticks `< recorded` are recorded in the GVT buffer.
    recorded: Tick,
    /// How far past the GVT this entity speculates now (`1 ..= ` the lead): halved by every
    /// rollback, doubled by every turn without one. Only a matter of speed: committed states
    /// do not depend on how far anyone speculated.
    reach: u64,
    /// Ticks to compute in the next step (`1 ..= BATCH`; see "Step" in the module docs).
    batch: u64,
    /// The tick at which its last step found its group must change (see "Ending").
    ending: Option<Tick>,
    /// Its naps (see "Naps"): the ticks whose entries are sleep records, ascending, disjoint,
    /// within `..= lvt`; the others are entries of their own.
    naps: VecDeque<Nap>,
    /// Born of a change made before its tick was committed (see "Speculative changes").
    speculative: bool,
    /// The tick of the first message at or before its birth, once one came (then it waits
    /// for the engine to undo its birth), and the messages from that one on, in order.
    undo: Option<Tick>,
    stash: Vec<(BodyId, Msg)>,
    /// Buffers reused from turn to turn (their contents do not outlive a call).
    scratch: Scratch,
    pub stats: EntityStats,
}

/// Ticks `from..until` of an entity written as sleep records under `tag`; a nap that a rollback
/// cut is closed (never extended again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Nap {
    tag: u64,
    from: Tick,
    until: Tick,
    open: bool,
}

impl Entity {
    /// Body `id` at its initial state at tick 0 (written at its first turn).
    pub fn new(id: BodyId, initial: BodyState) -> Entity {
        Entity::starting_at(id, Anchor::at(0, initial), initial, 0)
    }

    /// Body `id` at committed state `state` at tick `tick`, flying from `anchor` (a resumed
    /// run; the GVT starts there).
    pub fn starting_at(id: BodyId, anchor: Anchor, state: BodyState, tick: Tick) -> Entity {
        Entity::make(vec![id], tick, vec![state], Some(anchor), None)
    }

    /// The contact group `island` with its bodies at `states` (in its body order) at tick
    /// `tick`, the first tick of the run (written at its first turn).
    pub fn group(island: Island, states: Vec<BodyState>, tick: Tick) -> Entity {
        Entity::group_born(island, states, tick, tick)
    }

    /// The same, starting at `tick` but born at `birth <= tick`: a group of a resumed run,
    /// which may change at `tick` (a group never changes at its birth tick).
    pub fn group_born(island: Island, states: Vec<BodyState>, tick: Tick, birth: Tick) -> Entity {
        let bodies = island.bodies.clone();
        let mut e = Entity::make(bodies, tick, states, None, Some(island));
        e.birth = birth.min(tick);
        e
    }

    /// Bodies at `states` at tick `tick`, a single body flying from `anchor` or a group
    /// standing in `island`; their boxes and tags there are set at the first turn (or by
    /// [`Entity::regroup`]).
    fn make(
        bodies: Vec<BodyId>,
        tick: Tick,
        states: Vec<BodyState>,
        anchor: Option<Anchor>,
        island: Option<Island>,
    ) -> Entity {
        debug_assert!(!bodies.is_empty() && bodies.is_sorted() && bodies.len() == states.len());
        let n = bodies.len();
        let grouped = island.is_some();
        Entity {
            id: bodies[0],
            line: Timeline::start(
                tick,
                &states,
                &vec![Aabb::new(glam::Vec3::ZERO, glam::Vec3::ZERO); n],
                &vec![0; n],
                anchor,
                island.map(Arc::new),
            ),
            bodies,
            grouped,
            birth: tick,
            started: false,
            next_tag: 0,
            contacts: BTreeMap::new(),
            pending: BTreeSet::new(),
            recorded: tick,
            reach: u64::MAX,
            batch: BATCH,
            ending: None,
            naps: VecDeque::new(),
            speculative: false,
            undo: None,
            stash: Vec::new(),
            scratch: Scratch::default(),
            stats: EntityStats::default(),
        }
    }

    /// Its bodies, ascending (the first is its id).
    pub fn bodies(&self) -> &[BodyId] {
        &self.bodies
    }

    /// Whether `body` is one of its bodies.
    pub fn holds(&self, body: BodyId) -> bool {
        self.bodies.binary_search(&body).is_ok()
    }

    /// Whether its group is asleep at its LVT (false without contact groups).
    pub fn asleep(&self) -> bool {
        self.line.last_island().is_some_and(|i| i.asleep)
    }

    /// The local virtual time: the tick of the latest state.
    pub fn lvt(&self) -> Tick {
        self.line.lvt()
    }

    /// How many ticks a step from `lvt` towards `ub` computes this turn: at most its adaptive
    /// batch and the lead's floor ([`BATCH`]).
    fn batch_len(&self, env: &Env<'_>, lvt: Tick, ub: Tick) -> u64 {
        (ub - lvt).min(self.batch).min(env.lead.floor())
    }

    /// The tick at which its group must change (fusion or fission), as its last step found:
    /// it stays there until the engine regroups it once the tick is committed.
    pub fn ending(&self) -> Option<Tick> {
        self.ending
    }

    /// How many of the events and antievents this entity sent still wait for their ack (0 at
    /// the end of a run; the loom model `engine_rollback` checks it).
    pub fn unacked(&self) -> usize {
        self.pending.len()
    }

    /// Position of `body` among its bodies.
    fn index(&self, body: BodyId) -> usize {
        self.bodies
            .binary_search(&body)
            .expect("a body of this entity")
    }

    /// Its bodies' TVHT entries at tick `t` (written), appended to `out`.
    fn entries_at(&self, rules: &Rules, t: Tick, out: &mut Vec<BodyEntry>) {
        let asleep = self.grouped && self.line.island(t).asleep;
        out.extend(self.bodies.iter().enumerate().map(|(j, &body)| {
            let at = self.line.at(rules, body, t, j);
            BodyEntry {
                body,
                aabb: at.aabb,
                state: at.state,
                asleep,
            }
        }));
    }

    /// Its bodies' states at tick `t`, in body order.
    fn states_at(&self, rules: &Rules, t: Tick) -> Vec<BodyState> {
        (0..self.bodies.len())
            .map(|j| self.line.state(rules, t, j))
            .collect()
    }

    /// One turn: read `inbox` (messages with the body each is addressed to), step, record.
    /// Messages to others go through `send`, addressed to a body. The turn works in the
    /// worker's `scratch` buffers (left empty and with their room).
    pub fn run(
        &mut self,
        env: &Env<'_>,
        scratch: &mut Scratch,
        inbox: &mut dyn FnMut() -> Option<(BodyId, Msg)>,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<Turn, String> {
        std::mem::swap(&mut self.scratch, scratch);
        let turn = self.turn(env, inbox, send);
        std::mem::swap(&mut self.scratch, scratch);
        turn
    }

    fn turn(
        &mut self,
        env: &Env<'_>,
        inbox: &mut dyn FnMut() -> Option<(BodyId, Msg)>,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<Turn, String> {
        self.stats.turns += 1;
        if !self.started {
            self.started = true;
            let asleep = self.asleep();
            let mut bodies = Vec::with_capacity(self.bodies.len());
            let base = self.line.base();
            for (j, &body) in self.bodies.iter().enumerate() {
                let state = self.line.state(env.rules, base, j);
                let aabb = env.rules.aabb(body as usize, &state);
                self.line.set_tick(base, j, aabb, self.next_tag);
                bodies.push(BodyEntry {
                    body,
                    aabb,
                    state,
                    asleep,
                });
            }
            let (_, found) = env
                .tvht
                .write_steps_buffered(
                    &mut self.scratch.tvht,
                    self.id,
                    self.next_tag,
                    &[Step {
                        tick: base,
                        bodies: &bodies,
                    }],
                    |_| true,
                )
                .map_err(|e| e.to_string())?;
            self.next_tag += 1;
            self.stats.tvht_writes += 1;
            self.report(env, &found, send);
        }
        let rollbacks = self.stats.rollbacks;
        while let Some((to, m)) = inbox() {
            debug_assert!(
                self.holds(to),
                "message for body {to} at entity {}",
                self.id
            );
            if self.undo.is_none() && self.speculative {
                self.undo = self.undoes(&m);
            }
            if self.undo.is_some() {
                self.stash.push((to, m));
            } else {
                self.handle(env, to, m, send)?;
            }
        }
        if let Some(k) = self.undo {
            return Ok(Turn::Undo(k));
        }
        let gvt = env.gvt.gvt();
        let lead = env.lead.get();
        self.reach = if self.stats.rollbacks > rollbacks {
            (self.reach.min(lead) / 2).max(1)
        } else {
            self.reach.saturating_mul(2).min(lead)
        };
        let mut ub = (gvt + self.reach).min(env.end);
        if self.speculative && gvt <= self.birth {
            // Born of a change not yet committed: it may be undone, with all done since.
            ub = ub.min(self.birth + SPECULATIVE_REACH);
        }
        // A span may fly as far as the window (see "Spans"): however long, it costs one record,
        // and a rollback cuts it in one section; the reach bounds the ticks stepped one by one.
        let far = if self.speculative && gvt <= self.birth {
            ub
        } else {
            (gvt + env.gvt.window()).min(env.end).max(ub)
        };
        self.ending = None;
        if self.lvt() < ub {
            if self.grouped {
                self.step_group(env, (ub, far), send)?;
            } else {
                self.step(env, (ub, far), send)?;
            }
        }
        let refused = self.record(env)?;
        self.trim(gvt, lead);
        self.stats.lead_sum += self.lvt().saturating_sub(gvt);
        Ok(if self.ending.is_some() {
            Turn::WaitGvt(gvt + 1)
        } else if self.lvt() < ub {
            Turn::Ready
        } else if self.lvt() < env.end {
            // Woken at once by any advance, an entity at `LVT_ub` took a turn per tick the
            // GVT moved and stepped that one tick: on bouncing 2000, 2.7 ticks a turn and more
            // than one section per body-tick. It sleeps until its lead is half its reach, and
            // then steps that half in a few turns (only a matter of speed, like `reach`); no
            // later than the rise of the word its ticks wait for, if the ring refused them.
            let half = self.lvt().saturating_sub(self.reach / 2).max(gvt + 1);
            Turn::WaitGvt(refused.map_or(half, |r| r.min(half)))
        } else if let Some(r) = refused {
            Turn::WaitGvt(r)
        } else {
            Turn::WaitMessages
        })
    }

    fn handle(
        &mut self,
        env: &Env<'_>,
        me: BodyId,
        m: Msg,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<(), String> {
        match m {
            Msg::Event(c) => {
                let inst = Instance::of(&c);
                let t = inst.tick;
                let other = inst.other(me);
                let live = t >= self.line.base()
                    && t <= self.lvt()
                    && self.line.tag(t, self.index(me)) == inst.tag_of(me);
                if live {
                    self.contacts.insert(c.key(), c);
                    if t < self.lvt() {
                        self.rollback(env, t, send)?;
                    }
                }
                send(other, Msg::EventAck(inst));
            }
            Msg::EventAck(inst) => {
                self.pending.remove(&(inst, Kind::Event, me));
            }
            Msg::Antievent(inst) => {
                let t = inst.tick;
                let other = inst.other(me);
                self.pending.remove(&(inst, Kind::Event, me));
                let key = ContactKey {
                    tick: t,
                    a: inst.a,
                    b: inst.b,
                };
                let known = self
                    .contacts
                    .get(&key)
                    .is_some_and(|c| Instance::of(c) == inst);
                if known {
                    self.contacts.remove(&key);
                    if t < self.lvt() {
                        self.rollback(env, t, send)?;
                    }
                }
                send(other, Msg::AntieventAck(inst));
            }
            Msg::AntieventAck(inst) => {
                self.pending.remove(&(inst, Kind::Antievent, me));
            }
        }
        Ok(())
    }

    /// Rolls back to `r < lvt` (Algorithms 4 and 7).
    fn rollback(
        &mut self,
        env: &Env<'_>,
        r: Tick,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<(), String> {
        let lvt = self.lvt();
        debug_assert!(r < lvt && r >= self.line.base());
        let mut entries = std::mem::take(&mut self.scratch.entries);
        entries.clear();
        // (The ticks of spans, glides and naps are records, cut below.)
        let ticks: Vec<Tick> = self.line.ticks_after(r).collect();
        for &t in &ticks {
            self.entries_at(env.rules, t, &mut entries);
        }
        let steps: Vec<Step<'_>> = entries
            .chunks(self.bodies.len())
            .zip(&ticks)
            .map(|(b, &tick)| Step { tick, bodies: b })
            .collect();
        let gone = env.tvht.delete_steps(self.id, &steps);
        drop(steps);
        self.scratch.entries = entries;
        let mut gone =
            gone.map_err(|e| format!("rollback of entity {} to tick {r}: {e}", self.id))?;
        // The spans and glides after `r`: cut or gone.
        let spans: Vec<(u64, Vec<SpanEntry>)> = self
            .line
            .spans_after(r)
            .map(|(_, paths, tag)| {
                let entries = (self.bodies.iter().zip(paths))
                    .map(|(&body, &(anchor, aabb))| SpanEntry { body, anchor, aabb })
                    .collect();
                (tag, entries)
            })
            .collect();
        for (tag, entries) in spans {
            let cut = env
                .tvht
                .cut_span(self.id, tag, &entries, r + 1)
                .map_err(|e| format!("rollback of entity {} to tick {r}: {e}", self.id))?;
            gone.extend(cut);
            self.stats.span_cuts += 1;
        }
        // The naps after `r`: cut (and closed) or gone.
        let mut i = 0;
        while i < self.naps.len() {
            let n = self.naps[i];
            if n.until <= r + 1 {
                i += 1;
                continue;
            }
            let mut slept = Vec::with_capacity(self.bodies.len());
            self.entries_at(env.rules, n.from.max(self.line.base()), &mut slept);
            let cut = env
                .tvht
                .wake(self.id, n.tag, &slept, n.from.max(r + 1))
                .map_err(|e| format!("rollback of entity {} to tick {r}: {e}", self.id))?;
            gone.extend(cut);
            self.stats.nap_cuts += 1;
            if n.from > r {
                self.naps.remove(i);
            } else {
                self.naps[i].until = r + 1;
                self.naps[i].open = false;
                i += 1;
            }
        }
        for c in &gone {
            let inst = Instance::of(c);
            let (mine, other) = self.sides(c);
            let (mine, other) = (mine.body, other.body);
            self.pending.remove(&(inst, Kind::Event, mine));
            if env
                .rules
                .in_contact(c.a.body as usize, &c.a.state, c.b.body as usize, &c.b.state)
            {
                send(other, Msg::Antievent(inst));
                self.pending.insert((inst, Kind::Antievent, mine));
                self.stats.antievents += 1;
            }
        }
        let after = ContactKey {
            tick: r + 1,
            a: 0,
            b: 0,
        };
        drop(self.contacts.split_off(&after));
        if self.recorded > r + 1 {
            env.gvt
                .unrecord_ticks(r + 1..self.recorded, &self.bodies)
                .map_err(|e| format!("rollback of entity {} to tick {r}: {e}", self.id))?;
            if let Some(log) = env.islands {
                log.take_back(self.id, r + 1..self.recorded);
            }
            self.recorded = r + 1;
        }
        self.line.truncate(r);
        self.stats.rollbacks += 1;
        self.stats.rolled_back_ticks += lvt - r;
        env.lead.rolled_back((lvt - r) * self.bodies.len() as u64);
        Ok(())
    }

    /// The known contacts at tick `t`.
    fn contacts_at(&self, t: Tick) -> impl Iterator<Item = &Contact> {
        let lo = ContactKey {
            tick: t,
            a: 0,
            b: 0,
        };
        let hi = ContactKey {
            tick: t,
            a: BodyId::MAX,
            b: BodyId::MAX,
        };
        self.contacts.range(lo..=hi).map(|(_, c)| c)
    }

    /// A contact's two sides: this entity's entry, then the other's.
    fn sides<'c>(&self, c: &'c Contact) -> (&'c TvhtEntry, &'c TvhtEntry) {
        if self.holds(c.a.body) {
            (&c.a, &c.b)
        } else {
            (&c.b, &c.a)
        }
    }

    /// The kicks of this (single) body at `t` (statics and known collisions) from state `s`.
    fn kicks(&self, env: &Env<'_>, t: Tick, s: &BodyState, out: &mut Vec<Kick>) {
        out.clear();
        let me = self.id as usize;
        env.rules.static_kicks(me, s, out);
        for c in self.contacts_at(t) {
            let (_, other) = self.sides(c);
            if let Some(k) = env
                .rules
                .pair_kick(me, s, other.body as usize, &other.state)
            {
                out.push(k);
            }
        }
    }

    /// Step of a single body: a span towards `far` if it flies clear of the static bodies
    /// (see "Spans"), else compute and write up to `BATCH` ticks towards `ub`.
    fn step(
        &mut self,
        env: &Env<'_>,
        (ub, far): (Tick, Tick),
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<(), String> {
        let lvt = self.lvt();
        let me = self.id as usize;
        let mut kicks = std::mem::take(&mut self.scratch.kicks);
        // (`kicks[1]` is `fly`'s: two, whatever a group's step left.)
        kicks.resize_with(2, Vec::new);
        // The LVT's kicks (statics and known collisions) give the anchor after it, whether the
        // body then flies a span or steps tick by tick.
        let mut s = self.line.state(env.rules, lvt, 0);
        self.kicks(env, lvt, &s, &mut kicks[0]);
        let mut a;
        (a, s) = env
            .rules
            .advance(&self.line.anchor(lvt), &s, lvt, &mut kicks[0]);
        self.scratch.kicks = kicks;
        // A body in contact with another at the LVT (in a pile, most often) flies only as far
        // as the span-wide test clears, not tick by tick past it (measured: `cylinders` 500
        // without contact groups, where a pile's spans ticked through did not pay).
        let paired = self.contacts_at(lvt).next().is_some();
        let flew = self.fly(env, far, Some((a, !paired)), send)?;
        let probed = self.scratch.probed.take();
        if flew {
            return Ok(());
        }
        let n = self.batch_len(env, lvt, ub);
        let mut kicks = std::mem::take(&mut self.scratch.kicks);
        let mut new = std::mem::take(&mut self.scratch.entries);
        new.clear();
        let mut anchors = std::mem::take(&mut self.scratch.anchors);
        anchors.clear();
        for i in 0..n {
            if i > 0 {
                kicks[0].clear();
                if i == 1 && probed == Some(lvt + 1) {
                    kicks.swap(0, 1);
                } else {
                    env.rules.static_kicks(me, &s, &mut kicks[0]);
                }
                (a, s) = env.rules.advance(&a, &s, lvt + i, &mut kicks[0]);
            }
            anchors.push(a);
            if !(s.position.is_finite() && s.velocity.is_finite()) {
                return Err(format!(
                    "body {} has a non-finite state at tick {}",
                    self.id,
                    lvt + 1 + i
                ));
            }
            new.push(BodyEntry {
                body: self.id,
                aabb: env.rules.aabb(me, &s),
                state: s,
                asleep: false,
            });
        }
        self.scratch.kicks = kicks;
        self.scratch.anchors = anchors;
        self.write(env, lvt, n, new, Vec::new(), send)
    }

    /// A span of a single body from its LVT (see "Spans"): `single` is the anchor its kicks at
    /// the LVT give it and whether it may go on tick by tick past the span-wide static test
    /// (`None` for a group, whose island holds it); it flies the longest span up to `far`
    /// (within an eighth, at least [`MIN_SPAN`] ticks) that is clear of every static body, or
    /// tested tick by tick up to the first static kick, and whose box covers at most
    /// [`SPAN_CELLS`] cells, written as one TVHT record that stops at the first tick that
    /// touches another body. Returns whether it flew (else the tick-by-tick step runs, and
    /// finds the kicks this asked at the first tick in `scratch`).
    fn fly(
        &mut self,
        env: &Env<'_>,
        far: Tick,
        single: Option<(Anchor, bool)>,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<bool, String> {
        self.scratch.probed = None;
        let lvt = self.lvt();
        let len = (far - lvt).min(env.max_span);
        if len < MIN_SPAN {
            return Ok(false);
        }
        let (rules, me) = (env.rules, self.id as usize);
        // The anchor it flies from after the LVT: a single body's after its kicks there; a
        // group's of one, its island's, if its step at the LVT is plain flight (no contact
        // known there, and an island that flight leaves as it is: awake, not resting, no warm
        // start); the span's sweep from the LVT on shows the rest.
        let (anchor, island) = if let Some((a, _)) = single {
            (a, None)
        } else {
            let isl = self.line.island(lvt);
            if self.bodies.len() != 1
                || isl.asleep
                || !isl.due()
                || isl.rest_ticks != 0
                || !isl.warm.is_empty()
                || self.contacts_at(lvt).next().is_some()
            {
                return Ok(false);
            }
            (isl.anchors[0], Some(Arc::clone(isl)))
        };
        let a = &anchor.state;
        if !(a.position.is_finite() && a.velocity.is_finite() && a.angular_velocity.is_finite()) {
            // The tick-by-tick step names the tick.
            return Ok(false);
        }
        let from = lvt + 1;
        let spin = a.angular_velocity.length();
        // The box of the span of `len` ticks and the cells it covers, if it flies clear of the
        // static bodies (a group of one: in flight throughout).
        let probe = |len: u64| {
            let sweep = rules.span(me, &anchor, from, lvt + len);
            let aabb = rules.span_aabb(&sweep);
            let clear = if self.grouped {
                let all = rules.span(me, &anchor, lvt, lvt + len);
                span_in_flight(rules, self.id, &all, spin)
            } else {
                rules.span_clear_of_statics(&sweep)
            };
            if !clear {
                return None;
            }
            env.tvht
                .cells_of(self.id, &aabb)
                .ok()
                .map(|cells| (aabb, cells))
        };
        let fits = |len: u64, limit: u64| probe(len).filter(|p| p.1 <= limit).map(|p| p.0);
        // The longest that fits, within an eighth: a longer span fits only if a shorter one
        // does, so a body short of a wall or the floor flies up to it in one span (halving,
        // it took one span per halving) and one that cannot fly at all costs two tests. At
        // most `SPAN_CELLS` cells, or twice those of its shortest span if that covers more
        // (a body large for its cells, or far out, where the f32 slack of a sweep is wide):
        // there any span covers that many, and ticks one by one would cost more.
        let full = len;
        // The longest span the span-wide test clears, its box, and the cells it may cover
        // (`None`: not even the shortest).
        let cleared = match fits(len, SPAN_CELLS) {
            Some(b) => Some((len, b, SPAN_CELLS)),
            None => probe(MIN_SPAN).map(|(mut best, cells)| {
                let limit = SPAN_CELLS.max(2 * cells);
                // (`len` failed at `SPAN_CELLS`: only a wider limit can take it whole.)
                if limit > SPAN_CELLS
                    && let Some(b) = fits(len, limit)
                {
                    return (len, b, limit);
                }
                // The box of the longest that fits is the last one found.
                let lo = longest_within_an_eighth(0, MIN_SPAN, len, |m| {
                    fits(m, limit).map(|b| best = b).is_some()
                });
                (lo, best, limit)
            }),
        };
        // Past what the span-wide test clears, a single body's span goes on tick by tick,
        // rule 2b at each tick as a step would ask it ([`Rules::static_kicks`]): through ticks
        // with no static kick, and to the first tick with one, where the span ends (its kicks
        // make the next anchor, as at any LVT); after each [`STATIC_TICKS`] such ticks the
        // span-wide test takes the rest of the span again (a body leaving a wall is soon clear
        // of it), and at most [`STATIC_TESTS`] ticks are tested one by one. A body that meets
        // a wall flies into the bounce and out of it, where it stepped the ticks about it one
        // by one, each an entry of its own.
        let (len, aabb) = match (single, cleared) {
            (Some((_, true)), c) if c.is_none_or(|c| c.0 < full) => {
                let (done, limit) = c.map_or((0, SPAN_CELLS), |c| (c.0, c.2));
                let end = lvt + full;
                let cells_ok = |b: &Aabb| env.tvht.cells_of(self.id, b).is_ok_and(|n| n <= limit);
                // (`step`, the walk's one caller, left two kick lists: `kicks[1]` is the walk's.)
                let mut kicks = std::mem::take(&mut self.scratch.kicks);
                debug_assert!(kicks.len() >= 2, "the step left fly two kick lists");
                // The last tick certified.
                let mut t = lvt + done;
                let mut tested = 0;
                'walk: while t < end && tested < STATIC_TESTS {
                    let stop = end.min(t + STATIC_TICKS);
                    while t < stop {
                        t += 1;
                        tested += 1;
                        kicks[1].clear();
                        rules.static_kicks(me, &rules.flight(&anchor, t), &mut kicks[1]);
                        if !kicks[1].is_empty() {
                            break 'walk;
                        }
                    }
                    let at = t;
                    if at >= end {
                        break;
                    }
                    // The rest, by the span-wide test from the next tick (its statics) and
                    // from the span's first (its cells), within an eighth.
                    let clears = |e: Tick| {
                        rules.span_clear_of_statics(&rules.span(me, &anchor, at + 1, e))
                            && cells_ok(&rules.span_aabb(&rules.span(me, &anchor, from, e)))
                    };
                    let lo = if clears(end) {
                        end
                    } else {
                        longest_within_an_eighth(lvt, at, end, clears)
                    };
                    if lo == at {
                        continue;
                    }
                    t = lo;
                }
                // A body at rest on a static body has kicks at the first tick: the step that
                // follows takes them.
                if t == lvt + 1 && !kicks[1].is_empty() {
                    self.scratch.probed = Some(t);
                }
                self.scratch.kicks = kicks;
                let longer = (t - lvt > done.max(MIN_SPAN - 1))
                    .then(|| rules.span_aabb(&rules.span(me, &anchor, from, t)))
                    .filter(|b| cells_ok(b));
                match (longer, c) {
                    (Some(b), _) => (t - lvt, b),
                    (None, Some((done, b, _))) => (done, b),
                    (None, None) => return Ok(false),
                }
            }
            (_, Some((len, b, _))) => (len, b),
            (_, None) => return Ok(false),
        };
        let to = lvt + len;
        // The table keeps only contacts that touch (the rules are its `Flight`): each one
        // ends the span, as one that makes an event ends a batch.
        let touch = |_: &Contact| true;
        let entry = SpanEntry {
            body: self.id,
            anchor,
            aabb,
        };
        let (last, found) = env
            .tvht
            .write_span(self.id, self.next_tag, (from, to), &[entry], touch)
            .map_err(|e| format!("span of body {} from tick {from}: {e}", self.id))?;
        let end = rules.flight(&anchor, last);
        if !(end.position.is_finite() && end.velocity.is_finite()) {
            return Err(format!(
                "body {} has a non-finite state at tick {last}",
                self.id
            ));
        }
        self.line
            .push_span(from, last, anchor, aabb, self.next_tag, island);
        self.next_tag += 1;
        self.stats.spans += 1;
        self.stats.span_ticks += last + 1 - from;
        self.report(env, &found, send);
        Ok(true)
    }

    /// Step of a contact group (rules 1-5 of [`super::group_rules`]): compute up to `BATCH`
    /// ticks towards `ub`, stopping before a tick at which the group must change, and write
    /// them.
    fn step_group(
        &mut self,
        env: &Env<'_>,
        (ub, far): (Tick, Tick),
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<(), String> {
        if self.fly(env, far, None, send)? || self.glide(env, far, send)? {
            return Ok(());
        }
        self.step_ticks(env, (ub, far), send, true)
    }

    /// The tick-by-tick step of a group (see [`Entity::step_group`]); with `glides`, a solve
    /// into a substep ends it and the substep glides.
    fn step_ticks(
        &mut self,
        env: &Env<'_>,
        (ub, far): (Tick, Tick),
        send: &mut dyn FnMut(BodyId, Msg),
        glides: bool,
    ) -> Result<(), String> {
        let lvt = self.lvt();
        let rules = env.rules;
        let nb = self.bodies.len();
        let n = self.batch_len(env, lvt, ub);
        let mut cur: Vec<BodyState> = self.states_at(rules, lvt);
        // `isl` is the island of the last tick computed, shared with the ticks before it that
        // it did not change; `work` is the one being stepped.
        let mut isl = Arc::clone(self.line.island(lvt));
        let mut work = Island::clone(&isl);
        let mut boxes: Vec<Aabb> = self
            .bodies
            .iter()
            .enumerate()
            .map(|(j, &b)| self.line.at(rules, b, lvt, j).aabb)
            .collect();
        let mut kicks = std::mem::take(&mut self.scratch.kicks);
        kicks.resize_with(nb, Vec::new);
        let mut new = std::mem::take(&mut self.scratch.entries);
        new.clear();
        let mut islands = Vec::new();
        let mut glide_at = None;
        for i in 0..n {
            let t = lvt + i;
            // Rule 1: deferred fission (its contacts are the step's, below).
            let mut contacts = None;
            // Whether `work` may now differ from `isl`, and whether the solver stepped it.
            let mut touched = false;
            let mut solved = false;
            if let Some((apart, m)) = self.split_timer(rules, t, &work, &cur) {
                contacts = Some(m);
                touched |= apart != work.apart_ticks;
                work.apart_ticks = apart;
                if apart >= SPLIT_TICKS {
                    if i == 0 {
                        self.ending = Some(t);
                    }
                    break;
                }
            }
            // Rules 2 and 3: fusion with, or kicks from, the other groups touching at `t` (known
            // at `lvt` only: the write stops at the first later tick that meets a contact).
            for k in kicks.iter_mut() {
                k.clear();
            }
            if i == 0 {
                if self.fusing(rules, t).next().is_some() {
                    self.ending = Some(t);
                    break;
                }
                for c in self.contacts_at(t) {
                    let (mine, other) = self.sides(c);
                    if mine.asleep && other.asleep {
                        continue;
                    }
                    let (a, b) = (mine.body as usize, other.body as usize);
                    if let Some(k) = rules.pair_kick(a, &mine.state, b, &other.state) {
                        kicks[self.index(mine.body)].push(k);
                    }
                }
            }
            // Rules 4 and 5: wake if kicked, step, maybe fall asleep. Asleep and not kicked,
            // nothing changes: the same states, boxes and island (no copy); from `LVT`, a nap.
            let kicked = kicks.iter().any(|k| !k.is_empty());
            if i == 0 && work.asleep && !kicked && env.tvht.sleep_records() {
                // (Rule 1 does not apply asleep: `work` is still `isl`.)
                self.scratch.kicks = kicks;
                self.scratch.entries = new;
                return self.nap(env, far, &cur, &boxes, isl, send);
            }
            if work.asleep && !kicked {
                self.stats.asleep_ticks += 1;
            } else {
                if work.asleep {
                    work.asleep = false;
                    work.rest_ticks = 0;
                }
                if !work.due() && !kicked {
                    // Inside a substep (rule 4): the island changes only at its last tick.
                    work.glide(t, &mut cur);
                    touched |= work.due();
                    work.doze(rules, t + 1, &cur);
                } else {
                    touched = true;
                    solved = true;
                    let m = contacts.unwrap_or_else(|| {
                        let ticks = rules.substep_at(t);
                        group_manifolds(rules, &work.bodies, &cur, &work.warm, ticks)
                    });
                    step_island_with(rules, &mut work, t, &mut cur, &mut kicks, m)
                        .map_err(|e| format!("at tick {}: {e}", t + 1))?;
                }
                for ((&body, s), b) in self.bodies.iter().zip(&cur).zip(&mut boxes) {
                    *b = rules.aabb(body as usize, s);
                }
            }
            // Solved at `t` into a substep: its ticks glide (see "Glides"), from `t` once the
            // ticks before it are written.
            if glides && solved && self.glide_reach(env, &work, t, far).is_some() {
                glide_at = Some((t, Arc::new(work)));
                break;
            }
            for ((&body, s), b) in self.bodies.iter().zip(&cur).zip(&boxes) {
                new.push(BodyEntry {
                    body,
                    aabb: *b,
                    state: *s,
                    asleep: work.asleep,
                });
            }
            if touched && !work.same_as(&isl) {
                isl = Arc::new(work.clone());
            }
            islands.push(Arc::clone(&isl));
        }
        self.scratch.kicks = kicks;
        let computed = islands.len() as u64;
        if computed == 0 {
            self.scratch.entries = new;
        } else {
            self.write(env, lvt, computed, new, islands, send)?;
        }
        // The solve at `t` knew the contacts at `t` only if `t` is the LVT it started from:
        // if the write of the ticks before found one at `t`, it stopped there, and the next
        // turn solves again with it. A glide that does not happen after all (its box too wide
        // for the table, or its group asleep at the substep's end and the substep too short
        // without it) leaves the LVT at `t` too; if that is where the step started, it steps
        // tick by tick from there at once (the same bits), or it would never move on.
        if let Some((t, isl)) = glide_at
            && self.lvt() == t
            && (t == lvt || self.contacts_at(t).next().is_none())
            && !self.glide_from(env, isl, far, send)?
            && t == lvt
        {
            return self.step_ticks(env, (ub, far), send, false);
        }
        Ok(())
    }

    /// A glide of a group from its LVT (see "Glides"), if its island there is inside a
    /// substep of its solver, awake, with no contact known at the LVT.
    fn glide(
        &mut self,
        env: &Env<'_>,
        far: Tick,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<bool, String> {
        let lvt = self.lvt();
        let isl = self.line.island(lvt);
        if isl.substep.is_none() || self.contacts_at(lvt).next().is_some() {
            return Ok(false);
        }
        let isl = Arc::clone(isl);
        self.glide_from(env, isl, far, send)
    }

    /// How far a group standing in island `isl` at tick `t` may glide from there (see
    /// "Glides"), if it may: inside a substep, whole or one of the shorter ones after a kick
    /// or a birth, with at least [`MIN_GLIDE`] ticks to go (up to the substep's last tick,
    /// `far` and `max_span`), awake, spans on. The shorter substeps glide too: their glides
    /// cost less than their ticks' entries (`docs/results.md`, "2026-11-30, night").
    fn glide_reach(&self, env: &Env<'_>, isl: &Island, t: Tick, far: Tick) -> Option<Tick> {
        let sub = isl.substep.as_ref()?;
        let reach = sub.until.min(far).min(t.saturating_add(env.max_span));
        (reach >= t + MIN_GLIDE && !isl.asleep && env.max_span > 0 && env.tvht.sleep_records())
            .then_some(reach)
    }

    /// The glide of a group standing in island `isl` (inside a substep) at its LVT: its bodies
    /// glide through the substep's ticks after the LVT, at most to `far`, one TVHT record per
    /// body, which stops at the first tick that touches another entity's body. The substep's
    /// last tick is part of it unless the group falls asleep there (rule 5: its entries there
    /// are asleep); the island there is the one the substep ends in. Returns whether it glided
    /// (else the tick-by-tick step runs).
    fn glide_from(
        &mut self,
        env: &Env<'_>,
        isl: Arc<Island>,
        far: Tick,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<bool, String> {
        let lvt = self.lvt();
        let (Some(mut to), Some(sub)) = (self.glide_reach(env, &isl, lvt, far), &isl.substep)
        else {
            return Ok(false);
        };
        let (rules, from) = (env.rules, lvt + 1);
        // The island at the substep's last tick, if the glide reaches it awake.
        let mut end = None;
        if to == sub.until {
            let mut island = Island::clone(&isl);
            let mut states: Vec<BodyState> = isl.anchors.iter().map(|a| a.state).collect();
            island.glide(to - 1, &mut states);
            island.doze(rules, to, &states);
            if island.asleep {
                to -= 1;
            } else {
                end = Some(Arc::new(island));
            }
        }
        if to < from + MIN_GLIDE - 1 {
            return Ok(false);
        }
        let len = sub.until - isl.anchors[0].tick;
        let mut paths = Vec::with_capacity(self.bodies.len());
        let mut entries = Vec::with_capacity(self.bodies.len());
        for ((&body, a), m) in self.bodies.iter().zip(&isl.anchors).zip(&sub.moves) {
            let anchor = Anchor::gliding(a.tick, a.state, *m, len);
            let aabb = rules.span_aabb(&rules.span(body as usize, &anchor, from, to));
            if env.tvht.cells_of(body, &aabb).is_err() {
                // (Too wide for the table: the tick-by-tick step says why.)
                return Ok(false);
            }
            paths.push((anchor, aabb));
            entries.push(SpanEntry { body, anchor, aabb });
        }
        let touch = |_: &Contact| true;
        let (last, found) = env
            .tvht
            .write_span(self.id, self.next_tag, (from, to), &entries, touch)
            .map_err(|e| format!("glide of entity {} from tick {from}: {e}", self.id))?;
        let end = end.filter(|_| last == to);
        self.line
            .push_glide(from, last, &paths, self.next_tag, isl, end);
        self.next_tag += 1;
        self.stats.spans += 1;
        self.stats.span_ticks += last + 1 - from;
        self.stats.glides += 1;
        self.stats.glide_ticks += last + 1 - from;
        self.report(env, &found, send);
        Ok(true)
    }

    /// A nap from `LVT` towards `far` (the window, see "Naps"): the group, asleep at `LVT` at
    /// states `cur` and boxes `boxes` with island `isl`, stays so at every tick up to `far` or
    /// to the first that meets an awake body.
    fn nap(
        &mut self,
        env: &Env<'_>,
        far: Tick,
        cur: &[BodyState],
        boxes: &[Aabb],
        isl: Arc<Island>,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<(), String> {
        let from = self.lvt() + 1;
        let tag = match self.naps.back() {
            Some(n) if n.open && n.until == from => n.tag,
            _ => {
                self.next_tag += 1;
                self.next_tag - 1
            }
        };
        let bodies: Vec<BodyEntry> = self
            .bodies
            .iter()
            .zip(cur)
            .zip(boxes)
            .map(|((&body, &state), &aabb)| BodyEntry {
                body,
                aabb,
                state,
                asleep: true,
            })
            .collect();
        let (last, found) = env
            .tvht
            .sleep(self.id, tag, from, far, &bodies)
            .map_err(|e| format!("entity {} sleeps from tick {from}: {e}", self.id))?;
        self.line.push_still((from, last), cur, boxes, tag, isl);
        match self.naps.back_mut() {
            Some(n) if n.open && n.tag == tag => n.until = last + 1,
            _ => self.naps.push_back(Nap {
                tag,
                from,
                until: last + 1,
                open: true,
            }),
        }
        self.stats.asleep_ticks += last + 1 - from;
        self.stats.naps += 1;
        self.report(env, &found, send);
        Ok(())
    }

    /// Rule 1 at `t` for a group whose island at `t` is `isl` and bodies are at `cur`: its
    /// split timer after `t` (None where the rule does not apply: at the group's birth tick,
    /// asleep, inside a substep, or a single body), and its contacts at `t` for the substep
    /// from `t`. It splits at `t` when the timer
    /// reaches [`SPLIT_TICKS`].
    fn split_timer(
        &self,
        rules: &Rules,
        t: Tick,
        isl: &Island,
        cur: &[BodyState],
    ) -> Option<(u32, Vec<(PairKey, Manifold)>)> {
        if t <= self.birth || isl.asleep || self.bodies.len() < 2 || !isl.due() {
            return None;
        }
        let m = group_manifolds(rules, &self.bodies, cur, &isl.warm, rules.substep_at(t));
        let parts = components(&self.bodies, &edges(&m)).len();
        Some((apart_after(rules, isl.apart_ticks, t, &m, parts), m))
    }

    /// Rule 2 at `t`: the other sides of the known contacts at `t` that fuse with this group.
    fn fusing<'s>(&'s self, rules: &'s Rules, t: Tick) -> impl Iterator<Item = &'s TvhtEntry> {
        self.contacts_at(t).filter_map(move |c| {
            let (mine, other) = self.sides(c);
            let slow = !(mine.asleep && other.asleep)
                && fuses(
                    rules,
                    mine.body as usize,
                    &mine.state,
                    other.body as usize,
                    &other.state,
                );
            slow.then_some(other)
        })
    }

    /// For a group born of a speculative change: the tick of message `m` if it undoes that
    /// change, i.e. if it is about its birth tick or before. One about an earlier tick is about
    /// its parents' states. One at its birth tick may add or take away a contact that fuses
    /// there, and even a kick at that tick (which changes no change) must go to the parents:
    /// what a child learns about its birth tick would be lost with it if it were undone later,
    /// since a child rolls back no further than its birth. (Letting a child take kicks at its
    /// birth tick lost them so: `cylinders` 500 for 1.25 s, 3 workers, had an extra fusion in
    /// about one run in 30.)
    fn undoes(&self, m: &Msg) -> Option<Tick> {
        match m {
            Msg::Event(c) => Some(c.key().tick),
            Msg::Antievent(inst) => Some(inst.tick),
            Msg::EventAck(_) | Msg::AntieventAck(_) => None,
        }
        .filter(|&k| k <= self.birth)
    }

    /// Whether its group must change at its LVT (a group whose LVT is a committed tick: then
    /// this is final), and the bodies of other groups it fuses with there.
    pub fn change_at_lvt(&self, rules: &Rules) -> (bool, Vec<BodyId>) {
        if !self.grouped {
            return (false, Vec::new());
        }
        let t = self.lvt();
        // Its last step found the change (a turn that takes a message steps again, so this
        // is never stale): only the partners are left to find, not the split timer (a narrow
        // phase over the whole group).
        if self.ending == Some(t) {
            return (true, self.fusing(rules, t).map(|e| e.body).collect());
        }
        let cur: Vec<BodyState> = self.states_at(rules, t);
        let isl = self.line.island(t);
        let partners: Vec<BodyId> = self.fusing(rules, t).map(|e| e.body).collect();
        let splits = self
            .split_timer(rules, t, isl, &cur)
            .is_some_and(|(a, _)| a >= SPLIT_TICKS);
        (splits || !partners.is_empty(), partners)
    }

    /// Writes the `n` ticks after `lvt` computed by a step (`new`: their entries, `islands`:
    /// a group's islands at them), keeps those written, and reports the contacts found.
    fn write(
        &mut self,
        env: &Env<'_>,
        lvt: Tick,
        n: u64,
        new: Vec<BodyEntry>,
        islands: Vec<Arc<Island>>,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<(), String> {
        let nb = self.bodies.len();
        let steps: Vec<Step<'_>> = new
            .chunks(nb)
            .enumerate()
            .map(|(i, b)| Step {
                tick: lvt + 1 + i as Tick,
                bodies: b,
            })
            .collect();
        // The batch ends at the first contact that makes an event ([`Entity::report`] acts on
        // no other): overlapping boxes of bodies that do not touch change nothing.
        let touch = |c: &Contact| {
            env.rules
                .in_contact(c.a.body as usize, &c.a.state, c.b.body as usize, &c.b.state)
        };
        let result = env.tvht.write_steps_buffered(
            &mut self.scratch.tvht,
            self.id,
            self.next_tag,
            &steps,
            touch,
        );
        drop(steps);
        let (written, found) = result.map_err(|e| e.to_string())?;
        // Appended a queue at a time (the three pushes per body and tick cost more than the
        // copies).
        let anchors: &[Anchor] = if self.grouped {
            &[]
        } else {
            &self.scratch.anchors
        };
        self.line
            .push_ticks(lvt + 1, written, &new, self.next_tag, anchors, islands);
        self.next_tag += n;
        self.stats.tvht_writes += written as u64;
        self.batch = if (written as u64) < n {
            (written as u64).max(1)
        } else {
            (self.batch * 2).min(BATCH)
        };
        self.scratch.entries = new;
        self.report(env, &found, send);
        Ok(())
    }

    /// Turns the contacts a write found into events.
    fn report(&mut self, env: &Env<'_>, found: &[Contact], send: &mut dyn FnMut(BodyId, Msg)) {
        for c in found {
            if !env
                .rules
                .in_contact(c.a.body as usize, &c.a.state, c.b.body as usize, &c.b.state)
            {
                continue;
            }
            let inst = Instance::of(c);
            let (mine, other) = self.sides(c);
            let (mine, other) = (mine.body, other.body);
            self.contacts.insert(c.key(), *c);
            self.pending.insert((inst, Kind::Event, mine));
            send(other, Msg::Event(*c));
            self.stats.events += 1;
        }
    }

    /// Records the ticks whose state is final as far as this entity knows. Returns the tick
    /// the GVT must reach before it can record the rest, if the GVT buffer's ring of anchor
    /// cells took only part of them (its "Reuse": a tick past the word and at most the ticks
    /// recorded, which the GVT reaches without this entity).
    fn record(&mut self, env: &Env<'_>) -> Result<Option<Tick>, String> {
        let mut lim = self.lvt().min(env.end);
        // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
        // `TIMEWARP_BROKEN=record_before_ack` (a loom negative control, see `sync::broken`):
        // ticks are recorded without waiting for the acks of the messages sent at them (no
        // resolve), so a tick can commit with the state of a body that has not yet rolled
        // back for an event at an earlier tick.
        #[cfg(timewarp_broken)]
        let pending = if crate::sync::broken("record_before_ack") {
            None
        } else {
            self.pending.first()
        };
        #[cfg(not(timewarp_broken))]
        let pending = self.pending.first();
        if let Some((first, _, _)) = pending {
            if first.tick == 0 {
                return Ok(None);
            }
            lim = lim.min(first.tick - 1);
        }
        if self.recorded > lim {
            return Ok(None);
        }
        let first = self.recorded;
        // Logged before the record: the record may commit a tick, and the output takes the
        // islands of a committed tick at once. A single body logs itself as a group of one
        // with its anchor.
        if let Some(log) = env.islands {
            log.put(
                self.id,
                (first..=lim).filter(|&t| log.wants(t)).map(|t| {
                    let isl = if self.grouped {
                        Arc::clone(self.line.island(t))
                    } else {
                        Arc::new(Island::single(self.id, self.line.anchor(t)))
                    };
                    (t, isl)
                }),
            );
        }
        let word = env.gvt.gvt();
        let end = env
            .gvt
            .record_span(first, (lim + 1 - first) as usize, &self.bodies, {
                let mut walk = self.line.walk(first);
                move |t, j| walk.piece(env.rules, t, j)
            })
            .map_err(|e| format!("entity {} records ticks {first}..={lim}: {e}", self.id))?;
        self.recorded = end;
        // The ring refused a piece: the word read before the record (the buffer read it at
        // or after that) must rise; the islands logged for the ticks not recorded are logged
        // again, the same, when they are.
        Ok((end <= lim).then_some(word + 1))
    }

    /// Gives back the room of the state queues beyond twice what the lead lets them hold. A
    /// queue holds the ticks from `GVT - 1` to its `LVT`, at most `lead + 2` of them (more only
    /// while an entity that went further under a longer lead waits), and keeps the room of its
    /// longest reach, which a raised lead ([`super::lead`]) lengthens. Without this, every raise
    /// of the lead left the entities' queues longer for the rest of the run: `bouncing` 500 on
    /// 2 workers, this 2-core machine under load (2026-11-27), 68 to 168 raises over 120 s, the
    /// live heap's median 18-19 MiB over the 10 s to 20 s and 24-25 MiB over the last 10 s;
    /// with no raise at all (an experiment), 17-18 MiB throughout. (Giving back room only beyond
    /// four times what they held, or 16 ticks, kept a drift of about 1 MiB over 100 s: queues
    /// settled at up to four times their need.) The room follows the lead, so a lead that stays
    /// where it is costs nothing here.
    fn give_back_room(&mut self, lead: u64) {
        self.line.shrink_to((lead as usize).saturating_add(2));
    }

    /// Forgets what is older than GVT - 1 (final and never read again), and the room of a
    /// longer `lead` than the one now.
    fn trim(&mut self, gvt: Tick, lead: u64) {
        let (base, lvt) = (self.line.base(), self.lvt());
        let new_base = if base + 1 < gvt && base < lvt {
            (gvt - 1).min(lvt)
        } else {
            base
        };
        while self.naps.front().is_some_and(|n| n.until <= new_base) {
            self.naps.pop_front();
        }
        if new_base > base {
            self.line.trim(new_base);
            self.give_back_room(lead);
        }
        let keep = ContactKey {
            tick: new_base,
            a: 0,
            b: 0,
        };
        if self
            .contacts
            .first_key_value()
            .is_some_and(|(k, _)| *k < keep)
        {
            self.contacts = self.contacts.split_off(&keep);
        }
    }

    /// The tick of a change of groups it may start now, before its tick is committed: its
    /// last step found its group must change at its LVT `t` (a fission, or a fusion: then every
    /// group it fuses with must be ready too, [`Entity::ready_to_change`], which the engine
    /// checks). See "Speculative changes".
    pub fn speculative_change(&self, gvt: Tick) -> Option<Tick> {
        let t = self.ending?;
        (t < gvt + SPECULATION_LEAD && self.ready_to_change(t)).then_some(t)
    }

    /// Whether its group may take part in a change at `t` before `t` is committed: it is at
    /// LVT `t`, was born before `t`, has recorded `t` (every message it sent at or before `t`
    /// is acknowledged) and is not waiting for an undo of its own birth.
    pub fn ready_to_change(&self, t: Tick) -> bool {
        self.grouped
            && self.lvt() == t
            && self.recorded == t + 1
            && self.birth < t
            && self.undo.is_none()
    }

    /// Whether it waits for the engine to undo its birth ([`Turn::Undo`]).
    pub fn undo_pending(&self) -> bool {
        self.undo.is_some()
    }

    /// Marks it as born of a speculative change.
    pub fn set_speculative(&mut self) {
        self.speculative = true;
    }

    /// Its birth is undone: everything it did after its birth tick is taken back (entries,
    /// naps, records; antievents sent for the collisions they had). `ended`: it had ended in a
    /// change of its own, whose children inherited its pending messages (so it hands on only
    /// the antievents this sends). Returns the messages it still waits acks for, those it
    /// held back, and its next tag.
    pub fn undone(
        mut self,
        env: &Env<'_>,
        ended: bool,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<UndoneEntity, String> {
        if ended {
            self.pending.clear();
        }
        if self.lvt() > self.birth {
            self.rollback(env, self.birth, send)?;
        }
        Ok(UndoneEntity {
            pending: self.pending.into_iter().collect(),
            stash: self.stash,
            next_tag: self.next_tag,
            stats: self.stats,
        })
    }

    /// Lives again after the change it ended in was undone: it waits for acks of `pending`
    /// (those of the deleted groups sent from its bodies, its own included), and its next
    /// writes take tags from `next_tag` on (so no entry of the deleted groups' is ever mistaken
    /// for one of its own). Its counters start again from zero (the old ones were counted when
    /// it ended).
    pub fn revive(&mut self, pending: &[PendingMsg], next_tag: u64) {
        self.pending = pending.iter().copied().collect();
        self.next_tag = self.next_tag.max(next_tag);
        self.ending = None;
        self.stats = EntityStats::default();
    }

    /// The change of groups at tick `t`, committed or speculative (rules 1 and 2 of
    /// [`super::group_rules`] over the groups ending there): `parents` are every entity whose
    /// group ends at `t` (each at LVT `t`, with `t` recorded; a group with a slow contact at `t`
    /// with another group comes with it). Returns the entities of the new groups, ascending by id, each starting
    /// at `t` with its parents' states, entries and tags there, the contacts at `t` with other
    /// groups (those with the parents' other groups included), and the acks its parents still
    /// wait for; and the changes, as the grouped reference reports them.
    pub fn regroup(
        rules: &Rules,
        parents: &[Entity],
        t: Tick,
    ) -> Result<(Vec<Entity>, Vec<super::group_rules::Change>), String> {
        if let Some(p) = parents.iter().find(|p| p.lvt() != t || p.recorded != t + 1) {
            return Err(format!(
                "entity {} cannot change groups at tick {t}: its LVT is {} and it recorded up to {}",
                p.id,
                p.lvt(),
                p.recorded
            ));
        }
        // Every body of the change: its entry at `t` (its parent's id, tag, box, state).
        let mut entry: BTreeMap<BodyId, TvhtEntry> = BTreeMap::new();
        let mut islands = Vec::with_capacity(parents.len());
        for p in parents {
            let isl = p.line.island(t);
            for (j, &body) in p.bodies.iter().enumerate() {
                let at = p.line.at(rules, body, t, j);
                entry.insert(
                    body,
                    TvhtEntry {
                        entity: p.id,
                        body,
                        tick: t,
                        aabb: at.aabb,
                        state: at.state,
                        tag: at.tag,
                        asleep: isl.asleep,
                    },
                );
            }
            islands.push(Island::clone(isl));
        }
        islands.sort_by_key(|i| i.bodies[0]);
        let states = StatesOf(&entry);
        let union: Vec<BodyId> = entry.keys().copied().collect();
        let boxes: Vec<Aabb> = union
            .iter()
            .map(|&b| rules.aabb(b as usize, &states[b as usize]))
            .collect();
        let candidates: Vec<(usize, usize)> = overlapping_pairs(&boxes)
            .into_iter()
            .map(|(i, j)| (union[i] as usize, union[j] as usize))
            .collect();
        let changes = super::group_rules::regroup(rules, &mut islands, &states, t, &candidates);
        let group_of = |b: BodyId| {
            islands
                .iter()
                .position(|i| i.bodies.binary_search(&b).is_ok())
                .expect("every body of a change is in a new group")
        };
        let mut kids: Vec<Entity> = islands
            .iter()
            .map(|isl| {
                let own: Vec<BodyState> = isl.bodies.iter().map(|&b| states[b as usize]).collect();
                let mut e = Entity::make(isl.bodies.clone(), t, own, None, Some(isl.clone()));
                debug_assert!(!isl.asleep, "a new group is awake");
                e.started = true;
                e.recorded = t + 1;
                for (j, b) in isl.bodies.iter().enumerate() {
                    let x = &entry[b];
                    e.line.set_tick(t, j, x.aabb, x.tag);
                }
                e
            })
            .collect();
        // The contacts at `t` between the new groups: those the TVHT found between different
        // parents, and those between pieces of one parent (never written against each other).
        for &(a, b) in &candidates {
            let (ga, gb) = (group_of(a as BodyId), group_of(b as BodyId));
            if ga != gb && rules.in_contact(a, &states[a], b, &states[b]) {
                let c = Contact {
                    a: entry[&(a as BodyId)],
                    b: entry[&(b as BodyId)],
                };
                kids[ga].contacts.insert(c.key(), c);
                kids[gb].contacts.insert(c.key(), c);
            }
        }
        for p in parents {
            let holder = |b: BodyId| p.holds(b).then(|| group_of(b));
            for c in p.contacts_at(t) {
                let (mine, other) = if p.holds(c.a.body) {
                    (c.a.body, c.b.body)
                } else {
                    (c.b.body, c.a.body)
                };
                if !entry.contains_key(&other) {
                    kids[group_of(mine)].contacts.insert(c.key(), *c);
                }
            }
            // A message waits for its ack in the group of the body it was sent from: the ack
            // comes back addressed to that body. (Taking either body of the instance sent the
            // ack of one joining two of this group's bodies to the other group, and the one
            // that waited never recorded again.)
            for &(inst, kind, from) in &p.pending {
                let g = holder(from).expect("a message sent from a body of this entity");
                kids[g].pending.insert((inst, kind, from));
            }
            for &b in &p.bodies {
                let k = &mut kids[group_of(b)];
                k.next_tag = k.next_tag.max(p.next_tag);
            }
        }
        Ok((kids, changes))
    }

    /// Its group's id in the island graph: (birth tick, smallest body).
    pub fn group_id(&self) -> super::GroupId {
        super::GroupId {
            birth: self.birth,
            rep: self.id,
        }
    }

    /// The pairs of its contacts at its LVT between two of its bodies (the island graph's
    /// edges of a new group).
    pub fn edges(&self) -> Vec<(BodyId, BodyId)> {
        self.line.last_island().map_or_else(Vec::new, |i| {
            i.warm
                .iter()
                .map(|(k, _): &(PairKey, _)| *k)
                .filter(|&(a, o)| self.holds(o) && a != o)
                .collect()
        })
    }
}

/// The states of the bodies of a change, by body id, from their entries at its tick.
struct StatesOf<'a>(&'a BTreeMap<BodyId, TvhtEntry>);

impl std::ops::Index<usize> for StatesOf<'_> {
    type Output = BodyState;

    fn index(&self, body: usize) -> &BodyState {
        &self.0[&(body as BodyId)].state
    }
}

/// The longest of `lo..hi` for which `holds` (monotone: it holds at `lo`, does not at `hi`,
/// and if at some tick or length then at every shorter one), within an eighth of how far it
/// reaches past `base`: halving, a few tests where a search to the tick would take a dozen.
/// `Entity::fly`'s two searches, for a span's length and for the ticks past a static kick.
fn longest_within_an_eighth(
    base: u64,
    mut lo: u64,
    mut hi: u64,
    mut holds: impl FnMut(u64) -> bool,
) -> u64 {
    while hi - lo > 1 + (lo - base) / 8 {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warp::group_rules::Island;
    use glam::Vec3;

    /// The search finds a tick that holds, short of the last one that holds by at most an
    /// eighth of how far it reaches past the base, for every threshold between its bounds.
    #[test]
    fn the_longest_within_an_eighth_holds_and_falls_short_by_at_most_an_eighth() {
        for base in [0, 100] {
            for lo in [base + 1, base + 4, base + 37] {
                for hi in lo + 1..lo + 400 {
                    for last in lo..hi {
                        let found = longest_within_an_eighth(base, lo, hi, |x| x <= last);
                        assert!(found <= last, "{found} does not hold (last {last})");
                        assert!(found >= lo);
                        assert!(
                            last - found <= (found - base) / 8,
                            "{found} falls {} short of {last} (base {base})",
                            last - found
                        );
                    }
                }
            }
        }
    }

    /// A body at rest at the origin, moving at `v`.
    fn state(v: Vec3) -> BodyState {
        BodyState {
            position: Vec3::ZERO,
            rotation: glam::Quat::IDENTITY,
            velocity: v,
            angular_velocity: Vec3::ZERO,
        }
    }

    /// An entry of `body` at `tick`, moving at `v` (no other field matters here).
    fn entry(body: BodyId, tick: Tick, v: Vec3) -> TvhtEntry {
        let state = state(v);
        TvhtEntry {
            entity: body,
            body,
            tick,
            aabb: Aabb::new(Vec3::ZERO, Vec3::ONE),
            state,
            tag: 1,
            asleep: false,
        }
    }

    /// A child of a speculative change hands every message about its birth tick or before to
    /// its parents (it asks for an undo), a fast kick at its birth tick included: what it took
    /// in itself would be lost if it were undone later. Messages about later ticks are its own.
    /// (Regression: a child that took kicks at its birth tick lost them on a later undo, and
    /// `cylinders` 500 got an extra fusion in about one run in 30 with 3 workers.)
    #[test]
    fn a_child_of_a_speculative_change_undoes_on_any_message_about_its_birth_tick() {
        let anchor = Anchor::at(0, state(Vec3::ZERO));
        let island = Island {
            bodies: vec![3, 4],
            anchors: vec![anchor; 2],
            ..Island::single(3, anchor)
        };
        let birth = 40;
        let mut kid = Entity::group_born(island, vec![state(Vec3::ZERO); 2], birth, birth);
        let kick = |t| {
            Msg::Event(Contact {
                a: entry(3, t, Vec3::ZERO),
                b: entry(9, t, Vec3::new(-20.0, 0.0, 0.0)),
            })
        };
        let anti = |t| {
            Msg::Antievent(Instance::of(&Contact {
                a: entry(4, t, Vec3::ZERO),
                b: entry(7, t, Vec3::ZERO),
            }))
        };
        assert!(!kid.undo_pending());
        kid.set_speculative();
        for (m, want) in [
            (kick(birth - 3), Some(birth - 3)),
            (kick(birth), Some(birth)),
            (anti(birth), Some(birth)),
            (anti(birth - 1), Some(birth - 1)),
            (kick(birth + 1), None),
            (anti(birth + 5), None),
            (
                Msg::EventAck(Instance::of(&Contact {
                    a: entry(3, birth, Vec3::ZERO),
                    b: entry(9, birth, Vec3::ZERO),
                })),
                None,
            ),
        ] {
            assert_eq!(kid.undoes(&m), want, "{m:?}");
        }
    }
}
