//! # The GVT buffer: commit ticks in order, hand committed frames to the output
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Section 3: "once an entity computes a new physical
//! state and any corresponding events have been acknowledged by other involved entities, each
//! entity records its latest physical state into a write parallel buffer for the given LVT
//! value and increments a shared counter. Conversely, during rollback, entities remove their
//! entries from this shared buffer, decrement the shared counter [...]. A frame update is
//! triggered when the counter for a given LVT value is equal to the number of entities." The
//! global virtual time (GVT) is then the first tick not yet committed; everything before it is
//! final, and entities may run ahead only to `LVT_ub = GVT + window` (Section 3 and Algorithm 5).
//!
//! ## Contract
//!
//! * An entity [`record`](GvtBuffer::record)s tick `t` for its bodies only when its state at
//!   `t` is final as far as it knows: every event it sent at ticks `<= t` has been
//!   acknowledged, and every event it received at ticks `<= t` has been applied. (This is what
//!   makes a committed tick final: an event at `t` can then only come from an entity that has
//!   not recorded `t`, so `t` is not committed yet.)
//! * On rollback to `r` it [`unrecord`](GvtBuffer::unrecord)s every tick `> r` it had
//!   recorded, newest first. Unrecording a committed tick is refused
//!   ([`GvtError::Committed`]): the protocol guarantees it never happens.
//! * Tick `t` is **committed** when all bodies have recorded it and `t - 1` is committed.
//!   Commits are final and happen in tick order, each exactly once; [`gvt`](GvtBuffer::gvt)
//!   (an atomic read) is the first uncommitted tick and never decreases (it may lag a commit
//!   in progress by a moment, never lead it).
//! * Every `frame_ticks`-th tick is a **frame**: when it commits, the states recorded for it by
//!   all bodies, in body order, are queued for the output;
//!   [`drain_committed`](GvtBuffer::drain_committed) hands them out in tick order, each once,
//!   to whoever calls it (one consumer: the output).
//!
//! ## Layout
//!
//! A ring of at least `window + slack` ticks, reused as GVT advances, so memory is flat, cut
//! into **blocks** of `block` consecutive ticks (a power of two: a quarter of the window, at
//! most 16, so 16 with the scenes' window of 256 and 1 for tiny windows). A block is split into
//! chunks of up to 64 bodies (per tick a presence bit mask; see "Chunk size") plus a counter
//! of full chunks per tick,
//! and its frame ticks' states are kept in groups of 8 bodies (see "States"); each chunk, each
//! counter and each group is one slot of one [`Table`] of the [`sync`](crate::sync) seam, and
//! a chunk or counter slot knows which block it holds (`base`) and how many of its ticks are
//! committed (`done`). An entity that records a batch of 64
//! ticks thus names four or five slots, not 64: under the STM each is copied and written back
//! as a new allocation, and under locks each is a mutex (blocks took a tenth off the STM's
//! instructions on `parallel`, and its 2-thread runs 1.1x faster). Inside the section a record
//! works a chunk and a block at a time, not a body and a tick: a tick's bodies of one chunk
//! are one mask, and the ticks of a block a slice of the slot's words, checked in one pass and
//! set in a second (a failed check then looks again, tick by tick, to name the first body at
//! fault). This halved the instructions of records on `parallel` (callgrind). The ring holds
//! every tick up to `LVT_ub` while GVT's own block is still in use: at least `window + block`
//! ticks.
//!
//! Committing tick `t` is one section over the counter and chunks of `t`'s block (and the
//! counter of `t - 1`'s block when `t` starts a block, and the states slots when `t` is a frame
//! tick). `t - 1` is committed when the counter's `done` passed it (or its block's slot moved
//! on, `base` one ring later); `t` commits only if the counter says every chunk is full *and*
//! every chunk is; the commit of a block's last tick moves its slots on to the block one ring
//! later. The record that completes a tick then commits it and any complete ticks after it; the
//! commit of `t - 1` also tries `t`, so a complete tick is committed by whichever of the two
//! happens last: none is left behind. No global word is written inside a section; the GVT
//! atomic is raised after.
//!
//! ## Chunk size
//!
//! A chunk slot is where records of different entities meet: two workers recording bodies
//! of one chunk in the same block name the same slot, and one of them waits (locks) or runs
//! its section again (STM). Few bodies per chunk means fewer such meetings but more slots for
//! a commit to name and more records that fill a chunk and so take a counting section. The
//! size is a power of two, so that a body's chunk and bit are a shift and a mask (a record asks
//! for them at every tick of every body). The engine picks it from its worker count and the
//! number of bodies ([`GvtConfig::chunk_for`]): 64 bodies up to 4 workers, then halved as the workers double,
//! down to 8 from 32 on, but no smaller than makes 128 chunks (a commit names every chunk of
//! its tick, and where the bodies' work per tick is small, as in sleeping pyramids, that is
//! what a tick costs). Measured on a lent 16-core Xeon (2000 bodies over 1 s, groups off,
//! medians of 3 alternating runs, wall time relative to chunks of 64): at 16 workers, chunks of
//! 16 took 0.79x (`cylinders`) to 0.92x (`parallel`) under the STM, whose GVT abort ratio fell
//! from 0.56-0.65 to 0.24-0.37, and 0.73x / 0.86x under locks (`bouncing` 0.90x STM, 1.08x
//! locks); at 4 workers every size from 8 to 64 was within 0.94-1.15x, 64 the best or near it;
//! on one worker chunks of 16 cost 1-2% more instructions (callgrind). Without the cap,
//! `pyramids` 10010 with contact groups at 16 workers took 1.29x as long (626 chunks of 16;
//! with it, 157 of 64 as before). Committed frames do not depend on the size.
//!
//! ## States
//!
//! A frame tick's states, one per body, are what the output gets when it commits. A record of
//! a frame tick writes each of its bodies' states into the **states slot** of its group of 8
//! bodies for that block, in the same section as its bits; the commit of a frame tick names
//! every group's slot and copies the states out. A states slot keeps no block of its own: it
//! is written only in a section that found the chunk slot of the same tick live (so the slot
//! then belongs to that tick's block), and read only by the commit, which sees every bit set,
//! so every body's last record of the tick, after any rollback, wrote its state there. The
//! states used to live in the chunk slots, 64 to a slot: under the STM every record copied
//! about 4 KB per block it named, frame tick or not, and a slot last written by the other
//! core came over whole (`cylinders` 2000 over 0.5 s, STM: 2-9% less wall time on one
//! worker, 3-5% less CPU time on two; the lock build's instructions rose 1.8% for the extra
//! slots named).
//!
//! An entity records all the ticks it finished in a turn at once
//! ([`record_ticks`](GvtBuffer::record_ticks)) and a rollback takes back all its ticks at once
//! ([`unrecord_ticks`](GvtBuffer::unrecord_ticks)).
//!
//! ## Counting
//!
//! A record is **two sections**. The first, over its bodies' chunks only, checks that every
//! tick is still in the ring and not recorded, and sets the bits (all or nothing). The second,
//! only if some chunk became full, adds those chunks to their ticks' counters; a rollback's
//! two sections clear bits and subtract. So the bodies of different chunks recording the same
//! ticks share no slot at all, and those of one chunk only that chunk's slot: the counters,
//! which every record used to name (read under the STM, locked under locks) so that all
//! entities recording nearby ticks queued on the same few slots, are touched by one record per
//! chunk and tick (measured by `sync`'s per-class counts: the GVT buffer's sections were the most
//! often re-run of the STM's).
//!
//! Between its two sections a counter lags its chunks, so a commit checks the chunks
//! themselves, and the counting sections are what make the last step happen:
//! * *Safety.* A tick commits only in a section that sees every chunk full, so never while a
//!   body is missing; the commit marks `t` done in its block's chunks (or moves them on a
//!   ring), so a later record or rollback of `t` is refused by its first section.
//! * *No count is lost.* A chunk emptied by a rollback stays not full until the same body
//!   records again, which its entity does only after its subtraction; so while a change to a
//!   tick's counter is pending, some chunk of it is not full or the counter is short, and the
//!   tick cannot commit: a counting section always finds its tick's slot (it is an error, not a
//!   silent skip, if it does not).
//! * *Liveness.* Each counting section changes the counter, so the last one applied for a tick
//!   leaves it at its final value. If every chunk ends full, that last change is an addition
//!   (an emptying's subtraction comes before its body's new record, whose addition follows), made
//!   when every bit is already set (a bit that fills a chunk later would bring another
//!   addition): it sees the counter reach every chunk and calls the commit, which finds all full.
//!   A counter may dip below zero or run past the number of chunks while changes are pending;
//!   at rest it equals the number of full chunks (`validate`).

