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
//! ## Bodies over intervals, not ticks
//!
//! The paper counts entities per tick. A body in flight records a whole span of ticks at once
//! (Mirtich, seed 001, Section 3.3: work follows the intervals between events, not the ticks),
//! so here the buffer counts bodies over intervals: a body's records are always a prefix of
//! the ticks, and all the buffer keeps of them is one number, the body's **front**, the first
//! tick it has not recorded. A record of ticks `a..b` (one tick or a span of hundreds) moves
//! the front from `a` to `b`; a rollback takes back a suffix `r..front` and moves it back to
//! `r`. Tick `t` is complete when every front is past it, so the first uncommitted tick is the
//! least front: `GVT = min over bodies of front`.
//!
//! ## Contract
//!
//! * An entity [`record_span`](GvtBuffer::record_span)s ticks `a..b` for its bodies only when
//!   their states at those ticks are final as far as it knows: every event it sent at ticks
//!   `< b` has been acknowledged, and every event it received at ticks `< b` has been applied.
//!   (This is what makes a committed tick final: an event at `t` can then only come from an
//!   entity that has not recorded `t`, so `t` is not committed yet.) `a` must be each body's
//!   front: a body records its ticks in order, without gaps ([`GvtError::OutOfOrder`]).
//! * On rollback to `r` it [`unrecord_ticks`](GvtBuffer::unrecord_ticks) `r + 1..front`, a
//!   suffix of what it recorded. Taking back a committed tick is refused
//!   ([`GvtError::Committed`]): the protocol guarantees it never happens.
//! * Tick `t` is **committed** when every body's front is past it. Commits are final and
//!   happen in tick order, each exactly once; [`gvt`](GvtBuffer::gvt) (an atomic read) is the
//!   first uncommitted tick as published and never decreases (it may lag a commit in
//!   progress by a moment, never lead it).
//! * Every `frame_ticks`-th tick is a **frame**: when it commits, every body's state there,
//!   flown from the anchor its last record of the tick gave (see "Frame states, from
//!   anchors"), in body order, is queued for the output;
//!   [`drain_committed`](GvtBuffer::drain_committed) hands them out in tick order, each once,
//!   to whoever calls it (one consumer: the output).
//!
//! ## Layout
//!
//! One [`Table`] of the [`sync`](crate::sync) seam: a **chunk** slot per `chunk` consecutive
//! bodies, holding their fronts and the least of them (the chunk's minimum), and one **clock**
//! slot, holding the committed GVT. A record names its bodies' chunk slots only (one slot for
//! a single body, whatever the length of its span); a rollback names them and the clock; a
//! commit names the clock and every chunk.
//!
//! ## Committing
//!
//! A commit is one section: it reads the clock `g` and every chunk's minimum, and if their
//! least `m` is past `g` it sets the clock to `m`: ticks `g..m` are committed. Then, outside
//! the section, it copies the frames of `g..m` out and raises the GVT word to `m`, then tries
//! again (see *Liveness*).
//! * *Safety.* The commit reads every front in the section that moves the clock, and a
//!   rollback reads the clock in the section that moves a front back, so one of the two sees
//!   the other: a rollback after the commit is refused, a rollback before it is seen. No tick
//!   is committed while a body is missing, and none is taken back once committed.
//! * *Liveness.* Only a record can complete a tick, by raising its chunk's minimum from `m0`.
//!   After its section it issues a `SeqCst` fence and reads the GVT word: if the word has
//!   reached `m0`, its chunk may have been holding GVT back and it commits. If the word is
//!   still short of `m0`, a commit up to `m0` is in progress (or will be, by whichever record
//!   completes those ticks); that committer raises the word, issues a `SeqCst` fence and
//!   commits again. The two fences make the pair a Dekker handshake: either the record sees
//!   the raised word, or the committer's second section sees the record's front. So every
//!   complete tick is committed by someone, and at rest the clock equals the least front
//!   ([`validate`](GvtBuffer::validate) checks it; loom checks the handshake).
//!
//! ## Frame states, from anchors
//!
//! A committed frame holds every body's state at the frame tick, and a record does not compute
//! those states: for each body it keeps the **anchors** its frame ticks fly from (rule 4 of
//! [`super::rules`]: the state at tick `k` of a body anchored at `k0` is
//! [`FreeFlight::after`] of the anchor's state for `k - k0` ticks), one per **piece**, the frame
//! ticks in a row that fly from one anchor. A span of a hundred frames is one piece; a body
//! stepped tick by tick gives each of its frames a piece of its own, anchored at the frame. The
//! commit computes the frames from the anchors (Mirtich, seed 001, Section 3.3: work follows the
//! intervals between events, and a frame costs one flight, once, when it is final).
//!
//! A body's pieces are numbered in tick order, its **positions**: a stack, which a record
//! pushes its pieces on and a rollback to tick `r` pops the pieces starting at or after `r` from
//! (a piece that starts before `r` stays, its later frames taken back with the ticks). Position
//! `p` lives in the body's ring of `K` **anchor cells**, at cell `p mod K`: its anchor, and a
//! key word that holds the tag `p + 1` and the index of its first frame.
//! * *Reuse.* A record writes position `p` only when every frame of the live position `p - K`
//!   is committed and copied out, that is when position `p - K + 1`, where those frames end,
//!   starts at or before the first frame not copied out (the GVT word's, rounded up). The
//!   record asks this of the key it left in that cell, before it writes a piece; where the
//!   answer is no, it records only the ticks before the piece's frame tick (or none), and the
//!   rest waits until the word rises past that position's frames. Those are ticks the bodies
//!   have recorded, so the GVT reaches them without the waiting bodies: no wait closes a
//!   cycle. A body keeps one position per piece, so a body in flight (a piece per span) needs
//!   two or three; `K` is the fewer of [`MAX_POSITIONS`] and `frames + 1`, what a body stepped
//!   tick by tick (a piece per frame) needs up to the window: a ring of the window's frames
//!   per body was most of the engine's memory on long windows, and now only a body stepped
//!   tick by tick more than `K - 1` frames ahead of the word waits.
//! * *Reading.* The commit keeps a **cursor** per body: the position of the last frame it
//!   computed and its anchor. For the next frame `f` it moves on to position `p + 1` while that
//!   cell's key holds the tag `p + 1` and a first frame at or before `f`. A cell holding an
//!   older position (`p + 1 - K`) has another tag. A rollback **voids** the key of each position
//!   it pops (a tag no position has there), after its section and before the body records
//!   again: until the body records again the commit computes no frame at or after the
//!   rollback's tick, where the popped positions start, and once it has, the void is ordered
//!   before the commit by the sections. So a cell whose tag the commit takes is its live
//!   position's. A record writes the key last (release) and the commit reads it first
//!   (acquire), so a tag is read with the first frame written with it; a cell looked at while
//!   a record after a rollback writes it again starts at or after the rollback's tick, past
//!   every frame the commit computes then.
//! * *Ordering.* A record writes its cells *before* its section, and a commit computes frames
//!   *after* the section that committed them, so a committed frame flies from the anchors of
//!   its bodies' last records of it, as the chunk slots' fronts order them.
//!
//! Cells are words of atomic bits: the sections and the key give the ordering, and the atomics
//! keep even a caller that breaks the contract (two threads recording one body) free of data
//! races. A body's cells are consecutive, so a record writes only its own bodies' lines.
//!
//! ## Copying out
//!
//! A commit computes its frames under the output's lock before it raises the word, and until
//! the word rises every entity that has flown to the window waits. With spans the GVT moves in
//! jumps of most of a window (every body's span ends near the window's end, and the least
//! front jumps when the last one is written), so the frames of a jump, a hundred of every body,
//! are on the path every worker waits on. A jump of many states is therefore split by bodies
//! over up to `copiers` threads (the engine's worker count), scoped to the commit; each moves
//! the cursors of its own bodies over every frame of the jump, reading cells that no record
//! writes until the word rises, so the protocol is the one above, with the frames done sooner.
//! Under loom the frames are computed on the committing thread.
//!
//! ## Chunk size
//!
//! A chunk slot is where records of different entities meet: two workers recording bodies of
//! one chunk name the same slot, and one of them waits (locks) or runs its section again
//! (STM); a commit names every chunk. The size is a power of two up to 64, picked from the
//! worker count and the number of bodies ([`GvtConfig::chunk_for`]): 64 bodies up to 4
//! workers, then halved as the workers double, down to 8 from 32 on, but no smaller than
//! makes 128 chunks. Committed frames do not depend on the size. (The rule was measured with
//! the earlier buffer of per-tick bits; `docs/results.md` has the figures.)

