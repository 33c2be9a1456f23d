//! # The temporal volumetric hash table (TVHT)
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Section 4 and Algorithms 1, 6 and 7. Entities run
//! at different local times, so "who touches whom" must be asked per tick: after each substep
//! an entity *writes* the state of each of its bodies at that tick, and the table answers with
//! the other entities' bodies whose boxes overlap it at the same tick. On rollback the entity
//! *deletes* its entries after the rollback tick, and the table answers with the contacts those
//! entries had reported, so that antievents can be sent for them. A sleeping contact group
//! (Mirtich's contact groups, seed 001, Section 4.4) puts one *sleep record* per body in the
//! table for a whole interval instead of an entry per tick, and *wakes* it on rollback.
//!
//! Space is cut into cubic cells, time into slices of ticks, and each (cell, slice) is hashed
//! to one of a fixed number of **buckets**. An entry is kept in the bucket of every cell its
//! box covers; a bucket keeps a body's entries at consecutive ticks as one shared **run**. Each
//! operation is **one section** of the [`sync`](crate::sync) seam over the buckets it names
//! (Algorithm 1 for the lock build, one transaction for the STM build), so it is atomic, and,
//! since the STM may run it again, it is safe to re-run: it returns what it found and acts on
//! it after the section commits.
//!
//! ## Where each idea lives
//!
//! | file | the idea |
//! |---|---|
//! | `mod.rs` | the table, its configuration, its entries, contacts and errors, the section |
//! | `cells.rs` | where a box goes: cells, time slices, the hash to a bucket, a pair's owner cell |
//! | `bucket.rs` | what a bucket holds: runs of entries, contact records, sleep records |
//! | `runs.rs` | when a run's shared allocation is freed, and why a look at it is safe |
//! | `plan.rs` | which buckets a request names, checked before its section |
//! | `write.rs` | a write: its runs, and the contacts it finds (Algorithm 6) |
//! | `delete.rs` | a delete and the contacts it gives back (Algorithm 7) |
//! | `sleep.rs` | sleep records: sleep and wake |
//! | `span.rs` | span records: a body's flight over many ticks, refined to the tick |
//! | `sweep.rs` | reclamation behind GVT: the floor, the ledger, the sweeps |
//! | `validate.rs` | snapshots of the whole table and the invariants checked on them |
//! | `tests.rs` | the unit tests of the table's behaviour |
//! | `span_tests.rs` | the unit tests of span records, against a sequential model |
//!
//! ## Exactly once
//!
//! Two boxes that overlap share a block of cells, so the pair could be found in several
//! buckets (the paper's Figure 4). Here a pair is reported only in its **owner cell**, the
//! componentwise maximum of the two boxes' `lo` cells: the cell holding the lowest corner of
//! the boxes' intersection. Both boxes cover it, so both entries are in the owner cell's
//! bucket. A write scans each of its distinct buckets once and reports an overlapping entry of
//! another entity at the same tick only if the bucket is the owner cell's bucket; the writer
//! therefore finds each such pair exactly once, and only the *second* writer finds it (the
//! first found nothing then). The contact is recorded in that bucket, so a later delete of
//! either entry — which scans the same owner bucket, since its box covers the owner cell too —
//! removes the record and returns the contact exactly once; a re-write finds and reports the
//! pair again.
//!
//! Since a write or delete is one section over all the buckets it touches, no other write or
//! delete can slip in between finding a pair and recording it: the invariant "every
//! overlapping pair of live entries of different entities at the same tick has exactly one
//! contact record, in its owner bucket" holds after every section, and [`Tvht::validate`]
//! checks it. Like Algorithm 6, [`Tvht::write_steps`] takes the buckets of a whole step at once
//! and writes substeps in order until the first one that meets a contact
//! ([`Tvht::write_steps_until`]: a contact that matters, for the engine one that makes an
//! event); like Algorithm 7, [`Tvht::delete_steps`] deletes a whole rollback in one section.
//!
//! A contact carries both entries' stored (pre-event) states, sorted so that `a.body < b.body`,
//! so the collision response can be computed from both bodies' states at that tick no matter
//! which of the two entities detected it (`DESIGN.md`, "Determinism is a contract"). The
//! contact lists returned are sorted by (tick, a.body, b.body).
//!
//! Static bodies are not in the table: each entity checks them itself (`DESIGN.md`).

use super::{BodyId, EntityId, Tick};
use crate::dynamics::BodyState;
use crate::geometry::Aabb;
use crate::primitive::{AtomicU64, Mutex, Ordering};
use crate::sync::{Backend, Class, Table, View};
use std::fmt;