use super::{BodyId, Tick};
use crate::dynamics::BodyState;
use crate::primitive::{AtomicU64, Mutex, Ordering};
use crate::sync::{Backend, Class, Table, View};
use glam::{Quat, Vec3};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

/// Bodies per chunk at most (a chunk's bits are one `u64` per tick).
const MAX_CHUNK: usize = 64;

/// Chunks [`GvtConfig::chunk_for`] makes at most, unless they would hold more than
/// [`MAX_CHUNK`] bodies: every commit names every chunk of its tick.
const MAX_CHUNKS: usize = 128;

/// Bodies per group of frame states (see "States" in the module documentation).
const GROUP: usize = 8;

/// The state stored before a body records a frame tick.
const BLANK: BodyState = BodyState {
    position: Vec3::ZERO,
    rotation: Quat::IDENTITY,
    velocity: Vec3::ZERO,
    angular_velocity: Vec3::ZERO,
};

/// The buffer's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GvtConfig {
    /// Number of (dynamic) bodies, numbered `0..bodies`.
    pub bodies: usize,
    /// The first tick to commit (GVT at the start).
    pub start_tick: Tick,
    /// Frames are the ticks that are multiples of this (>= 1).
    pub frame_ticks: u64,
    /// `LVT_ub - GVT` (>= 1).
    pub window: u64,
    /// Extra ticks of ring beyond the window (>= 1), so that a tick at `LVT_ub` has a slot (the
    /// ring is then rounded up to whole blocks, and to at least `window + block` ticks).
    pub slack: u64,
    /// Bodies per chunk slot, a power of two up to 64 (see "Chunk size" in the module
    /// documentation;
    /// [`GvtConfig::chunk_for`] picks it for an engine).
    pub chunk: usize,
}

impl GvtConfig {
    /// Starts at tick 0 with a slack of a quarter window (at least 1).
    pub fn new(bodies: usize, frame_ticks: u64, window: u64) -> Self {
        GvtConfig {
            bodies,
            start_tick: 0,
            frame_ticks,
            window,
            slack: (window / 4).max(1),
            chunk: MAX_CHUNK,
        }
    }

    /// The chunk size for `bodies` bodies recorded by `workers` threads at once: 64 up to 4
    /// workers, halved each time the workers double, down to 8 from 32 workers on, but never
    /// so small that there are more than 128 chunks (see "Chunk size").
    pub fn chunk_for(workers: usize, bodies: usize) -> usize {
        let per = 256 / workers.max(1).next_power_of_two();
        let fewest = bodies.div_ceil(MAX_CHUNKS).next_power_of_two();
        per.max(fewest).clamp(8, MAX_CHUNK)
    }
}

/// Why a GVT-buffer operation was refused (nothing was changed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GvtError {
    /// The configuration is unusable.
    Config(String),
    /// A body id `>= bodies`.
    UnknownBody { body: BodyId, bodies: usize },
    /// The body has already recorded this tick (or is named twice).
    AlreadyRecorded { body: BodyId, tick: Tick },
    /// `unrecord` of a body that has not recorded this tick.
    NotRecorded { body: BodyId, tick: Tick },
    /// The tick is committed (behind GVT): it cannot change any more.
    Committed { tick: Tick },
    /// The tick is beyond the ring: its block's slots still hold the block one ring earlier
    /// (the tick is at least `window + slack` ticks past GVT).
    BeyondWindow { tick: Tick, gvt: Tick, ring: u64 },
    /// `validate` found a broken invariant.
    Invalid(String),
}

impl fmt::Display for GvtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GvtError::Config(s) => write!(f, "bad GVT buffer configuration: {s}"),
            GvtError::UnknownBody { body, bodies } => {
                write!(f, "body {body} does not exist (there are {bodies})")
            }
            GvtError::AlreadyRecorded { body, tick } => {
                write!(f, "body {body} has already recorded tick {tick}")
            }
            GvtError::NotRecorded { body, tick } => {
                write!(f, "body {body} has not recorded tick {tick}")
            }
            GvtError::Committed { tick } => {
                write!(f, "tick {tick} is already committed (behind GVT)")
            }
            GvtError::BeyondWindow { tick, gvt, ring } => write!(
                f,
                "tick {tick} is beyond the buffer (GVT {gvt} + {ring} ticks of ring)"
            ),
            GvtError::Invalid(s) => write!(f, "GVT buffer invariant broken: {s}"),
        }
    }
}

impl std::error::Error for GvtError {}

/// Ticks per slot at most (see "Blocks" in the module documentation).
const MAX_BLOCK: usize = 16;

/// One slot: a block of `block` consecutive ticks from `base` (a multiple of `block`), of
/// which those before `base + done` are committed.
#[derive(Clone, Debug)]
enum Slot {
    /// How many chunks of each tick of the block are full, as far as the counting sections
    /// applied so far say (see "Counting"; a count may dip below zero or run ahead for a
    /// moment).
    Count {
        base: Tick,
        done: u64,
        full: [i64; MAX_BLOCK],
    },
    /// Which bodies of the chunk have recorded each tick of the block.
    Chunk {
        base: Tick,
        done: u64,
        bits: [u64; MAX_BLOCK],
    },
    /// The states a group of [`GROUP`] bodies recorded for the frame ticks of a block (`group
    /// length` states per frame tick, in tick order; room for the most frame ticks a block
    /// can have). Which block it holds is its chunk slots' to say: a record names both, and a
    /// state is read only by the commit of its tick (see "States").
    States { states: Vec<BodyState> },
}

impl Slot {
    /// The block held and how many of its ticks are committed (of a counter or chunk slot).
    fn base_done(&self) -> (Tick, u64) {
        match *self {
            Slot::Count { base, done, .. } | Slot::Chunk { base, done, .. } => (base, done),
            Slot::States { .. } => unreachable!("a states slot keeps no block"),
        }
    }
}

/// Consecutive bodies of one record tick that share a chunk: the bits they set in its slot,
/// and their places in the tick's body list.
#[derive(Clone, Debug)]
struct ChunkRun {
    chunk: usize,
    mask: u64,
    bodies: std::ops::Range<usize>,
}

/// Consecutive ticks of a record (places in the request) in one block with the same bodies,
/// and their runs (places in the record's list of runs).
#[derive(Clone, Debug)]
struct Stretch {
    ticks: std::ops::Range<usize>,
    runs: std::ops::Range<usize>,
}

/// Bodies in chunk `chunk` of `bodies`.
fn chunk_len(bodies: usize, size: usize, chunk: usize) -> usize {
    size.min(bodies - chunk * size)
}

/// Bodies in state group `group` of `bodies`.
fn group_len(bodies: usize, group: usize) -> usize {
    GROUP.min(bodies - group * GROUP)
}

/// The most frame ticks (multiples of `frame_ticks`) a block of `block` ticks can have.
fn frames_per_block(block: u64, frame_ticks: u64) -> usize {
    block.div_ceil(frame_ticks) as usize
}

