//! # The temporal volumetric hash table (TVHT)
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Section 4 and Algorithms 1, 6 and 7. Entities run
//! at different local times, so "who touches whom" must be asked per tick: after each substep
//! an entity *writes* the state of each of its bodies at that tick, and the table answers with
//! the other entities' bodies whose boxes overlap it at the same tick. On rollback the entity
//! *deletes* its entries after the rollback tick, and the table answers with the contacts those
//! entries had reported, so that antievents can be sent for them.
//!
//! ## Layout
//!
//! Space is cut into cubic **cells** of side `cell_size` (by default twice the largest side of
//! any dynamic body's box, so a body covers one or two cells per axis). A body's box at a tick
//! covers the cells `lo..=hi`, `lo = floor(min / s)`, `hi = floor(max / s)` per axis. The pair
//! pair (cell, slice), where a **slice** is `span_ticks` consecutive ticks (`tick / span_ticks`),
//! is hashed to one of a fixed, power-of-two number of **buckets**; a bucket holds the entries
//! (entity, body, tick, box, pre-event state) of every (cell, slice) hashed to it, and the
//! contact records owned by its cells. Hashing time too (the paper hashes the cell only) keeps
//! buckets short, and makes entities far apart in time touch different buckets, which is the
//! point of a *temporal* table: "the TVHT does not synchronize entities which are sufficiently
//! separated in space or time" (Section 3). Hashing the slice rather than the tick lets an
//! entity that writes a batch of consecutive ticks touch a few buckets, not one per tick: with
//! the STM every bucket of a section is copied and validated, and with locks each is a mutex,
//! so this cut the cost of a tick on `parallel` (no contacts) by about 2.5x under the STM. Nothing
//! bounds the world: any cell coordinate within ±2^30 is fine.
//!
//! ## Runs
//!
//! An entry is stored in the bucket of every cell its box covers (3.4 cells on average with
//! the default cell size), and a bucket holds a whole time slice of every body in its cells.
//! Copying 128-byte entries into each of those buckets, tick after tick, was most of the cost
//! of a write (and the STM copies every bucket a section changes). So a write request's
//! entries are made once, before its section: each body's entries at consecutive ticks (up to
//! 64) go into one shared, immutable allocation, a **run**; a bucket holds a run as its start
//! tick and a 64-bit mask of the ticks whose entries it holds (those whose cells hash to it),
//! not as copies. A write looks at a bucket's runs, which are about as many as the bodies in
//! its cells rather than 16 times that; a delete clears a tick's bit; a sweep clears the bits
//! behind the floor and drops the runs left empty. Everything above is unchanged: a bucket
//! holds, logically, the same entries as before (and `validate` checks the runs). On
//! `cylinders` 2000 this took a fifth to a third off a run's time and a fifth off its memory.
//! A run is freed once no bucket holds it: it counts the buckets that hold it, not the copies
//! of its pointer that the STM's copies of buckets make (module `tvht::runs`: with two workers,
//! `cylinders` 2000 under the STM took 1.25x less wall time).
//!
//! A run also keeps its writer and a box around its entries' boxes. A write section first
//! picks, in each of its buckets, the runs it can meet (other entities', at its ticks, whose
//! box touches the box around everything it writes): neighbours that do not come near over
//! the batch are then never looked at tick by tick. And it puts its own entries in its buckets
//! at the end, a run's bits at once per bucket, not one bit per tick (nothing in the section
//! looks for the writer's own entries in between). The two took 8% off the instructions of
//! `parallel` and 4-5% off `bouncing` and `cylinders`. When no bucket has a run to meet, nor a
//! sleep record, the section puts the entries in without looking at any step (away from
//! contacts, the common case: a tenth of a `parallel` run's instructions went to those looks).
//!
//! ## Exactly once
//!
//! Two boxes that overlap share a block of cells, so the pair could be found in several
//! buckets (the paper's Figure 4). Here a pair is reported only in its **owner cell**, the
//! componentwise maximum of the two boxes' `lo` cells: the cell holding the lowest corner of
//! the boxes' intersection. Both boxes cover it (`lo_b <= hi_a` follows from `min_b <= max_a`
//! and the monotonicity of `floor`), so both entries are in the owner cell's bucket. A write
//! scans each of its distinct buckets once and reports an overlapping entry of another entity
//! at the same tick only if the bucket is the owner cell's bucket; the writer therefore finds
//! each such pair exactly once, and only the *second* writer finds it (the first found nothing
//! then). The contact is recorded in that bucket, so a later delete of either entry — which
//! scans the same owner bucket, since its box covers the owner cell too — removes the record
//! and returns the contact exactly once; a re-write finds and reports the pair again.
//!
//! Each `write`, `write_steps`, `delete` and `delete_steps` call is **one section** of the
//! [`sync`](crate::sync) seam over all the buckets it touches (Algorithm 1 for the lock build,
//! one transaction for the STM build), so no other write or delete can slip in between finding
//! a pair and recording it: the invariant "every overlapping pair of live entries of different
//! entities at the same tick has exactly one contact record, in its owner bucket" holds after
//! every section, and [`Tvht::validate`] checks it. Like Algorithm 6, [`Tvht::write_steps`]
//! takes the buckets of a whole step at once and writes substeps in order until the first one
//! that meets a contact ([`Tvht::write_steps_until`]: a contact that matters, for the engine
//! one that makes an event); like Algorithm 7, [`Tvht::delete_steps`] deletes a whole rollback in
//! one section.
//!
//! A contact carries both entries' stored (pre-event) states, sorted so that `a.body < b.body`,
//! so the collision response can be computed from both bodies' states at that tick no matter
//! which of the two entities detected it (`DESIGN.md`, "Determinism is a contract"). The
//! contact lists returned are sorted by (tick, a.body, b.body).
//!
//! ## Reclamation
//!
//! Entries and contacts before GVT are final and never read again. Every write and every nap
//! notes the buckets it changed in a **ledger**, under the time slice of the newest tick it
//! put there; [`Tvht::prune_touched`] raises the table's floor and sweeps the buckets noted
//! under each slice that the floor has wholly passed (the engine calls it as GVT advances), so
//! everything old is swept about one slice after it falls behind, and only buckets that hold
//! something are looked at. (The engine used to sweep the whole table round robin, once per
//! window, [`Tvht::prune_step`]: most buckets it looked at were empty, 5-7% of a run's time,
//! and entries stayed up to a window behind the GVT.) [`Tvht::prune_before`] sweeps all of it
//! at once; writes also drop entries below the floor from the buckets they change. Writes
//! below the floor are refused. So the table holds about as many ticks of entries as
//! entities run ahead, and its memory stays flat over a long run.
//!
//! ## Sleep records
//!
//! A sleeping contact group (issue #5; Mirtich's contact groups, seed 001, Section 4.4) does
//! not move, so its entries would repeat tick after tick. With `sleep_records` on, the table
//! has a second half of buckets hashed by cell alone, and [`Tvht::sleep`] puts each body of a
//! sleeping group there once for a whole interval `from..until`, a copy in the sleep bucket of
//! each cell of its box, instead of one entry per tick. A record is a run of identical entries,
//! and keeps their rules: it meets the entries of other entities at its ticks exactly once,
//! found by whichever is written second (an entry's write also names the sleep buckets of its
//! cells; a record's write names the buckets of its cells at every time slice it spans), and
//! stops at the first tick that meets one; the contact is kept, with a copy of the entry, in
//! the sleep bucket of the owner cell, and given back once by the entry's delete or by the
//! record's [`Tvht::wake`], which cuts the record short when the group is rolled back. A sleep
//! record meets only *awake* entries: two sleeping bodies neither kick nor fuse with each other
//! (the rules of `group_rules`), so nothing is lost by not looking. A body has either an entry
//! or a record at a tick, never both. `validate` checks all of it.
//!
//! Static bodies are not in the table: each entity checks them itself (`DESIGN.md`).

use super::{BodyId, EntityId, Tick};
use crate::dynamics::BodyState;
use crate::geometry::Aabb;
use crate::primitive::{AtomicU64, Mutex, Ordering};
use crate::sync::{Backend, Class, Table, View};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

mod runs;
use runs::{Graveyard, RunRef, pin};

/// The ledger (see "Reclamation"): a ring of this many slices, each in this many shards
/// (a writer notes in the shard of its entity, so writers rarely share a lock).
const LEDGER_RING: usize = 32;
const LEDGER_SHARDS: usize = 8;

/// One list of the ledger: (slice, bucket) notes.
type Notes = Vec<(Tick, usize)>;

/// Cell coordinates beyond this magnitude are refused (their hash inputs stay exact).
const MAX_CELL_COORD: f32 = (1u32 << 30) as f32;

/// The table's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TvhtConfig {
    /// Number of buckets (a power of two).
    pub buckets: usize,
    /// Side of a cubic cell, in metres (finite, > 0).
    pub cell_size: f32,
    /// A body whose box covers more cells than this is refused (a sign of a wrong cell size or
    /// of a body that exploded).
    pub max_cells_per_body: usize,
    /// Ticks per time slice (a power of two): the bucket of an entry is the hash of its cell
    /// and of `tick / span_ticks`, so consecutive ticks of one cell share a bucket (see
    /// "Layout" in the module documentation). 1 hashes every tick apart.
    pub span_ticks: u64,
    /// Whether the table also keeps sleep records ([`Tvht::sleep`]): a second set of
    /// `buckets` buckets, hashed by cell alone, which every write and delete then also
    /// names. Off, a table costs nothing for them.
    pub sleep_records: bool,
}

impl TvhtConfig {
    /// The defaults for a scene: `span_ticks` = [`DEFAULT_SPAN_TICKS`]; `buckets` = the next
    /// power of two of `4 * bodies * window / span_ticks`, between 2^10 and 2^20 (every body
    /// keeps about `window / span_ticks` slices of entries, each in a few cells, so a bucket
    /// holds the entries of about one (cell, slice): the STM clones buckets per attempt, so
    /// the load factor is kept low); `cell_size` = twice `largest_side`, the largest side of
    /// any dynamic body's box (1 m when that is not a positive finite number). A bucket costs
    /// about 80 bytes when empty.
    pub fn for_scene(bodies: usize, largest_side: f32, window: u64) -> Self {
        Self::for_scene_with_span(bodies, largest_side, window, DEFAULT_SPAN_TICKS)
    }

    /// [`TvhtConfig::for_scene`] with time slices of `span_ticks` ticks (a power of two, which
    /// [`Tvht::new`] checks).
    pub fn for_scene_with_span(
        bodies: usize,
        largest_side: f32,
        window: u64,
        span_ticks: u64,
    ) -> Self {
        let want = (bodies as u64)
            .saturating_mul(4 * window.max(1))
            .div_ceil(span_ticks.max(1))
            .clamp(1 << 10, 1 << 20) as usize;
        let cell_size = if largest_side.is_finite() && largest_side > 0.0 {
            2.0 * largest_side
        } else {
            1.0
        };
        TvhtConfig {
            buckets: want.next_power_of_two(),
            cell_size,
            max_cells_per_body: 512,
            span_ticks,
            sleep_records: false,
        }
    }

    /// The same, with sleep records kept (or not).
    pub fn with_sleep_records(self, on: bool) -> Self {
        TvhtConfig {
            sleep_records: on,
            ..self
        }
    }
}

/// The engine's time slice: [`TvhtConfig::span_ticks`] for [`TvhtConfig::for_scene`] (`run
/// --tvht-span` sets another). An entity writes up to [`super::entity::BATCH`] ticks per
/// section, so a section touches about `cells * (BATCH / span + 1)` buckets, and the ledger
/// sweeps each of them once after the floor passes its slice. 16 was measured best when
/// buckets held copies of every tick's entry; since they hold runs (a run's ticks at once,
/// see "Runs"), a slice of 64 ticks (a run's most) names 2-4x fewer buckets per write and
/// sweep: on the 2-core development machine (2026-11-26, N = 2000, 0.5 s) 1.4x faster on
/// `parallel`, 1.2x on `cylinders` and 1.1-1.2x on `bouncing` with either backend, and as fast
/// or faster with contact groups (cylinders, pyramids, avalanche), against 16. Neighbours in a
/// cell then share a bucket over 64 ticks, not 16: with 16 workers on 2 cores the STM's TVHT
/// abort ratio went from 0.01-0.09 to 0.02-0.10 (the many-core trade is to be measured with
/// `--tvht-span`, README).
pub const DEFAULT_SPAN_TICKS: u64 = 64;

/// One body's state written at a tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyEntry {
    pub body: BodyId,
    /// Its box at the tick (it may be enlarged, e.g. swept, as long as it covers the body).
    pub aabb: Aabb,
    /// The pre-event state at the tick.
    pub state: BodyState,
    /// Whether the body's contact group was asleep at the tick (with contact groups: two
    /// sleeping bodies neither fuse nor kick each other; always false without them).
    pub asleep: bool,
}

/// The bodies of one entity at one tick.
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    pub tick: Tick,
    pub bodies: &'a [BodyEntry],
}

/// A stored entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TvhtEntry {
    pub entity: EntityId,
    pub body: BodyId,
    pub tick: Tick,
    pub aabb: Aabb,
    pub state: BodyState,
    /// The writer's tag for this write ([`Tvht::write_steps_tagged`]; 0 for the untagged
    /// calls). The warp engine tags every write with a serial number of its entity, so that a
    /// contact names exactly which incarnation of each entry it joined: an entry deleted by a
    /// rollback and written again at the same tick, even with the same state, is a new one.
    pub tag: u64,
    /// As [`BodyEntry::asleep`].
    pub asleep: bool,
}

/// A candidate contact: two bodies of different entities whose boxes overlap at one tick.
/// `a.body < b.body`, whoever detected it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    pub a: TvhtEntry,
    pub b: TvhtEntry,
}

/// A contact's identity: (tick, lower body, higher body).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContactKey {
    pub tick: Tick,
    pub a: BodyId,
    pub b: BodyId,
}

impl Contact {
    fn new(x: TvhtEntry, y: TvhtEntry) -> Contact {
        if x.body < y.body {
            Contact { a: x, b: y }
        } else {
            Contact { a: y, b: x }
        }
    }

    /// The tick of the contact.
    pub fn tick(&self) -> Tick {
        self.a.tick
    }

    /// Its identity.
    pub fn key(&self) -> ContactKey {
        ContactKey {
            tick: self.a.tick,
            a: self.a.body,
            b: self.b.body,
        }
    }

    /// The side that does not belong to `entity` (None if neither or both do).
    pub fn other(&self, entity: EntityId) -> Option<&TvhtEntry> {
        match (self.a.entity == entity, self.b.entity == entity) {
            (true, false) => Some(&self.b),
            (false, true) => Some(&self.a),
            _ => None,
        }
    }
}

/// Why a TVHT operation was refused (nothing was changed).
#[derive(Clone, Debug, PartialEq)]
pub enum TvhtError {
    /// The configuration is unusable.
    Config(String),
    /// A box has a NaN or infinite coordinate, `min > max`, or lies beyond ±2^30 cells.
    BadAabb { body: BodyId, tick: Tick },
    /// A box covers more cells than `max_cells_per_body`.
    TooManyCells {
        body: BodyId,
        tick: Tick,
        cells: u64,
        max: usize,
    },
    /// The tick is before the table's floor (behind GVT).
    BehindFloor { tick: Tick, floor: Tick },
    /// The body already has an entry at this tick (or is named twice in one request). Found
    /// when the entry there shares a bucket with the new one, as a tick written again with
    /// the same box does; one in other cells is not seen (the table keeps no index by body:
    /// the engine deletes a tick before it writes it again, and `validate` reports two
    /// different copies of an entry).
    Duplicate { body: BodyId, tick: Tick },
    /// A delete named an entry that the table does not hold for this entity.
    NotFound {
        entity: EntityId,
        body: BodyId,
        tick: Tick,
    },
    /// A delete gave a box different from the one written.
    BoundsMismatch { body: BodyId, tick: Tick },
    /// `validate` found a broken invariant.
    Invalid(String),
}