mod bucket;
mod cells;
mod delete;
mod plan;
mod runs;
mod sleep;
mod span;
#[cfg(all(test, not(loom)))]
mod span_tests;
mod sweep;
// Under loom the tables must live inside `loom::model`: these std-thread tests are for std builds.
#[cfg(all(test, not(loom)))]
mod tests;
mod validate;
mod write;

use bucket::Bucket;
pub use cells::GRID_OFFSET;
use runs::{Graveyard, Look};
pub use span::{Flight, Motion, SpanEntry};
use sweep::{LEDGER_RING, LEDGER_SHARDS, Notes};
pub use write::WriteBuffers;

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
    /// the module documentation of `tvht::cells`). 1 hashes every tick apart.
    pub span_ticks: u64,
    /// Where the grid's cell boundaries lie, in cells (`0 <= grid_offset < 1`): cell `k`
    /// starts at `(k - grid_offset) * cell_size` on each axis. [`TvhtConfig::for_scene`] takes
    /// [`GRID_OFFSET`]; 0 puts boundaries on the multiples of the cell size.
    pub grid_offset: f32,
    /// Whether the table also keeps sleep records ([`Tvht::sleep`]): a second set of
    /// `buckets` buckets, hashed by space alone, which every write and delete then also
    /// names. Off, a table costs nothing for them.
    pub sleep_records: bool,
}