/// How many frame ticks (multiples of `frame_ticks`) the block of `block` ticks from `base` has.
fn frames_in(base: Tick, block: u64, frame_ticks: u64) -> usize {
    let first = base.next_multiple_of(frame_ticks);
    if first >= base + block {
        0
    } else {
        ((base + block - 1 - first) / frame_ticks + 1) as usize
    }
}

/// Committed frames waiting for the consumer.
struct Output {
    frames: BTreeMap<Tick, Vec<BodyState>>,
    next: Tick,
}

/// The GVT buffer.
pub struct GvtBuffer {
    table: Table<Slot>,
    bodies: usize,
    /// Bodies per chunk (a power of two) and its log2.
    chunk: usize,
    chunk_shift: u32,
    chunks: usize,
    /// State groups ([`GROUP`] bodies each).
    groups: usize,
    /// Room for frame ticks in a states slot ([`frames_per_block`]).
    frames: usize,
    /// Ticks per slot (a power of two, at most [`MAX_BLOCK`]).
    block: u64,
    /// Slots per chunk (and count slots): the ring holds `blocks * block` ticks.
    blocks: u64,
    window: u64,
    start: Tick,
    frame_ticks: u64,
    gvt: AtomicU64,
    output: Mutex<Output>,
}

impl GvtBuffer {
    /// An empty buffer with GVT at `config.start_tick`.
    pub fn new(backend: Backend, config: GvtConfig) -> Result<GvtBuffer, GvtError> {
        let c = config;
        if c.bodies == 0 || c.bodies > u32::MAX as usize {
            return Err(GvtError::Config(format!(
                "bodies must be in 1..=2^32-1, got {}",
                c.bodies
            )));
        }
        if c.frame_ticks == 0 || c.window == 0 || c.slack == 0 {
            return Err(GvtError::Config(
                "frame_ticks, window and slack must be at least 1".into(),
            ));
        }
        let Some(want) = c.window.checked_add(c.slack).filter(|&r| r <= 1 << 20) else {
            return Err(GvtError::Config(format!(
                "window + slack must be at most 2^20 ticks, got {} + {}",
                c.window, c.slack
            )));
        };
        // A quarter window per block at most, so that small windows keep a slot per tick.
        let block = (c.window / 4).clamp(1, MAX_BLOCK as u64);
        let block = 1 << block.ilog2();
        // The ring must hold the block of every tick up to LVT_ub while GVT's block is live.
        let blocks = want.div_ceil(block).max((c.window + block).div_ceil(block));
        if !(c.chunk.is_power_of_two() && c.chunk <= MAX_CHUNK) {
            return Err(GvtError::Config(format!(
                "bodies per chunk must be a power of two up to {MAX_CHUNK}, got {}",
                c.chunk
            )));
        }
        let chunks = c.bodies.div_ceil(c.chunk);
        let groups = c.bodies.div_ceil(GROUP);
        let frames = frames_per_block(block, c.frame_ticks);
        let first_base = c.start_tick - c.start_tick % block;
        let first_slot = (c.start_tick / block) % blocks;
        let base_of = |k: u64| first_base + ((k + blocks - first_slot) % blocks) * block;
        let done_of = |base: Tick| c.start_tick.saturating_sub(base);
        let n_slots = blocks as usize * (1 + chunks + groups);
        let table = Table::with_class(backend, n_slots, Class::Gvt, |k| {
            let b = blocks as usize;
            if k < b {
                let base = base_of(k as u64);
                Slot::Count {
                    base,
                    done: done_of(base),
                    full: [0; MAX_BLOCK],
                }
            } else if k < b * (1 + chunks) {
                let base = base_of(((k - b) / chunks) as u64);
                Slot::Chunk {
                    base,
                    done: done_of(base),
                    bits: [0; MAX_BLOCK],
                }
            } else {
                let group = (k - b * (1 + chunks)) % groups;
                Slot::States {
                    states: vec![BLANK; frames * group_len(c.bodies, group)],
                }
            }
        });
        Ok(GvtBuffer {
            table,
            bodies: c.bodies,
            chunk: c.chunk,
            chunk_shift: c.chunk.ilog2(),
            chunks,
            groups,
            frames,
            block,
            blocks,
            window: c.window,
            start: c.start_tick,
            frame_ticks: c.frame_ticks,
            gvt: AtomicU64::new(c.start_tick),
            output: Mutex::new(Output {
                frames: BTreeMap::new(),
                next: c.start_tick.next_multiple_of(c.frame_ticks),
            }),
        })
    }

    /// The backend guarding the buffer.
    pub fn backend(&self) -> Backend {
        self.table.backend()
    }

    /// The first uncommitted tick (monotonic; one atomic load).
    pub fn gvt(&self) -> Tick {
        self.gvt.load(Ordering::Acquire)
    }

    /// How far an entity may run ahead now: `LVT_ub = GVT + window`.
    pub fn lvt_upper_bound(&self) -> Tick {
        self.gvt() + self.window
    }

    /// The window.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Number of bodies.
    pub fn bodies(&self) -> usize {
        self.bodies
    }

    /// Ticks in the ring.
    fn ring(&self) -> u64 {
        self.blocks * self.block
    }

    /// The first tick of `t`'s block.
    fn base(&self, t: Tick) -> Tick {
        t & !(self.block - 1)
    }

    fn count_key(&self, t: Tick) -> usize {
        ((t >> self.block.trailing_zeros()) % self.blocks) as usize
    }

    /// The key of chunk 0 of `t`'s block (chunk `c`'s is `c` more).
    fn chunk_row(&self, t: Tick) -> usize {
        self.blocks as usize + self.count_key(t) * self.chunks
    }

    fn chunk_key(&self, t: Tick, chunk: usize) -> usize {
        self.chunk_row(t) + chunk
    }

    /// The key of the states slot of `group` for `t`'s block.
    fn states_key(&self, t: Tick, group: usize) -> usize {
        self.blocks as usize * (1 + self.chunks) + self.count_key(t) * self.groups + group
    }

    fn is_frame(&self, t: Tick) -> bool {
        t % self.frame_ticks == 0
    }

    /// The places, in a request of `count` ticks from `first`, of its frame ticks.
    fn frames_of(&self, first: Tick, count: usize) -> impl Iterator<Item = usize> + use<> {
        let from = (first.next_multiple_of(self.frame_ticks) - first) as usize;
        (from..count).step_by(self.frame_ticks as usize)
    }

    /// Bodies in `chunk`.
    fn chunk_len(&self, chunk: usize) -> usize {
        chunk_len(self.bodies, self.chunk, chunk)
    }

    /// The frame ticks of the block from `base`.
    fn frames_in(&self, base: Tick) -> usize {
        frames_in(base, self.block, self.frame_ticks)
    }

    /// Bodies in state group `group`.
    fn group_len(&self, group: usize) -> usize {
        group_len(self.bodies, group)
    }

    /// Where frame tick `t`'s states start in the `states` of its block's slot of `group`.
    fn frame_at(&self, t: Tick, group: usize) -> usize {
        let first = self.base(t).next_multiple_of(self.frame_ticks);
        ((t - first) / self.frame_ticks) as usize * self.group_len(group)
    }

    /// Body `b`'s chunk (a shift: a record asks for it at every tick of every body).
    #[inline]
    fn chunk_of(&self, b: BodyId) -> usize {
        b as usize >> self.chunk_shift
    }

    /// Body `b`'s bit in its chunk's mask.
    #[inline]
    fn bit_of(&self, b: BodyId) -> u64 {
        1 << (b as usize & (self.chunk - 1))
    }

    fn chunk_mask(&self, chunk: usize) -> u64 {
        let n = self.chunk_len(chunk);
        if n == MAX_CHUNK {
            u64::MAX
        } else {
            (1u64 << n) - 1
        }
    }