impl fmt::Display for TvhtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TvhtError::Config(s) => write!(f, "bad TVHT configuration: {s}"),
            TvhtError::BadAabb { body, tick } => write!(
                f,
                "body {body} at tick {tick}: bounding box is not finite, inverted or too far out"
            ),
            TvhtError::TooManyCells {
                body,
                tick,
                cells,
                max,
            } => write!(
                f,
                "body {body} at tick {tick}: bounding box covers {cells} cells (at most {max})"
            ),
            TvhtError::BehindFloor { tick, floor } => {
                write!(f, "tick {tick} is behind the TVHT floor {floor} (GVT)")
            }
            TvhtError::Duplicate { body, tick } => {
                write!(f, "body {body} already has an entry at tick {tick}")
            }
            TvhtError::NotFound { entity, body, tick } => write!(
                f,
                "entity {entity} has no entry for body {body} at tick {tick}"
            ),
            TvhtError::BoundsMismatch { body, tick } => write!(
                f,
                "body {body} at tick {tick}: delete gave a box other than the one written"
            ),
            TvhtError::Invalid(s) => write!(f, "TVHT invariant broken: {s}"),
        }
    }
}

impl std::error::Error for TvhtError {}

/// A contact record, kept in the owner cell's bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ContactRec {
    tick: Tick,
    a: BodyId,
    b: BodyId,
}

/// A sleep record: one body of a sleeping group, present with one box and one (pre-event)
/// state at every tick of `from..until` (see "Sleep records" in the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
struct SleepRec {
    entity: EntityId,
    body: BodyId,
    from: Tick,
    until: Tick,
    aabb: Aabb,
    state: BodyState,
    tag: u64,
}

impl SleepRec {
    fn covers(&self, tick: Tick) -> bool {
        self.from <= tick && tick < self.until
    }

    /// The record as an entry at `tick`.
    fn at(&self, tick: Tick) -> TvhtEntry {
        TvhtEntry {
            entity: self.entity,
            body: self.body,
            tick,
            aabb: self.aabb,
            state: self.state,
            tag: self.tag,
            asleep: true,
        }
    }
}

/// A contact between an awake entry and a sleep record at `tick`, kept with the record in the
/// sleep bucket of their owner cell.
#[derive(Clone, Copy, Debug, PartialEq)]
struct SleepContact {
    awake: TvhtEntry,
    sleeper: BodyId,
}

/// A run: entries of one body written by one section at consecutive ticks, as one bucket
/// holds them (see "Runs" in the module documentation). The entries themselves live in
/// `entries`, shared by the run's copies in every bucket its ticks' cells hash to: entry `i`
/// is at tick `first + i`, and this bucket holds it iff bit `i` of `present` is set.
#[derive(Clone, Copy, Debug)]
struct Run {
    /// The writer of every entry of the run (so a write skips its own runs without reading
    /// an entry).
    entity: EntityId,
    /// A box around every entry's box (so a write whose boxes are all clear of it skips the
    /// run, see "Runs" in the module documentation).
    bounds: Aabb,
    body: BodyId,
    first: Tick,
    present: u64,
    entries: RunRef,
}

impl Run {
    /// The entry at `tick`, if this bucket holds it.
    #[inline]
    fn at(&self, tick: Tick) -> Option<&TvhtEntry> {
        let i = tick.wrapping_sub(self.first);
        (i < RUN_TICKS && self.present >> i & 1 == 1).then(|| &self.entries.entries()[i as usize])
    }

    /// The entries this bucket holds, in tick order.
    fn iter(&self) -> impl Iterator<Item = &TvhtEntry> + '_ {
        bits(self.present).map(|i| &self.entries.entries()[i])
    }

    /// The bits of `present` at ticks `from ..= to`.
    #[inline]
    fn present_within(&self, from: Tick, to: Tick) -> u64 {
        let Some(hi) = to.checked_sub(self.first) else {
            return 0;
        };
        let lo = from.saturating_sub(self.first);
        if lo >= RUN_TICKS || lo > hi {
            return 0;
        }
        let upto = if hi >= RUN_TICKS - 1 {
            !0
        } else {
            (2u64 << hi) - 1
        };
        self.present & upto & (!0u64 << lo)
    }

    /// The indices of the entries held at ticks `from ..= to`, in tick order.
    fn held_within(&self, from: Tick, to: Tick) -> impl Iterator<Item = usize> + use<> {
        bits(self.present_within(from, to))
    }
}

/// The indices of the set bits of `mask`, lowest first.
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros();
            mask &= mask - 1;
            i as usize
        })
    })
}

/// Ticks per run at most: one bit each in [`Run::present`].
const RUN_TICKS: u64 = 64;

/// One bucket: entries (in runs) and contact records of the (cell, tick)s hashed to it; or,
/// in the sleep half of the table, the sleep records of the cells hashed to it and their
/// contacts.
#[derive(Clone, Debug, Default)]
struct Bucket {
    runs: Vec<Run>,
    contacts: Vec<ContactRec>,
    records: Vec<SleepRec>,
    woken: Vec<SleepContact>,
}

impl Bucket {
    /// Removes what is behind `floor`; returns the entries removed. The runs it no longer
    /// holds go to `dropped` (their holds to let go of once the section commits).
    fn prune(&mut self, floor: Tick, dropped: &mut Vec<RunRef>) -> usize {
        let mut removed = 0;
        if let Some(last) = floor.checked_sub(1) {
            self.runs.retain_mut(|r| {
                let old = r.present_within(0, last);
                removed += old.count_ones() as usize;
                r.present &= !old;
                if r.present == 0 {
                    dropped.push(r.entries);
                }
                r.present != 0
            });
        }
        self.contacts.retain(|c| c.tick >= floor);
        self.records.retain(|r| r.until > floor);
        self.woken.retain(|c| c.awake.tick >= floor);
        // A bucket serves different (cell, slice) pairs over a run: room kept for a crowded
        // cell of one slice would stay with it, and in time every bucket would keep the room
        // of the most crowded cell ever hashed to it. (Found: with the lock backend, which
        // changes buckets in place, a `bouncing` 110 run's heap grew without bound, and
        // `pyramids` 10010 with contact groups reached 21 GB; the STM, which then copied a
        // bucket at each write with room for one more entry only, was spared.)
        shrink(&mut self.runs);
        shrink(&mut self.contacts);
        shrink(&mut self.records);
        shrink(&mut self.woken);
        removed
    }

    fn has_old(&self, floor: Tick) -> bool {
        self.runs
            .iter()
            .any(|r| r.first + Tick::from(r.present.trailing_zeros()) < floor)
            || self.contacts.iter().any(|c| c.tick < floor)
            || self.records.iter().any(|r| r.until <= floor)
            || self.woken.iter().any(|c| c.awake.tick < floor)
    }

    /// The record of `body` covering `tick`, if any.
    fn record(&self, body: BodyId, tick: Tick) -> Option<&SleepRec> {
        self.records
            .iter()
            .find(|r| r.body == body && r.covers(tick))
    }

    /// The entry of `body` at `tick`, if any.
    fn find(&self, body: BodyId, tick: Tick) -> Option<&TvhtEntry> {
        self.runs
            .iter()
            .filter(|r| r.body == body)
            .find_map(|r| r.at(tick))
    }

    /// The entries at ticks `from ..= to`.
    fn within(&self, from: Tick, to: Tick) -> impl Iterator<Item = &TvhtEntry> + '_ {
        self.runs
            .iter()
            .flat_map(move |r| r.held_within(from, to).map(|i| &r.entries.entries()[i]))
    }

    /// The (tick, body) of every entry held of the bodies `bodies.0 ..= bodies.1` at ticks
    /// `from ..= to`, from the runs alone (without reading the entries: a cheap check for
    /// entries already there).
    fn held(
        &self,
        (from, to): (Tick, Tick),
        bodies: (BodyId, BodyId),
    ) -> impl Iterator<Item = (Tick, BodyId)> + '_ {
        self.runs
            .iter()
            .filter(move |r| bodies.0 <= r.body && r.body <= bodies.1)
            .flat_map(move |r| {
                r.held_within(from, to)
                    .map(|i| (r.first + i as Tick, r.body))
            })
    }

    /// Every entry held.
    fn entries(&self) -> impl Iterator<Item = &TvhtEntry> + '_ {
        self.runs.iter().flat_map(|r| r.iter())
    }

    /// How many entries are held.
    fn len(&self) -> usize {
        self.runs
            .iter()
            .map(|r| r.present.count_ones() as usize)
            .sum()
    }

    /// Holds the entries of `run` (a run of the request) whose bits are set in `mask`: sets
    /// them in the bucket's copy of the run, adding the run if this bucket has none yet (then
    /// returns true: a new hold). The section adds its runs last, so they are looked for from
    /// the end.
    fn hold(&mut self, (run, bounds): (RunRef, Aabb), mask: u64) -> bool {
        if let Some(r) = self.runs.iter_mut().rev().find(|r| r.entries == run) {
            r.present |= mask;
            false
        } else {
            let first = &run.entries()[0];
            self.runs.push(Run {
                entity: first.entity,
                bounds,
                body: first.body,
                first: first.tick,
                present: mask,
                entries: run,
            });
            true
        }
    }

    /// Lets go of the entry of `body` at `tick` (which it holds); a run left empty goes to
    /// `dropped`.
    fn release(&mut self, body: BodyId, tick: Tick, dropped: &mut Vec<RunRef>) {
        if let Some(j) = self
            .runs
            .iter()
            .position(|r| r.body == body && r.at(tick).is_some())
        {
            let r = &mut self.runs[j];
            r.present &= !(1 << (tick - r.first));
            if r.present == 0 {
                dropped.push(self.runs.swap_remove(j).entries);
            }
        }
    }
}

/// Gives back a vector's room beyond half again its length (and a little), and all of it when it
/// is empty: amortised, since it runs only when old entries are swept out. (An emptied bucket
/// that kept a little room would keep it until its cell is visited again; over a run that
/// crosses many cells, every bucket would.)
fn shrink<T>(v: &mut Vec<T>) {
    if v.is_empty() {
        *v = Vec::new();
    } else if v.capacity() > 2 * v.len() + 8 {
        v.shrink_to(v.len() + v.len() / 2 + 4);
    }
}

type Cell = [i32; 3];

/// The cells `lo ..= hi`, x outermost.
fn cells(lo: Cell, hi: Cell) -> Cells {
    Cells {
        lo,
        hi,
        next: (lo[0] <= hi[0] && lo[1] <= hi[1] && lo[2] <= hi[2]).then_some(lo),
    }
}

/// The iterator of [`cells`]: a counter over three axes (nested `flat_map`s kept the state of
/// three iterators, and planning a body's cells cost about a thousand instructions).
struct Cells {
    lo: Cell,
    hi: Cell,
    next: Option<Cell>,
}

impl Iterator for Cells {
    type Item = Cell;

    #[inline]
    fn next(&mut self) -> Option<Cell> {
        let c = self.next?;
        let mut n = c;
        self.next = 'step: {
            for axis in (0..3).rev() {
                if n[axis] < self.hi[axis] {
                    n[axis] += 1;
                    break 'step Some(n);
                }
                n[axis] = self.lo[axis];
            }
            None
        };
        Some(c)
    }
}

/// Appends the distinct values of `new` to `keys`, sorted; returns their range.
fn push_distinct(
    keys: &mut Vec<usize>,
    new: impl Iterator<Item = usize>,
) -> std::ops::Range<usize> {
    let start = keys.len();
    keys.extend(new);
    let mine = &mut keys[start..];
    mine.sort_unstable();
    let mut n = 0;
    for i in 0..mine.len() {
        if i == 0 || mine[i] != mine[n - 1] {
            mine[n] = mine[i];
            n += 1;
        }
    }
    keys.truncate(start + n);
    start..start + n
}

/// The cells of one body's box at one tick and the distinct buckets they hash to: sorted,
/// `keys[buckets]` of the request's flat key list ([`Planned::keys`]).
#[derive(Clone)]
struct Plan {
    body: BodyId,
    lo: Cell,
    hi: Cell,
    /// `lo` and `hi` as floats, when every coordinate is below 2^24 in magnitude (so they
    /// and the next integers are exact): see [`Plan::keeps`].
    cells_f: Option<(glam::Vec3, glam::Vec3)>,
    slice: Tick,
    buckets: std::ops::Range<usize>,
    /// The distinct sleep buckets of its cells (empty without sleep records).
    sleep: std::ops::Range<usize>,
}

impl Plan {
    /// Whether a box whose corners over the cell side are `smin <= smax` (as
    /// [`Tvht::cell_range`] scales them) covers exactly this plan's cells: `floor(smin) = lo`
    /// and `floor(smax) = hi` per axis, tested as `lo <= smin < lo + 1` (and the same for `hi`),
    /// which is exact while the cells' coordinates are below 2^24. Such a box passes every
    /// check of `cell_range` (its corners are finite and within the bounds, and its cells are
    /// this plan's, already counted): a body that stays in its cells, tick after tick, is then
    /// planned with comparisons alone. A NaN fails every comparison.
    #[inline]
    fn keeps(&self, b: &Aabb, smin: glam::Vec3, smax: glam::Vec3) -> bool {
        let Some((lo, hi)) = self.cells_f else {
            return false;
        };
        let one = glam::Vec3::ONE;
        b.min.cmple(b.max).all()
            & smin.cmpge(lo).all()
            & smin.cmplt(lo + one).all()
            & smax.cmpge(hi).all()
            & smax.cmplt(hi + one).all()
    }
}

/// A checked request: its distinct plans, each body's plan at each step, the flat list of
/// the plans' buckets, and the request's (tick, body) pairs, sorted. A body whose cells and
/// time slice stay the same from one step to the next keeps its plan: a batch of consecutive
/// ticks has a plan per time slice or cell change, not per tick.
#[derive(Default)]
struct Planned {
    /// The distinct plans, in order of first use.
    plans: Vec<Plan>,
    /// For each body of each step, in request order (step by step): its plan in `plans`.
    uses: Vec<u32>,
    keys: Vec<usize>,
    seen: Vec<(Tick, BodyId)>,
    /// The request's distinct keys, sorted: the section's [`View::keys`].
    sorted: Vec<usize>,
    /// For each of `keys`, its position in `sorted` (for [`View::at`]: no search per look).
    at: Vec<usize>,
}

impl Planned {
    /// The plans of each step (indices into `plans`, one per body), in order, zipped with the
    /// steps.
    fn per_step<'p, 's>(
        &'p self,
        steps: &'p [Step<'s>],
    ) -> impl Iterator<Item = (&'p Step<'s>, &'p [u32])> + 'p {
        let mut at = 0;
        steps.iter().map(move |s| {
            let ps = &self.uses[at..at + s.bodies.len()];
            at += s.bodies.len();
            (s, ps)
        })
    }

    /// Plan `i`.
    #[inline]
    fn plan(&self, i: u32) -> &Plan {
        &self.plans[i as usize]
    }

    /// The distinct buckets of a plan.
    fn buckets(&self, p: &Plan) -> &[usize] {
        &self.keys[p.buckets.clone()]
    }

    /// The view positions of a plan's distinct buckets.
    fn slots(&self, p: &Plan) -> &[usize] {
        &self.at[p.buckets.clone()]
    }

    /// The view positions of a plan's distinct sleep buckets.
    fn sleep_slots(&self, p: &Plan) -> &[usize] {
        &self.at[p.sleep.clone()]
    }

    /// The distinct sleep buckets of a plan.
    fn sleep_buckets(&self, p: &Plan) -> &[usize] {
        &self.keys[p.sleep.clone()]
    }

    /// The plans used by the first `n` bodies of the request (in request order): plans are
    /// numbered in order of first use, so these are a prefix of `plans`.
    fn used_by_first(&self, n: usize) -> &[Plan] {
        let last = self.uses[..n].iter().max().map_or(0, |&i| i as usize + 1);
        &self.plans[..last]
    }
}