use super::{BodyId, Tick};
use crate::dynamics::{BodyState, FreeFlight, Launch};
use crate::primitive::{AtomicU64, Mutex, Ordering, fence};
use crate::sync::{Backend, Class, Table};
use glam::{Quat, Vec3};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

/// Bodies per chunk at most.
const MAX_CHUNK: usize = 64;

/// Chunks [`GvtConfig::chunk_for`] makes at most, unless they would hold more than
/// [`MAX_CHUNK`] bodies: every commit names every chunk.
const MAX_CHUNKS: usize = 128;

/// Anchor cells per body at most (see "Reuse"): a body keeps one position per piece, so a
/// body in flight, one piece per span, needs two or three live positions whatever the
/// window; only a body recorded tick by tick (one piece per frame) more than 31 frames ahead
/// of the GVT word waits for the word. A ring of every frame of a long window would be the
/// engine's largest allocation (`parallel` 100,000 at window 4096: 322 cells of 72 bytes per
/// body, 2.3 GB).
pub const MAX_POSITIONS: usize = 32;

/// The key of the clock slot (chunk `c`'s is `1 + c`).
const CLOCK: usize = 0;

/// The buffer's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GvtConfig {
    /// Number of (dynamic) bodies, numbered `0..bodies`.
    pub bodies: usize,
    /// The first tick to commit (GVT at the start).
    pub start_tick: Tick,
    /// Frames are the ticks that are multiples of this (>= 1).
    pub frame_ticks: u64,
    /// `LVT_ub - GVT` (>= 1).
    pub window: u64,
    /// Extra ticks beyond the window (>= 1) that a record may reach past the GVT word, so that
    /// a record up to `LVT_ub` is taken while the frames behind GVT are computed (the anchor
    /// cells are sized for `window + slack` ticks, see "Reuse").
    pub slack: u64,
    /// Bodies per chunk slot, a power of two up to 64 (see "Chunk size" in the module
    /// documentation; [`GvtConfig::chunk_for`] picks it for an engine).
    pub chunk: usize,
    /// Threads a commit may copy its frames out on (>= 1; see "Copying out"): the engine's
    /// workers, who wait for the copy when the GVT jumps.
    pub copiers: usize,
    /// Anchor cells per body, at most (`K`, see "Reuse"; at least 2): fewer than the window can
    /// need makes a record that would reuse a cell too soon record only the ticks before it.
    /// [`GvtConfig::new`] sets [`MAX_POSITIONS`].
    pub positions: usize,
    /// How a frame flies from its anchor (see "Frame states, from anchors"): the engine's
    /// rule 4. [`GvtConfig::new`] sets a still one (no gravity, ticks of no length), under which
    /// every frame of a piece holds its anchor's state.
    pub flight: FreeFlight,
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
            copiers: 1,
            positions: MAX_POSITIONS,
            flight: FreeFlight {
                gravity: Vec3::ZERO,
                dt: 0.0,
            },
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
    /// A record that does not start at the body's front, or a rollback that does not end
    /// there: a body records and takes back its ticks in order.
    OutOfOrder {
        body: BodyId,
        tick: Tick,
        front: Tick,
    },
    /// The tick is committed (behind GVT): it cannot change any more.
    Committed { tick: Tick },
    /// The tick is beyond what the anchor cells can hold (at least `ring` ticks past the GVT
    /// word; see "Reuse").
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
            GvtError::OutOfOrder { body, tick, front } => write!(
                f,
                "body {body} has recorded the ticks before {front}, not up to tick {tick} \
                 (a body records and takes back its ticks in order)"
            ),
            GvtError::Committed { tick } => {
                write!(f, "tick {tick} is already committed (behind GVT)")
            }
            GvtError::BeyondWindow { tick, gvt, ring } => write!(
                f,
                "tick {tick} is beyond the buffer (GVT {gvt} + {ring} ticks)"
            ),
            GvtError::Invalid(s) => write!(f, "GVT buffer invariant broken: {s}"),
        }
    }
}

impl std::error::Error for GvtError {}

/// One slot of the table.
#[derive(Clone, Debug)]
enum Slot {
    /// The committed GVT: every tick before it is committed.
    Clock { committed: Tick },
    /// The fronts of a chunk's bodies (the first tick each has not recorded) and the least
    /// of them.
    Chunk { front: Vec<Tick>, min: Tick },
}

impl Slot {
    fn committed(&self) -> Tick {
        match self {
            Slot::Clock { committed } => *committed,
            Slot::Chunk { .. } => unreachable!("a chunk slot holds no clock"),
        }
    }

    fn min(&self) -> Tick {
        match self {
            Slot::Chunk { min, .. } => *min,
            Slot::Clock { .. } => unreachable!("the clock slot holds no fronts"),
        }
    }
}

/// A commit computes frames on several threads only if each has at least this many states to
/// compute (a thread costs tens of microseconds to start; a state, a flight from its anchor,
/// about twenty nanoseconds).
const COPY_STATES: usize = 1 << 13;

/// Words of a state: its 13 floats, two to a word.
const STATE_WORDS: usize = 7;

/// Where a body's frame ticks from one on fly from (see "Frame states, from anchors"): its
/// anchor, the state `state` at tick `tick`, and the last tick `last` that flies from it. A
/// frame tick `f` of the piece (`tick <= f <= last`) holds [`FreeFlight::after`] of `state`
/// for `f - tick` ticks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Piece {
    pub tick: Tick,
    pub state: BodyState,
    pub last: Tick,
}

impl Piece {
    /// The piece of tick `tick` alone, at `state`.
    pub fn at(tick: Tick, state: BodyState) -> Piece {
        Piece {
            tick,
            state,
            last: tick,
        }
    }
}

/// The bits of a state's floats, two to a word.
fn state_words(s: &BodyState) -> [u64; STATE_WORDS] {
    let (p, q, v, w) = (s.position, s.rotation, s.velocity, s.angular_velocity);
    let f = [
        p.x, p.y, p.z, q.x, q.y, q.z, q.w, v.x, v.y, v.z, w.x, w.y, w.z, 0.0,
    ];
    std::array::from_fn(|i| u64::from(f[2 * i].to_bits()) | u64::from(f[2 * i + 1].to_bits()) << 32)
}