    /// Tick `t`'s place in `slot`'s block, if the slot holds `t`'s block and `t` is not
    /// committed; otherwise why not.
    fn live(&self, slot: &Slot, t: Tick) -> Result<usize, GvtError> {
        let (base, done) = slot.base_done();
        let want = self.base(t);
        if base == want && t - base >= done {
            Ok((t - base) as usize)
        } else if base > want || (base == want && t - base < done) {
            Err(GvtError::Committed { tick: t })
        } else {
            Err(GvtError::BeyondWindow {
                tick: t,
                gvt: self.gvt(),
                ring: self.ring(),
            })
        }
    }

    /// Checks body ids and the rough tick range; appends the chunk slots of `tick`'s bodies to
    /// `keys`.
    fn keys_for(
        &self,
        tick: Tick,
        bodies: impl Iterator<Item = BodyId>,
        keys: &mut Vec<usize>,
    ) -> Result<(), GvtError> {
        let gvt = self.gvt();
        if tick < gvt {
            return Err(GvtError::Committed { tick });
        }
        // Duplicates are looked for only when there is more than one body (a single body's
        // record, the common case, allocates nothing).
        let mut first: Option<BodyId> = None;
        let mut seen: Vec<BodyId> = Vec::new();
        for b in bodies {
            if b as usize >= self.bodies {
                return Err(GvtError::UnknownBody {
                    body: b,
                    bodies: self.bodies,
                });
            }
            match first {
                None => first = Some(b),
                Some(f) => {
                    if seen.is_empty() {
                        seen.push(f);
                    }
                    seen.push(b);
                }
            }
            // A body's consecutive ticks share their block's slot: named once (the section
            // drops the other repeats).
            let k = self.chunk_key(tick, self.chunk_of(b));
            if keys.last() != Some(&k) {
                keys.push(k);
            }
        }
        seen.sort_unstable();
        if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
            return Err(GvtError::AlreadyRecorded { body: w[0], tick });
        }
        Ok(())
    }

    /// Records that the given bodies (all of one entity) have finished `tick`, with their
    /// states at `tick` (kept for frame ticks only). See the module contract. If this completes
    /// the tick, the tick and any complete ticks after it are committed before this returns.
    pub fn record(&self, tick: Tick, bodies: &[(BodyId, BodyState)]) -> Result<(), GvtError> {
        self.record_ticks(tick, &[bodies])
    }

    /// Records the consecutive ticks `first, first + 1, ...`, tick `first + i` for the bodies
    /// and states of `ticks[i]`, all at once (an entity records the ticks it finished in a turn
    /// together: one section over the slots of their blocks' chunks, one transaction or one
    /// lock round, then one over the counters of the ticks it completed chunks of, if any; see
    /// "Counting"). All or nothing: on error no tick is recorded.
    pub fn record_ticks(
        &self,
        first: Tick,
        ticks: &[&[(BodyId, BodyState)]],
    ) -> Result<(), GvtError> {
        self.record_with(
            first,
            ticks.len(),
            |i| ticks[i].iter().map(|p| p.0),
            |i, j| ticks[i][j].1,
        )
    }

    /// [`GvtBuffer::record_ticks`] of `count` ticks from `first` for the same `bodies` at each,
    /// the state of body `bodies[j]` at tick `first + i` being `state(i, j)` (asked for the
    /// frame ticks only, the only ones kept): what an entity records, without copying every
    /// tick's states into a list first.
    pub fn record_span(
        &self,
        first: Tick,
        count: usize,
        bodies: &[BodyId],
        state: impl Fn(usize, usize) -> BodyState,
    ) -> Result<(), GvtError> {
        // The same bodies at every tick: one set of runs, a stretch per block.
        let mut runs = Vec::new();
        self.push_runs(bodies.iter().copied(), &mut runs);
        let (mut stretches, mut keys) = (Vec::new(), Vec::new());
        let mut i = 0;
        while i < count && !runs.is_empty() {
            let tick = first + i as Tick;
            let end = count.min(i + (self.base(tick) + self.block - tick) as usize);
            self.keys_for(tick, bodies.iter().copied(), &mut keys)?;
            stretches.push(Stretch {
                ticks: i..end,
                runs: 0..runs.len(),
            });
            i = end;
        }
        let ids = |_| bodies.iter().copied();
        self.record_stretches(first, count, (&runs, &stretches), keys, ids, state)
    }

    /// Appends the runs of one tick's `bodies` to `runs`.
    fn push_runs(&self, bodies: impl Iterator<Item = BodyId>, runs: &mut Vec<ChunkRun>) {
        let from = runs.len();
        for (j, b) in bodies.enumerate() {
            let (chunk, bit) = (self.chunk_of(b), self.bit_of(b));
            let fresh = runs.len() == from;
            match runs.last_mut() {
                Some(r) if !fresh && r.chunk == chunk => {
                    r.mask |= bit;
                    r.bodies.end = j + 1;
                }
                _ => runs.push(ChunkRun {
                    chunk,
                    mask: bit,
                    bodies: j..j + 1,
                }),
            }
        }
    }

    /// The record of `count` ticks from `first`: tick `first + i` for the bodies `ids(i)`, body
    /// `j` of them with state `state(i, j)` (see [`GvtBuffer::record_ticks`]).
    fn record_with<I: Iterator<Item = BodyId> + Clone>(
        &self,
        first: Tick,
        count: usize,
        ids: impl Fn(usize) -> I,
        state: impl Fn(usize, usize) -> BodyState,
    ) -> Result<(), GvtError> {
        // The request by chunk and by stretch. A tick's bodies form runs of consecutive bodies
        // of one chunk (a sorted list has one run per chunk), each with its bodies' bits as one
        // mask. A stretch is consecutive ticks of one block with the same bodies: each of its
        // runs names one slot, checked live once, and has its bits checked and set as a slice
        // of that slot's ticks (an entity's batch is a stretch or two: a few word operations a
        // tick, however many bodies its group has in a chunk).
        let mut runs: Vec<ChunkRun> = Vec::new();
        let mut stretches: Vec<Stretch> = Vec::new();
        let mut keys = Vec::new();
        // The bodies of the tick before.
        let mut prev: Option<I> = None;
        for i in 0..count {
            let (tick, bodies) = (first + i as Tick, ids(i));
            let same = prev.as_ref().is_some_and(|p| p.clone().eq(bodies.clone()));
            prev = Some(bodies.clone());
            match stretches.last_mut() {
                Some(s) if same && self.base(first + s.ticks.start as Tick) == self.base(tick) => {
                    s.ticks.end = i + 1;
                }
                _ => {
                    let span = match stretches.last() {
                        // The same runs, in a new block.
                        Some(s) if same => s.runs.clone(),
                        _ => {
                            let from = runs.len();
                            self.push_runs(bodies.clone(), &mut runs);
                            from..runs.len()
                        }
                    };
                    if !span.is_empty() {
                        self.keys_for(tick, bodies, &mut keys)?;
                    }
                    stretches.push(Stretch {
                        ticks: i..i + 1,
                        runs: span,
                    });
                }
            }
        }
        self.record_stretches(first, count, (&runs, &stretches), keys, ids, state)
    }

    /// The section of a record (see [`GvtBuffer::record_with`]) of `count` ticks from `first`
    /// by `stretches` of `runs`, whose chunk slots are `keys` (to which it adds the states
    /// slots of its frame ticks), then the count of the ticks it completed chunks of.
    fn record_stretches<I: Iterator<Item = BodyId> + Clone>(
        &self,
        first: Tick,
        count: usize,
        (runs, stretches): (&[ChunkRun], &[Stretch]),
        mut keys: Vec<usize>,
        ids: impl Fn(usize) -> I,
        state: impl Fn(usize, usize) -> BodyState,
    ) -> Result<(), GvtError> {
        // A frame tick's states go to the states slots of its bodies' groups.
        for i in self.frames_of(first, count) {
            for b in ids(i) {
                let k = self.states_key(first + i as Tick, b as usize / GROUP);
                if keys.last() != Some(&k) {
                    keys.push(k);
                }
            }
        }
        if keys.is_empty() {
            return Ok(());
        }
        let filled = self.table.section(&keys, |v| {
            // Each run's slot, in order; found and checked live at its stretch's first tick (a
            // later tick of the same block is live if an earlier one is), its stretch's bits
            // checked. Any failure: the slow look below names the first, in tick order.
            let mut places: Vec<usize> = Vec::with_capacity(runs.len());
            let mut failed = false;
            'check: for st in stretches {
                let tick = first + st.ticks.start as Tick;
                let at = (tick - self.base(tick)) as usize;
                for run in &runs[st.runs.clone()] {
                    let slot = v.index(self.chunk_key(tick, run.chunk));
                    let Ok(_) = self.live(v.at(slot), tick) else {
                        failed = true;
                        break 'check;
                    };
                    let Slot::Chunk { bits, .. } = v.at(slot) else {
                        unreachable!()
                    };
                    if bits[at..at + st.ticks.len()]
                        .iter()
                        .any(|&w| w & run.mask != 0)
                    {
                        failed = true;
                        break 'check;
                    }
                    places.push(slot);
                }
            }
            if failed {
                return Err(self.first_refusal(v, first, stretches, runs, &ids));
            }
            // Then set them, counting at each tick the chunks it fills.
            let mut newly_full = vec![0i64; count];
            let mut places = places.iter();
            for st in stretches {
                let tick = first + st.ticks.start as Tick;
                let at = (tick - self.base(tick)) as usize;
                for (run, &slot) in runs[st.runs.clone()].iter().zip(places.by_ref()) {
                    let full = self.chunk_mask(run.chunk);
                    let Slot::Chunk { bits, .. } = v.at_mut(slot) else {
                        unreachable!()
                    };
                    let words = &mut bits[at..at + st.ticks.len()];
                    for (w, n) in words.iter_mut().zip(&mut newly_full[st.ticks.clone()]) {
                        *w |= run.mask;
                        if *w == full {
                            *n += 1;
                        }
                    }
                }
            }
            let filled: Vec<(Tick, i64)> =
                (first..).zip(newly_full).filter(|&(_, n)| n > 0).collect();
            // And the states of the frame ticks.
            for i in self.frames_of(first, count) {
                let tick = first + i as Tick;
                for (j, b) in ids(i).enumerate() {
                    let group = b as usize / GROUP;
                    let f = self.frame_at(tick, group);
                    let Slot::States { states } = v.get_mut(self.states_key(tick, group)) else {
                        unreachable!()
                    };
                    states[f + b as usize % GROUP] = state(i, j);
                }
            }
            Ok(filled)
        })?;
        // Committing the lowest tick this completed walks on through every complete tick after
        // it; a later completed tick it does not reach waits behind an incomplete one, whose
        // completing record will walk on to it (see `advance`).
        if let Some(t) = self.count(&filled)? {
            self.advance(t);
        }
        Ok(())
    }

    /// Why a record's section refuses it (some tick of it is not live, or some body at some
    /// tick has recorded it already): the first failure in tick order, and at that tick in
    /// the order of its bodies, as a tick-by-tick look would find it. Only for a request the
    /// quick check of `record_with` has refused.
    fn first_refusal<I: Iterator<Item = BodyId> + Clone>(
        &self,
        v: &View<'_, Slot>,
        first: Tick,
        stretches: &[Stretch],
        runs: &[ChunkRun],
        ids: &impl Fn(usize) -> I,
    ) -> GvtError {
        for st in stretches {
            for i in st.ticks.clone() {
                let tick = first + i as Tick;
                for run in &runs[st.runs.clone()] {
                    let slot = v.get(self.chunk_key(tick, run.chunk));
                    let at = match self.live(slot, tick) {
                        Ok(at) => at,
                        Err(e) => return e,
                    };
                    let Slot::Chunk { bits, .. } = slot else {
                        unreachable!()
                    };
                    let clash = bits[at] & run.mask;
                    if clash != 0 {
                        let body = ids(i)
                            .skip(run.bodies.start)
                            .find(|&b| clash & self.bit_of(b) != 0)
                            .expect("a bit of the run's mask is one of its bodies'");
                        return GvtError::AlreadyRecorded { body, tick };
                    }
                }
            }
        }
        unreachable!("a refused record has a tick that fails")
    }

    /// Whether body `b` has recorded `tick`, by its chunk slot `key` (which the section names);
    /// an error if `tick` is committed or beyond the ring.
    #[inline]
    fn has_recorded(
        &self,
        v: &View<'_, Slot>,
        key: usize,
        tick: Tick,
        b: BodyId,
    ) -> Result<bool, GvtError> {
        let slot = v.get(key);
        let at = self.live(slot, tick)?;
        let Slot::Chunk { bits, .. } = slot else {
            unreachable!()
        };
        Ok(bits[at] & self.bit_of(b) != 0)
    }

    /// Takes back the record of `tick` for the given bodies (rollback). Refused for a
    /// committed tick.
    pub fn unrecord(&self, tick: Tick, bodies: &[BodyId]) -> Result<(), GvtError> {
        self.unrecord_ticks(tick..tick + 1, bodies)
    }

    /// Takes back the records of every tick in `ticks` for the given bodies, in one section
    /// over their chunks (a rollback takes back all the ticks it undoes at once), then one over
    /// the counters of the chunks it emptied (see "Counting"). All or nothing; refused if any
    /// tick is committed or not recorded by one of the bodies.
    pub fn unrecord_ticks(&self, ticks: Range<Tick>, bodies: &[BodyId]) -> Result<(), GvtError> {
        if bodies.is_empty() || ticks.is_empty() {
            return Ok(());
        }
        let mut keys = Vec::new();
        for tick in ticks.clone() {
            self.keys_for(tick, bodies.iter().copied(), &mut keys)?;
        }
        let emptied = self.table.section(&keys, |v| {
            for tick in ticks.clone() {
                for &b in bodies {
                    if !self.has_recorded(v, self.chunk_key(tick, self.chunk_of(b)), tick, b)? {
                        return Err(GvtError::NotRecorded { body: b, tick });
                    }
                }
            }
            let mut emptied = Vec::new();
            for tick in ticks.clone() {
                let at = (tick % self.block) as usize;
                let mut no_longer_full = 0;
                for &b in bodies {
                    let chunk = self.chunk_of(b);
                    let mask = self.chunk_mask(chunk);
                    let Slot::Chunk { bits, .. } = v.get_mut(self.chunk_key(tick, chunk)) else {
                        unreachable!()
                    };
                    if bits[at] == mask {
                        no_longer_full += 1;
                    }
                    bits[at] &= !self.bit_of(b);
                }
                if no_longer_full > 0 {
                    emptied.push((tick, -no_longer_full));
                }
            }
            Ok(emptied)
        })?;
        self.count(&emptied).map(|_| ())
    }

    /// The second section of a record or unrecord (see "Counting" in the module
    /// documentation): adds to the count of each tick the chunks the first section made full
    /// (or no longer full); returns the lowest tick whose count reached every chunk, if any.
    fn count(&self, changes: &[(Tick, i64)]) -> Result<Option<Tick>, GvtError> {
        if changes.is_empty() {
            return Ok(None);
        }
        let keys: Vec<usize> = changes.iter().map(|&(t, _)| self.count_key(t)).collect();
        self.table.section(&keys, |v| {
            let mut lowest = None;
            for &(tick, n) in changes {
                let slot = v.get_mut(self.count_key(tick));
                // A tick commits only once its count is settled (see "Counting").
                let at = self.live(slot, tick).map_err(|_| {
                    GvtError::Invalid(format!(
                        "tick {tick}'s count changed by {n} after it was committed"
                    ))
                })?;
                let Slot::Count { full, .. } = slot else {
                    unreachable!()
                };
                full[at] += n;
                if full[at] == self.chunks as i64 && lowest.is_none() {
                    lowest = Some(tick);
                }
            }
            Ok(lowest)
        })
    }

    /// Commits `t` if it is complete and `t - 1` is committed, then `t + 1`, and so on.
    fn advance(&self, mut t: Tick) {
        loop {
            let frame = self.is_frame(t);
            let mut keys: Vec<usize> = (0..self.chunks).map(|c| self.chunk_key(t, c)).collect();
            keys.push(self.count_key(t));
            // `t - 1`'s counter, when it is in the block before (else `t`'s says it).
            let pred = (t > self.start && t % self.block == 0).then(|| self.count_key(t - 1));
            keys.extend(pred);
            if frame {
                keys.extend((0..self.groups).map(|g| self.states_key(t, g)));
            }
            let at = (t % self.block) as usize;
            let last = at as u64 == self.block - 1;
            let next_base = self.base(t) + self.ring();
            // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
            // `TIMEWARP_BROKEN=gvt_count_check_outside` (a loom negative control, see
            // `sync::broken`): whether every body has recorded `t` is checked in a section of
            // its own, and the commit section below trusts it, so a rollback can slip between.
            #[cfg(timewarp_broken)]
            let count_checked_outside = crate::sync::broken("gvt_count_check_outside");
            #[cfg(timewarp_broken)]
            if count_checked_outside {
                let ck = self.count_key(t);
                let complete = self.table.section(&[ck], |v| {
                    let slot = v.get(ck);
                    match (self.live(slot, t), slot) {
                        (Ok(a), Slot::Count { full, .. }) => full[a] as usize == self.chunks,
                        _ => false,
                    }
                });
                if !complete {
                    return;
                }
            }
            let committed = self.table.section(&keys, |v| {
                if let Some(pk) = pred {
                    // `t - 1`'s block is committed once its slot has moved on.
                    if v.get(pk).base_done().0 < t {
                        return None; // t - 1 not committed yet: its commit will try t.
                    }
                }
                let count = v.get(self.count_key(t));
                let (_, done) = count.base_done();
                // Committed by someone else already, or `t - 1` (in this block) is not yet.
                if self.live(count, t).is_err() || done != at as u64 {
                    return None;
                }
                let Slot::Count { full, .. } = count else {
                    unreachable!()
                };
                // The count says every chunk is full; the chunks themselves must agree (a count
                // can run ahead of a chunk emptied by a rollback whose count change is still
                // to come, see "Counting").
                let all_full = (0..self.chunks).all(|c| {
                    matches!(v.get(self.chunk_key(t, c)),
                        Slot::Chunk { bits, .. } if bits[at] == self.chunk_mask(c))
                });
                // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
                // `TIMEWARP_BROKEN=gvt_commit_trusts_count` (a loom negative control, see
                // `sync::broken`): the commit trusts the counter alone, so a chunk emptied by a
                // rollback whose subtraction is still to come commits without its body.
                #[cfg(timewarp_broken)]
                let all_full = all_full || crate::sync::broken("gvt_commit_trusts_count");
                let incomplete = full[at] != self.chunks as i64 || !all_full;
                #[cfg(timewarp_broken)]
                let incomplete = incomplete && !count_checked_outside;
                if incomplete {
                    return None;
                }
                let mut out = Vec::with_capacity(if frame { self.bodies } else { 0 });
                if frame {
                    for g in 0..self.groups {
                        let f = self.frame_at(t, g);
                        let Slot::States { states } = v.get(self.states_key(t, g)) else {
                            unreachable!()
                        };
                        out.extend_from_slice(&states[f..f + self.group_len(g)]);
                    }
                }
                for c in 0..self.chunks {
                    let Slot::Chunk { base, done, bits } = v.get_mut(self.chunk_key(t, c)) else {
                        unreachable!()
                    };
                    if last {
                        (*base, *done, *bits) = (next_base, 0, [0; MAX_BLOCK]);
                    } else {
                        *done = at as u64 + 1;
                    }
                }
                let Slot::Count { base, done, full } = v.get_mut(self.count_key(t)) else {
                    unreachable!()
                };
                if last {
                    (*base, *done, *full) = (next_base, 0, [0; MAX_BLOCK]);
                } else {
                    *done = at as u64 + 1;
                }
                Some(out)
            });
            let Some(frame_states) = committed else {
                return;
            };
            // GVT first, so that a drained frame is always behind the GVT word.
            self.gvt.fetch_max(t + 1, Ordering::AcqRel);
            if frame {
                let mut o = self
                    .output
                    .lock()
                    .expect("the output queue's lock was poisoned");
                o.frames.insert(t, frame_states);
            }
            t += 1;
        }
    }

    /// The committed frames not handed out yet, in tick order: `(tick, states of all bodies in
    /// body order)`. Each frame is returned by exactly one call.
    pub fn drain_committed(&self) -> Vec<(Tick, Vec<BodyState>)> {
        let mut o = self
            .output
            .lock()
            .expect("the output queue's lock was poisoned");
        let mut out = Vec::new();
        loop {
            let next = o.next;
            let Some(states) = o.frames.remove(&next) else {
                break;
            };
            out.push((next, states));
            o.next = next + self.frame_ticks;
        }
        out
    }

    /// Checks the invariants on a consistent snapshot: the ring holds the blocks of the `ring`
    /// ticks from the snapshot's GVT on, each in its slot, chunks agree with their counter (so:
    /// with no record or rollback in flight, see "Counting"), states are kept for frame ticks
    /// only, and the GVT word does not lead the snapshot.
    pub fn validate(&self) -> Result<(), GvtError> {
        let gvt_word = self.gvt();
        let snap = self.table.snapshot();
        let blocks = self.blocks as usize;
        let err = |s: String| Err(GvtError::Invalid(s));
        let Some(g) = snap[..blocks]
            .iter()
            .map(|s| {
                let (base, done) = s.base_done();
                base + done
            })
            .min()
        else {
            return err("empty ring".into());
        };
        if gvt_word > g {
            return err(format!(
                "GVT word {gvt_word} leads the first uncommitted tick {g}"
            ));
        }
        for (i, s) in snap[..blocks].iter().enumerate() {
            let Slot::Count { base, done, full } = *s else {
                return err(format!("slot {i} is not a counter"));
            };
            if base % self.block != 0
                || (base / self.block) % self.blocks != i as u64
                || base + self.block <= g
                || base >= g + self.ring()
                || done >= self.block
                || (done > 0 && base + done != g)
            {
                return err(format!(
                    "counter slot {i} holds block {base} with {done} committed (GVT {g})"
                ));
            }
            for at in done as usize..self.block as usize {
                let tick = base + at as u64;
                let mut n_full = 0;
                for c in 0..self.chunks {
                    let Slot::Chunk {
                        base: cb,
                        done: cd,
                        bits,
                    } = &snap[self.chunk_key(tick, c)]
                    else {
                        return err(format!("chunk slot of tick {tick} is not a chunk"));
                    };
                    let mask = self.chunk_mask(c);
                    if (*cb, *cd) != (base, done) || bits[at] & !mask != 0 {
                        return err(format!(
                            "chunk {c} of tick {tick}: block {cb}, {cd} committed, bits {:x}",
                            bits[at]
                        ));
                    }
                    n_full += i64::from(bits[at] == mask);
                }
                if n_full != full[at] {
                    return err(format!(
                        "tick {tick}: {} full chunks counted, {n_full} full",
                        full[at]
                    ));
                }
            }
            if self.frames_in(base) > self.frames {
                return err(format!(
                    "block {base} has {} frame ticks, room for {}",
                    self.frames_in(base),
                    self.frames
                ));
            }
        }
        for (i, s) in snap[blocks * (1 + self.chunks)..].iter().enumerate() {
            let g = i % self.groups;
            let want = self.frames * self.group_len(g);
            match s {
                Slot::States { states } if states.len() == want => {}
                Slot::States { states } => {
                    return err(format!(
                        "states slot {i} keeps {} states, not {want}",
                        states.len()
                    ));
                }
                _ => return err(format!("slot {i} of the states is not a states slot")),
            }
        }
        Ok(())
    }
}