/// The vectors a write request plans and makes its runs in, kept by a writer from one request
/// to the next ([`Tvht::write_steps_buffered`]; the engine keeps one per worker): emptied,
/// with their room. (Made and freed for every request, they were ten allocations a write,
/// 1.5% of a `parallel` run's instructions.)
#[derive(Default)]
pub struct WriteBuffers {
    planned: Planned,
    prev: Vec<u32>,
    slots: Vec<(usize, usize)>,
    open_runs: Vec<(usize, BodyId, Tick)>,
    open: Vec<usize>,
    runs: Vec<RunRef>,
    bounds: Vec<Aabb>,
}

/// Takes `v` out of its buffer, emptied.
fn emptied<T>(v: &mut Vec<T>) -> Vec<T> {
    let mut v = std::mem::take(v);
    v.clear();
    v
}

impl WriteBuffers {
    /// Takes back a request's plans' vectors.
    fn keep_planned(&mut self, p: Planned) {
        self.planned = p;
    }
}

/// A write request's entries in runs (see "Runs" in the module documentation): each body's
/// entries at consecutive ticks, at most [`RUN_TICKS`] of them, share one allocation. Each
/// run is made with a hold for the request and one for each bucket of its section (see
/// [`runs`]); the request settles them when dropped, by what its committed section put.
struct Runs<'g> {
    runs: Vec<RunRef>,
    /// Holds reserved per run: the section's buckets.
    reserved: usize,
    /// Per run, the buckets that took it in the committed section (empty until it commits).
    taken: Vec<u32>,
    graveyard: &'g Graveyard,
    /// Each run's [`Run::bounds`].
    bounds: Vec<Aabb>,
    /// A box around all of the request's boxes.
    all: Aabb,
    /// For each body of each step (the order of [`Planned::plans`]): its run and its index
    /// there.
    slots: Vec<(usize, usize)>,
}

impl Runs<'_> {
    /// The run (with its bounds) and index of the `j`th entry of the request.
    fn slot(&self, j: usize) -> ((RunRef, Aabb), usize) {
        let (r, i) = self.slots[j];
        ((self.runs[r], self.bounds[r]), i)
    }
}

impl Runs<'_> {
    /// Settles every run's holds (see [`Runs`]).
    fn settle(&mut self) {
        for (i, r) in self.runs.drain(..).enumerate() {
            let taken = self.taken.get(i).map_or(0, |&n| n as usize);
            r.settle(self.reserved, taken, self.graveyard);
        }
    }

    /// Settles the runs and gives the vectors back to `bufs`.
    fn finish(mut self, bufs: &mut WriteBuffers) {
        self.settle();
        bufs.runs = std::mem::take(&mut self.runs);
        bufs.slots = std::mem::take(&mut self.slots);
        bufs.bounds = std::mem::take(&mut self.bounds);
    }
}

impl Drop for Runs<'_> {
    fn drop(&mut self) {
        // A section that panicked may have put runs in buckets it changed in place (locks):
        // they are leaked rather than freed under a bucket (the bucket's mutex is poisoned,
        // so nothing reads it again).
        if std::thread::panicking() {
            return;
        }
        self.settle();
    }
}

/// The runs of a write request; step `i`'s entries are tagged `first_tag + i`.
///
/// Two passes: the first assigns each entry its run and place there, the second makes each
/// run's entries in one allocation of its final size. (Pushing entries into growing vectors
/// and then moving each into an `Arc` copied every 128-byte entry three to five times: a
/// third of the instructions of a `parallel` write outside its section.)
fn runs_of<'g>(
    entity: EntityId,
    first_tag: u64,
    steps: &[Step<'_>],
    (reserved, graveyard): (usize, &'g Graveyard),
    bufs: &mut WriteBuffers,
) -> Runs<'g> {
    let n = steps.iter().map(|s| s.bodies.len()).sum();
    let mut slots = emptied(&mut bufs.slots);
    slots.reserve(n);
    // Per run: its length so far and the (body, tick) of its last entry.
    let mut open_runs = emptied(&mut bufs.open_runs);
    // The run of the body at each place of the step before (a group lists its bodies in the
    // same order at every step).
    let mut open = emptied(&mut bufs.open);
    for s in steps {
        for (j, b) in s.bodies.iter().enumerate() {
            let run = match open.get(j).copied() {
                Some(r)
                    if open_runs[r].1 == b.body
                        && open_runs[r].2.checked_add(1) == Some(s.tick)
                        && (open_runs[r].0 as u64) < RUN_TICKS =>
                {
                    r
                }
                _ => {
                    open_runs.push((0, b.body, s.tick));
                    open_runs.len() - 1
                }
            };
            let r = &mut open_runs[run];
            slots.push((run, r.0));
            *r = (r.0 + 1, b.body, s.tick);
            if j < open.len() {
                open[j] = run;
            } else {
                open.push(run);
            }
        }
    }
    let entry = |i: usize, j: usize| {
        let (s, b) = (&steps[i], &steps[i].bodies[j]);
        TvhtEntry {
            entity,
            body: b.body,
            tick: s.tick,
            aabb: b.aabb,
            state: b.state,
            tag: first_tag.wrapping_add(i as u64),
            asleep: b.asleep,
        }
    };
    let mut runs = emptied(&mut bufs.runs);
    if open_runs.len() == 1 && steps.len() == n {
        // One body at every step (every entity without contact groups): the request is its
        // run, in order, with no places to look up (the general path below costs 2% more of
        // a `parallel` run's instructions).
        runs.push(RunRef::new((0..n).map(|i| entry(i, 0)).collect(), reserved));
    } else {
        // Each run's (step, place) pairs, runs one after another.
        let mut at: Vec<usize> = Vec::with_capacity(open_runs.len() + 1);
        let mut total = 0;
        for r in &open_runs {
            at.push(total);
            total += r.0;
        }
        at.push(total);
        let mut places = vec![(0, 0); total];
        let mut k = 0;
        for (i, s) in steps.iter().enumerate() {
            for j in 0..s.bodies.len() {
                let (run, x) = slots[k];
                places[at[run] + x] = (i, j);
                k += 1;
            }
        }
        runs.extend(at.windows(2).map(|w| {
            RunRef::new(
                places[w[0]..w[1]]
                    .iter()
                    .map(|&(i, j)| entry(i, j))
                    .collect(),
                reserved,
            )
        }));
    }
    bufs.open_runs = open_runs;
    bufs.open = open;
    let mut bounds = emptied(&mut bufs.bounds);
    bounds.extend(runs.iter().map(|r: &RunRef| {
        r.entries()
            .iter()
            .map(|e| e.aabb)
            .reduce(|a, b| a.merge(&b))
            .expect("a run has an entry")
    }));
    let all = bounds
        .iter()
        .copied()
        .reduce(|a, b| a.merge(&b))
        .unwrap_or(Aabb {
            min: glam::Vec3::INFINITY,
            max: glam::Vec3::NEG_INFINITY,
        });
    Runs {
        runs,
        reserved,
        taken: Vec::new(),
        graveyard,
        bounds,
        all,
        slots,
    }
}

/// The entries a write's section has yet to put in its buckets, gathered per body while its
/// steps share a plan (the same buckets) and a run, and put there at once ([`Bucket::hold`]
/// with a mask): a batch of consecutive ticks in one time slice then changes each bucket once,
/// not once per tick. Nothing in the section looks for the writer's own entries in between
/// (duplicates are refused before anything is written, and a write meets only other
/// entities' entries), so putting them in later changes no answer. It also counts, per run,
/// the buckets that took it (the holds to add once the section commits).
struct Holds {
    /// Per body place in the step: the plan, the run, and the entries' bits.
    open: Vec<Option<(u32, usize, u64)>>,
    /// Per run of the request: the buckets that took it.
    added: Vec<u32>,
}

impl Holds {
    fn new(runs: &Runs) -> Holds {
        Holds {
            open: Vec::new(),
            added: vec![0; runs.runs.len()],
        }
    }

    /// Notes that the body at place `j` of a step, planned as plan `p`, writes entry `i` of
    /// run `r`.
    fn add(
        &mut self,
        view: &mut View<'_, Bucket>,
        (j, p): (usize, u32),
        (runs, (r, i)): (&Runs, (usize, usize)),
        planned: &Planned,
    ) {
        if self.open.len() <= j {
            self.open.resize(j + 1, None);
        }
        let done = match &mut self.open[j] {
            Some((plan, run, mask)) if *plan == p && *run == r => {
                *mask |= 1 << i;
                None
            }
            open => open.replace((p, r, 1 << i)),
        };
        if let Some(done) = done {
            self.put(view, done, runs, planned);
        }
    }

    /// Puts in everything noted; returns the holds added per run.
    fn flush(mut self, view: &mut View<'_, Bucket>, runs: &Runs, planned: &Planned) -> Vec<u32> {
        for done in std::mem::take(&mut self.open).into_iter().flatten() {
            self.put(view, done, runs, planned);
        }
        self.added
    }

    fn put(
        &mut self,
        view: &mut View<'_, Bucket>,
        (p, r, mask): (u32, usize, u64),
        runs: &Runs,
        planned: &Planned,
    ) {
        for &at in planned.slots(planned.plan(p)) {
            if view.at_mut(at).hold((runs.runs[r], runs.bounds[r]), mask) {
                self.added[r] += 1;
            }
        }
    }
}

/// Of each bucket of a write's section, the runs that a write can meet: other entities' runs
/// with entries at the request's ticks whose bounds touch the request's (indices into the
/// bucket's `runs`, in order). Found once per section rather than at each tick: a batch
/// writes up to 64 ticks into the same buckets, and neighbours that do not touch over the
/// batch (most of them) are then not looked at again. The section only appends runs (its
/// own), so the indices stay valid while it writes.
struct Others {
    runs: Vec<usize>,
    /// `runs[at[i]..at[i + 1]]` are those of the section's `i`th bucket.
    at: Vec<usize>,
    /// For each place `k` of the request's flat key list ([`Planned::keys`]), how many of the
    /// places before it have a bucket with runs to meet: a plan whose keys have none is quiet
    /// (a tick planned so writes without looking at any bucket).
    busy: Vec<u32>,
    /// Whether any bucket of the section holds a sleep record (else no write looks for one).
    sleepers: bool,
}

impl Others {
    fn of(
        view: &View<'_, Bucket>,
        entity: EntityId,
        ticks: (Tick, Tick),
        all: &Aabb,
        planned: &Planned,
        sleepers: bool,
    ) -> Others {
        let n = view.keys().len();
        let mut o = Others {
            runs: Vec::with_capacity(n),
            at: Vec::with_capacity(n + 1),
            busy: Vec::with_capacity(planned.at.len() + 1),
            sleepers,
        };
        let meets = |r: &Run| {
            r.entity != entity && r.bounds.overlaps(all) && r.present_within(ticks.0, ticks.1) != 0
        };
        for i in 0..n {
            o.at.push(o.runs.len());
            let runs = &view.at(i).runs;
            o.runs.extend((0..runs.len()).filter(|&j| meets(&runs[j])));
        }
        o.at.push(o.runs.len());
        let mut busy = 0;
        o.busy.push(0);
        for &i in &planned.at {
            busy += u32::from(o.at[i] != o.at[i + 1]);
            o.busy.push(busy);
        }
        o
    }

    /// Whether no bucket of the section has runs to meet, nor sleep records: no step of the
    /// request can meet anything.
    #[inline]
    fn none(&self) -> bool {
        self.runs.is_empty() && !self.sleepers
    }

    /// Whether no bucket of plan `p` has runs to meet.
    #[inline]
    fn quiet(&self, p: &Plan) -> bool {
        self.busy[p.buckets.start] == self.busy[p.buckets.end]
    }

    /// The runs of the section's `i`th bucket that a write can meet.
    fn of_slot(&self, i: usize) -> &[usize] {
        &self.runs[self.at[i]..self.at[i + 1]]
    }
}

/// The temporal volumetric hash table.
pub struct Tvht {
    /// `buckets` buckets of entries, then (with sleep records) `buckets` of sleep records.
    table: Table<Bucket>,
    mask: u64,
    /// Whether sleep records are kept (the table's second half).
    sleep: bool,
    span_shift: u32,
    cell_size: f32,
    inv_cell: f32,
    max_cells: usize,
    floor: AtomicU64,
    /// Where the next `prune_step` sweep starts.
    cursor: AtomicU64,
    /// The buckets changed by writes and naps, each under the slice of the newest tick the
    /// change put there (`LEDGER_RING` x `LEDGER_SHARDS` lists; see "Reclamation").
    ledger: Box<[Mutex<Notes>]>,
    /// The slices before this one have been swept by `prune_touched`.
    drained: AtomicU64,
    /// Where runs whose last hold is gone wait to be freed (see [`runs`]).
    graveyard: Graveyard,
    /// The floor of the last full sweep: no entry is older (checked by `validate`).
    swept: AtomicU64,
}

/// How many of `buckets` hold each run.
fn holders(buckets: &[Bucket]) -> std::collections::HashMap<RunRef, usize> {
    let mut held = std::collections::HashMap::new();
    for r in buckets.iter().flat_map(|b| &b.runs) {
        *held.entry(r.entries).or_default() += 1;
    }
    held
}

impl Drop for Tvht {
    /// Lets go of the holds of every bucket: the runs still held are freed now (no other
    /// thread can reach them), those retired earlier by the epoch (or, under loom, by the
    /// graveyard).
    fn drop(&mut self) {
        // The buckets themselves, not a copy of them (a copy of a large table cost more than
        // a frame of a short run): the table is taken out and apart.
        let empty = Table::with_class(self.table.backend(), 0, self.table.class(), |_| {
            unreachable!("an empty table has no slot")
        });
        let mut buckets = Vec::with_capacity(self.table.len());
        std::mem::replace(&mut self.table, empty).into_each(|b| buckets.push(b));
        for (r, n) in holders(&buckets) {
            r.drop_holds_at_drop(n);
        }
    }
}

/// `x.floor() as i32` for `|x| < 2^30`, without a call: `f32::floor` is a libm call on the
/// baseline x86-64 target (no SSE4.1 `roundss`), and three per box corner were 3.5% of the
/// instructions of a `parallel` run. Truncation rounds toward zero; one less for a negative
/// `x` with a fraction. (`trunc(x)` of an `f32` is an `f32`, so the comparison is exact.)
#[inline]
fn floor_i32(x: f32) -> i32 {
    let t = x as i32;
    t - i32::from(x < t as f32)
}

