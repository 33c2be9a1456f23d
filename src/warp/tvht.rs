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
//! that meets a contact; like Algorithm 7, [`Tvht::delete_steps`] deletes a whole rollback in
//! one section.
//!
//! A contact carries both entries' stored (pre-event) states, sorted so that `a.body < b.body`,
//! so the collision response can be computed from both bodies' states at that tick no matter
//! which of the two entities detected it (`DESIGN.md`, "Determinism is a contract"). The
//! contact lists returned are sorted by (tick, a.body, b.body).
//!
//! ## Reclamation
//!
//! Entries and contacts before GVT are final and never read again. [`Tvht::prune_step`] raises
//! the table's floor and sweeps the next few buckets round robin (the engine calls it as GVT
//! advances, so the whole table is swept about once per window); [`Tvht::prune_before`] sweeps
//! all of it at once; writes also drop entries below the floor from the buckets they change.
//! Writes below the floor are refused. So the table holds about `window` ticks of entries,
//! and its memory stays flat over a long run.
//!
//! Static bodies are not in the table: each entity checks them itself (`DESIGN.md`).

use super::{BodyId, EntityId, Tick};
use crate::dynamics::BodyState;
use crate::geometry::Aabb;
use crate::primitive::{AtomicU64, Ordering};
use crate::sync::{Backend, Table, View};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

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
        let span_ticks = DEFAULT_SPAN_TICKS;
        let want = (bodies as u64)
            .saturating_mul(4 * window.max(1))
            .div_ceil(span_ticks)
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
        }
    }
}

/// The engine's time slice: [`TvhtConfig::span_ticks`] for [`TvhtConfig::for_scene`]. An
/// entity writes up to [`super::entity::BATCH`] ticks per section, so a section touches about
/// `cells * (BATCH / span + 1)` buckets; with resting contacts it writes one tick per section
/// and clones `span` ticks of a bucket under the STM. Measured on cylinders, parallel and
/// bouncing (README, warp engine figures).
pub const DEFAULT_SPAN_TICKS: u64 = 16;

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
    /// The body already has an entry at this tick (or is named twice in one request).
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

/// One bucket: entries and contact records of the (cell, tick)s hashed to it.
#[derive(Debug, Default)]
struct Bucket {
    entries: Vec<TvhtEntry>,
    contacts: Vec<ContactRec>,
}

impl Clone for Bucket {
    /// The STM clones a bucket per attempt, and a write then pushes an entry: the copy gets
    /// room for one more entry, so that the push does not reallocate and copy again.
    fn clone(&self) -> Self {
        let mut entries = Vec::with_capacity(self.entries.len() + 1);
        entries.extend_from_slice(&self.entries);
        Bucket {
            entries,
            contacts: self.contacts.clone(),
        }
    }
}

impl Bucket {
    fn prune(&mut self, floor: Tick) {
        self.entries.retain(|e| e.tick >= floor);
        self.contacts.retain(|c| c.tick >= floor);
        // A bucket serves different (cell, slice) pairs over a run: room kept for a crowded
        // cell of one slice would stay with it, and in time every bucket would keep the room
        // of the most crowded cell ever hashed to it. (Found: with the lock backend, which
        // changes buckets in place, a `bouncing` 110 run's heap grew without bound, and
        // `pyramids` 10010 with contact groups reached 21 GB; the STM copies a bucket at each
        // write, with room for one more entry, so it was spared.)
        shrink(&mut self.entries);
        shrink(&mut self.contacts);
    }

    fn has_old(&self, floor: Tick) -> bool {
        self.entries.iter().any(|e| e.tick < floor) || self.contacts.iter().any(|c| c.tick < floor)
    }

    fn find(&self, body: BodyId, tick: Tick) -> Option<&TvhtEntry> {
        self.entries
            .iter()
            .find(|e| e.body == body && e.tick == tick)
    }
}

/// Gives back a vector's room beyond half again its length (and a little): amortised, since it
/// runs only when old entries are swept out.
fn shrink<T>(v: &mut Vec<T>) {
    if v.capacity() > 2 * v.len() + 8 {
        v.shrink_to(v.len() + v.len() / 2 + 4);
    }
}