// Under loom the tables must live inside `loom::model`: these std-thread tests are for std builds.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn st(b: BodyId, t: Tick) -> BodyState {
        BodyState {
            position: Vec3::new(b as f32, t as f32, 0.5),
            ..BLANK
        }
    }

    #[test]
    fn commits_in_order_when_all_bodies_recorded() {
        for &be in Backend::COMPILED {
            // 70 bodies: two chunks, the second partial.
            let g = GvtBuffer::new(be, GvtConfig::new(70, 2, 8)).unwrap();
            assert_eq!((g.gvt(), g.lvt_upper_bound()), (0, 8));
            let all: Vec<(BodyId, BodyState)> = (0..70).map(|b| (b, st(b, 1))).collect();
            g.record(1, &all).unwrap();
            assert_eq!(g.gvt(), 0, "tick 1 waits for tick 0");
            for b in 0..70 {
                // Body 3 first records a state it will take back (a rollback): the frame must
                // hold the state of its last record.
                let s = if b == 3 { st(b, 99) } else { st(b, 0) };
                if b != 65 {
                    g.record(0, &[(b, s)]).unwrap();
                }
            }
            assert_eq!(g.gvt(), 0, "body 65 is missing");
            assert!(g.drain_committed().is_empty());
            g.unrecord(0, &[3]).unwrap();
            g.record(0, &[(65, st(65, 0))]).unwrap();
            assert_eq!(g.gvt(), 0, "body 3 took its record back");
            g.validate().unwrap();
            g.record(0, &[(3, st(3, 0))]).unwrap();
            assert_eq!(g.gvt(), 2, "ticks 0 and 1 commit together");
            let f = g.drain_committed();
            assert_eq!(f.len(), 1);
            assert_eq!(f[0].0, 0);
            assert_eq!(f[0].1, (0..70).map(|b| st(b, 0)).collect::<Vec<_>>());
            assert!(g.drain_committed().is_empty());
            assert_eq!(g.unrecord(1, &[0]), Err(GvtError::Committed { tick: 1 }));
            assert_eq!(
                g.record(1, &[(0, st(0, 1))]),
                Err(GvtError::Committed { tick: 1 })
            );
            g.validate().unwrap();
        }
    }

    #[test]
    fn ring_wraps_and_bad_requests_change_nothing() {
        let g = GvtBuffer::new(Backend::default(), GvtConfig::new(3, 4, 4)).unwrap();
        // window 4, slack 1: ring of 5 ticks.
        assert!(matches!(
            g.record(5, &[(0, st(0, 5))]),
            Err(GvtError::BeyondWindow { tick: 5, .. })
        ));
        assert_eq!(
            g.record(0, &[(3, st(3, 0))]),
            Err(GvtError::UnknownBody { body: 3, bodies: 3 })
        );
        assert_eq!(
            g.record(0, &[(1, st(1, 0)), (1, st(1, 0))]),
            Err(GvtError::AlreadyRecorded { body: 1, tick: 0 })
        );
        g.record(0, &[(1, st(1, 0))]).unwrap();
        assert_eq!(
            g.record(0, &[(0, st(0, 0)), (1, st(1, 0))]),
            Err(GvtError::AlreadyRecorded { body: 1, tick: 0 })
        );
        assert_eq!(
            g.unrecord(0, &[0]),
            Err(GvtError::NotRecorded { body: 0, tick: 0 })
        );
        // A batch is checked at every tick whose bodies differ from the tick before's, even
        // in the same block (16 ticks with a window of 64): a repeated body or an unknown one
        // at its third tick refuses it all.
        let h = GvtBuffer::new(Backend::default(), GvtConfig::new(3, 4, 64)).unwrap();
        let (a, ab) = ([(0, st(0, 1))], [(0, st(0, 2)), (2, st(2, 2))]);
        for (bad, want) in [
            (
                [(2, st(2, 3)), (2, st(2, 3))],
                GvtError::AlreadyRecorded { body: 2, tick: 3 },
            ),
            (
                [(2, st(2, 3)), (7, st(7, 3))],
                GvtError::UnknownBody { body: 7, bodies: 3 },
            ),
        ] {
            assert_eq!(h.record_ticks(1, &[&a, &ab, &bad]), Err(want));
            assert_eq!(
                h.unrecord(1, &[0]),
                Err(GvtError::NotRecorded { body: 0, tick: 1 })
            );
        }
        h.validate().unwrap();
        for t in 0..23 {
            for b in 0..3 {
                if !(t == 0 && b == 1) {
                    g.record(t, &[(b, st(b, t))]).unwrap();
                }
            }
            assert_eq!(g.gvt(), t + 1);
            assert!(g.lvt_upper_bound() < g.gvt() + 5);
        }
        let f = g.drain_committed();
        assert_eq!(
            f.iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![0, 4, 8, 12, 16, 20]
        );
        for (t, s) in f {
            assert_eq!(s, (0..3).map(|b| st(b, t)).collect::<Vec<_>>());
        }
        g.validate().unwrap();
        assert!(GvtBuffer::new(Backend::default(), GvtConfig::new(0, 4, 4)).is_err());
        assert!(GvtBuffer::new(Backend::default(), GvtConfig::new(3, 0, 4)).is_err());
    }

    /// `record_ticks` (one section over the blocks' chunks) against the same records made tick
    /// by tick, with blocks of 2 ticks (window 8, a ring of 10) and of 16 (window 64, a ring of
    /// 80): batches that cross blocks and the ring's end, entities whose bodies share a chunk or
    /// are listed out of chunk order, a batch refused halfway (nothing recorded), and a batch
    /// naming a body twice at one tick; every frame holds every body's state at its tick. The
    /// batched buffer's chunks hold 64 bodies (three chunks, the last partial), 32 (five, the
    /// last of 22 bodies), 8 (the size for 32 workers) or 1 (every record fills a chunk and
    /// counts): the one recording tick by tick keeps chunks of 64, and both must agree.
    #[test]
    fn batched_records_equal_records_tick_by_tick() {
        for window in [8, 64] {
            for chunk in [64, 32, 8, 1] {
                batched_records_with(window, chunk);
            }
        }
    }

    /// A record checks and sets a tick's bodies of one chunk as one mask (`ChunkRun`): when
    /// some of them were recorded already it names the first of those in the tick's list,
    /// and records nothing; and a batch whose bodies change from tick to tick, an empty tick
    /// among them, records each tick's own bodies.
    #[test]
    fn a_chunk_at_a_time_names_the_body_recorded_already() {
        for &be in Backend::COMPILED {
            let g = GvtBuffer::new(be, GvtConfig::new(10, 4, 64)).unwrap();
            let rows = |bodies: &[BodyId], t: Tick| -> Vec<(BodyId, BodyState)> {
                bodies.iter().map(|&b| (b, st(b, t))).collect()
            };
            g.record(2, &rows(&[5, 8], 2)).unwrap();
            for (list, named) in [(&[1, 3, 5, 7][..], 5), (&[9, 8, 5, 0][..], 8), (&[7, 5], 5)] {
                let (t1, t2) = (rows(list, 1), rows(list, 2));
                assert_eq!(
                    g.record_ticks(1, &[&t1, &t2]),
                    Err(GvtError::AlreadyRecorded {
                        body: named,
                        tick: 2
                    })
                );
            }
            // Nothing of those was recorded: each body still records ticks 1 and 2, apart
            // from 5 and 8 at 2.
            let t1 = rows(&(0..10).collect::<Vec<_>>(), 1);
            let t2 = rows(&[0, 1, 2, 3, 4, 6, 7, 9], 2);
            g.record_ticks(1, &[&t1, &t2]).unwrap();
            g.validate().unwrap();
            // Ticks 3-6 by one batch whose bodies change, then the rest of each tick.
            let h = GvtBuffer::new(be, GvtConfig::new(3, 4, 64)).unwrap();
            let (a, none, b) = (rows(&[0, 1], 0), rows(&[], 1), rows(&[0, 1], 2));
            let c = rows(&[2], 3);
            h.record_ticks(0, &[&a, &none, &b, &c]).unwrap();
            assert_eq!(h.gvt(), 0);
            for (t, rest) in [(0, &[2][..]), (1, &[0, 1, 2]), (2, &[2]), (3, &[0, 1])] {
                h.record(t, &rows(rest, t)).unwrap();
            }
            assert_eq!(h.gvt(), 4);
            h.validate().unwrap();
            // The refusal named is the first in tick order, whatever the order the quick
            // check meets them in: chunks of one body, so bodies 0 and 1 are separate runs.
            for chunk in [1, 64] {
                let k = GvtConfig {
                    chunk,
                    ..GvtConfig::new(3, 4, 64)
                };
                let k = GvtBuffer::new(be, k).unwrap();
                k.record(5, &rows(&[0], 5)).unwrap();
                k.record(4, &rows(&[1], 4)).unwrap();
                let rows: Vec<_> = (3..7).map(|t| rows(&[0, 1], t)).collect();
                let ticks: Vec<&[(BodyId, BodyState)]> = rows.iter().map(|r| &r[..]).collect();
                assert_eq!(
                    k.record_ticks(3, &ticks),
                    Err(GvtError::AlreadyRecorded { body: 1, tick: 4 })
                );
            }
        }
    }

    #[test]
    fn chunk_size_is_checked_and_shrinks_with_the_workers() {
        for chunk in [0, 7, 65, 128] {
            let c = GvtConfig {
                chunk,
                ..GvtConfig::new(10, 1, 8)
            };
            assert!(matches!(
                GvtBuffer::new(Backend::default(), c),
                Err(GvtError::Config(_))
            ));
        }
        let sizes: Vec<usize> = [1, 2, 3, 4, 5, 8, 16, 17, 32, 64, 1000]
            .map(|w| GvtConfig::chunk_for(w, 1000))
            .to_vec();
        assert_eq!(sizes, [64, 64, 64, 64, 32, 32, 16, 8, 8, 8, 8]);
        // More bodies: at most 128 chunks, unless chunks would pass 64 bodies.
        let sizes: Vec<usize> = [100, 1024, 1025, 3000, 8192, 10010, 100_000]
            .map(|b| GvtConfig::chunk_for(16, b))
            .to_vec();
        assert_eq!(sizes, [16, 16, 16, 32, 64, 64, 64]);
    }

    fn batched_records_with(window: u64, chunk: usize) {
        // 150 bodies: three chunks.
        let entities: [&[BodyId]; 5] = [&[0], &[140, 3, 70], &[1, 2], &[149, 64, 63], &[]];
        let rest: Vec<BodyId> = (0..150)
            .filter(|b| !entities.iter().any(|e| e.contains(b)))
            .collect();
        let rows = |bodies: &[BodyId], t: Tick| -> Vec<(BodyId, BodyState)> {
            bodies.iter().map(|&b| (b, st(b, t))).collect()
        };
        for &be in Backend::COMPILED {
            let config = GvtConfig {
                chunk,
                ..GvtConfig::new(150, 3, window)
            };
            let batched = GvtBuffer::new(be, config).unwrap();
            // Records with `record_span`, as entities make them.
            let spanned = GvtBuffer::new(be, config).unwrap();
            let single = GvtBuffer::new(be, GvtConfig::new(150, 3, window)).unwrap();
            let ring = batched.ring();
            assert_eq!(ring, window + window / 4, "window {window}");
            let mut lvt = [0 as Tick; 5];
            let mut rest_at = 0;
            for round in 0..60 * window / 8 {
                let e = (round % 5) as usize;
                let upto = (batched.gvt() + window).min(lvt[e] + 1 + round % 7);
                let per_tick: Vec<Vec<(BodyId, BodyState)>> =
                    (lvt[e]..upto).map(|t| rows(entities[e], t)).collect();
                let ticks: Vec<&[(BodyId, BodyState)]> =
                    per_tick.iter().map(|r| r.as_slice()).collect();
                batched.record_ticks(lvt[e], &ticks).unwrap();
                let (from, n) = (lvt[e], (upto - lvt[e]) as usize);
                spanned
                    .record_span(from, n, entities[e], |i, j| {
                        st(entities[e][j], from + i as Tick)
                    })
                    .unwrap();
                for (t, r) in (lvt[e]..).zip(&per_tick) {
                    if !r.is_empty() {
                        single.record(t, r).unwrap();
                    }
                }
                lvt[e] = upto;
                // The other bodies keep up, one tick a round, so the ring turns.
                while rest_at < lvt.iter().take(4).min().copied().unwrap_or(0) {
                    for g in [&batched, &spanned, &single] {
                        g.record(rest_at, &rows(&rest, rest_at)).unwrap();
                    }
                    rest_at += 1;
                }
                assert_eq!(batched.gvt(), single.gvt(), "round {round}, chunk {chunk}");
                assert_eq!(spanned.gvt(), single.gvt(), "round {round}, chunk {chunk}");
                batched.validate().unwrap();
                spanned.validate().unwrap();
            }
            assert!(
                batched.gvt() > 2 * ring,
                "the ring turned twice ({} of {ring})",
                batched.gvt()
            );
            let frames = batched.drain_committed();
            assert_eq!(frames, single.drain_committed());
            assert_eq!(frames, spanned.drain_committed());
            assert_eq!(frames.len() as u64, batched.gvt().div_ceil(3));
            for (t, states) in frames {
                assert_eq!(states, (0..150).map(|b| st(b, t)).collect::<Vec<_>>());
            }
            // Refused: its last tick is beyond the ring; and a body twice at one tick.
            let t = lvt[2];
            let far: Vec<Vec<(BodyId, BodyState)>> =
                (t..t + ring + 2).map(|t| rows(&[1], t)).collect();
            let far: Vec<&[(BodyId, BodyState)]> = far.iter().map(|r| r.as_slice()).collect();
            assert!(matches!(
                batched.record_ticks(t, &far),
                Err(GvtError::BeyondWindow { .. })
            ));
            let twice = rows(&[2, 2], t);
            assert_eq!(
                batched.record_ticks(t, &[&twice]),
                Err(GvtError::AlreadyRecorded { body: 2, tick: t })
            );
            // The entity furthest ahead takes its last tick back: refused if it is committed.
            let e = (0..4).max_by_key(|&e| lvt[e]).unwrap();
            let last = lvt[e] - 1;
            let want = if last >= batched.gvt() {
                Ok(())
            } else {
                Err(GvtError::Committed { tick: last })
            };
            assert_eq!(batched.unrecord(last, entities[e]), want);
            assert_eq!(single.unrecord(last, entities[e]), want);
            batched.validate().unwrap();
            assert_eq!(batched.gvt(), single.gvt());
        }
    }

    #[test]
    fn start_tick_offsets_the_ring() {
        let mut c = GvtConfig::new(1, 3, 4);
        c.start_tick = 7;
        let g = GvtBuffer::new(Backend::default(), c).unwrap();
        g.validate().unwrap();
        assert_eq!(
            g.record(6, &[(0, st(0, 6))]),
            Err(GvtError::Committed { tick: 6 })
        );
        for t in 7..20 {
            g.record(t, &[(0, st(0, t))]).unwrap();
        }
        assert_eq!(g.gvt(), 20);
        let ticks: Vec<Tick> = g.drain_committed().into_iter().map(|f| f.0).collect();
        assert_eq!(ticks, vec![9, 12, 15, 18]);
    }
}