/// The state whose floats' bits `words` holds.
fn words_state(words: [u64; STATE_WORDS]) -> BodyState {
    let f = |i: usize| f32::from_bits((words[i / 2] >> (32 * (i % 2))) as u32);
    BodyState {
        position: Vec3::new(f(0), f(1), f(2)),
        rotation: Quat::from_xyzw(f(3), f(4), f(5), f(6)),
        velocity: Vec3::new(f(7), f(8), f(9)),
        angular_velocity: Vec3::new(f(10), f(11), f(12)),
    }
}

/// The key of position `p` whose first frame has index `frame`: its tag `p + 1` (so that a
/// zeroed cell holds no position) and the frame, 32 bits each.
fn key(p: u64, frame: u64) -> u64 {
    (p.wrapping_add(1) as u32 as u64) << 32 | frame as u32 as u64
}

/// Whether key `k` carries position `p`'s tag.
#[inline]
fn holds(k: u64, p: u64) -> bool {
    k >> 32 == key(p, 0) >> 32
}

/// The key a rollback leaves in the cell of position `p` it popped: a tag that is no
/// position's the commit can look for there (see "Reading").
fn void(p: u64) -> u64 {
    key(p, 0) ^ 1 << 63
}

/// Whether the position whose key is `k` starts at or before the frame of index `frame`. Frame
/// indices are compared in 32 bits, wrapping, which is exact for the two within 2^31 frames of
/// each other: a record cuts its pieces at [`MAX_PIECE`] frames, and the positions compared
/// this way start within a piece and a ring of the frame.
#[inline]
fn by(k: u64, frame: u64) -> bool {
    (frame as u32).wrapping_sub(k as u32) as i32 >= 0
}

/// Frames a piece spans at most: a longer flight is recorded as several pieces of one anchor
/// (see [`by`]).
const MAX_PIECE: u64 = 1 << 28;

/// A word the sections order: `std`'s atomic even under loom (see "Frame states, from
/// anchors": a record writes a cell's anchor before its section and the commit reads it after
/// its own; only a body's recorder touches its stack's height). Loom explores the sections and
/// the keys, which the commit reads while a record may write them; a loom atomic here would
/// only multiply the interleavings of one thread's writes that no other thread reads then.
type Word = std::sync::atomic::AtomicU64;

/// One position of a body's pieces: its key, its anchor's tick and state (see "Frame states,
/// from anchors").
struct AnchorCell {
    key: AtomicU64,
    tick: Word,
    state: [Word; STATE_WORDS],
}

impl AnchorCell {
    /// An empty cell (all bits zero: a key with the tag of no position).
    #[cfg(loom)]
    fn new() -> AnchorCell {
        AnchorCell {
            key: AtomicU64::new(0),
            tick: Word::new(0),
            state: std::array::from_fn(|_| Word::new(0)),
        }
    }

    /// `n` empty cells. Outside loom, from zeroed memory that nothing writes before a record
    /// does: the cells are a large part of the engine's memory at the start (`parallel`
    /// 100,000: 32 of 72 bytes per body, 230 MB), and writing their zeros on the calling thread
    /// touched every page before a worker started; zeroed, the pages come from the system
    /// untouched and each is first touched by the record that fills it, on its worker.
    fn empty(n: usize) -> Box<[AnchorCell]> {
        #[cfg(not(loom))]
        {
            use std::alloc::{Layout, alloc_zeroed, handle_alloc_error};
            let layout = Layout::array::<AnchorCell>(n).expect("the cells' size fits in memory");
            if layout.size() == 0 {
                return Box::new([]);
            }
            // SAFETY: `layout` has a nonzero size (checked above).
            let p = unsafe { alloc_zeroed(layout) }.cast::<AnchorCell>();
            if p.is_null() {
                handle_alloc_error(layout);
            }
            // SAFETY: `p` is a live allocation of the global allocator with the layout of
            // `[AnchorCell; n]` (`Layout::array`), which `Box<[AnchorCell]>` frees with that
            // same layout; its bytes are all zero, and an `AnchorCell` is made of
            // `std::sync::atomic::AtomicU64`s only (not loom's, under this cfg), for which zero
            // bytes are a valid value (0): `n` empty cells, owned by nothing else.
            unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) }
        }
        #[cfg(loom)]
        (0..n).map(|_| AnchorCell::new()).collect()
    }

    /// Writes position `p`, first frame index `frame`, anchored at `piece`: the anchor, then
    /// the key (release: see "Reading").
    fn put(&self, p: u64, frame: u64, piece: &Piece) {
        self.tick.store(piece.tick, Ordering::Relaxed);
        for (w, bits) in self.state.iter().zip(state_words(&piece.state)) {
            w.store(bits, Ordering::Relaxed);
        }
        self.key.store(key(p, frame), Ordering::Release);
    }

    /// The anchor: its tick and state.
    fn anchor(&self) -> (Tick, BodyState) {
        let words = std::array::from_fn(|i| self.state[i].load(Ordering::Relaxed));
        (self.tick.load(Ordering::Relaxed), words_state(words))
    }
}

/// Where the commit is in a body's positions (see "Reading"): the next position to look at
/// and the anchor of the one before it, the piece of the last frame computed.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    next: u64,
    /// The key of position `next`'s cell as last read (refreshed at each fill), if it holds
    /// that position's tag: the position to move on to at its first frame.
    due: Option<u64>,
    /// The anchor's tick, and its state ready to be flown to each frame.
    tick: Tick,
    launch: Launch,
}

impl Cursor {
    /// Reads the key of `cell`, position `next`'s (acquire: see "Reading").
    #[inline]
    fn read_key(&mut self, cell: &AnchorCell) {
        let k = cell.key.load(Ordering::Acquire);
        self.due = holds(k, self.next).then_some(k);
    }
}

/// Committed frames waiting for the consumer, and the frames it gave back to be filled again.
struct Output {
    frames: BTreeMap<Tick, Vec<BodyState>>,
    next: Tick,
    spare: Vec<Vec<BodyState>>,
    /// Each body's cursor (see "Reading").
    cursors: Vec<Cursor>,
}