type Cell = [i32; 3];

/// The cells of one body's box at one tick and the distinct buckets they hash to: sorted,
/// `keys[buckets]` of the request's flat key list ([`Planned::keys`]).
#[derive(Clone)]
struct Plan {
    body: BodyId,
    lo: Cell,
    hi: Cell,
    slice: Tick,
    buckets: std::ops::Range<usize>,
}

/// A checked request: one plan per body per step, in request order (step by step), the flat
/// list of their buckets (each plan's distinct buckets, a plan equal to the one before it
/// sharing its range), and the request's (tick, body) pairs, sorted.
struct Planned {
    plans: Vec<Plan>,
    keys: Vec<usize>,
    seen: Vec<(Tick, BodyId)>,
}

impl Planned {
    /// The plans of each step, in order, zipped with the steps.
    fn per_step<'p, 's>(
        &'p self,
        steps: &'p [Step<'s>],
    ) -> impl Iterator<Item = (&'p Step<'s>, &'p [Plan])> + 'p {
        let mut at = 0;
        steps.iter().map(move |s| {
            let ps = &self.plans[at..at + s.bodies.len()];
            at += s.bodies.len();
            (s, ps)
        })
    }

    /// The distinct buckets of a plan.
    fn buckets(&self, p: &Plan) -> &[usize] {
        &self.keys[p.buckets.clone()]
    }
}