impl TvhtConfig {
    /// The defaults for a scene: `span_ticks` = [`DEFAULT_SPAN_TICKS`]; `buckets` = the next
    /// power of two of `bodies * min(window, BUCKETS_WINDOW) / span_ticks`, between 2^10 and
    /// 2^20 (a body that keeps entries keeps about `window / span_ticks` slices of them, each
    /// in a few cells, so a bucket holds the entries of one or two (cell, slice)s: the STM
    /// clones buckets per attempt, so the load factor is kept low; a body in flight keeps none,
    /// and four times as many buckets cost every scene more to build and sweep than they saved,
    /// `docs/results.md`); `cell_size` = twice `largest_side`, the largest side of any dynamic
    /// body's box (1 m when that is not a positive finite number). A bucket costs about 80
    /// bytes when empty.
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
            .saturating_mul(window.clamp(1, BUCKETS_WINDOW))
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
            grid_offset: GRID_OFFSET,
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

/// The longest window [`TvhtConfig::for_scene`] sizes the table for: a body keeps entries only
/// while it does not fly (a span is one record in the record half, by space alone), so a
/// longer window does not fill more buckets, and sizing for it made the table, zeroed at the
/// start, most of a short run's time (`parallel` 2000 with a window of 1024: see
/// `docs/results.md`).
pub const BUCKETS_WINDOW: u64 = 256;

/// The engine's time slice: [`TvhtConfig::span_ticks`] for [`TvhtConfig::for_scene`] (`run
/// --tvht-span` sets another). An entity writes up to [`super::entity::BATCH`] ticks per
/// section, so a section touches about `cells * (BATCH / span + 1)` buckets, and the ledger
/// sweeps each of them once after the floor passes its slice. Since buckets hold runs (a run's
/// ticks at once), a slice of 64 ticks (a run's most) names fewer buckets per write and sweep
/// than a shorter one; the price is that neighbours in a cell share a bucket for longer, so
/// more STM sections meet on many cores (the measurements: `docs/results.md`, "2026-11-26,
/// afternoon: a longer time slice"; the many-core trade is to be measured with `--tvht-span`,
/// README).
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
    grid_offset: f32,
    max_cells: usize,
    floor: AtomicU64,
    /// Where the next `prune_step` sweep starts.
    cursor: AtomicU64,
    /// The buckets changed by writes and naps, each under the slice of the newest tick the
    /// change put there (`LEDGER_RING` x `LEDGER_SHARDS` lists; see `sweep.rs`).
    ledger: Box<[Mutex<Notes>]>,
    /// The slices before this one have been swept by `prune_touched`.
    drained: AtomicU64,
    /// Where runs whose last hold is gone wait to be freed (see `runs.rs`).
    graveyard: Graveyard,
    /// The floor of the last full sweep: no entry is older (checked by `validate`).
    swept: AtomicU64,
    /// How span records fly (`span.rs`); without one the table keeps no spans.
    flight: Option<std::sync::Arc<dyn Flight>>,
    /// Refinements counted by committed sections, and those that found a contact
    /// ([`Tvht::refinements`]).
    refined: [AtomicU64; 2],
    /// Per record-half bucket, a hint of its mark (see "Marks" in `span.rs`): raised with
    /// the mark, in the entry write's section (an attempt that aborts may leave it higher),
    /// read by a span's plan without any section. Never below the mark once the write that
    /// raised the mark has returned; the span's section checks the marks themselves, so a
    /// stale hint costs a second plan and a high one a few empty buckets, never a contact.
    /// Plain atomics: no protocol rests on them, so loom need not explore them.
    marked: Box<[std::sync::atomic::AtomicU64]>,
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
        // Each bucket lets go of its holds as it goes: the last one frees a run or an anchor
        // (no copy of the buckets, no count of their holders: a table of 65,536 buckets took
        // longer to gather than a frame of a short run).
        std::mem::replace(&mut self.table, empty).into_each(|b| {
            for r in b.runs {
                // SAFETY: `&mut self`: no other thread uses the table, and `b` is one of its
                // buckets, taken out of it, which holds the run once; nothing else can reach
                // the run (a request borrows the table, so none is in flight).
                unsafe { r.entries.drop_holds_at_drop(1) };
            }
            for s in b.spans {
                // SAFETY: as for the runs: `b` holds the anchor once, and nothing else can
                // reach it.
                unsafe { s.anchor.drop_holds_at_drop(1) };
            }
        });
    }
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
        if !(0.0..1.0).contains(&config.grid_offset) {
            return Err(TvhtError::Config(format!(
                "grid offset must be at least 0 and below 1 cell, got {}",
                config.grid_offset
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
            table: Table::filled(backend, slots, Class::Tvht, Bucket::default()),
            mask: config.buckets as u64 - 1,
            sleep: config.sleep_records,
            span_shift: config.span_ticks.trailing_zeros(),
            cell_size: config.cell_size,
            inv_cell: 1.0 / config.cell_size,
            grid_offset: config.grid_offset,
            max_cells: config.max_cells_per_body,
            floor: AtomicU64::new(0),
            cursor: AtomicU64::new(0),
            ledger: (0..LEDGER_RING * LEDGER_SHARDS)
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            drained: AtomicU64::new(0),
            graveyard: Graveyard::default(),
            swept: AtomicU64::new(0),
            flight: None,
            refined: [AtomicU64::new(0), AtomicU64::new(0)],
            marked: std::iter::repeat_with(|| std::sync::atomic::AtomicU64::new(0))
                .take(if config.sleep_records {
                    config.buckets
                } else {
                    0
                })
                .collect(),
        })
    }

    /// The same table, keeping span records that fly by `flight` (`span.rs`); it needs the
    /// record half ([`TvhtConfig::sleep_records`]).
    pub fn with_flight(mut self, flight: std::sync::Arc<dyn Flight>) -> Result<Tvht, TvhtError> {
        if !self.sleep {
            return Err(TvhtError::Config(
                "span records need the table's record half (sleep_records)".into(),
            ));
        }
        self.flight = Some(flight);
        Ok(self)
    }

    /// The backend guarding the buckets.
    pub fn backend(&self) -> Backend {
        self.table.backend()
    }

    /// The number of buckets (of entries; as many again hold sleep records, if kept).
    pub fn buckets(&self) -> usize {
        self.mask as usize + 1
    }

    /// The hint of the mark of record-half bucket `k` (see the field `marked`).
    fn mark_hint(&self, k: usize) -> &std::sync::atomic::AtomicU64 {
        &self.marked[k - self.buckets()]
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

    /// One section of the seam over `keys` (see the module documentation): `f` gets the
    /// view of its buckets and the [`Look`] their runs' entries are read with, which cannot
    /// leave the closure. In a test-only `cfg(timewarp_broken)` build with
    /// `TIMEWARP_BROKEN=unguarded_tvht` it is deliberately left unguarded (a negative control
    /// for the loom models, see `sync::broken`).
    fn section<R>(
        &self,
        keys: &[usize],
        mut f: impl FnMut(&mut View<'_, Bucket>, &Look) -> R,
    ) -> R {
        let mut guarded = |view: &mut View<'_, Bucket>| {
            // SAFETY: this is the closure of a section over the buckets of `view` (locks held,
            // or the STM attempt pinned since it read them), and `look` dies when it returns;
            // in a `timewarp_broken` (loom) build it may run outside a guard, where no run is
            // freed before the table is dropped (`Look::in_section`).
            let look = unsafe { Look::in_section() };
            f(view, &look)
        };
        #[cfg(timewarp_broken)]
        if crate::sync::broken("unguarded_tvht") {
            return self.table.section_unguarded(keys, guarded);
        }
        self.table.section(keys, &mut guarded)
    }
}