/// A cell's coordinates, mixed into one word (before [`mix`]).
#[inline]
fn cell_hash(c: Cell) -> u64 {
    (c[0] as u32 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (c[1] as u32 as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
        ^ (c[2] as u32 as u64).wrapping_mul(0x1656_67b1_9e37_79f9)
}

#[inline]
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl Tvht {
    /// An empty table.
    pub fn new(backend: Backend, config: TvhtConfig) -> Result<Tvht, TvhtError> {
        if config.buckets == 0 || !config.buckets.is_power_of_two() {
            return Err(TvhtError::Config(format!(
                "buckets must be a power of two, got {}",
                config.buckets
            )));
        }
        if !(config.cell_size.is_finite() && config.cell_size > 0.0) {
            return Err(TvhtError::Config(format!(
                "cell size must be a positive finite number, got {}",
                config.cell_size
            )));
        }
        if config.span_ticks == 0 || !config.span_ticks.is_power_of_two() {
            return Err(TvhtError::Config(format!(
                "span_ticks must be a power of two, got {}",
                config.span_ticks
            )));
        }
        if config.max_cells_per_body == 0 {
            return Err(TvhtError::Config(
                "max_cells_per_body must be at least 1".into(),
            ));
        }
        let slots = config.buckets << usize::from(config.sleep_records);
        Ok(Tvht {
            table: Table::with_class(backend, slots, Class::Tvht, |_| Bucket::default()),
            mask: config.buckets as u64 - 1,
            sleep: config.sleep_records,
            span_shift: config.span_ticks.trailing_zeros(),
            cell_size: config.cell_size,
            inv_cell: 1.0 / config.cell_size,
            max_cells: config.max_cells_per_body,
            floor: AtomicU64::new(0),
            cursor: AtomicU64::new(0),
            ledger: (0..LEDGER_RING * LEDGER_SHARDS)
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            drained: AtomicU64::new(0),
            graveyard: Graveyard::default(),
            swept: AtomicU64::new(0),
        })
    }

    /// The backend guarding the buckets.
    pub fn backend(&self) -> Backend {
        self.table.backend()
    }

    /// The number of buckets (of entries; as many again hold sleep records, if kept).
    pub fn buckets(&self) -> usize {
        self.mask as usize + 1
    }

    /// All its buckets: those of entries and those of sleep records (what a full sweep visits).
    pub fn slots(&self) -> usize {
        self.table.len()
    }

    /// Whether the table keeps sleep records.
    pub fn sleep_records(&self) -> bool {
        self.sleep
    }

    /// The cell side.
    pub fn cell_size(&self) -> f32 {
        self.cell_size
    }

    /// Ticks before this are reclaimed and refused.
    pub fn floor(&self) -> Tick {
        self.floor.load(Ordering::Acquire)
    }

    /// The bucket of a (cell, tick): the hash of the cell and the tick's slice.
    #[inline]
    fn bucket_of(&self, c: Cell, tick: Tick) -> usize {
        let tick = tick >> self.span_shift;
        (mix(cell_hash(c) ^ tick.wrapping_mul(0xd6e8_feb8_6659_fd93)) & self.mask) as usize
    }

    /// The sleep bucket of a cell: the cell's hash, in the table's second half.
    #[inline]
    fn sleep_slot(&self, c: Cell) -> usize {
        (mix(cell_hash(c) ^ 0x5bd1_e995) & self.mask) as usize + self.buckets()
    }

    /// The owner cell of two boxes: the componentwise maximum of their lowest cells.
    #[inline]
    fn owner_cell(&self, a: &Aabb, b: &Aabb) -> Cell {
        let (a, b) = (self.lo_of(a), self.lo_of(b));
        [a[0].max(b[0]), a[1].max(b[1]), a[2].max(b[2])]
    }

    /// The cell of a point whose coordinates, over the cell side, are below 2^30 in
    /// magnitude (`cell_range` checks it for every box written).
    #[inline]
    fn cell_of(&self, v: glam::Vec3) -> Cell {
        let s = v * self.inv_cell;
        [floor_i32(s.x), floor_i32(s.y), floor_i32(s.z)]
    }

    /// The lowest cell of a stored box (stored boxes were checked when written).
    #[inline]
    fn lo_of(&self, b: &Aabb) -> Cell {
        self.cell_of(b.min)
    }

    /// The checked cell range of a box.
    fn cell_range(&self, body: BodyId, tick: Tick, b: &Aabb) -> Result<(Cell, Cell), TvhtError> {
        let (smin, smax) = (b.min * self.inv_cell, b.max * self.inv_cell);
        // Finite, ordered, and within ±2^30 cells, in three comparisons: NaN fails each, an
        // infinite corner fails the bound, and `min <= max` carries each bound to the other
        // corner (scaling by `inv_cell > 0` keeps the order).
        let limit = glam::Vec3::splat(MAX_CELL_COORD);
        if !(b.min.cmple(b.max).all() && smin.cmpgt(-limit).all() && smax.cmplt(limit).all()) {
            return Err(TvhtError::BadAabb { body, tick });
        }
        let lo = [floor_i32(smin.x), floor_i32(smin.y), floor_i32(smin.z)];
        let hi = [floor_i32(smax.x), floor_i32(smax.y), floor_i32(smax.z)];
        // A side is at most 2^31 cells, so three make up to 2^93: counted in u128 (in u64 the
        // product wrapped, and 2^64 cells passed for none).
        let cells: u128 = (0..3).map(|i| (hi[i] - lo[i]) as u128 + 1).product();
        if cells > self.max_cells as u128 {
            return Err(TvhtError::TooManyCells {
                body,
                tick,
                cells: u64::try_from(cells).unwrap_or(u64::MAX),
                max: self.max_cells,
            });
        }
        Ok((lo, hi))
    }

    /// Appends the distinct buckets of the cells `lo ..= hi` of `body` at `tick` to `keys`
    /// (sorted) and returns their plan.
    fn plan_into(
        &self,
        body: BodyId,
        tick: Tick,
        (lo, hi): (Cell, Cell),
        keys: &mut Vec<usize>,
    ) -> Plan {
        let slice = tick >> self.span_shift;
        let buckets = push_distinct(keys, cells(lo, hi).map(|c| self.bucket_of(c, tick)));
        let sleep = if self.sleep {
            push_distinct(keys, cells(lo, hi).map(|c| self.sleep_slot(c)))
        } else {
            keys.len()..keys.len()
        };
        const EXACT: i32 = 1 << 24;
        let exact = lo.iter().chain(&hi).all(|&c| c.abs() < EXACT);
        let float = |c: Cell| glam::Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32);
        Plan {
            body,
            lo,
            hi,
            cells_f: exact.then(|| (float(lo), float(hi))),
            slice,
            buckets,
            sleep,
        }
    }

    /// The distinct buckets of a body's box at `tick`, sorted.
    fn plan_buckets(&self, body: BodyId, tick: Tick, b: &Aabb) -> Result<Vec<usize>, TvhtError> {
        let mut keys = Vec::new();
        let p = self.plan_into(body, tick, self.cell_range(body, tick, b)?, &mut keys);
        keys.truncate(p.buckets.end);
        Ok(keys)
    }

    /// Checks a request and plans its buckets: one plan per body per step, and all keys.
    /// Writes below the floor are refused; deletes there are allowed (the entries may be
    /// gone, which is then reported as `NotFound`).
    /// Also returns the request's (tick, body) pairs, sorted.
    fn plan_steps(
        &self,
        steps: &[Step<'_>],
        check_floor: bool,
        bufs: &mut WriteBuffers,
    ) -> Result<Planned, TvhtError> {
        let floor = self.floor();
        let bodies: usize = steps.iter().map(|s| s.bodies.len()).sum();
        let mut seen = emptied(&mut bufs.planned.seen);
        seen.reserve(bodies);
        let mut plans = emptied(&mut bufs.planned.plans);
        let mut uses = emptied(&mut bufs.planned.uses);
        uses.reserve(bodies);
        let mut keys = emptied(&mut bufs.planned.keys);
        // The plan of the body at each place of the step before.
        let mut prev = emptied(&mut bufs.prev);
        for s in steps {
            if check_floor && s.tick < floor {
                return Err(TvhtError::BehindFloor {
                    tick: s.tick,
                    floor,
                });
            }
            let slice = s.tick >> self.span_shift;
            for (j, b) in s.bodies.iter().enumerate() {
                // The same body in the same cells and time slice as at the step before: the
                // same buckets. Most steps are, and are told by comparisons alone
                // ([`Plan::keeps`]: `cell_range` for every box, its casts checked for NaN and
                // saturated, was 7% of a `parallel` run's instructions).
                let (smin, smax) = (b.aabb.min * self.inv_cell, b.aabb.max * self.inv_cell);
                let before = prev.get(j).copied().filter(|&i| {
                    let p = &plans[i as usize];
                    p.body == b.body && p.slice == slice
                });
                let plan = match before {
                    Some(i) if plans[i as usize].keeps(&b.aabb, smin, smax) => i,
                    _ => {
                        let (lo, hi) = self.cell_range(b.body, s.tick, &b.aabb)?;
                        match before {
                            Some(i) if (plans[i as usize].lo, plans[i as usize].hi) == (lo, hi) => {
                                i
                            }
                            _ => {
                                plans.push(self.plan_into(b.body, s.tick, (lo, hi), &mut keys));
                                (plans.len() - 1) as u32
                            }
                        }
                    }
                };
                if j < prev.len() {
                    prev[j] = plan;
                } else {
                    prev.push(plan);
                }
                uses.push(plan);
                seen.push((s.tick, b.body));
            }
        }
        if seen.len() > 1 {
            // In tick order already for one body (steps are consecutive ticks).
            if !seen.is_sorted() {
                seen.sort_unstable();
            }
            if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
                return Err(TvhtError::Duplicate {
                    body: w[0].1,
                    tick: w[0].0,
                });
            }
        }
        bufs.prev = prev;
        let mut sorted = emptied(&mut bufs.planned.sorted);
        sorted.extend_from_slice(&keys);
        sorted.sort_unstable();
        sorted.dedup();
        let mut at = emptied(&mut bufs.planned.at);
        at.extend(
            keys.iter()
                .map(|k| sorted.binary_search(k).expect("a key of the request")),
        );
        Ok(Planned {
            plans,
            uses,
            keys,
            seen,
            sorted,
            at,
        })
    }

    /// One section of the seam over `keys` (see the module documentation). In a test-only
    /// `cfg(timewarp_broken)` build with `TIMEWARP_BROKEN=unguarded_tvht` it is deliberately
    /// left unguarded (a negative control for the loom models, see `sync::broken`).
    fn section<R>(&self, keys: &[usize], f: impl FnMut(&mut View<'_, Bucket>) -> R) -> R {
        #[cfg(timewarp_broken)]
        if crate::sync::broken("unguarded_tvht") {
            return self.table.section_unguarded(keys, f);
        }
        self.table.section(keys, f)
    }

    /// Writes the bodies of `entity` at `tick` and returns the new contacts with other
    /// entities' entries at that tick (each pair once, to whichever entity writes second).
    pub fn write(
        &self,
        entity: EntityId,
        tick: Tick,
        bodies: &[BodyEntry],
    ) -> Result<Vec<Contact>, TvhtError> {
        self.write_steps(entity, &[Step { tick, bodies }])
            .map(|(_, c)| c)
    }

    /// Algorithm 6: one section over the buckets of all `steps`; writes them in order and stops
    /// after the first step that meets a contact. Returns how many steps were written and that
    /// step's contacts (empty if all were written without contact). On error nothing is
    /// written.
    pub fn write_steps(
        &self,
        entity: EntityId,
        steps: &[Step<'_>],
    ) -> Result<(usize, Vec<Contact>), TvhtError> {
        self.write_steps_tagged(entity, 0, steps)
    }

    /// [`Tvht::write_steps`] with the entries of step `i` tagged `tag = first_tag + i`
    /// (see [`TvhtEntry::tag`]).
    pub fn write_steps_tagged(
        &self,
        entity: EntityId,
        first_tag: u64,
        steps: &[Step<'_>],
    ) -> Result<(usize, Vec<Contact>), TvhtError> {
        self.write_steps_until(entity, first_tag, steps, |_| true)
    }

    /// [`Tvht::write_steps_tagged`], stopping only after the first step that meets a contact
    /// for which `stops` holds; returns every contact the written steps met, sorted. (The
    /// warp engine stops at contacts that make an event: boxes that overlap without the
    /// bodies touching change nothing, so the entity writes on past them instead of ending its
    /// batch there.) `stops` must be a function of the contact alone: under the STM it may
    /// be asked again when a section runs again.
    pub fn write_steps_until(
        &self,
        entity: EntityId,
        first_tag: u64,
        steps: &[Step<'_>],
        stops: impl Fn(&Contact) -> bool,
    ) -> Result<(usize, Vec<Contact>), TvhtError> {
        let mut bufs = WriteBuffers::default();
        self.write_steps_buffered(&mut bufs, entity, first_tag, steps, stops)
    }

    /// [`Tvht::write_steps_until`] in a writer's buffers (see [`WriteBuffers`]).
    pub fn write_steps_buffered(
        &self,
        bufs: &mut WriteBuffers,
        entity: EntityId,
        first_tag: u64,
        steps: &[Step<'_>],
        stops: impl Fn(&Contact) -> bool,
    ) -> Result<(usize, Vec<Contact>), TvhtError> {
        let planned = self.plan_steps(steps, true, bufs)?;
        let seen = &planned.seen;
        // The request's body and tick ranges: an entry outside them cannot be one of the
        // request's pairs (cheap tests before the search; most entries of a bucket are of
        // other bodies or at other ticks).
        let (tmin, tmax) = match (seen.first(), seen.last()) {
            (Some(f), Some(l)) => (f.0, l.0),
            _ => (1, 0),
        };
        let (bmin, bmax) = seen
            .iter()
            .fold((BodyId::MAX, 0), |(lo, hi), &(_, b)| (lo.min(b), hi.max(b)));
        let floor = self.floor();
        let reserved = planned.sorted.len();
        let mut runs = runs_of(entity, first_tag, steps, (reserved, &self.graveyard), bufs);
        let out = self.section(&planned.sorted, |view| {
            // Check everything before changing anything: one pass over each bucket, which
            // also learns whether any holds a sleep record (most sections meet none: then
            // no step need look for them).
            let mut sleepers = false;
            for i in 0..view.keys().len() {
                let bucket = view.at(i);
                sleepers |= !bucket.records.is_empty();
                if let Some((tick, body)) = bucket
                    .held((tmin, tmax), (bmin, bmax))
                    .find(|p| seen.binary_search(p).is_ok())
                {
                    return Err(TvhtError::Duplicate { body, tick });
                }
            }
            // Nor a sleep record of one of the request's bodies at one of its ticks.
            for (s, ps) in planned.per_step(steps).filter(|_| sleepers) {
                for p in ps.iter().map(|&i| planned.plan(i)) {
                    if planned
                        .sleep_slots(p)
                        .iter()
                        .any(|&i| view.at(i).record(p.body, s.tick).is_some())
                    {
                        return Err(TvhtError::Duplicate {
                            body: p.body,
                            tick: s.tick,
                        });
                    }
                }
            }
            // Reclaim what is behind the floor in the buckets this section holds anyway.
            let mut dropped = Vec::new();
            for i in 0..view.keys().len() {
                if view.at(i).has_old(floor) {
                    view.at_mut(i).prune(floor, &mut dropped);
                }
            }
            let others = Others::of(view, entity, (tmin, tmax), &runs.all, &planned, sleepers);
            let mut holds = Holds::new(&runs);
            if others.none() {
                // Nothing in these buckets can meet the request (the common case away from
                // contacts): every step is written and meets nothing, so only its entries are
                // put in, without a look per step (`write_one` per tick was 10% of a
                // `parallel` run's instructions, most of it its own call).
                let mut k = 0;
                for (_, ps) in planned.per_step(steps) {
                    for (j, &p) in ps.iter().enumerate() {
                        holds.add(view, (j, p), (&runs, runs.slots[k]), &planned);
                        k += 1;
                    }
                }
                let added = holds.flush(view, &runs, &planned);
                return Ok((steps.len(), Vec::new(), added, dropped));
            }
            let (mut at, mut met) = (0, Vec::new());
            for (i, (s, ps)) in planned.per_step(steps).enumerate() {
                let found = self.write_one(
                    view,
                    entity,
                    s,
                    ps,
                    (&runs, at),
                    (&planned, &others),
                    &mut holds,
                );
                at += ps.len();
                let stop = found.iter().any(&stops);
                met.extend(found);
                if stop {
                    let added = holds.flush(view, &runs, &planned);
                    return Ok((i + 1, met, added, dropped));
                }
            }
            let added = holds.flush(view, &runs, &planned);
            Ok((steps.len(), met, added, dropped))
        });
        let written = out.map(|(n, mut c, added, dropped)| {
            // The section committed: its runs' holds settle by what the buckets took; let go
            // of the holds of the runs it dropped.
            runs.taken = added;
            self.release_all(dropped);
            if n > 0 {
                // The buckets the written steps put entries in, and, if they met sleep
                // records, the sleep buckets they may have put their contacts in.
                let plans = planned.used_by_first(steps[..n].iter().map(|s| s.bodies.len()).sum());
                let entries = plans.iter().flat_map(|p| planned.buckets(p));
                let woken = plans
                    .iter()
                    .filter(|_| !c.is_empty())
                    .flat_map(|p| planned.sleep_buckets(p));
                self.note(entity, steps[n - 1].tick, entries.chain(woken).copied());
            }
            c.sort_unstable_by_key(Contact::key);
            (n, c)
        });
        runs.finish(bufs);
        bufs.keep_planned(planned);
        written
    }

    /// Writes one step inside a section (its entries are those of `runs` from the `from`th
    /// on, one per body); returns its contacts.
    #[allow(clippy::too_many_arguments)]
    fn write_one(
        &self,
        view: &mut View<'_, Bucket>,
        entity: EntityId,
        s: &Step<'_>,
        plans: &[u32],
        (runs, from): (&Runs, usize),
        (planned, others): (&Planned, &Others),
        holds: &mut Holds,
    ) -> Vec<Contact> {
        let mut contacts = Vec::new();
        for (j, &pi) in plans.iter().enumerate() {
            let p = planned.plan(pi);
            let (run, i) = runs.slot(from + j);
            let me = &run.0.entries()[i];
            holds.add(view, (j, pi), (runs, runs.slots[from + j]), planned);
            // A quiet plan's buckets have nothing to meet: no need to look at them.
            let (keys, slots) = if others.quiet(p) {
                (&[][..], &[][..])
            } else {
                (planned.buckets(p), planned.slots(p))
            };
            for (&k, &at) in keys.iter().zip(slots) {
                let meets = others.of_slot(at);
                if meets.is_empty() {
                    continue;
                }
                let first = contacts.len();
                let bucket = view.at(at);
                for x in meets.iter().filter_map(|&r| bucket.runs[r].at(s.tick)) {
                    if x.aabb.overlaps(&me.aabb) {
                        let xl = self.lo_of(&x.aabb);
                        let owner = [p.lo[0].max(xl[0]), p.lo[1].max(xl[1]), p.lo[2].max(xl[2])];
                        if self.bucket_of(owner, s.tick) == k {
                            contacts.push(Contact::new(*me, *x));
                        }
                    }
                }
                if contacts.len() > first {
                    let bucket = view.at_mut(at);
                    for c in &contacts[first..] {
                        let key = c.key();
                        bucket.contacts.push(ContactRec {
                            tick: key.tick,
                            a: key.a,
                            b: key.b,
                        });
                    }
                }
            }
            // Sleep records at this tick: an asleep entry and a sleep record never touch
            // (neither wakes nor fuses with the other), so only an awake entry looks.
            if me.asleep || !others.sleepers {
                continue;
            }
            for (&k, &at) in planned.sleep_buckets(p).iter().zip(planned.sleep_slots(p)) {
                let first = contacts.len();
                for r in &view.at(at).records {
                    if r.covers(s.tick)
                        && r.entity != entity
                        && r.aabb.overlaps(&me.aabb)
                        && self.sleep_slot(self.owner_cell(&me.aabb, &r.aabb)) == k
                    {
                        contacts.push(Contact::new(*me, r.at(s.tick)));
                    }
                }
                if contacts.len() > first {
                    let bucket = view.at_mut(at);
                    for c in &contacts[first..] {
                        let sleeper = c.other(entity).expect("a record of another entity").body;
                        bucket.woken.push(SleepContact {
                            awake: *me,
                            sleeper,
                        });
                    }
                }
            }
        }
        contacts
    }

    /// Deletes the entries of `entity` at `tick` for `bodies` (each with the box it was written
    /// with; the state is ignored) and returns the contacts they had, each once.
    pub fn delete(
        &self,
        entity: EntityId,
        tick: Tick,
        bodies: &[BodyEntry],
    ) -> Result<Vec<Contact>, TvhtError> {
        self.delete_steps(entity, &[Step { tick, bodies }])
    }

    /// Algorithm 7: deletes all the given entries in one section and returns every contact
    /// they had (each once, sorted). On error nothing is deleted.
    pub fn delete_steps(
        &self,
        entity: EntityId,
        steps: &[Step<'_>],
    ) -> Result<Vec<Contact>, TvhtError> {
        let planned = self.plan_steps(steps, false, &mut WriteBuffers::default())?;
        let out = self.section(&planned.keys, |view| {
            for (s, ps) in planned.per_step(steps) {
                for (b, p) in s.bodies.iter().zip(ps.iter().map(|&i| planned.plan(i))) {
                    for &k in planned.buckets(p) {
                        match view.get(k).find(b.body, s.tick) {
                            Some(e) if e.entity == entity => {
                                if e.aabb != b.aabb {
                                    return Err(TvhtError::BoundsMismatch {
                                        body: b.body,
                                        tick: s.tick,
                                    });
                                }
                            }
                            _ => {
                                return Err(TvhtError::NotFound {
                                    entity,
                                    body: b.body,
                                    tick: s.tick,
                                });
                            }
                        }
                    }
                }
            }
            let (mut contacts, mut dropped) = (Vec::new(), Vec::new());
            for (s, ps) in planned.per_step(steps) {
                for (b, p) in s.bodies.iter().zip(ps.iter().map(|&i| planned.plan(i))) {
                    for &k in planned.buckets(p) {
                        let bucket = view.get_mut(k);
                        let (body, tick) = (b.body, s.tick);
                        let mut i = 0;
                        while i < bucket.contacts.len() {
                            let c = bucket.contacts[i];
                            if c.tick == tick && (c.a == body || c.b == body) {
                                let other = if c.a == body { c.b } else { c.a };
                                let (Some(x), Some(y)) =
                                    (bucket.find(body, tick), bucket.find(other, tick))
                                else {
                                    unreachable!("a contact record's entries share its bucket")
                                };
                                contacts.push(Contact::new(*x, *y));
                                bucket.contacts.swap_remove(i);
                            } else {
                                i += 1;
                            }
                        }
                        bucket.release(body, tick, &mut dropped);
                    }
                    for &k in planned.sleep_buckets(p) {
                        let (body, tick) = (b.body, s.tick);
                        if !view
                            .get(k)
                            .woken
                            .iter()
                            .any(|c| c.awake.body == body && c.awake.tick == tick)
                        {
                            continue;
                        }
                        let bucket = view.get_mut(k);
                        let mut i = 0;
                        while i < bucket.woken.len() {
                            let c = bucket.woken[i];
                            if c.awake.body == body && c.awake.tick == tick {
                                let Some(r) = bucket.record(c.sleeper, tick) else {
                                    unreachable!("a sleep contact's record shares its bucket")
                                };
                                contacts.push(Contact::new(c.awake, r.at(tick)));
                                bucket.woken.swap_remove(i);
                            } else {
                                i += 1;
                            }
                        }
                    }
                }
            }
            Ok((contacts, dropped))
        });
        out.map(|(mut c, dropped)| {
            self.release_all(dropped);
            c.sort_unstable_by_key(Contact::key);
            c
        })
    }

    /// The cells of each body's box (checked at `tick`) and the buckets a sleep request names:
    /// the sleep buckets of the cells and, if `slices` is given, the buckets of the cells at
    /// each time slice of that tick range. Returns ranges of `keys`: each body's distinct sleep
    /// buckets, then (with `slices`) each body's distinct buckets of entries.
    fn plan_sleep(
        &self,
        tick: Tick,
        bodies: &[BodyEntry],
        slices: Option<(Tick, Tick)>,
        keys: &mut Vec<usize>,
    ) -> Result<Vec<std::ops::Range<usize>>, TvhtError> {
        if !self.sleep {
            return Err(TvhtError::Config(
                "this table keeps no sleep records".into(),
            ));
        }
        let mut boxes = Vec::with_capacity(bodies.len());
        for (j, b) in bodies.iter().enumerate() {
            if bodies[..j].iter().any(|o| o.body == b.body) {
                return Err(TvhtError::Duplicate { body: b.body, tick });
            }
            boxes.push(self.cell_range(b.body, tick, &b.aabb)?);
        }
        let mut ranges: Vec<_> = boxes
            .iter()
            .map(|&(lo, hi)| push_distinct(keys, cells(lo, hi).map(|c| self.sleep_slot(c))))
            .collect();
        if let Some((first, last)) = slices {
            let ticks =
                (first >> self.span_shift..=last >> self.span_shift).map(|s| s << self.span_shift);
            for &(lo, hi) in &boxes {
                let all =
                    cells(lo, hi).flat_map(|c| ticks.clone().map(move |t| self.bucket_of(c, t)));
                ranges.push(push_distinct(keys, all));
            }
        }
        Ok(ranges)
    }

    /// Puts `bodies` of a sleeping `entity` in the table at every tick `from..=to`, each with
    /// its one box and (pre-event) state: one *sleep record* per body (a copy in the sleep
    /// bucket of each cell of its box) instead of an entry per tick. A record of the same
    /// entity, body and `tag` that ends at `from` is extended; otherwise a record starts at
    /// `from`. Sleep records meet only awake entries (an asleep entry and a sleep record
    /// neither kick nor fuse with each other), each contact found once, by whichever of the
    /// entry and the record is written second, like [`Tvht::write_steps`]: the records
    /// stop at the first tick that meets a contact. Returns the last tick they now reach and
    /// the contacts at it. One section; on error nothing is written.
    pub fn sleep(
        &self,
        entity: EntityId,
        tag: u64,
        from: Tick,
        to: Tick,
        bodies: &[BodyEntry],
    ) -> Result<(Tick, Vec<Contact>), TvhtError> {
        let floor = self.floor();
        if from < floor {
            return Err(TvhtError::BehindFloor { tick: from, floor });
        }
        if to < from {
            return Err(TvhtError::Config(format!(
                "empty sleep interval {from}..={to}"
            )));
        }
        let mut keys = Vec::new();
        let ranges = self.plan_sleep(from, bodies, Some((from, to)), &mut keys)?;
        let (sleep, main) = ranges.split_at(bodies.len());
        let out = self.section(&keys, |view| {
            // Check first: no entry or record of these bodies at these ticks, and a record to
            // extend keeps its box.
            for (b, ks) in bodies.iter().zip(sleep) {
                for &k in &keys[ks.clone()] {
                    for r in view.get(k).records.iter().filter(|r| r.body == b.body) {
                        if r.from <= to && r.until > from {
                            return Err(TvhtError::Duplicate {
                                body: b.body,
                                tick: r.from.max(from),
                            });
                        }
                        if r.entity == entity && r.tag == tag && r.until == from && r.aabb != b.aabb
                        {
                            return Err(TvhtError::BoundsMismatch {
                                body: b.body,
                                tick: from,
                            });
                        }
                    }
                }
            }
            for (b, ks) in bodies.iter().zip(main) {
                for &k in &keys[ks.clone()] {
                    if let Some((tick, body)) =
                        view.get(k).held((from, to), (b.body, b.body)).next()
                    {
                        return Err(TvhtError::Duplicate { body, tick });
                    }
                }
            }
            // The awake entries these records meet, each pair in its owner cell's bucket only;
            // the first tick with any.
            let mut met: Vec<(TvhtEntry, usize)> = Vec::new();
            let mut last = to;
            for (j, (b, ks)) in bodies.iter().zip(main).enumerate() {
                for &k in &keys[ks.clone()] {
                    for x in view.get(k).within(from, last) {
                        // `last` may fall during the scan: entries after it are not needed.
                        if x.tick <= last
                            && x.entity != entity
                            && !x.asleep
                            && x.aabb.overlaps(&b.aabb)
                            && self.bucket_of(self.owner_cell(&x.aabb, &b.aabb), x.tick) == k
                        {
                            if x.tick < last {
                                last = x.tick;
                                met.clear();
                            }
                            met.push((*x, j));
                        }
                    }
                }
            }
            let mut found = Vec::with_capacity(met.len());
            for (b, ks) in bodies.iter().zip(sleep) {
                let rec = SleepRec {
                    entity,
                    body: b.body,
                    from,
                    until: last + 1,
                    aabb: b.aabb,
                    state: b.state,
                    tag,
                };
                for &k in &keys[ks.clone()] {
                    let bucket = view.get_mut(k);
                    match bucket.records.iter_mut().find(|r| {
                        r.entity == entity && r.body == b.body && r.tag == tag && r.until == from
                    }) {
                        Some(r) => r.until = last + 1,
                        None => bucket.records.push(rec),
                    }
                }
            }
            for &(x, j) in &met {
                let b = &bodies[j];
                let k = self.sleep_slot(self.owner_cell(&x.aabb, &b.aabb));
                let bucket = view.get_mut(k);
                let r = bucket
                    .record(b.body, x.tick)
                    .expect("the record was just written to every bucket of its cells");
                found.push(Contact::new(x, r.at(x.tick)));
                bucket.woken.push(SleepContact {
                    awake: x,
                    sleeper: b.body,
                });
            }
            Ok((last, found))
        });
        out.map(|(last, mut c)| {
            // Only the sleep buckets change (the others were only looked at).
            let changed = sleep.iter().flat_map(|r| keys[r.clone()].iter().copied());
            self.note(entity, last, changed);
            c.sort_unstable_by_key(Contact::key);
            (last, c)
        })
    }

    /// Cuts the sleep records of `bodies` (each with the box it slept with) of `entity` and
    /// `tag` so that they end before tick `to` (a record that starts at or after `to` goes),
    /// and returns the contacts they had at ticks from `to` on, each once, sorted: the
    /// rollback of a sleeping interval (Algorithm 7). One section; on error nothing changes.
    pub fn wake(
        &self,
        entity: EntityId,
        tag: u64,
        bodies: &[BodyEntry],
        to: Tick,
    ) -> Result<Vec<Contact>, TvhtError> {
        let mut keys = Vec::new();
        let sleep = self.plan_sleep(to, bodies, None, &mut keys)?;
        let mine =
            |r: &SleepRec, body: BodyId| r.entity == entity && r.body == body && r.tag == tag;
        let out = self.section(&keys, |view| {
            for (b, ks) in bodies.iter().zip(&sleep) {
                for &k in &keys[ks.clone()] {
                    match view.get(k).records.iter().find(|r| mine(r, b.body)) {
                        None => {
                            return Err(TvhtError::NotFound {
                                entity,
                                body: b.body,
                                tick: to,
                            });
                        }
                        Some(r) if r.aabb != b.aabb => {
                            return Err(TvhtError::BoundsMismatch {
                                body: b.body,
                                tick: to,
                            });
                        }
                        Some(_) => {}
                    }
                }
            }
            let mut contacts = Vec::new();
            for (b, ks) in bodies.iter().zip(&sleep) {
                for &k in &keys[ks.clone()] {
                    let Some(&r) = view.get(k).records.iter().find(|r| mine(r, b.body)) else {
                        unreachable!("checked above")
                    };
                    if r.until <= to {
                        continue;
                    }
                    let bucket = view.get_mut(k);
                    bucket.woken.retain(|c| {
                        let gone =
                            c.sleeper == b.body && c.awake.tick >= to && r.covers(c.awake.tick);
                        if gone {
                            contacts.push(Contact::new(c.awake, r.at(c.awake.tick)));
                        }
                        !gone
                    });
                    if r.from >= to {
                        bucket.records.retain(|x| !mine(x, b.body));
                    } else if let Some(x) = bucket.records.iter_mut().find(|x| mine(x, b.body)) {
                        x.until = to;
                    }
                }
            }
            Ok(contacts)
        });
        out.map(|mut c| {
            c.sort_unstable_by_key(Contact::key);
            c
        })
    }

    /// Raises the floor to `tick` (it never goes down) and reclaims every entry and contact
    /// before it; returns how many stored entry copies (one per bucket) were removed. Call it
    /// with `tick <= GVT` only: nothing at or after GVT may be reclaimed. One small section
    /// per bucket: a full sweep, for tests and the end of a run; during a run use
    /// [`Tvht::prune_step`].
    pub fn prune_before(&self, tick: Tick) -> usize {
        let floor = self.raise_floor(tick);
        self.prune_buckets(0..self.table.len(), floor)
    }

    /// Notes in the ledger that a section of `entity` changed buckets `keys`, the newest tick
    /// it put in any being `tick`: they are swept once the floor passes that tick's slice.
    /// Outside the section (which may have run several times), after it committed.
    fn note(&self, entity: EntityId, tick: Tick, keys: impl Iterator<Item = usize>) {
        let slice = tick >> self.span_shift;
        let i = (slice as usize % LEDGER_RING) * LEDGER_SHARDS + entity as usize % LEDGER_SHARDS;
        self.ledger[i]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(keys.map(|k| (slice, k)));
    }

    /// Raises the floor to `tick` (`<= GVT`) and sweeps the buckets the ledger noted under
    /// each slice that is now wholly behind the floor (see "Reclamation"); any number of
    /// threads may call it, each slice is swept by one of them. A bucket noted under a later
    /// slice that shares a slice's place in the ring stays noted (it is swept when its own
    /// slice comes round); one noted late, under a slice already swept, is swept when the ring
    /// comes round to it again. Returns the copies removed.
    pub fn prune_touched(&self, tick: Tick) -> usize {
        let floor = self.raise_floor(tick);
        let behind = floor >> self.span_shift;
        let mut removed = 0;
        let mut keys = Vec::new();
        loop {
            let s = self.drained.load(Ordering::Acquire);
            if s >= behind {
                return removed;
            }
            if self
                .drained
                .compare_exchange(s, s + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            keys.clear();
            let ring = s as usize % LEDGER_RING;
            for list in &self.ledger[ring * LEDGER_SHARDS..(ring + 1) * LEDGER_SHARDS] {
                let mut list = list.lock().unwrap_or_else(|p| p.into_inner());
                list.retain(|&(slice, k)| {
                    let due = slice <= s;
                    if due {
                        keys.push(k);
                    }
                    !due
                });
                // Room kept after a crowded slice would stay with its place in the ring.
                shrink(&mut list);
            }
            // Each bucket once, in the order noted: a bit per bucket (a slice's notes run to
            // thousands, and sorting them was 1.7% of a `parallel` run's instructions).
            let mut met = vec![0u64; self.table.len().div_ceil(64)];
            keys.retain(|&k| {
                let (word, bit) = (k / 64, 1u64 << (k % 64));
                let new = met[word] & bit == 0;
                met[word] |= bit;
                new
            });
            removed += self.prune_buckets(keys.iter().copied(), floor);
        }
    }

    /// How many bucket notes the ledger holds (it must not grow without bound).
    #[cfg(test)]
    fn noted(&self) -> usize {
        self.ledger
            .iter()
            .map(|l| l.lock().unwrap_or_else(|p| p.into_inner()).len())
            .sum()
    }

    /// Raises the floor to `tick` (`<= GVT`) and sweeps the next `buckets` buckets, round
    /// robin: calling it with `buckets / window` buckets per committed tick sweeps the whole
    /// table once per window, which keeps memory flat at a small, steady cost (writes also
    /// drop old entries from the buckets they change). Returns the copies removed.
    pub fn prune_step(&self, tick: Tick, buckets: usize) -> usize {
        let floor = self.raise_floor(tick);
        let n = buckets.min(self.table.len());
        let start = self.cursor.fetch_add(n as u64, Ordering::Relaxed);
        let slots = self.table.len() as u64;
        self.prune_buckets((0..n as u64).map(|i| ((start + i) % slots) as usize), floor)
    }

    fn raise_floor(&self, tick: Tick) -> Tick {
        self.floor.fetch_max(tick, Ordering::AcqRel).max(tick)
    }

    /// Sweeps buckets `keys` below `floor`, each in a section of its own; lets go of the holds
    /// of the runs they dropped together, at the end. Returns the copies removed.
    fn prune_buckets(&self, keys: impl Iterator<Item = usize>, floor: Tick) -> usize {
        let mut dropped = Vec::new();
        let removed = keys
            .map(|k| self.prune_bucket(k, floor, &mut dropped))
            .sum();
        self.release_all(dropped);
        removed
    }

    /// Sweeps bucket `k` below `floor`; adds the runs it dropped to `dropped` (their holds
    /// are the caller's to let go of).
    fn prune_bucket(&self, k: usize, floor: Tick, dropped: &mut Vec<RunRef>) -> usize {
        // Changed only if it holds something old (under the STM, seen first on a read-only
        // look): most buckets of a sweep do not. Entries only age, so a bucket seen clean may
        // be swept next time.
        let pruned = self.table.update_if(
            k,
            |b| b.has_old(floor),
            |b| {
                let mut dropped = Vec::new();
                (b.prune(floor, &mut dropped), dropped)
            },
        );
        pruned.map_or(0, |(n, mut more)| {
            dropped.append(&mut more);
            n
        })
    }

    /// Lets go of the holds of the runs that a committed section dropped from its buckets.
    fn release_all(&self, dropped: Vec<RunRef>) {
        let mut retired = Vec::new();
        for r in dropped {
            r.release(&mut retired);
        }
        self.graveyard.retire_all(retired);
    }

    /// Every live entry (each once, whatever the number of cells it covers), sorted by tick
    /// then body. A consistent snapshot.
    pub fn entries(&self) -> Vec<TvhtEntry> {
        let mut m = BTreeMap::new();
        let _pin = pin();
        for b in self.table.snapshot() {
            for e in b.entries() {
                m.insert((e.tick, e.body), *e);
            }
        }
        m.into_values().collect()
    }

    /// Every recorded contact (between entries, and between an entry and a sleep record),
    /// sorted. A consistent snapshot.
    pub fn contacts(&self) -> Vec<ContactKey> {
        let mut v = Vec::new();
        for b in self.table.snapshot() {
            v.extend(b.contacts.iter().map(|c| ContactKey {
                tick: c.tick,
                a: c.a,
                b: c.b,
            }));
            v.extend(b.woken.iter().map(|c| ContactKey {
                tick: c.awake.tick,
                a: c.awake.body.min(c.sleeper),
                b: c.awake.body.max(c.sleeper),
            }));
        }
        v.sort_unstable();
        v
    }

    /// Stored entry copies (one per distinct bucket of each entry): a measure of memory.
    pub fn stored_entries(&self) -> usize {
        self.table.snapshot().iter().map(Bucket::len).sum()
    }

    /// Room for entries and contact records held by the buckets (their vectors' capacities): the
    /// memory the table keeps, which must follow what it stores.
    pub fn reserved(&self) -> usize {
        (0..self.table.len())
            .map(|k| {
                self.table
                    .read(k, |b| b.runs.capacity() + b.contacts.capacity())
            })
            .sum()
    }

    /// Checks the invariants on a consistent snapshot. Live entries (at or after the floor)
    /// are in exactly the buckets their boxes' cells hash to, with identical copies; every live
    /// contact record sits in the owner bucket of two overlapping entries of different
    /// entities at its tick, once; every such pair has its record. Entries behind the floor
    /// may be partly reclaimed ([`Tvht::prune_step`] sweeps a slice at a time), but none is
    /// older than the floor of the last full sweep ([`Tvht::prune_before`]). Safe to call while
    /// other threads use the table (a run's count of holds is not checked: it moves on after
    /// the snapshot; [`Tvht::validate_at_rest`] checks it).
    pub fn validate(&self) -> Result<(), TvhtError> {
        self.validate_with(false)
    }

    /// [`Tvht::validate`], for a table at rest (no request in flight): every run's count of
    /// holds is then exactly the buckets that hold it (see module `tvht::runs`): none was let go
    /// too often (it would be freed while held) or too rarely (it would never be freed).
    pub fn validate_at_rest(&self) -> Result<(), TvhtError> {
        self.validate_with(true)
    }

    fn validate_with(&self, at_rest: bool) -> Result<(), TvhtError> {
        let swept = self.swept.load(Ordering::Acquire);
        let _pin = pin();
        let snap = self.table.snapshot();
        if at_rest {
            for (r, n) in holders(&snap) {
                if r.holds() != n {
                    return Err(TvhtError::Invalid(format!(
                        "a run of body {} from tick {} held by {n} buckets counts {} holds",
                        r.entries()[0].body,
                        r.entries()[0].tick,
                        r.holds()
                    )));
                }
            }
        }
        let floor = self.floor();
        let err = |s: String| Err(TvhtError::Invalid(s));
        let mut copies: BTreeMap<(Tick, BodyId), (TvhtEntry, Vec<usize>)> = BTreeMap::new();
        let mut records = BTreeSet::new();
        for (k, b) in snap.iter().enumerate() {
            for r in &b.runs {
                let good = r.present != 0
                    && r.entries.entries().len() as u64 <= RUN_TICKS
                    && (r.entries.entries().len() as u64 == RUN_TICKS
                        || r.present >> r.entries.entries().len() == 0)
                    && r.entries.entries().iter().enumerate().all(|(i, e)| {
                        e.body == r.body
                            && e.tick == r.first + i as Tick
                            && e.entity == r.entity
                            && r.bounds.merge(&e.aabb) == r.bounds
                    });
                if !good {
                    return err(format!(
                        "malformed run of body {} from tick {} in bucket {k}",
                        r.body, r.first
                    ));
                }
            }
            let entries: Vec<&TvhtEntry> = b.entries().collect();
            for (i, e) in entries.iter().copied().enumerate() {
                if e.tick < swept {
                    return err(format!("entry {e:?} behind the swept floor {swept}"));
                }
                if e.tick < floor {
                    continue;
                }
                if entries[..i]
                    .iter()
                    .any(|f| f.body == e.body && f.tick == e.tick)
                {
                    return err(format!("entry {e:?} twice in bucket {k}"));
                }
                let c = copies.entry((e.tick, e.body)).or_insert((*e, Vec::new()));
                if c.0 != *e {
                    return err(format!("copies differ: {:?} and {e:?}", c.0));
                }
                c.1.push(k);
            }
            for (i, r) in b.contacts.iter().enumerate() {
                if r.tick < swept || r.a >= r.b || b.contacts[..i].contains(r) {
                    return err(format!("bad or duplicate contact record {r:?} in {k}"));
                }
                if r.tick < floor {
                    continue;
                }
                let (Some(x), Some(y)) = (b.find(r.a, r.tick), b.find(r.b, r.tick)) else {
                    return err(format!("contact {r:?} in bucket {k} lacks an entry"));
                };
                if x.entity == y.entity || !x.aabb.overlaps(&y.aabb) || self.owner(x, y) != k {
                    return err(format!(
                        "contact {r:?} is not an owned overlap of bucket {k}"
                    ));
                }
                if !records.insert(*r) {
                    return err(format!("contact {r:?} recorded in two buckets"));
                }
            }
            // Completeness: every owned overlapping pair here has a record.
            for (i, x) in entries.iter().enumerate() {
                for y in &entries[i + 1..] {
                    if x.tick == y.tick
                        && x.tick >= floor
                        && x.entity != y.entity
                        && x.aabb.overlaps(&y.aabb)
                        && self.owner(x, y) == k
                    {
                        let r = ContactRec {
                            tick: x.tick,
                            a: x.body.min(y.body),
                            b: x.body.max(y.body),
                        };
                        if !b.contacts.contains(&r) {
                            return err(format!("overlap {r:?} in bucket {k} has no record"));
                        }
                    }
                }
            }
        }
        for ((tick, body), (e, buckets)) in &copies {
            let want = match self.plan_buckets(*body, *tick, &e.aabb) {
                Ok(p) => p,
                Err(x) => return err(format!("stored entry {e:?} has a bad box: {x}")),
            };
            if *buckets != want {
                return err(format!(
                    "entry {e:?} is in buckets {buckets:?}, its cells hash to {want:?}"
                ));
            }
        }
        let live: BTreeMap<(Tick, BodyId), TvhtEntry> =
            copies.into_iter().map(|(k, (e, _))| (k, e)).collect();
        self.validate_sleep(&snap, floor, &live)
    }

    /// The sleep records' invariants: each live record is in exactly the sleep buckets of its
    /// cells, with identical copies; a body's records and entries never share a tick; every
    /// sleep contact joins a live awake entry of another entity and a record at its tick, in
    /// their owner cell's sleep bucket, once; every such overlapping pair has its contact.
    fn validate_sleep(
        &self,
        snap: &[Bucket],
        floor: Tick,
        live: &BTreeMap<(Tick, BodyId), TvhtEntry>,
    ) -> Result<(), TvhtError> {
        let err = |s: String| Err(TvhtError::Invalid(s));
        type RecKey = (EntityId, BodyId, u64, Tick);
        let mut recs: BTreeMap<RecKey, (SleepRec, Vec<usize>)> = BTreeMap::new();
        let mut woken = BTreeSet::new();
        for (k, b) in snap.iter().enumerate() {
            if (k < self.buckets() || !self.sleep) && !(b.records.is_empty() && b.woken.is_empty())
            {
                return err(format!("bucket {k} of entries holds sleep records"));
            }
            for r in &b.records {
                if r.from >= r.until {
                    return err(format!("empty sleep record {r:?} in bucket {k}"));
                }
                if r.until <= floor {
                    continue;
                }
                let c = recs
                    .entry((r.entity, r.body, r.tag, r.from))
                    .or_insert((*r, Vec::new()));
                if c.0 != *r {
                    return err(format!("sleep record copies differ: {:?} and {r:?}", c.0));
                }
                c.1.push(k);
            }
            for c in &b.woken {
                let (tick, body) = (c.awake.tick, c.awake.body);
                if tick < floor {
                    continue;
                }
                if !woken.insert((tick, body, c.sleeper)) {
                    return err(format!("sleep contact {c:?} recorded twice"));
                }
                let Some(r) = b.record(c.sleeper, tick) else {
                    return err(format!(
                        "sleep contact {c:?} in bucket {k} lacks its record"
                    ));
                };
                if live.get(&(tick, body)) != Some(&c.awake)
                    || c.awake.asleep
                    || c.awake.entity == r.entity
                    || !c.awake.aabb.overlaps(&r.aabb)
                    || self.sleep_slot(self.owner_cell(&c.awake.aabb, &r.aabb)) != k
                {
                    return err(format!(
                        "sleep contact {c:?} in bucket {k} is not an owned overlap of a live \
                         awake entry with {r:?}"
                    ));
                }
            }
        }
        let mut by_tick: BTreeMap<Tick, Vec<&TvhtEntry>> = BTreeMap::new();
        for ((tick, _), e) in live {
            by_tick.entry(*tick).or_default().push(e);
        }
        let mut spans: BTreeMap<BodyId, Vec<(Tick, Tick)>> = BTreeMap::new();
        for (r, buckets) in recs.values() {
            let mut want = Vec::new();
            match self.plan_sleep(
                r.from,
                &[BodyEntry {
                    body: r.body,
                    aabb: r.aabb,
                    state: r.state,
                    asleep: true,
                }],
                None,
                &mut want,
            ) {
                Ok(_) => {}
                Err(x) => return err(format!("sleep record {r:?} has a bad box: {x}")),
            }
            if *buckets != want {
                return err(format!(
                    "sleep record {r:?} is in buckets {buckets:?}, its cells hash to {want:?}"
                ));
            }
            spans.entry(r.body).or_default().push((r.from, r.until));
            for (&tick, es) in by_tick.range(r.from.max(floor)..r.until) {
                for e in es {
                    if e.body == r.body {
                        return err(format!(
                            "body {} has an entry and a sleep record at {tick}",
                            r.body
                        ));
                    }
                    if !e.asleep
                        && e.entity != r.entity
                        && e.aabb.overlaps(&r.aabb)
                        && !woken.contains(&(tick, e.body, r.body))
                    {
                        return err(format!(
                            "entry {e:?} meets sleep record {r:?} with no sleep contact"
                        ));
                    }
                }
            }
        }
        for (body, mut s) in spans {
            s.sort_unstable();
            if s.windows(2).any(|w| w[1].0 < w[0].1) {
                return err(format!("body {body} has overlapping sleep records {s:?}"));
            }
        }
        Ok(())
    }

    /// The owner bucket of a pair.
    fn owner(&self, x: &TvhtEntry, y: &TvhtEntry) -> usize {
        self.bucket_of(self.owner_cell(&x.aabb, &y.aabb), x.tick)
    }
}

// Under loom the tables must live inside `loom::model`: these std-thread tests are for std builds.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use glam::{Quat, Vec3};

    /// `Plan::keeps` (the planning shortcut) says yes exactly when `cell_range` would give the
    /// plan's cells: boxes on, just off and between cell boundaries, near 2^24 cells (where
    /// floats stop being exact), beyond it, inverted and NaN, for three cell sides.
    #[test]
    fn a_plan_keeps_exactly_the_boxes_that_cover_its_cells() {
        let mut rng = crate::scene::SplitMix64::new(24);
        let bases: [i64; 12] = [
            0,
            -1,
            1,
            7,
            -8,
            (1 << 24) - 3,
            (1 << 24) - 1,
            -(1 << 24) + 1,
            1 << 24,
            -(1 << 24) - 2,
            (1 << 25) + 6,
            1000,
        ];
        let fractions = [0.0f32, 1e-7, 0.25, 0.5, 0.999_999, 1.0, -1e-7];
        let extents = [0.0f32, 1e-6, 0.3, 0.999, 1.0, 1.7];
        let (mut kept, mut told) = (0, 0);
        for cell_size in [1.0f32, 0.7, 3.0] {
            let t = Tvht::new(
                Backend::default(),
                TvhtConfig {
                    cell_size,
                    ..config(64)
                },
            )
            .unwrap();
            let mut pick = |n: usize| (rng.next_u64() % n as u64) as usize;
            let corner = |pick: &mut dyn FnMut(usize) -> usize| {
                let base = bases[pick(bases.len())];
                let c = (base as f32 + fractions[pick(fractions.len())]) * cell_size;
                // One ulp either side, sometimes.
                match pick(3) {
                    0 => c.next_down(),
                    1 => c.next_up(),
                    _ => c,
                }
            };
            let mut boxes = Vec::new();
            for _ in 0..4000 {
                let min = Vec3::new(corner(&mut pick), corner(&mut pick), corner(&mut pick));
                let ext = Vec3::new(
                    extents[pick(extents.len())],
                    extents[pick(extents.len())],
                    extents[pick(extents.len())],
                ) * cell_size;
                let mut b = Aabb {
                    min,
                    max: min + ext,
                };
                match pick(40) {
                    0 => b.min.y = f32::NAN,
                    1 => b.max.z = f32::NAN,
                    2 => std::mem::swap(&mut b.min, &mut b.max),
                    _ => {}
                }
                boxes.push(b);
            }
            let mut keys = Vec::new();
            for w in boxes.windows(2) {
                let from = w[0];
                let Ok(cells) = t.cell_range(1, 0, &from) else {
                    continue;
                };
                keys.clear();
                let p = t.plan_into(1, 0, cells, &mut keys);
                // Against the next box, the box itself, or a box with corners on, or an ulp
                // off, the boundaries of the plan's cells (inverted or NaN now and then).
                let b = match pick(3) {
                    0 => w[1],
                    1 => from,
                    _ => {
                        let mut near = |c: i32| {
                            let f = [0.0f32, 1.0, 0.5, 2.0, -1.0][pick(5)];
                            let x = (c as f32 + f) * cell_size;
                            [x, x.next_down(), x.next_up()][pick(3)]
                        };
                        let mut b = Aabb {
                            min: Vec3::new(near(p.lo[0]), near(p.lo[1]), near(p.lo[2])),
                            max: Vec3::new(near(p.hi[0]), near(p.hi[1]), near(p.hi[2])),
                        };
                        match pick(20) {
                            0 => std::mem::swap(&mut b.min.x, &mut b.max.x),
                            1 => b.max.x = f32::NAN,
                            _ => {}
                        }
                        b
                    }
                };
                let (smin, smax) = (b.min * t.inv_cell, b.max * t.inv_cell);
                let keeps = p.keeps(&b, smin, smax);
                let range = t.cell_range(1, 0, &b);
                if keeps {
                    kept += 1;
                    assert_eq!(range, Ok((p.lo, p.hi)), "kept {b:?} for {from:?}");
                }
                if p.cells_f.is_some() && range == Ok((p.lo, p.hi)) {
                    told += 1;
                    assert!(keeps, "did not keep {b:?} for {from:?}");
                }
            }
        }
        // Both ways were met, many times.
        assert!(kept > 1000 && told == kept, "kept {kept}, told {told}");
    }

    /// `cells` lists the cells of a range as three nested loops do, x outermost, and none of
    /// an empty range.
    #[test]
    fn cells_lists_a_range_as_nested_loops_do() {
        let mut rng = crate::scene::SplitMix64::new(3);
        for _ in 0..500 {
            let mut corner = || {
                let mut c = [0i32; 3];
                for v in &mut c {
                    *v = (rng.next_u64() % 7) as i32 - 3;
                }
                c
            };
            let (lo, hi) = (corner(), corner());
            let mut want = Vec::new();
            for x in lo[0]..=hi[0] {
                for y in lo[1]..=hi[1] {
                    for z in lo[2]..=hi[2] {
                        want.push([x, y, z]);
                    }
                }
            }
            assert_eq!(cells(lo, hi).collect::<Vec<_>>(), want, "{lo:?} ..= {hi:?}");
        }
        let top = 1 << 30;
        assert_eq!(cells([top - 1; 3], [top; 3]).count(), 8);
    }

    #[test]
    fn floor_i32_is_floor_below_two_to_the_thirty() {
        let edge = MAX_CELL_COORD - 64.0;
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            2.999_999_8,
            -2.999_999_8,
            edge,
            -edge,
        ];
        xs.extend([f32::MIN_POSITIVE, -f32::MIN_POSITIVE, 1e-30, -1e-30]);
        // Every power of two's neighbours, and a spread of values with fractions.
        for e in -20..30 {
            let p = 2f32.powi(e);
            xs.extend([
                p,
                -p,
                p.next_up(),
                -p.next_up(),
                p.next_down(),
                -p.next_down(),
            ]);
        }
        let mut x = 0.37_f32;
        for _ in 0..10_000 {
            x = (x * 1.618_034 + 0.1).rem_euclid(2e6) - 1e6;
            xs.push(x);
        }
        for x in xs {
            assert_eq!(floor_i32(x), x.floor() as i32, "{x}");
        }
    }

    fn state(x: f32) -> BodyState {
        BodyState {
            position: Vec3::new(x, 0.0, 0.0),
            rotation: Quat::IDENTITY,
            velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
        }
    }

    fn cube(body: BodyId, c: Vec3, h: f32) -> BodyEntry {
        BodyEntry {
            body,
            aabb: Aabb::new(c - Vec3::splat(h), c + Vec3::splat(h)),
            state: state(c.x),
            asleep: false,
        }
    }

    fn config(buckets: usize) -> TvhtConfig {
        TvhtConfig {
            buckets,
            cell_size: 1.0,
            max_cells_per_body: 64,
            span_ticks: 4,
            sleep_records: false,
        }
    }

    #[test]
    fn second_writer_gets_the_contact_once_even_across_many_cells() {
        for &be in Backend::COMPILED {
            // 2 buckets: many cells collide in one bucket, the hardest case for exactly-once.
            for buckets in [2, 1024] {
                let t = Tvht::new(be, config(buckets)).unwrap();
                let a = cube(1, Vec3::new(0.5, 0.5, 0.5), 0.9); // covers 2x2x2 cells
                let b = cube(2, Vec3::new(0.7, 0.6, 0.4), 0.9);
                assert!(t.write(10, 5, &[a]).unwrap().is_empty());
                // Another tick, same place: no contact.
                assert!(t.write(20, 6, &[b]).unwrap().is_empty());
                let c = t.write(20, 5, &[b]).unwrap();
                assert_eq!(c.len(), 1);
                assert_eq!(
                    c[0].key(),
                    ContactKey {
                        tick: 5,
                        a: 1,
                        b: 2
                    }
                );
                assert_eq!((c[0].a.state, c[0].b.state), (a.state, b.state));
                assert_eq!(c[0].other(20).unwrap().body, 1);
                assert_eq!(
                    t.contacts(),
                    vec![ContactKey {
                        tick: 5,
                        a: 1,
                        b: 2
                    }]
                );
                t.validate_at_rest().unwrap();
                // Delete the first: returns the contact once; re-write reports it again.
                let d = t.delete(10, 5, &[a]).unwrap();
                assert_eq!(d.len(), 1);
                assert!(t.contacts().is_empty());
                t.validate_at_rest().unwrap();
                assert_eq!(t.write(10, 5, &[a]).unwrap().len(), 1);
                assert_eq!(t.delete(20, 5, &[b]).unwrap().len(), 1);
                assert!(t.delete(20, 5, &[b]).is_err());
                t.validate_at_rest().unwrap();
                assert_eq!(t.entries().len(), 2);
            }
        }
    }

    #[test]
    fn same_entity_never_contacts_itself_and_touching_faces_do() {
        let t = Tvht::new(Backend::default(), config(64)).unwrap();
        let a = cube(1, Vec3::ZERO, 0.5);
        let b = cube(2, Vec3::new(1.0, 0.0, 0.0), 0.5); // touches a's face at x = 0.5
        assert!(t.write(1, 0, &[a, b]).unwrap().is_empty());
        let c = cube(3, Vec3::new(2.0, 0.0, 0.0), 0.5);
        let r = t.write(2, 0, &[c]).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(
            r[0].key(),
            ContactKey {
                tick: 0,
                a: 2,
                b: 3
            }
        );
        t.validate_at_rest().unwrap();
    }

    #[test]
    fn write_steps_stops_at_the_first_contact() {
        let t = Tvht::new(Backend::default(), config(256)).unwrap();
        let far = cube(1, Vec3::new(10.0, 0.0, 0.0), 0.4);
        assert!(t.write(1, 3, &[far]).unwrap().is_empty());
        let s: Vec<[BodyEntry; 1]> = (0..5)
            .map(|i| [cube(2, Vec3::new(6.0 + i as f32, 0.0, 0.0), 0.4)])
            .collect();
        let steps: Vec<Step<'_>> = s
            .iter()
            .enumerate()
            .map(|(i, b)| Step {
                tick: i as Tick,
                bodies: b,
            })
            .collect();
        // Only at tick 4 would body 2 (x = 10) meet body 1 — but body 1 is at tick 3.
        let (n, c) = t.write_steps(2, &steps).unwrap();
        assert_eq!((n, c.len()), (5, 0));
        t.delete_steps(2, &steps).unwrap();
        assert!(t.write(1, 4, &[far]).unwrap().is_empty());
        let (n, c) = t.write_steps(2, &steps).unwrap();
        assert_eq!(
            (n, c[0].key()),
            (
                5,
                ContactKey {
                    tick: 4,
                    a: 1,
                    b: 2
                }
            )
        );
        let near = cube(1, Vec3::new(7.0, 0.0, 0.0), 0.4);
        t.delete_steps(2, &steps).unwrap();
        assert!(t.write(1, 1, &[near]).unwrap().is_empty());
        let (n, c) = t.write_steps(2, &steps).unwrap();
        assert_eq!((n, c.len()), (2, 1));
        assert_eq!(t.entries().iter().filter(|e| e.body == 2).count(), 2);
        t.validate_at_rest().unwrap();
        // Writing until a contact that matters: body 2 meets body 1 at ticks 1 and 4; only the
        // second stops the write, and both contacts come back (each recorded once).
        t.delete_steps(2, &steps[..2]).unwrap();
        let key = |tick| ContactKey { tick, a: 1, b: 2 };
        let (n, c) = t
            .write_steps_until(2, 0, &steps, |c| c.tick() == 4)
            .unwrap();
        assert_eq!(n, 5);
        assert_eq!(
            c.iter().map(Contact::key).collect::<Vec<_>>(),
            [key(1), key(4)]
        );
        t.delete_steps(2, &steps).unwrap();
        let (n, c) = t
            .write_steps_until(2, 0, &steps, |c| c.tick() == 1)
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(c.iter().map(Contact::key).collect::<Vec<_>>(), [key(1)]);
        assert_eq!(t.contacts(), [key(1)]);
        t.validate_at_rest().unwrap();
    }

    /// A writer's buffers carry nothing from one request to the next: requests of one body
    /// and of groups of changing sizes, some refused (duplicates, a NaN box), written through
    /// one set of buffers, leave the table as fresh buffers do, with the same answers.
    #[test]
    fn a_writers_buffers_carry_nothing_over() {
        for &be in Backend::COMPILED {
            let (fresh, reused) = (
                Tvht::new(be, config(16)).unwrap(),
                Tvht::new(be, config(16)).unwrap(),
            );
            let mut bufs = WriteBuffers::default();
            let mut rng = crate::scene::SplitMix64::new(7);
            let mut next = |n: u64| rng.next_u64() % n;
            let mut lvt = [0u64; 4];
            let mut last: [Option<Vec<BodyEntry>>; 4] = Default::default();
            let mut refused = 0;
            for round in 0..300 {
                let entity = next(4) as EntityId;
                // Entity e has bodies 10 e .. 10 e + 3; a request names 1 to 4 of them.
                let width = 1 + next(4) as usize;
                let ticks = 1 + next(6);
                let mut steps_bodies = Vec::new();
                for k in 0..ticks {
                    let bodies: Vec<BodyEntry> = (0..width)
                        .map(|j| {
                            let c = Vec3::new(
                                next(6) as f32 * 0.5,
                                (lvt[entity as usize] + k) as f32 * 0.1,
                                j as f32 * 0.9,
                            );
                            let mut b = cube(10 * entity as BodyId + j as BodyId, c, 0.4);
                            if next(50) == 0 {
                                b.aabb.max.y = f32::NAN;
                            }
                            b
                        })
                        .collect();
                    steps_bodies.push(bodies);
                }
                // Now and then a request starts with the entity's last step again: a
                // duplicate, refused in the section (the same boxes, so the same buckets).
                let mut first = lvt[entity as usize] + 1;
                if let (0, Some(l)) = (next(8), &last[entity as usize]) {
                    steps_bodies.insert(0, l.clone());
                    first -= 1;
                }
                let steps: Vec<Step<'_>> = steps_bodies
                    .iter()
                    .enumerate()
                    .map(|(k, bodies)| Step {
                        tick: first + k as Tick,
                        bodies,
                    })
                    .collect();
                let stops = |c: &Contact| c.tick() % 3 == 0;
                let a = fresh.write_steps_until(entity, round, &steps, stops);
                let b = reused.write_steps_buffered(&mut bufs, entity, round, &steps, stops);
                assert_eq!(a, b, "round {round}");
                refused += usize::from(a.is_err());
                if let Ok((n, _)) = a {
                    lvt[entity as usize] = first + n as Tick - 1;
                    last[entity as usize] = Some(steps_bodies[n - 1].clone());
                }
            }
            assert_eq!(fresh.entries(), reused.entries());
            assert_eq!(fresh.contacts(), reused.contacts());
            assert!(!fresh.contacts().is_empty(), "the writes met each other");
            assert!(refused > 20, "{refused} requests refused");
            reused.validate_at_rest().unwrap();
        }
    }

    #[test]
    fn bad_input_is_refused_without_effect() {
        let t = Tvht::new(Backend::default(), config(64)).unwrap();
        let a = cube(1, Vec3::ZERO, 0.5);
        t.write(1, 0, &[a]).unwrap();
        let mut nan = a;
        nan.aabb.min.x = f32::NAN;
        assert_eq!(
            t.write(2, 0, &[nan]),
            Err(TvhtError::BadAabb { body: 1, tick: 0 })
        );
        let huge = cube(3, Vec3::ZERO, 100.0);
        assert!(matches!(
            t.write(2, 0, &[huge]),
            Err(TvhtError::TooManyCells { .. })
        ));
        // 2^22 x 2^21 x 2^21 cells: 2^64, which a product in u64 took to 0 (a panic in a
        // debug build, and in a release build a box accepted as covering no cells).
        let mut vast = a;
        vast.aabb.min = Vec3::ZERO;
        vast.aabb.max = Vec3::new(4_194_303.5, 2_097_151.5, 2_097_151.5);
        assert_eq!(
            t.write(2, 0, &[vast]),
            Err(TvhtError::TooManyCells {
                body: 1,
                tick: 0,
                cells: u64::MAX,
                max: 64
            })
        );
        let far = cube(3, Vec3::splat(2.0e9), 0.5);
        assert!(matches!(
            t.write(2, 0, &[far]),
            Err(TvhtError::BadAabb { .. })
        ));
        assert_eq!(
            t.write(1, 0, &[a]),
            Err(TvhtError::Duplicate { body: 1, tick: 0 })
        );
        let b = cube(2, Vec3::ZERO, 0.5);
        // Batch with one bad body: nothing written.
        assert!(t.write(2, 0, &[b, a]).is_err());
        assert_eq!(t.entries().len(), 1);
        assert_eq!(
            t.delete(2, 0, &[a]),
            Err(TvhtError::NotFound {
                entity: 2,
                body: 1,
                tick: 0
            })
        );
        let mut moved = a;
        moved.aabb.max.x += 0.01;
        assert_eq!(
            t.delete(1, 0, &[moved]),
            Err(TvhtError::BoundsMismatch { body: 1, tick: 0 })
        );
        assert!(Tvht::new(Backend::default(), config(3)).is_err());
        let mut c = config(4);
        c.cell_size = 0.0;
        assert!(Tvht::new(Backend::default(), c).is_err());
        t.validate_at_rest().unwrap();
    }

    /// Regression: a crowded moment must not leave its room behind in the buckets once swept
    /// (the lock backend changes buckets in place; the heap of long runs grew without bound).
    #[test]
    fn a_swept_bucket_gives_its_room_back() {
        for &backend in Backend::COMPILED {
            let t = Tvht::new(backend, config(64)).unwrap();
            // 400 bodies crowd one cell for 16 ticks, then nothing: one bucket per tick slice.
            for tick in 0..16 {
                let crowd: Vec<BodyEntry> =
                    (0..400).map(|b| cube(b, Vec3::splat(0.5), 0.1)).collect();
                t.write(0, tick, &crowd).unwrap();
            }
            assert!(t.reserved() >= 16 * 400, "{backend:?}: {}", t.reserved());
            t.prune_before(16);
            assert_eq!(t.stored_entries(), 0);
            assert_eq!(t.reserved(), 0, "{backend:?}: room kept by emptied buckets");
        }
    }

    /// Regression: a sweep used to leave an emptied bucket up to 8 entries of room (1 KiB),
    /// so a run that passes through many cells ended with every bucket holding some: on
    /// `parallel` 2000 (1 s, one worker, locks) RSS crept up for the whole run, and peak RSS
    /// fell from 220 MB to 175 MB with the fix.
    #[test]
    fn buckets_touched_once_keep_nothing_after_the_sweep() {
        for &backend in Backend::COMPILED {
            let t = Tvht::new(backend, config(1024)).unwrap();
            // One body moving through 300 cells, a few ticks in each: small, short lists.
            for tick in 0..900 {
                let x = (tick / 3) as f32 * 2.0 + 0.5;
                t.write(0, tick, &[cube(1, Vec3::new(x, 0.5, 0.5), 0.1)])
                    .unwrap();
            }
            assert!(t.reserved() >= 900, "{backend:?}: {}", t.reserved());
            t.prune_before(900);
            assert_eq!(t.stored_entries(), 0);
            assert_eq!(t.reserved(), 0, "{backend:?}: room kept by emptied buckets");
        }
    }

    #[test]
    fn prune_reclaims_behind_the_floor() {
        let t = Tvht::new(Backend::default(), config(128)).unwrap();
        for tick in 0..20 {
            t.write(1, tick, &[cube(1, Vec3::ZERO, 0.3)]).unwrap();
            t.write(2, tick, &[cube(2, Vec3::new(0.2, 0.0, 0.0), 0.3)])
                .unwrap();
        }
        assert_eq!(t.contacts().len(), 20);
        let stored = t.stored_entries();
        let removed = t.prune_before(15);
        assert_eq!(stored - removed, t.stored_entries());
        assert!(removed >= 30);
        assert_eq!(t.floor(), 15);
        assert_eq!(t.contacts().len(), 5);
        assert_eq!(t.entries().len(), 10);
        assert_eq!(
            t.write(1, 14, &[cube(1, Vec3::ZERO, 0.3)]),
            Err(TvhtError::BehindFloor {
                tick: 14,
                floor: 15
            })
        );
        t.prune_before(3); // never lowers
        assert_eq!(t.floor(), 15);
        // Round-robin steps: after a whole table's worth, nothing before 18 is left.
        let stored = t.stored_entries();
        let removed: usize = (0..16).map(|_| t.prune_step(18, 8)).sum();
        assert_eq!(stored - removed, t.stored_entries());
        assert!(t.entries().iter().all(|e| e.tick >= 18));
        t.validate_at_rest().unwrap();
    }

    /// The ledger: whatever writes and naps put in buckets is swept once the floor passes its
    /// slice, though those buckets are never written again, and the ledger itself stays short.
    #[test]
    fn the_ledger_sweeps_what_writes_and_naps_leave_behind() {
        for &be in Backend::COMPILED {
            let t = Tvht::new(be, sleeping(1024)).unwrap();
            // Body 2 naps at the origin for ticks 0..=39; body 1 flies through it along x,
            // into a new cell every other tick: most buckets it writes get nothing more.
            let asleep = BodyEntry {
                asleep: true,
                ..cube(2, Vec3::ZERO, 0.3)
            };
            assert_eq!(t.sleep(20, 7, 0, 39, &[asleep]).unwrap().0, 39);
            let mut met = 0;
            for tick in 0..200 {
                let x = -5.0 + tick as f32 * 0.5;
                met += t
                    .write(1, tick, &[cube(1, Vec3::new(x, 0.0, 0.0), 0.3)])
                    .unwrap()
                    .len();
                if tick < 8 || tick % 4 != 0 {
                    continue;
                }
                let floor = tick - 8;
                t.prune_touched(floor);
                assert_eq!(t.floor(), floor);
                // Nothing is left from the slices wholly behind the floor (span 4).
                let start = floor & !3;
                for b in t.table.snapshot() {
                    assert!(b.entries().all(|e| e.tick >= start), "{be:?} {floor}");
                    assert!(b.contacts.iter().all(|c| c.tick >= start));
                    assert!(b.records.iter().all(|r| r.until > start), "{be:?} {floor}");
                    assert!(b.woken.iter().all(|c| c.awake.tick >= start));
                }
                // At most 16 buckets a write since then (its 8 cells, and their sleep buckets
                // when it meets the record), and until the nap is behind, its 8 sleep buckets
                // (the others it only looked at).
                let nap = if start < 40 { 8 } else { 0 };
                assert!(
                    t.noted() <= 16 * (tick - start + 1) as usize + nap,
                    "{}",
                    t.noted()
                );
            }
            assert!(met > 0, "body 1 met the sleep record on its way");
            t.prune_touched(1000);
            assert!(t.table.snapshot().iter().all(|b| b.runs.is_empty()
                && b.contacts.is_empty()
                && b.records.is_empty()
                && b.woken.is_empty()));
            assert_eq!(t.noted(), 0);
            t.validate_at_rest().unwrap();
        }
    }

    fn sleeping(buckets: usize) -> TvhtConfig {
        config(buckets).with_sleep_records(true)
    }

    fn key(tick: Tick, a: BodyId, b: BodyId) -> ContactKey {
        ContactKey { tick, a, b }
    }

    #[test]
    fn a_sleep_record_meets_an_awake_entry_once_whichever_comes_second() {
        for &be in Backend::COMPILED {
            for buckets in [2, 1024] {
                let t = Tvht::new(be, sleeping(buckets)).unwrap();
                let s = cube(1, Vec3::new(0.5, 0.5, 0.5), 0.9); // 2x2x2 cells
                let a = cube(2, Vec3::new(0.7, 0.6, 0.4), 0.9);
                // The entry first: the record stops at its tick and reports it.
                assert!(t.write(20, 5, &[a]).unwrap().is_empty());
                let (last, c) = t.sleep(10, 7, 3, 9, &[s]).unwrap();
                assert_eq!(last, 5);
                assert_eq!(
                    c.iter().map(Contact::key).collect::<Vec<_>>(),
                    [key(5, 1, 2)]
                );
                assert_eq!((c[0].a.state, c[0].b.state), (s.state, a.state));
                assert!(c[0].a.asleep && !c[0].b.asleep);
                assert_eq!((c[0].a.tag, c[0].a.entity), (7, 10));
                t.validate_at_rest().unwrap();
                // Extended past it: nothing more to meet.
                assert_eq!(t.sleep(10, 7, 6, 9, &[s]).unwrap(), (9, Vec::new()));
                t.validate_at_rest().unwrap();
                // The record first: the entry's write reports it; an asleep entry meets nothing.
                let c = t.write(20, 8, &[a]).unwrap();
                assert_eq!(
                    c.iter().map(Contact::key).collect::<Vec<_>>(),
                    [key(8, 1, 2)]
                );
                assert_eq!(c[0].a.tag, 7);
                let mut dozing = cube(3, Vec3::new(0.6, 0.5, 0.5), 0.9);
                dozing.asleep = true;
                let c = t.write(30, 8, &[dozing]).unwrap();
                assert_eq!(
                    c.iter().map(Contact::key).collect::<Vec<_>>(),
                    [key(8, 2, 3)]
                );
                assert_eq!(t.contacts(), [key(5, 1, 2), key(8, 1, 2), key(8, 2, 3)]);
                t.validate_at_rest().unwrap();
                // A body is either in a record or in an entry at a tick, never both.
                assert!(matches!(
                    t.write(10, 4, &[s]),
                    Err(TvhtError::Duplicate { body: 1, tick: 4 })
                ));
                assert!(matches!(
                    t.sleep(20, 1, 6, 9, &[a]),
                    Err(TvhtError::Duplicate { body: 2, tick: 8 })
                ));
                // Deleting the entry gives the contact back once.
                let d = t.delete(20, 8, &[a]).unwrap();
                assert_eq!(
                    d.iter().map(Contact::key).collect::<Vec<_>>(),
                    [key(8, 1, 2), key(8, 2, 3)]
                );
                assert!(t.delete(20, 8, &[a]).is_err());
                t.validate_at_rest().unwrap();
                // Waking at 5 cuts the record to 3..5 and gives back its contact at 5.
                let w = t.wake(10, 7, &[s], 5).unwrap();
                assert_eq!(
                    w.iter().map(Contact::key).collect::<Vec<_>>(),
                    [key(5, 1, 2)]
                );
                assert!(t.contacts().is_empty());
                t.validate_at_rest().unwrap();
                // The body may now be written at 5, or sleep again from 5 under a new tag.
                assert_eq!(t.write(10, 5, &[s]).unwrap().len(), 1);
                assert!(t.sleep(10, 8, 5, 6, &[s]).is_err());
                assert_eq!(t.sleep(10, 8, 6, 12, &[s]).unwrap(), (12, Vec::new()));
                t.validate_at_rest().unwrap();
                // Waking before a record's start removes it.
                assert!(t.wake(10, 8, &[s], 6).unwrap().is_empty());
                assert!(t.wake(10, 8, &[s], 6).is_err());
                t.validate_at_rest().unwrap();
            }
        }
    }

    #[test]
    fn sleep_records_refuse_bad_requests_without_effect() {
        let off = Tvht::new(Backend::default(), config(64)).unwrap();
        let s = cube(1, Vec3::ZERO, 0.4);
        assert!(matches!(
            off.sleep(1, 0, 0, 5, &[s]),
            Err(TvhtError::Config(_))
        ));
        let t = Tvht::new(Backend::default(), sleeping(64)).unwrap();
        assert!(matches!(
            t.sleep(1, 0, 5, 4, &[s]),
            Err(TvhtError::Config(_))
        ));
        assert!(matches!(
            t.sleep(1, 0, 0, 5, &[s, s]),
            Err(TvhtError::Duplicate { .. })
        ));
        assert!(matches!(
            t.wake(1, 0, &[s], 3),
            Err(TvhtError::NotFound { .. })
        ));
        assert_eq!(t.sleep(1, 0, 0, 5, &[s]).unwrap().0, 5);
        let moved = cube(1, Vec3::splat(0.1), 0.4);
        assert!(matches!(
            t.sleep(1, 0, 6, 9, &[moved]),
            Err(TvhtError::BoundsMismatch { .. })
        ));
        assert!(matches!(
            t.wake(1, 0, &[moved], 3),
            Err(TvhtError::NotFound { .. } | TvhtError::BoundsMismatch { .. })
        ));
        t.prune_before(4);
        assert!(matches!(
            t.sleep(1, 1, 3, 9, &[s]),
            Err(TvhtError::BehindFloor { .. })
        ));
        t.validate_at_rest().unwrap();
        // Swept once it ends behind the floor.
        t.prune_before(6);
        assert_eq!(
            t.table
                .snapshot()
                .iter()
                .map(|b| b.records.len())
                .sum::<usize>(),
            0
        );
        t.validate_at_rest().unwrap();
    }

    /// Random writes, deletes, sleeps and wakes of a few bodies crowded in a few cells: after
    /// each, the table's invariants hold (`validate`: every overlapping pair of an awake entry
    /// and a record has exactly one contact, and so on), and every contact a write or sleep
    /// reported is given back by exactly one delete or wake, or is still recorded.
    #[test]
    fn random_sleeps_and_wakes_keep_every_contact_exactly_once() {
        for &be in Backend::COMPILED {
            let t = Tvht::new(be, sleeping(8)).unwrap();
            let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
            let mut next = move |n: u64| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng % n
            };
            // Per body (its own entity): its box, the ticks it wrote, its records (tag, from, until).
            let boxes: Vec<BodyEntry> = (0..4)
                .map(|b| cube(b, Vec3::new(0.3 * b as f32, 0.2, 0.1 * b as f32), 0.6))
                .collect();
            let mut ticks: Vec<BTreeSet<Tick>> = vec![BTreeSet::new(); 4];
            let mut recs: Vec<Vec<(u64, Tick, Tick)>> = vec![Vec::new(); 4];
            let mut live: BTreeSet<ContactKey> = BTreeSet::new();
            let mut tag = 0;
            for _ in 0..400 {
                let b = next(4) as usize;
                let mut e = boxes[b];
                let tick = next(12);
                match next(4) {
                    0 => {
                        e.asleep = next(3) == 0;
                        if let Ok(c) = t.write(b as EntityId, tick, &[e]) {
                            ticks[b].insert(tick);
                            for c in c {
                                assert!(live.insert(c.key()), "{:?} reported twice", c.key());
                            }
                        }
                    }
                    1 => {
                        if ticks[b].remove(&tick) {
                            for c in t.delete(b as EntityId, tick, &[e]).unwrap() {
                                assert!(live.remove(&c.key()), "{:?} not live", c.key());
                            }
                        } else {
                            assert!(t.delete(b as EntityId, tick, &[e]).is_err());
                        }
                    }
                    2 => {
                        tag += 1;
                        let to = tick + next(6);
                        if let Ok((last, c)) = t.sleep(b as EntityId, tag, tick, to, &[e]) {
                            assert!(last >= tick && last <= to);
                            recs[b].push((tag, tick, last + 1));
                            for c in c {
                                assert_eq!(c.tick(), last);
                                assert!(live.insert(c.key()), "{:?} reported twice", c.key());
                            }
                        }
                    }
                    _ => {
                        if let Some(&(tag, from, until)) = recs[b].last() {
                            for c in t.wake(b as EntityId, tag, &[e], tick).unwrap() {
                                assert!(c.tick() >= tick && c.tick() < until);
                                assert!(live.remove(&c.key()), "{:?} not live", c.key());
                            }
                            recs[b].pop();
                            if tick > from {
                                recs[b].push((tag, from, until.min(tick)));
                            }
                        }
                    }
                }
                t.validate_at_rest().unwrap();
                assert_eq!(t.contacts(), live.iter().copied().collect::<Vec<_>>());
            }
            assert!(recs.iter().any(|r| !r.is_empty()) && !live.is_empty());
        }
    }

    #[test]
    fn default_config_scales_with_bodies() {
        let c = TvhtConfig::for_scene(1000, 1.0, 256);
        assert_eq!((c.buckets, c.cell_size, c.span_ticks), (1 << 14, 2.0, 64));
        let c = TvhtConfig::for_scene_with_span(1000, 1.0, 256, 16);
        assert_eq!((c.buckets, c.span_ticks), (1 << 16, 16));
        assert_eq!(TvhtConfig::for_scene(1, f32::NAN, 256).buckets, 1 << 10);
    }
}