/// The temporal volumetric hash table.
pub struct Tvht {
    table: Table<Bucket>,
    mask: u64,
    span_shift: u32,
    cell_size: f32,
    inv_cell: f32,
    max_cells: usize,
    floor: AtomicU64,
    /// Where the next `prune_step` sweep starts.
    cursor: AtomicU64,
    /// The floor of the last full sweep: no entry is older (checked by `validate`).
    swept: AtomicU64,
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
        Ok(Tvht {
            table: Table::new(backend, config.buckets, |_| Bucket::default()),
            mask: config.buckets as u64 - 1,
            span_shift: config.span_ticks.trailing_zeros(),
            cell_size: config.cell_size,
            inv_cell: 1.0 / config.cell_size,
            max_cells: config.max_cells_per_body,
            floor: AtomicU64::new(0),
            cursor: AtomicU64::new(0),
            swept: AtomicU64::new(0),
        })
    }

    /// The backend guarding the buckets.
    pub fn backend(&self) -> Backend {
        self.table.backend()
    }

    /// The number of buckets.
    pub fn buckets(&self) -> usize {
        self.table.len()
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
        let h = (c[0] as u32 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (c[1] as u32 as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
            ^ (c[2] as u32 as u64).wrapping_mul(0x1656_67b1_9e37_79f9)
            ^ tick.wrapping_mul(0xd6e8_feb8_6659_fd93);
        (mix(h) & self.mask) as usize
    }

    #[inline]
    fn cell_of(&self, v: glam::Vec3) -> Cell {
        let s = v * self.inv_cell;
        [s.x.floor() as i32, s.y.floor() as i32, s.z.floor() as i32]
    }

    /// The lowest cell of a stored box (stored boxes were checked when written).
    #[inline]
    fn lo_of(&self, b: &Aabb) -> Cell {
        self.cell_of(b.min)
    }

    /// The checked cell range of a box.
    fn cell_range(&self, body: BodyId, tick: Tick, b: &Aabb) -> Result<(Cell, Cell), TvhtError> {
        let bad = TvhtError::BadAabb { body, tick };
        if !(b.min.is_finite() && b.max.is_finite()) || b.min.cmpgt(b.max).any() {
            return Err(bad);
        }
        let (smin, smax) = (b.min * self.inv_cell, b.max * self.inv_cell);
        if smin.abs().max_element() >= MAX_CELL_COORD || smax.abs().max_element() >= MAX_CELL_COORD
        {
            return Err(bad);
        }
        let (lo, hi) = (self.cell_of(b.min), self.cell_of(b.max));
        let cells: u64 = (0..3).map(|i| (hi[i] - lo[i]) as u64 + 1).product();
        if cells > self.max_cells as u64 {
            return Err(TvhtError::TooManyCells {
                body,
                tick,
                cells,
                max: self.max_cells,
            });
        }
        Ok((lo, hi))
    }

    /// Appends the distinct buckets of a body's box at `tick` to `keys` (sorted) and returns
    /// its plan. If `prev` (the same body's plan at the step before) covers the same cells in
    /// the same time slice, its buckets are the same: nothing is appended and its range is
    /// shared (a batch of consecutive ticks thus names each bucket about once, not once per
    /// tick).
    fn plan_into(
        &self,
        body: BodyId,
        tick: Tick,
        b: &Aabb,
        prev: Option<&Plan>,
        keys: &mut Vec<usize>,
    ) -> Result<Plan, TvhtError> {
        let (lo, hi) = self.cell_range(body, tick, b)?;
        let slice = tick >> self.span_shift;
        if let Some(p) =
            prev.filter(|p| p.body == body && p.lo == lo && p.hi == hi && p.slice == slice)
        {
            return Ok(p.clone());
        }
        let start = keys.len();
        for x in lo[0]..=hi[0] {
            for y in lo[1]..=hi[1] {
                for z in lo[2]..=hi[2] {
                    keys.push(self.bucket_of([x, y, z], tick));
                }
            }
        }
        let mine = &mut keys[start..];
        mine.sort_unstable();
        // Deduplicate the sorted run in place.
        let mut n = 0;
        for i in 0..mine.len() {
            if i == 0 || mine[i] != mine[n - 1] {
                mine[n] = mine[i];
                n += 1;
            }
        }
        keys.truncate(start + n);
        Ok(Plan {
            body,
            lo,
            hi,
            slice,
            buckets: start..start + n,
        })
    }

    /// The distinct buckets of a body's box at `tick`, sorted.
    fn plan_buckets(&self, body: BodyId, tick: Tick, b: &Aabb) -> Result<Vec<usize>, TvhtError> {
        let mut keys = Vec::new();
        self.plan_into(body, tick, b, None, &mut keys)?;
        Ok(keys)
    }

    /// Checks a request and plans its buckets: one plan per body per step, and all keys.
    /// Writes below the floor are refused; deletes there are allowed (the entries may be
    /// gone, which is then reported as `NotFound`).
    /// Also returns the request's (tick, body) pairs, sorted.
    fn plan_steps(&self, steps: &[Step<'_>], check_floor: bool) -> Result<Planned, TvhtError> {
        let floor = self.floor();
        let bodies: usize = steps.iter().map(|s| s.bodies.len()).sum();
        let mut seen: Vec<(Tick, BodyId)> = Vec::with_capacity(bodies);
        let mut plans: Vec<Plan> = Vec::with_capacity(bodies);
        let mut keys = Vec::new();
        let mut prev_step = 0..0;
        for s in steps {
            if check_floor && s.tick < floor {
                return Err(TvhtError::BehindFloor {
                    tick: s.tick,
                    floor,
                });
            }
            let first = plans.len();
            for (j, b) in s.bodies.iter().enumerate() {
                let prev = prev_step.clone().nth(j).map(|i| &plans[i]);
                let plan = self.plan_into(b.body, s.tick, &b.aabb, prev, &mut keys)?;
                plans.push(plan);
                seen.push((s.tick, b.body));
            }
            prev_step = first..plans.len();
        }
        if seen.len() > 1 {
            seen.sort_unstable();
            if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
                return Err(TvhtError::Duplicate {
                    body: w[0].1,
                    tick: w[0].0,
                });
            }
        }
        Ok(Planned { plans, keys, seen })
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
        let planned = self.plan_steps(steps, true)?;
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
        let out = self.section(&planned.keys, |view| {
            // Check everything before changing anything: one pass over each bucket.
            for i in 0..view.keys().len() {
                let k = view.keys()[i];
                if let Some(e) = view.get(k).entries.iter().find(|e| {
                    e.body >= bmin
                        && e.body <= bmax
                        && e.tick >= tmin
                        && e.tick <= tmax
                        && seen.binary_search(&(e.tick, e.body)).is_ok()
                }) {
                    return Err(TvhtError::Duplicate {
                        body: e.body,
                        tick: e.tick,
                    });
                }
            }
            // Reclaim what is behind the floor in the buckets this section holds anyway.
            for i in 0..view.keys().len() {
                let k = view.keys()[i];
                if view.get(k).has_old(floor) {
                    view.get_mut(k).prune(floor);
                }
            }
            for (i, (s, ps)) in planned.per_step(steps).enumerate() {
                let tag = first_tag.wrapping_add(i as u64);
                let found = self.write_one(view, (entity, tag), s, ps, &planned);
                if !found.is_empty() {
                    return Ok((i + 1, found));
                }
            }
            Ok((steps.len(), Vec::new()))
        });
        out.map(|(n, mut c)| {
            c.sort_unstable_by_key(Contact::key);
            (n, c)
        })
    }

    /// Writes one step inside a section; returns its contacts.
    fn write_one(
        &self,
        view: &mut View<'_, Bucket>,
        (entity, tag): (EntityId, u64),
        s: &Step<'_>,
        plans: &[Plan],
        planned: &Planned,
    ) -> Vec<Contact> {
        let mut contacts = Vec::new();
        for (b, p) in s.bodies.iter().zip(plans) {
            let me = TvhtEntry {
                entity,
                body: b.body,
                tick: s.tick,
                aabb: b.aabb,
                state: b.state,
                tag,
                asleep: b.asleep,
            };
            for &k in planned.buckets(p) {
                let first = contacts.len();
                for x in &view.get(k).entries {
                    if x.tick == s.tick && x.entity != entity && x.aabb.overlaps(&me.aabb) {
                        let xl = self.lo_of(&x.aabb);
                        let owner = [p.lo[0].max(xl[0]), p.lo[1].max(xl[1]), p.lo[2].max(xl[2])];
                        if self.bucket_of(owner, s.tick) == k {
                            contacts.push(Contact::new(me, *x));
                        }
                    }
                }
                let bucket = view.get_mut(k);
                for c in &contacts[first..] {
                    let key = c.key();
                    bucket.contacts.push(ContactRec {
                        tick: key.tick,
                        a: key.a,
                        b: key.b,
                    });
                }
                bucket.entries.push(me);
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
        let planned = self.plan_steps(steps, false)?;
        let out = self.section(&planned.keys, |view| {
            for (s, ps) in planned.per_step(steps) {
                for (b, p) in s.bodies.iter().zip(ps) {
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
            let mut contacts = Vec::new();
            for (s, ps) in planned.per_step(steps) {
                for (b, p) in s.bodies.iter().zip(ps) {
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
                        bucket
                            .entries
                            .retain(|e| !(e.body == body && e.tick == tick));
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
        (0..self.table.len())
            .map(|k| self.prune_bucket(k, floor))
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
        (0..n as u64)
            .map(|i| self.prune_bucket(((start + i) & self.mask) as usize, floor))
            .sum()
    }

    fn raise_floor(&self, tick: Tick) -> Tick {
        self.floor.fetch_max(tick, Ordering::AcqRel).max(tick)
    }

    fn prune_bucket(&self, k: usize, floor: Tick) -> usize {
        // A read-only look first (no copy, no write under the STM): most buckets of a sweep
        // hold nothing old. Entries only age, so a bucket seen clean may be swept next time.
        if !self.table.read(k, |b| b.has_old(floor)) {
            return 0;
        }
        self.table.section(&[k], |v| {
            if !v.get(k).has_old(floor) {
                return 0;
            }
            let b = v.get_mut(k);
            let n = b.entries.len();
            b.prune(floor);
            n - b.entries.len()
        })
    }

    /// Every live entry (each once, whatever the number of cells it covers), sorted by tick
    /// then body. A consistent snapshot.
    pub fn entries(&self) -> Vec<TvhtEntry> {
        let mut m = BTreeMap::new();
        for b in self.table.snapshot() {
            for e in b.entries {
                m.insert((e.tick, e.body), e);
            }
        }
        m.into_values().collect()
    }

    /// Every recorded contact, sorted. A consistent snapshot.
    pub fn contacts(&self) -> Vec<ContactKey> {
        let mut v: Vec<ContactKey> = self
            .table
            .snapshot()
            .into_iter()
            .flat_map(|b| b.contacts)
            .map(|c| ContactKey {
                tick: c.tick,
                a: c.a,
                b: c.b,
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// Stored entry copies (one per distinct bucket of each entry): a measure of memory.
    pub fn stored_entries(&self) -> usize {
        self.table.snapshot().iter().map(|b| b.entries.len()).sum()
    }

    /// Room for entries and contact records held by the buckets (their vectors' capacities): the
    /// memory the table keeps, which must follow what it stores.
    pub fn reserved(&self) -> usize {
        (0..self.table.len())
            .map(|k| {
                self.table
                    .read(k, |b| b.entries.capacity() + b.contacts.capacity())
            })
            .sum()
    }

    /// Checks the invariants on a consistent snapshot. Live entries (at or after the floor)
    /// are in exactly the buckets their boxes' cells hash to, with identical copies; every live
    /// contact record sits in the owner bucket of two overlapping entries of different
    /// entities at its tick, once; every such pair has its record. Entries behind the floor
    /// may be partly reclaimed ([`Tvht::prune_step`] sweeps a slice at a time), but none is
    /// older than the floor of the last full sweep ([`Tvht::prune_before`]).
    pub fn validate(&self) -> Result<(), TvhtError> {
        let swept = self.swept.load(Ordering::Acquire);
        let snap = self.table.snapshot();
        let floor = self.floor();
        let err = |s: String| Err(TvhtError::Invalid(s));
        let mut copies: BTreeMap<(Tick, BodyId), (TvhtEntry, Vec<usize>)> = BTreeMap::new();
        let mut records = BTreeSet::new();
        for (k, b) in snap.iter().enumerate() {
            for (i, e) in b.entries.iter().enumerate() {
                if e.tick < swept {
                    return err(format!("entry {e:?} behind the swept floor {swept}"));
                }
                if e.tick < floor {
                    continue;
                }
                if b.entries[..i]
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
            for (i, x) in b.entries.iter().enumerate() {
                for y in &b.entries[i + 1..] {
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
        Ok(())
    }

    /// The owner bucket of a pair.
    fn owner(&self, x: &TvhtEntry, y: &TvhtEntry) -> usize {
        let (a, b) = (self.lo_of(&x.aabb), self.lo_of(&y.aabb));
        self.bucket_of([a[0].max(b[0]), a[1].max(b[1]), a[2].max(b[2])], x.tick)
    }
}

// Under loom the tables must live inside `loom::model`: these std-thread tests are for std builds.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use glam::{Quat, Vec3};

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
                t.validate().unwrap();
                // Delete the first: returns the contact once; re-write reports it again.
                let d = t.delete(10, 5, &[a]).unwrap();
                assert_eq!(d.len(), 1);
                assert!(t.contacts().is_empty());
                t.validate().unwrap();
                assert_eq!(t.write(10, 5, &[a]).unwrap().len(), 1);
                assert_eq!(t.delete(20, 5, &[b]).unwrap().len(), 1);
                assert!(t.delete(20, 5, &[b]).is_err());
                t.validate().unwrap();
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
        t.validate().unwrap();
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
        t.validate().unwrap();
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
        t.validate().unwrap();
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
            assert!(
                t.reserved() <= 64 * 8,
                "{backend:?}: {} still reserved",
                t.reserved()
            );
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
        t.validate().unwrap();
    }

    #[test]
    fn default_config_scales_with_bodies() {
        let c = TvhtConfig::for_scene(1000, 1.0, 256);
        assert_eq!((c.buckets, c.cell_size, c.span_ticks), (1 << 16, 2.0, 16));
        assert_eq!(TvhtConfig::for_scene(1, f32::NAN, 256).buckets, 1 << 10);
    }
}