/// The GVT buffer.
pub struct GvtBuffer {
    table: Table<Slot>,
    /// Every key: the clock, then the chunks (what a commit names).
    all_keys: Vec<usize>,
    bodies: usize,
    /// Bodies per chunk (a power of two) and its log2.
    chunk: usize,
    chunk_shift: u32,
    chunks: usize,
    window: u64,
    frame_ticks: u64,
    /// Frames a record may reach past the GVT word, and the ticks they span
    /// (`frames * frame_ticks`).
    frames: usize,
    /// Threads a commit may compute its frames on.
    copiers: usize,
    ring: u64,
    /// How frames fly from their anchors.
    flight: FreeFlight,
    /// Anchor cells per body (`K`, at most `frames + 1`, see "Reuse").
    per: usize,
    /// Position `p` of body `b`: `anchors[b * per + p % per]`.
    anchors: Box<[AnchorCell]>,
    /// Each body's positions (the height of its stack), as its own records and rollbacks left
    /// it: only the body's recorder reads and writes it.
    tops: Box<[Word]>,
    /// Each body's front as its own records and rollbacks left it: looked at before a record
    /// writes anchor cells, so that a refused record overwrites none (the chunk slots decide).
    fronts: Box<[AtomicU64]>,
    /// The GVT word: the committed GVT as published, every frame before it copied out.
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
        if !(c.chunk.is_power_of_two() && c.chunk <= MAX_CHUNK) {
            return Err(GvtError::Config(format!(
                "bodies per chunk must be a power of two up to {MAX_CHUNK}, got {}",
                c.chunk
            )));
        }
        if c.positions < 2 {
            return Err(GvtError::Config(format!(
                "anchor cells per body must be at least 2, got {}",
                c.positions
            )));
        }
        let chunks = c.bodies.div_ceil(c.chunk);
        let frames = want.div_ceil(c.frame_ticks) as usize + 1;
        let per = (frames + 1).min(c.positions);
        let table = Table::with_class(backend, 1 + chunks, Class::Gvt, |k| {
            if k == CLOCK {
                Slot::Clock {
                    committed: c.start_tick,
                }
            } else {
                let n = c.chunk.min(c.bodies - (k - 1) * c.chunk);
                Slot::Chunk {
                    front: vec![c.start_tick; n],
                    min: c.start_tick,
                }
            }
        });
        Ok(GvtBuffer {
            table,
            all_keys: (0..1 + chunks).collect(),
            bodies: c.bodies,
            chunk: c.chunk,
            chunk_shift: c.chunk.ilog2(),
            chunks,
            window: c.window,
            frame_ticks: c.frame_ticks,
            frames,
            copiers: c.copiers.max(1),
            ring: frames as u64 * c.frame_ticks,
            flight: c.flight,
            per,
            anchors: AnchorCell::empty(per * c.bodies),
            tops: (0..c.bodies).map(|_| Word::new(0)).collect(),
            fronts: (0..c.bodies)
                .map(|_| AtomicU64::new(c.start_tick))
                .collect(),
            gvt: AtomicU64::new(c.start_tick),
            output: Mutex::new(Output {
                frames: BTreeMap::new(),
                next: c.start_tick.next_multiple_of(c.frame_ticks),
                spare: Vec::new(),
                cursors: vec![
                    Cursor {
                        next: 0,
                        due: None,
                        tick: 0,
                        launch: Launch::of(&words_state([0; STATE_WORDS])),
                    };
                    c.bodies
                ],
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

    /// Body `b`'s chunk slot and its place there.
    #[inline]
    fn place(&self, b: BodyId) -> (usize, usize) {
        let b = b as usize;
        (1 + (b >> self.chunk_shift), b & (self.chunk - 1))
    }

    /// Body `b`'s cell of position `p`.
    #[inline]
    fn cell(&self, b: BodyId, p: u64) -> &AnchorCell {
        &self.anchors[b as usize * self.per + (p % self.per as u64) as usize]
    }

    /// The frame ticks in `ticks`.
    fn frame_ticks_in(&self, ticks: Range<Tick>) -> impl Iterator<Item = Tick> + use<> {
        let from = ticks.start.next_multiple_of(self.frame_ticks);
        (from..ticks.end).step_by(self.frame_ticks as usize)
    }

    /// The chunk slots of `bodies`, each once, after checking the ids: an unknown body, or one
    /// named twice (`twice` says the error).
    fn keys_of(
        &self,
        bodies: &[BodyId],
        twice: impl Fn(BodyId) -> GvtError,
    ) -> Result<Vec<usize>, GvtError> {
        if let Some(&body) = bodies.iter().find(|&&b| b as usize >= self.bodies) {
            return Err(GvtError::UnknownBody {
                body,
                bodies: self.bodies,
            });
        }
        if bodies.len() > 1 {
            let mut seen = bodies.to_vec();
            seen.sort_unstable();
            if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
                return Err(twice(w[0]));
            }
        }
        let mut keys: Vec<usize> = bodies.iter().map(|&b| self.place(b).0).collect();
        keys.sort_unstable();
        keys.dedup();
        Ok(keys)
    }

    /// Whether a body whose front is `front` may record from `first`.
    fn may_record(body: BodyId, front: Tick, first: Tick) -> Result<(), GvtError> {
        match first.cmp(&front) {
            std::cmp::Ordering::Equal => Ok(()),
            std::cmp::Ordering::Less => Err(GvtError::AlreadyRecorded { body, tick: first }),
            std::cmp::Ordering::Greater => Err(GvtError::OutOfOrder {
                body,
                tick: first,
                front,
            }),
        }
    }

    /// Whether a body whose front is `front` may take back `ticks`.
    fn may_unrecord(body: BodyId, front: Tick, ticks: &Range<Tick>) -> Result<(), GvtError> {
        if front < ticks.end {
            Err(GvtError::NotRecorded {
                body,
                tick: front.max(ticks.start),
            })
        } else if front > ticks.end {
            Err(GvtError::OutOfOrder {
                body,
                tick: ticks.end,
                front,
            })
        } else {
            Ok(())
        }
    }

    /// Records that the given bodies (all of one entity) have finished `tick`, with their
    /// states at `tick` (kept for frame ticks only): [`GvtBuffer::record_span`] of one tick,
    /// whose answer it returns (`tick + 1` if recorded, `tick` if the ring had no room).
    pub fn record(&self, tick: Tick, bodies: &[(BodyId, BodyState)]) -> Result<Tick, GvtError> {
        let ids: Vec<BodyId> = bodies.iter().map(|p| p.0).collect();
        self.record_span(tick, 1, &ids, |t, j| Piece::at(t, bodies[j].1))
    }

    /// Records the `count` ticks from `first` for `bodies` (all of one entity): `piece(t, j)`
    /// is asked at frame ticks `t` of the interval for the piece of body `bodies[j]` that
    /// holds `t` (`tick <= t <= last`), and for that body again only at the first frame tick
    /// after its `last` (see "Frame states, from anchors"); `t` never decreases from one call to
    /// the next. `first` must be every body's front. One
    /// section over the bodies' chunk slots, whatever `count` is; if it completes ticks, they
    /// are committed before this returns (see "Committing"). Returns the end of the ticks
    /// recorded: `first + count`, or less where a piece would take the cell of a position
    /// whose frames are not all copied out yet (see "Reuse"): then the ticks from that
    /// piece's frame tick on are left for a later record (none, if it is `first`'s), which
    /// succeeds once the GVT word has risen past the frames of that position, a tick that
    /// the bodies have recorded (the GVT reaches it without them). On error nothing is
    /// recorded.
    pub fn record_span(
        &self,
        first: Tick,
        count: usize,
        bodies: &[BodyId],
        mut piece: impl FnMut(Tick, usize) -> Piece,
    ) -> Result<Tick, GvtError> {
        if count == 0 || bodies.is_empty() {
            return Ok(first);
        }
        let keys = self.keys_of(bodies, |body| GvtError::AlreadyRecorded {
            body,
            tick: first,
        })?;
        let mut end = first + count as Tick;
        let word = self.gvt();
        if first < word {
            return Err(GvtError::Committed { tick: first });
        }
        if end > word + self.ring {
            return Err(GvtError::BeyondWindow {
                tick: end - 1,
                gvt: word,
                ring: self.ring,
            });
        }
        for &b in bodies {
            Self::may_record(b, self.fronts[b as usize].load(Ordering::Relaxed), first)?;
        }
        // The anchors first: a commit reads them once the section below has moved the fronts
        // past their frames (see "Ordering"). Each body's pieces go on its stack of positions,
        // which grows only once the section has taken the record; they are asked in frame
        // order over all bodies (the caller may walk its ticks forwards only).
        let mut tops: smallvec::SmallVec<[u64; 4]> = bodies
            .iter()
            .map(|&b| self.tops[b as usize].load(Ordering::Relaxed))
            .collect();
        let mut f = first.next_multiple_of(self.frame_ticks);
        let mut next: smallvec::SmallVec<[Tick; 4]> = smallvec::smallvec![f; bodies.len()];
        // The first frame whose state is not copied out yet (see "Reuse").
        let copied = word.div_ceil(self.frame_ticks);
        while f < end {
            if bodies
                .iter()
                .zip(&next)
                .zip(&tops)
                .any(|((&b, &n), &p)| n == f && !self.room(b, p, copied))
            {
                // The ticks before `f` are recorded; the pieces are pushed up to `f` only.
                end = f;
                break;
            }
            let mut soonest = Tick::MAX;
            for (j, &b) in bodies.iter().enumerate() {
                if next[j] == f {
                    let p = piece(f, j);
                    debug_assert!(
                        p.tick <= f && f <= p.last,
                        "piece {}..={} asked at {f}",
                        p.tick,
                        p.last
                    );
                    let frame = f / self.frame_ticks;
                    self.cell(b, tops[j]).put(tops[j], frame, &p);
                    tops[j] += 1;
                    let past = (p.last.max(f) + 1).next_multiple_of(self.frame_ticks);
                    next[j] = past.min((frame + MAX_PIECE) * self.frame_ticks);
                }
                soonest = soonest.min(next[j]);
            }
            f = soonest;
        }
        if end == first {
            return Ok(first);
        }
        let rose = self.table.section(&keys, |v| {
            for &b in bodies {
                let (k, at) = self.place(b);
                let Slot::Chunk { front, .. } = v.get(k) else {
                    unreachable!()
                };
                Self::may_record(b, front[at], first)?;
            }
            for &b in bodies {
                let (k, at) = self.place(b);
                let Slot::Chunk { front, .. } = v.get_mut(k) else {
                    unreachable!()
                };
                front[at] = end;
            }
            // The least former minimum of the chunks whose minimum rose.
            let mut rose: Option<Tick> = None;
            for &k in &keys {
                let Slot::Chunk { front, min } = v.get_mut(k) else {
                    unreachable!()
                };
                let new = *front.iter().min().expect("a chunk has a body");
                if new > *min {
                    rose = Some(rose.map_or(*min, |r| r.min(*min)));
                    *min = new;
                }
            }
            Ok(rose)
        })?;
        for (&b, top) in bodies.iter().zip(tops) {
            self.tops[b as usize].store(top, Ordering::Relaxed);
            self.fronts[b as usize].store(end, Ordering::Relaxed);
        }
        if let Some(m0) = rose {
            // The record's half of the handshake (see "Liveness").
            fence(Ordering::SeqCst);
            if m0 <= self.gvt.load(Ordering::SeqCst) {
                self.advance();
            }
        }
        Ok(end)
    }

    /// Whether body `b` may push position `p` now that the frames before index `copied` are
    /// copied out: its cell held position `p - K`, whose frames end where position
    /// `p - K + 1` starts, so that one must start at or before `copied` (see "Reuse"). The
    /// keys of positions below `p`, the body's top, are its own records' (a rollback voids
    /// only the positions it pops, which a record writes again before it pushes past them).
    #[inline]
    fn room(&self, b: BodyId, p: u64, copied: u64) -> bool {
        // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
        // `TIMEWARP_BROKEN=gvt_ring_unchecked` (a loom negative control, see `sync::broken`):
        // a cell is reused whatever the commit still needs of it.
        #[cfg(timewarp_broken)]
        if crate::sync::broken("gvt_ring_unchecked") {
            return true;
        }
        let k = self.per as u64;
        p < k || by(self.cell(b, p + 1 - k).key.load(Ordering::Acquire), copied)
    }

    /// Takes back the record of `tick` for the given bodies (rollback): [`unrecord_ticks`] of
    /// one tick.
    ///
    /// [`unrecord_ticks`]: GvtBuffer::unrecord_ticks
    pub fn unrecord(&self, tick: Tick, bodies: &[BodyId]) -> Result<(), GvtError> {
        self.unrecord_ticks(tick..tick + 1, bodies)
    }

    /// Takes back the records of `ticks` for the given bodies (a rollback takes back all the
    /// ticks it undoes at once): `ticks` must end at every body's front. One section over
    /// their chunk slots and the clock; all or nothing; refused if a tick is committed.
    pub fn unrecord_ticks(&self, ticks: Range<Tick>, bodies: &[BodyId]) -> Result<(), GvtError> {
        if bodies.is_empty() || ticks.is_empty() {
            return Ok(());
        }
        let mut keys = self.keys_of(bodies, |body| GvtError::NotRecorded {
            body,
            tick: ticks.start,
        })?;
        // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
        // `TIMEWARP_BROKEN=gvt_unrecord_trusts_word` (a loom negative control, see
        // `sync::broken`): a rollback checks the GVT word, read before its section, instead of
        // the clock in it, so it can take back a tick a commit has just committed.
        #[cfg(timewarp_broken)]
        let trusts_word = crate::sync::broken("gvt_unrecord_trusts_word");
        #[cfg(not(timewarp_broken))]
        let trusts_word = false;
        let word = self.gvt();
        if !trusts_word {
            keys.insert(0, CLOCK);
        }
        self.table.section(&keys, |v| {
            let committed = if trusts_word {
                word
            } else {
                v.get(CLOCK).committed()
            };
            if ticks.start < committed {
                return Err(GvtError::Committed { tick: ticks.start });
            }
            for &b in bodies {
                let (k, at) = self.place(b);
                let Slot::Chunk { front, .. } = v.get(k) else {
                    unreachable!()
                };
                Self::may_unrecord(b, front[at], &ticks)?;
            }
            for &b in bodies {
                let (k, at) = self.place(b);
                let Slot::Chunk { front, min } = v.get_mut(k) else {
                    unreachable!()
                };
                front[at] = ticks.start;
                *min = (*min).min(ticks.start);
            }
            Ok(())
        })?;
        // The pieces that start at or after the rollback's tick leave the stacks (see "Frame
        // states, from anchors"): none of their frames is committed, nor will be.
        // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
        // `TIMEWARP_BROKEN=gvt_pop_keeps_key` (a loom negative control, see `sync::broken`):
        // the popped pieces keep their keys, so a commit can take a popped piece for the live
        // one its position holds next.
        #[cfg(timewarp_broken)]
        let voids = !crate::sync::broken("gvt_pop_keeps_key");
        #[cfg(not(timewarp_broken))]
        let voids = true;
        let from = ticks.start.div_ceil(self.frame_ticks);
        for &b in bodies {
            let mut top = self.tops[b as usize].load(Ordering::Relaxed);
            while top > 0 && !self.starts_before(b, top - 1, from) {
                top -= 1;
                if voids {
                    self.cell(b, top).key.store(void(top), Ordering::Relaxed);
                }
            }
            self.tops[b as usize].store(top, Ordering::Relaxed);
            self.fronts[b as usize].store(ticks.start, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Whether body `b`'s live position `p` starts before the frame of index `frame`, as its
    /// own recorder wrote it.
    fn starts_before(&self, b: BodyId, p: u64, frame: u64) -> bool {
        let k = self.cell(b, p).key.load(Ordering::Relaxed);
        debug_assert!(holds(k, p), "body {b}'s position {p}");
        by(k, frame.wrapping_sub(1))
    }

    /// Commits what is complete: `clock..least front`, then copies its frames out and raises
    /// the GVT word, and tries again (see "Committing").
    fn advance(&self) {
        loop {
            // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
            // `TIMEWARP_BROKEN=gvt_commit_min_outside` (a loom negative control, see
            // `sync::broken`): the least front is read in a section of its own, and the clock
            // is moved to it in a second one that trusts it, so a rollback can slip between.
            #[cfg(timewarp_broken)]
            if crate::sync::broken("gvt_commit_min_outside") {
                let m = self.table.section(&self.all_keys[1..], |v| {
                    (1..=self.chunks).map(|k| v.get(k).min()).min()
                });
                let m = m.expect("a buffer has a chunk");
                let won = self.table.section(&[CLOCK], |v| {
                    let g = v.get(CLOCK).committed();
                    (m > g).then(|| *v.get_mut(CLOCK) = Slot::Clock { committed: m })
                });
                if won.is_none() {
                    return;
                }
                self.publish(m);
                continue;
            }
            let won = self.table.section(&self.all_keys, |v| {
                let g = v.get(CLOCK).committed();
                // Every key is named, so a key is its own position in the view.
                let m = (1..=self.chunks).map(|k| v.at(k).min()).min();
                let m = m.expect("a buffer has a chunk");
                (m > g).then(|| {
                    *v.get_mut(CLOCK) = Slot::Clock { committed: m };
                    m
                })
            });
            let Some(m) = won else {
                return;
            };
            self.publish(m);
            // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
            // `TIMEWARP_BROKEN=gvt_commit_no_retry` (a loom negative control, see
            // `sync::broken`): the committer does not look again after raising the word, so a
            // record that completed ticks while the word lagged leaves them uncommitted.
            #[cfg(timewarp_broken)]
            if crate::sync::broken("gvt_commit_no_retry") {
                return;
            }
            // The committer's half of the handshake (see "Liveness").
            fence(Ordering::SeqCst);
        }
    }

    /// Computes the frames committed below `m` that are not out yet into the output queue,
    /// then raises the GVT word to `m`. Under the output's lock, so the word rises only over
    /// frames that are out, whichever of two committers gets here first.
    fn publish(&self, m: Tick) {
        let mut o = self
            .output
            .lock()
            .expect("the output queue's lock was poisoned");
        let from = self.gvt.load(Ordering::Relaxed);
        if m <= from {
            return;
        }
        let ticks: Vec<Tick> = self.frame_ticks_in(from..m).collect();
        let mut frames: Vec<Vec<BodyState>> = ticks
            .iter()
            .map(|_| {
                let mut f = o.spare.pop().unwrap_or_default();
                f.resize(self.bodies, words_state([0; STATE_WORDS]));
                f
            })
            .collect();
        self.copy_out(&ticks, &mut frames, &mut o.cursors);
        for (t, states) in ticks.into_iter().zip(frames) {
            o.frames.insert(t, states);
        }
        self.gvt.store(m, Ordering::SeqCst);
    }

    /// Fills `frames` (one per tick of `ticks`, every body's state) from the bodies' anchors,
    /// moving their cursors: on this thread, or, for a jump of many states, on as many as
    /// `copiers` threads at once, each computing the bodies of its own (see "Copying out").
    fn copy_out(&self, ticks: &[Tick], frames: &mut [Vec<BodyState>], cursors: &mut [Cursor]) {
        let parts = self.copiers.min(ticks.len() * self.bodies / COPY_STATES);
        // Under loom the frames are computed on the committing thread: loom sees no std thread.
        if cfg!(not(loom)) && parts > 1 {
            let per = self.bodies.div_ceil(parts);
            // Each part's rows: its bodies' states in every frame.
            let mut rows: Vec<Vec<&mut [BodyState]>> = (0..parts).map(|_| Vec::new()).collect();
            for f in frames.iter_mut() {
                for (i, row) in f.chunks_mut(per).enumerate() {
                    rows[i].push(row);
                }
            }
            std::thread::scope(|s| {
                let mut work = rows.into_iter().zip(cursors.chunks_mut(per)).enumerate();
                let mine = work.next();
                for (i, (mut rows, cursors)) in work {
                    s.spawn(move || self.fill(ticks, (i * per) as BodyId, &mut rows, cursors));
                }
                if let Some((_, (mut rows, cursors))) = mine {
                    self.fill(ticks, 0, &mut rows, cursors);
                }
            });
            return;
        }
        let mut rows: Vec<&mut [BodyState]> = frames.iter_mut().map(|f| &mut f[..]).collect();
        self.fill(ticks, 0, &mut rows, cursors);
    }

    /// Fills `rows` (one per tick of `ticks`: the states of the bodies from `first` on) by
    /// moving those bodies' `cursors` (see "Reading"), a frame at a time: each frame's states
    /// are written in order (a commit of a window's frames writes megabytes: in order, the
    /// writes stream; a body at a time, they stride across the frames, and the fill took twice
    /// the time, `docs/results.md`, "2026-11-30").
    fn fill(
        &self,
        ticks: &[Tick],
        first: BodyId,
        rows: &mut [&mut [BodyState]],
        cursors: &mut [Cursor],
    ) {
        if ticks.is_empty() {
            return;
        }
        // Each cursor's next key, read once for the whole fill: the positions these frames
        // fly from were written before the section that committed them, and any other key
        // read during the fill is of a position that starts past them (see "Reading"), so a
        // key read now and one read at each frame move the cursor alike.
        for (i, c) in cursors.iter_mut().enumerate() {
            c.read_key(self.cell(first + i as BodyId, c.next));
        }
        // The flight's constants in locals: the compiler cannot tell `self` from the rows it
        // writes, and would load them again for every state.
        let (flight, frame_ticks) = (self.flight, self.frame_ticks);
        for (&t, row) in ticks.iter().zip(rows.iter_mut()) {
            let frame = t / frame_ticks;
            // The cursors that move at this frame first (a few, at the frames where pieces
            // start), then every state in a loop of flights alone.
            for (i, c) in cursors.iter_mut().enumerate() {
                while c.due.is_some_and(|k| by(k, frame)) {
                    let b = first + i as BodyId;
                    let (tick, state) = self.cell(b, c.next).anchor();
                    (c.tick, c.launch) = (tick, Launch::of(&state));
                    c.next += 1;
                    c.read_key(self.cell(b, c.next));
                }
                debug_assert!(
                    c.next > 0,
                    "body {} has no anchor at frame tick {t}",
                    first + i as BodyId
                );
            }
            for (s, c) in row.iter_mut().zip(cursors.iter()) {
                *s = flight.fly(&c.launch, t - c.tick);
            }
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

    /// Gives a frame handed out by [`drain_committed`](GvtBuffer::drain_committed) back once
    /// the consumer is done with it, to be filled again by a later commit: a frame of every
    /// body is one large allocation (5.2 MB for 100,000 bodies), and a fresh one per frame,
    /// freed by the consumer, comes back from the system as pages the kernel zeroes on first
    /// touch (measured in `docs/results.md`, "2026-11-29, evening"). The frames kept are at
    /// most what was copied out and not yet given back at once, which the run held anyway.
    pub fn give_back(&self, frame: Vec<BodyState>) {
        let mut o = self
            .output
            .lock()
            .expect("the output queue's lock was poisoned");
        // As many as the ring holds frames, the most that one commit can copy out at once: with
        // spans of a window, the GVT moves in jumps of most of a window's frames.
        if o.spare.len() < self.frames {
            o.spare.push(frame);
        }
    }

    /// Checks the invariants on a consistent snapshot: each chunk's minimum is the least of
    /// its fronts, no front is behind the clock, the GVT word does not lead the clock, each
    /// body's own view of its front agrees; and, with no record, rollback or commit in flight
    /// (where it is called), the clock has reached the least front (no complete tick is left
    /// uncommitted), and each body's live positions hold their own keys, start in frame order,
    /// the last before the body's front.
    pub fn validate(&self) -> Result<(), GvtError> {
        let word = self.gvt();
        let snap = self.table.snapshot();
        let err = |s: String| Err(GvtError::Invalid(s));
        let committed = snap[CLOCK].committed();
        if word > committed {
            return err(format!(
                "GVT word {word} leads the committed GVT {committed}"
            ));
        }
        let mut least = Tick::MAX;
        for (c, s) in snap[1..].iter().enumerate() {
            let Slot::Chunk { front, min } = s else {
                return err(format!("slot {} is not a chunk", c + 1));
            };
            let want = self.chunk.min(self.bodies - c * self.chunk);
            if front.len() != want {
                return err(format!(
                    "chunk {c} holds {} bodies, not {want}",
                    front.len()
                ));
            }
            let m = *front.iter().min().expect("a chunk has a body");
            if m != *min || m < committed {
                return err(format!(
                    "chunk {c}: minimum {min}, least front {m}, committed {committed}"
                ));
            }
            for (at, &f) in front.iter().enumerate() {
                let b = c * self.chunk + at;
                let own = self.fronts[b].load(Ordering::Relaxed);
                if own != f {
                    return err(format!("body {b}: front {f}, its own view {own}"));
                }
            }
            least = least.min(m);
        }
        if least != committed || word != committed {
            return err(format!(
                "GVT LAGS: every body has recorded the ticks before {least}, but the \
                 committed GVT is {committed} and the GVT word {word}"
            ));
        }
        // Each body's live positions that the commit may still read (those after the first
        // that starts before the GVT; the cells of earlier ones may be reused, see "Reuse"):
        // their own keys, in frame order, the last starting before the body's front.
        let gvt_frame = word.div_ceil(self.frame_ticks);
        for b in 0..self.bodies as BodyId {
            let top = self.tops[b as usize].load(Ordering::Relaxed);
            let mut after: Option<u32> = None;
            for p in (top.saturating_sub(self.per as u64)..top).rev() {
                let k = self.cell(b, p).key.load(Ordering::Relaxed);
                if !holds(k, p) {
                    return err(format!(
                        "body {b}: the cell of position {p} holds another key"
                    ));
                }
                if after.is_some_and(|f| f.wrapping_sub(k as u32) as i32 <= 0) {
                    return err(format!(
                        "body {b}: position {p} starts no earlier than the next"
                    ));
                }
                after = Some(k as u32);
                if by(k, gvt_frame) {
                    break;
                }
            }
            let front = self.fronts[b as usize].load(Ordering::Relaxed);
            if top > 0 && !self.starts_before(b, top - 1, front.div_ceil(self.frame_ticks)) {
                return err(format!(
                    "body {b}: its last position starts at or after its front {front}"
                ));
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
            rotation: Quat::IDENTITY,
            velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
        }
    }

    #[test]
    fn commits_in_order_when_all_bodies_recorded() {
        for &be in Backend::COMPILED {
            // 70 bodies: two chunks, the second partial.
            let g = GvtBuffer::new(be, GvtConfig::new(70, 2, 8)).unwrap();
            assert_eq!((g.gvt(), g.lvt_upper_bound()), (0, 8));
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
            // Every body but 3 records tick 1 as well: tick 0 then waits for body 3 only.
            let rest: Vec<BodyId> = (0..70).filter(|&b| b != 3).collect();
            g.record_span(1, 1, &rest, |t, j| Piece::at(t, st(rest[j], t)))
                .unwrap();
            assert_eq!(g.gvt(), 0);
            g.record_span(0, 2, &[3], |t, _| Piece::at(t, st(3, t)))
                .unwrap();
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
    fn bad_requests_change_nothing() {
        for &be in Backend::COMPILED {
            // window 4, slack 1, a frame every 4 ticks: a ring of 3 frames, 12 ticks.
            let g = GvtBuffer::new(be, GvtConfig::new(3, 4, 4)).unwrap();
            assert!(matches!(
                g.record(12, &[(0, st(0, 12))]),
                Err(GvtError::BeyondWindow { tick: 12, .. })
            ));
            assert!(matches!(
                g.record_span(0, 13, &[0], |t, _| Piece::at(t, st(0, t))),
                Err(GvtError::BeyondWindow { tick: 12, .. })
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
            // A record of tick 0 again, with another state, is refused and changes no frame.
            assert_eq!(
                g.record(0, &[(0, st(0, 0)), (1, st(1, 77))]),
                Err(GvtError::AlreadyRecorded { body: 1, tick: 0 })
            );
            assert_eq!(
                g.record(2, &[(0, st(0, 2))]),
                Err(GvtError::OutOfOrder {
                    body: 0,
                    tick: 2,
                    front: 0
                })
            );
            assert_eq!(
                g.unrecord(0, &[0]),
                Err(GvtError::NotRecorded { body: 0, tick: 0 })
            );
            g.record_span(1, 3, &[1], |t, _| Piece::at(t, st(1, t)))
                .unwrap();
            // Body 1 has recorded 0..4: it takes back a suffix, not tick 2 alone.
            assert_eq!(
                g.unrecord(2, &[1]),
                Err(GvtError::OutOfOrder {
                    body: 1,
                    tick: 3,
                    front: 4
                })
            );
            assert_eq!(
                g.unrecord_ticks(2..5, &[1]),
                Err(GvtError::NotRecorded { body: 1, tick: 4 })
            );
            g.validate().unwrap();
            for b in [0, 2] {
                g.record_span(0, 4, &[b], |t, _| Piece::at(t, st(b, t)))
                    .unwrap();
            }
            assert_eq!(g.gvt(), 4);
            let f = g.drain_committed();
            assert_eq!(f, vec![(0, (0..3).map(|b| st(b, 0)).collect())]);
            g.validate().unwrap();
            assert!(GvtBuffer::new(be, GvtConfig::new(0, 4, 4)).is_err());
            assert!(GvtBuffer::new(be, GvtConfig::new(3, 0, 4)).is_err());
            let one_cell = GvtConfig {
                positions: 1,
                ..GvtConfig::new(3, 4, 4)
            };
            assert!(matches!(
                GvtBuffer::new(be, one_cell),
                Err(GvtError::Config(m)) if m.contains("anchor cells per body")
            ));
        }
    }

    /// A jump of the GVT over many frames of many bodies is copied out on several threads
    /// (`copiers`): the frames handed out are those a single copier hands out, each holding
    /// every body's state at its tick, in tick order.
    #[test]
    fn a_jump_is_copied_out_alike_on_several_threads() {
        let (bodies, window) = (3000, 64);
        for &be in Backend::COMPILED {
            let mut out = Vec::new();
            for copiers in [1, 4] {
                let g = GvtBuffer::new(
                    be,
                    GvtConfig {
                        copiers,
                        // A cell for every frame: each body records a piece per tick at once.
                        positions: usize::MAX,
                        ..GvtConfig::new(bodies, 1, window)
                    },
                )
                .unwrap();
                assert!(
                    window as usize * bodies >= 4 * COPY_STATES,
                    "a jump worth splitting"
                );
                // Every body flies the whole window: the last record commits it all at once.
                for b in 0..bodies as BodyId {
                    assert_eq!(g.gvt(), 0);
                    g.record_span(0, window as usize, &[b], |t, _| Piece::at(t, st(b, t)))
                        .unwrap();
                }
                assert_eq!(g.gvt(), window);
                let frames = g.drain_committed();
                assert_eq!(frames.len(), window as usize);
                for (k, (t, states)) in frames.iter().enumerate() {
                    assert_eq!(*t, k as Tick);
                    assert!(
                        states
                            .iter()
                            .enumerate()
                            .all(|(b, s)| *s == st(b as BodyId, *t))
                    );
                }
                g.validate().unwrap();
                out.push(frames);
            }
            assert_eq!(out[0], out[1]);
        }
    }

    /// Spans of random lengths, by entities of one to three bodies whose bodies share chunks
    /// or not, rolling back now and then, against the same records made tick by tick on a
    /// second buffer; the anchor cells turn several times. A span's ticks are cut into pieces
    /// of random lengths, each flying from an anchor at or before its first tick (the frames'
    /// flight has gravity), and the second buffer records each tick's state flown from its
    /// piece's anchor. Both commit the same ticks at every step and hand out the same frames,
    /// each holding every body's last state at its tick; chunks of 64, 8 and 1 bodies, frames of
    /// 3 ticks and of 1. The first buffer's frames are drained now and then and given back
    /// ([`GvtBuffer::give_back`]), so its later commits fill frames used before.
    #[test]
    fn spans_equal_records_tick_by_tick() {
        use crate::scene::SplitMix64;
        // 150 bodies: three chunks of 64 (the last partial).
        let entities: [&[BodyId]; 5] = [&[0], &[140, 3, 70], &[1, 2], &[149, 64, 63], &[5]];
        let rest: Vec<BodyId> = (0..150)
            .filter(|b| !entities.iter().any(|e| e.contains(b)))
            .collect();
        let flight = FreeFlight {
            gravity: Vec3::new(0.5, -9.81, 0.25),
            dt: 1.0 / 960.0,
        };
        for &be in Backend::COMPILED {
            for (window, chunk, ft) in [(8, 64, 3), (64, 8, 3), (64, 1, 3), (40, 8, 1)] {
                // A cell for every frame (records of many pieces are taken whole here; the
                // refusals of a smaller ring are tests/gvt.rs's).
                let full = GvtConfig {
                    positions: usize::MAX,
                    ..GvtConfig::new(150, ft, window)
                };
                let config = GvtConfig {
                    chunk,
                    flight,
                    ..full
                };
                let spans = GvtBuffer::new(be, config).unwrap();
                let ticks = GvtBuffer::new(be, full).unwrap();
                let mut rng = SplitMix64::new(window + chunk as u64 + ft);
                let mut lvt = [0 as Tick; 5];
                // A piece's anchor: body, anchor tick, a salt per piece.
                let anchor = |b: BodyId, at: Tick, salt: u64| BodyState {
                    position: Vec3::new(b as f32, at as f32, (salt % 1000) as f32),
                    velocity: Vec3::new(1.0, (salt % 7) as f32, -2.0),
                    angular_velocity: Vec3::new(0.0, (salt % 3) as f32, 0.5),
                    ..st(b, at)
                };
                let mut rest_at = 0;
                let mut frames = Vec::new();
                for round in 0..40 * window {
                    let e = (rng.next_u64() % 5) as usize;
                    let gvt = spans.gvt();
                    if rng.next_u64() % 6 == 0 && lvt[e] > gvt {
                        let to = gvt + rng.next_u64() % (lvt[e] - gvt);
                        spans.unrecord_ticks(to..lvt[e], entities[e]).unwrap();
                        for t in (to..lvt[e]).rev() {
                            ticks.unrecord(t, entities[e]).unwrap();
                        }
                        lvt[e] = to;
                    } else {
                        let upto = (gvt + window).min(lvt[e] + 1 + rng.next_u64() % 40);
                        let from = lvt[e];
                        let bodies = entities[e];
                        // The pieces: (first tick, last tick, anchor tick, salt).
                        let mut pieces = Vec::new();
                        let mut at = from;
                        while at < upto {
                            let last = (at + rng.next_u64() % 9).min(upto - 1);
                            let back = rng.next_u64() % 5;
                            pieces.push((at, last, at.saturating_sub(back), rng.next_u64()));
                            at = last + 1;
                        }
                        let piece_of =
                            |t: Tick| *pieces.iter().find(|p| p.0 <= t && t <= p.1).unwrap();
                        spans
                            .record_span(from, (upto - from) as usize, bodies, |t, j| {
                                let (_, last, k0, salt) = piece_of(t);
                                Piece {
                                    tick: k0,
                                    state: anchor(bodies[j], k0, salt),
                                    last,
                                }
                            })
                            .unwrap();
                        for t in from..upto {
                            let (_, _, k0, salt) = piece_of(t);
                            let row: Vec<_> = bodies
                                .iter()
                                .map(|&b| (b, flight.after(&anchor(b, k0, salt), t - k0)))
                                .collect();
                            ticks.record(t, &row).unwrap();
                        }
                        lvt[e] = upto;
                    }
                    // The other bodies keep up, one tick a round, so the ring turns.
                    while rest_at < *lvt.iter().min().unwrap() {
                        let row: Vec<_> = rest.iter().map(|&b| (b, st(b, rest_at))).collect();
                        spans.record(rest_at, &row).unwrap();
                        ticks.record(rest_at, &row).unwrap();
                        rest_at += 1;
                    }
                    assert_eq!(spans.gvt(), ticks.gvt(), "round {round}");
                    assert_eq!(spans.gvt(), rest_at.min(*lvt.iter().min().unwrap()));
                    spans.validate().unwrap();
                    if round % 7 == 0 {
                        for (t, states) in spans.drain_committed() {
                            frames.push((t, states.clone()));
                            spans.give_back(states);
                        }
                    }
                }
                assert!(spans.gvt() > 3 * spans.ring, "the ring turned");
                frames.extend(spans.drain_committed());
                let want = ticks.drain_committed();
                assert_eq!(frames.len(), want.len());
                for ((t, got), (tw, want)) in frames.iter().zip(&want) {
                    assert_eq!(t, tw);
                    if let Some(b) = (0..150).find(|&b| got[b] != want[b]) {
                        panic!(
                            "window {window}, chunk {chunk}, frame ticks {ft}: tick {t}, body \
                             {b}: {:?}, expected {:?}",
                            got[b].position, want[b].position
                        );
                    }
                }
                assert_eq!(frames.len() as u64, spans.gvt().div_ceil(ft));
                for (t, states) in frames {
                    for &b in &rest {
                        assert_eq!(states[b as usize], st(b, t), "body {b}, tick {t}");
                    }
                }
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
