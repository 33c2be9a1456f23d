//! # Span records: one record for a body's flight over many ticks
//!
//! Koenig et al. (seed 000, Section 3): "objects that are sufficiently isolated in spacetime are
//! able to take larger time steps"; Mirtich (seed 001, Section 3.3): swept volumes over an
//! interval decide which pairs are active. A body flying from one anchor (rule 4 of
//! [`crate::warp::rules`]) through ticks `from..=to` is put in the table once, as a **span
//! record** (anchor, interval, a box holding its box at every tick of the interval, tag), in
//! the record half of the table (the buckets hashed by space alone, in record cells of twice a
//! cell's side, `cells.rs`, beside the sleep records), a copy in each record bucket of its
//! box's cells; not as an entry per tick.
//!
//! A span meets everything of other entities that lives at its ticks: entries, sleep records,
//! other spans. Where their boxes overlap, the table **refines** to the tick: at each common
//! tick it asks both sides' states at that tick (a span's from its anchor, through the table's
//! [`Flight`]) and boxes, and a pair whose boxes overlap at a tick is a contact at that tick,
//! found once, by whichever of the two is written second (and only if the table's [`Flight`]
//! says it [touches](Flight::touches): the engine's keeps no pair that does not touch), and
//! kept in the record-half bucket of
//! the pair's owner cell (the owner cell of a pair with a span is taken from the span's box and
//! the other side's stored box, which both sides' operations compute alike). Like a write of
//! entries, a span's write stops after the first tick with a contact that matters (`stops`, for
//! the engine one that makes an event): boxes that overlap without touching cost no event. A
//! rollback **cuts** a span at its tick ([`Tvht::cut_span`], Algorithm 7 for an interval) and
//! gets back the contacts of the ticks it removed.
//!
//! **Refinement** of a pair over a common interval first narrows it to the ticks where the
//! flight cannot tell the two apart ([`Flight::near_ticks`]: the engine's rules bound the
//! distance of two flights, which under one gravity differ by a line in time, conservatively
//! in f64, and solve for where that bound comes within reach), then halves what is left while
//! the two boxes over a half overlap ([`Flight::sweep`]): pairs whose boxes overlap only
//! because they are long, as in `bouncing`, cost a test or a few instead of a tick each.
//!
//! **Reclamation.** A record-half bucket drops the spans and span contacts behind the floor
//! whenever a span is written into it, in that section, rather than through the ledger: a span
//! names up to a few record buckets, and sweeping each later would cost a section of its own
//! (a sixth of the instructions of `parallel` 2000 under the STM). What stays behind in a
//! bucket no span visits again is bounded by the buckets, and a full sweep
//! ([`Tvht::prune_before`]) takes it.
//!
//! **Marks.** A span of hundreds of ticks covers several time slices of each of its cells, and
//! most of those buckets of entries are empty (in `parallel` 2000, 26 of the 31 buckets a span
//! named). So a record-half bucket keeps a *mark*, one more than the latest slice at which an
//! entry was written in one of its cells ([`Bucket::marks`], raised by the entry writes in the
//! section they run anyway, never lowered), and a span names the buckets of entries of a cell
//! only at the slices below its mark. It plans with the marks it last saw (at first the
//! hints of them that the table keeps in plain atomics beside the buckets, raised with the
//! marks and read outside any section), and its section reads the marks again: if one has
//! risen past what it planned, it plans again with them. An entry write and a span that meet
//! share the record-half bucket of the cell, so one of the two sees the other: the span sees
//! the raised mark, or the entry sees the span.
//!
//! Invariants, checked by `validate`: a live span is in exactly the record-half buckets of its
//! box's cells, with identical copies; a body has at one tick one entry, sleep record or span,
//! never two; every pair of a span and a live entry, sleep record or span of another entity
//! whose boxes overlap at a common tick has exactly one contact at that tick, in its owner
//! cell's record-half bucket, and every such contact is one.

use super::bucket::{Bucket, duplicated, lives_at};
use super::runs::{AnchorRef, Look, NewAnchor};
use super::sleep::{Boxed, EntrySlices, SleepRec};
use super::{BodyId, Contact, EntityId, Tick, Tvht, TvhtEntry, TvhtError};
use crate::dynamics::BodyState;
use crate::geometry::Aabb;
use crate::sync::View;
use crate::warp::rules::Anchor;

/// How the table asks a span's state and box at a tick: the engine's rules (rule 4's flight
/// from the anchor, rule 1's box). A pure function of its arguments: a section may ask again.
pub trait Flight: Send + Sync {
    /// The pre-event state at `tick` of `body` flying from `anchor`.
    fn state(&self, body: BodyId, anchor: &Anchor, tick: Tick) -> BodyState;
    /// Its box at that state.
    fn aabb(&self, body: BodyId, state: &BodyState) -> Aabb;
    /// Whether `c`, a pair with a span whose boxes overlap at its tick, is a contact the table
    /// keeps and reports (every one, unless the owner of the table says otherwise: the
    /// engine keeps those whose bodies touch, the only ones it acts on).
    fn touches(&self, c: &Contact) -> bool {
        let _ = c;
        true
    }
    /// A box that holds `body`'s box ([`Flight::aabb`]) at every tick of `from..=to`, flying
    /// from `anchor` (`anchor.tick <= from`), if the flight can bound one: the table then
    /// refines a pair by halving their common interval where their boxes over it overlap
    /// (`candidate_ticks`), not tick by tick. `None` (the default): tick by tick.
    fn sweep(&self, body: BodyId, anchor: &Anchor, from: Tick, to: Tick) -> Option<Aabb> {
        let _ = (body, anchor, from, to);
        None
    }
    /// The ticks of `from..=to` outside of which two bodies, each flying or still as `a` and
    /// `b` say, certainly do not touch ([`Flight::touches`]); `None` if at none: the table
    /// refines only within. Conservative: the whole interval when in doubt (the default).
    fn near_ticks(
        &self,
        a: (BodyId, Motion<'_>),
        b: (BodyId, Motion<'_>),
        from: Tick,
        to: Tick,
    ) -> Option<(Tick, Tick)> {
        let _ = (a, b);
        Some((from, to))
    }
}

/// How a record's body moves over its ticks, for [`Flight::near_ticks`]: flying from an anchor (a
/// span), or still at one state (a sleep record).
#[derive(Clone, Copy, Debug)]
pub enum Motion<'a> {
    Flying(&'a Anchor),
    Still(&'a BodyState),
}

/// What a record bucket holds over an interval of ticks, as a span being written meets it: a
/// sleep record (one box and state throughout) or another span (flying from its anchor).
pub(super) trait Held {
    /// Its ticks `from..until` and the box that holds it at all of them.
    fn held(&self) -> ((Tick, Tick), Aabb);
    /// It as an entry at `tick`.
    fn at(&self, flight: &dyn Flight, look: &Look, tick: Tick) -> TvhtEntry;
    /// A box holding its box at every tick of `from..=to`, if known (see [`Flight::sweep`]).
    fn sweep(&self, flight: &dyn Flight, look: &Look, from: Tick, to: Tick) -> Option<Aabb>;
    /// Its body and how it moves (see [`Flight::near_ticks`]).
    fn motion<'a>(&'a self, look: &'a Look) -> (BodyId, Motion<'a>);
}

impl Held for SleepRec {
    fn held(&self) -> ((Tick, Tick), Aabb) {
        ((self.from, self.until), self.aabb)
    }
    fn at(&self, _: &dyn Flight, _: &Look, tick: Tick) -> TvhtEntry {
        SleepRec::at(self, tick)
    }
    fn sweep(&self, _: &dyn Flight, _: &Look, _: Tick, _: Tick) -> Option<Aabb> {
        Some(self.aabb)
    }
    fn motion<'a>(&'a self, _: &'a Look) -> (BodyId, Motion<'a>) {
        (self.body, Motion::Still(&self.state))
    }
}

impl Held for SpanRec {
    fn held(&self) -> ((Tick, Tick), Aabb) {
        ((self.from, self.until), self.aabb)
    }
    fn at(&self, flight: &dyn Flight, look: &Look, tick: Tick) -> TvhtEntry {
        SpanRec::at(self, flight, look, tick)
    }
    fn sweep(&self, flight: &dyn Flight, look: &Look, from: Tick, to: Tick) -> Option<Aabb> {
        flight.sweep(self.body, self.anchor(look), from, to)
    }
    fn motion<'a>(&'a self, look: &'a Look) -> (BodyId, Motion<'a>) {
        (self.body, Motion::Flying(self.anchor(look)))
    }
}

/// Intervals of at most this many ticks are refined tick by tick ([`candidate_ticks`]): the
/// window of [`SWEEP_TICKS`] under which a pair's sweeps are not compared, so that halving an
/// interval shorter than it only asks [`Flight::near_ticks`] again, which costs more than the
/// ticks it may spare (measured in `docs/results.md`).
const REFINE_TICKS: u64 = SWEEP_TICKS;

/// What [`candidate_ticks`]'s `near` says of two bodies over an interval.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Near {
    /// They certainly do not meet in it.
    Apart,
    /// They may meet, but only within these ticks of it.
    Within(Tick, Tick),
    /// It cannot tell (no bound on a box): any tick.
    Unknown,
}

/// The ticks of `lo..=hi`, ascending, at which two bodies may meet. `near(l, h)` says where
/// within `l..=h` they may meet (see [`Near`]: not at all if their boxes over it do not
/// overlap or [`Flight::near_ticks`] finds no tick). An interval they cannot meet in has no
/// candidate; one they may meet in only in part is narrowed to that part, and one they may
/// meet anywhere in is halved, down to [`REFINE_TICKS`] ticks, whose every tick is a
/// candidate (so is every tick of one where `near` cannot tell). `visit` gets each candidate
/// in order and stops the walk by returning false; returns false if it did.
fn candidate_ticks(
    (lo, hi): (Tick, Tick),
    near: &dyn Fn(Tick, Tick) -> Near,
    visit: &mut dyn FnMut(Tick) -> bool,
) -> bool {
    match near(lo, hi) {
        Near::Apart => true,
        Near::Within(l, h) if (l, h) != (lo, hi) => candidate_ticks((l, h), near, visit),
        Near::Within(..) if hi - lo >= REFINE_TICKS => {
            let mid = lo + (hi - lo) / 2;
            candidate_ticks((lo, mid), near, visit) && candidate_ticks((mid + 1, hi), near, visit)
        }
        _ => (lo..=hi).all(visit),
    }
}

/// Windows shorter than this many ticks are refined without comparing the boxes of the two
/// sweeps over them: there two sweeps cost more than the few per-tick tests they could save
/// (measured in `docs/results.md`).
const SWEEP_TICKS: u64 = 32;

/// [`candidate_ticks`]'s `near` for a span of `me` (flying from `anchor`) and a record `o`:
/// the ticks where the flight cannot tell them apart, if their boxes over those overlap (for
/// a window of at least [`SWEEP_TICKS`]).
fn near_of<'a>(
    flight: &'a dyn Flight,
    look: &'a Look,
    (me, anchor): (BodyId, &'a Anchor),
    o: &'a dyn Held,
) -> impl Fn(Tick, Tick) -> Near + 'a {
    move |l, h| {
        let Some((l, h)) = flight.near_ticks((me, Motion::Flying(anchor)), o.motion(look), l, h)
        else {
            return Near::Apart;
        };
        if h - l < SWEEP_TICKS {
            return Near::Within(l, h);
        }
        match (flight.sweep(me, anchor, l, h), o.sweep(flight, look, l, h)) {
            (Some(x), Some(y)) if !x.overlaps(&y) => Near::Apart,
            (Some(_), Some(_)) => Near::Within(l, h),
            _ => Near::Unknown,
        }
    }
}

/// A body's span to write: it flies from `anchor` at the span's ticks, inside `aabb`, which
/// holds its box at each of them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpanEntry {
    pub body: BodyId,
    pub anchor: Anchor,
    pub aabb: Aabb,
}

impl Boxed for SpanEntry {
    fn body(&self) -> BodyId {
        self.body
    }
    fn aabb(&self) -> &Aabb {
        &self.aabb
    }
}

/// A span record, as the record-half buckets of its cells hold it (see the module
/// documentation). The anchor, which only a refinement reads, is one allocation shared by the
/// copies in every bucket of the span (a span of a far body in `parallel` 100,000 has about
/// 21) and counted by the buckets that hold it, as a run's entries are (`runs.rs`): a copy is
/// 64 bytes, not 176, and copying a bucket copies a pointer for it and writes no count.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct SpanRec {
    pub(super) entity: EntityId,
    pub(super) body: BodyId,
    pub(super) from: Tick,
    pub(super) until: Tick,
    pub(super) tag: u64,
    pub(super) aabb: Aabb,
    pub(super) anchor: AnchorRef,
}

impl SpanRec {
    pub(super) fn covers(&self, tick: Tick) -> bool {
        self.from <= tick && tick < self.until
    }

    /// The anchor it flies from, read as long as `look` lives.
    #[inline]
    pub(super) fn anchor<'g>(&self, look: &'g Look) -> &'g Anchor {
        self.anchor.get(look)
    }

    /// The span as an entry at `tick`: its state and box there.
    pub(super) fn at(&self, flight: &dyn Flight, look: &Look, tick: Tick) -> TvhtEntry {
        let state = flight.state(self.body, self.anchor(look), tick);
        TvhtEntry {
            entity: self.entity,
            body: self.body,
            tick,
            aabb: flight.aabb(self.body, &state),
            state,
            tag: self.tag,
            asleep: false,
        }
    }

    /// The entry of another entity's `other` (an entry, or a record at its tick) that this
    /// span meets at `other.tick`: the two as a contact, if their boxes overlap there (a
    /// *refinement*, counted, when the span's whole box overlaps it).
    pub(super) fn meets(
        &self,
        flight: &dyn Flight,
        look: &Look,
        other: &TvhtEntry,
    ) -> Option<Contact> {
        self.meets_with(flight, other, |t| self.at(flight, look, t))
    }

    /// [`SpanRec::meets`], with the span's entry at a tick from `at` (a writer that meets
    /// many records computes each of its ticks once).
    pub(super) fn meets_with(
        &self,
        flight: &dyn Flight,
        other: &TvhtEntry,
        at: impl FnOnce(Tick) -> TvhtEntry,
    ) -> Option<Contact> {
        if other.entity == self.entity
            || !self.covers(other.tick)
            || !self.aabb.overlaps(&other.aabb)
        {
            return None;
        }
        // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
        // `TIMEWARP_BROKEN=span_last_tick_unmet` (a loom negative control, see `sync::broken`):
        // the span meets nothing at its last tick, as if its swept box left that tick out.
        #[cfg(timewarp_broken)]
        if other.tick + 1 == self.until && crate::sync::broken("span_last_tick_unmet") {
            return None;
        }
        let me = at(other.tick);
        let c = me
            .aabb
            .overlaps(&other.aabb)
            .then(|| Contact::new(me, *other))
            .filter(|c| flight.touches(c));
        refined(1, u64::from(c.is_some()));
        c
    }
}

std::thread_local! {
    /// The refinements of this thread's running section (see [`Tvht::refinements`]): reset
    /// when a section's closure starts, so that an attempt the STM runs again counts once.
    static REFINED: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Counts `n` refinements of which `met` found a contact.
fn refined(n: u64, met: u64) {
    REFINED.with(|r| {
        let (a, b) = r.get();
        r.set((a + n, b + met));
    });
}

/// Starts counting a section's refinements (at the start of its closure).
pub(super) fn refining() {
    REFINED.with(|r| r.set((0, 0)));
}

impl Tvht {
    /// Adds the refinements of the section this thread just committed to the table's.
    pub(super) fn refined_committed(&self) {
        let (n, met) = REFINED.with(|r| r.replace((0, 0)));
        if n > 0 {
            self.refined[0].fetch_add(n, crate::primitive::Ordering::Relaxed);
            self.refined[1].fetch_add(met, crate::primitive::Ordering::Relaxed);
        }
    }

    /// Refinements so far: the times a span's box overlapped, at one of its ticks, the box of
    /// another entity's entry, sleep record or span there, so that the table computed the
    /// span's state and box at that tick; and of those, how many found the two boxes
    /// overlapping there (a contact).
    pub fn refinements(&self) -> (u64, u64) {
        (
            self.refined[0].load(crate::primitive::Ordering::Relaxed),
            self.refined[1].load(crate::primitive::Ordering::Relaxed),
        )
    }
}

/// Whether contact `c` joins the record or span of (`entity`, `body`, `tag`) at a tick of
/// `ticks`: a cut of it from `ticks.start` gives back only its own contacts, not those its
/// body has at later ticks as an entry or another record or span.
pub(super) fn involves(
    c: &Contact,
    (entity, body, tag): (EntityId, BodyId, u64),
    ticks: std::ops::Range<Tick>,
) -> bool {
    ticks.contains(&c.tick())
        && [c.a, c.b]
            .iter()
            .any(|x| x.entity == entity && x.body == body && x.tag == tag)
}

/// A span (or nap) request as planned: its keys, each body's record-half and entry ranges of
/// them, and the marks planned with (by record-half bucket).
pub(super) type SpanPlan<'a> = (
    &'a [usize],
    &'a [std::ops::Range<usize>],
    &'a [(usize, Tick)],
);

/// Each body's ranges of a request's keys, as a plan gives them.
type Ranges = Vec<std::ops::Range<usize>>;

/// What the section of a record request (a span, a nap's sleep records) did: wrote its
/// records (the last tick they reach, their contacts), or found a mark risen past those
/// planned with (the marks it saw: plan again).
pub(super) enum Marked {
    Written(Tick, Vec<Contact>),
    Again(Vec<(usize, Tick)>),
}

impl Tvht {
    /// Plans a record request over ticks `..=to` (`plan` names its keys, given the slices of
    /// entries to name) with the marks it last saw, at first their hints, and runs its
    /// `section` on each plan until one writes (see "Marks").
    pub(super) fn with_marks(
        &self,
        (from, to): (Tick, Tick),
        mut plan: impl FnMut(EntrySlices<'_>, &mut Vec<usize>) -> Result<Ranges, TvhtError>,
        mut section: impl FnMut(SpanPlan<'_>) -> Result<Marked, TvhtError>,
    ) -> Result<(Tick, Vec<Contact>), TvhtError> {
        let mut marks: Option<Vec<(usize, Tick)>> = None;
        loop {
            let mut keys = Vec::new();
            let hinted: std::cell::RefCell<Vec<(usize, Tick)>> =
                std::cell::RefCell::new(Vec::with_capacity(16));
            let mark = |k: usize| match &marks {
                Some(m) => m.iter().find(|m| m.0 == k).map_or(0, |m| m.1),
                None => {
                    let m = self.mark_hint(k).load(std::sync::atomic::Ordering::Relaxed);
                    hinted.borrow_mut().push((k, m));
                    m
                }
            };
            let entries = EntrySlices {
                from,
                to,
                marks: Some(&mark),
            };
            let ranges = plan(entries, &mut keys)?;
            let marks = marks.get_or_insert_with(|| hinted.take());
            match section((&keys[..], &ranges[..], &marks[..]))? {
                Marked::Written(last, c) => return Ok((last, c)),
                Marked::Again(seen) => *marks = seen,
            }
        }
    }

    /// In the section of a record request over ticks `..=to` planned with `marks`: the marks of
    /// its record-half buckets `recs` if one of them has risen past what was planned at the
    /// request's slices (entries may be there that the plan did not name), else `None`.
    pub(super) fn risen_marks<'k>(
        &self,
        view: &mut View<'_, Bucket>,
        recs: impl Iterator<Item = &'k usize>,
        marks: &[(usize, Tick)],
        to: Tick,
    ) -> Option<Vec<(usize, Tick)>> {
        let end = (to >> self.span_shift) + 1;
        let mut recs: smallvec::SmallVec<[usize; 32]> = recs.copied().collect();
        // (One body's are distinct and sorted already, as its plan gives them.)
        if !recs.is_sorted_by(|a, b| a < b) {
            recs.sort_unstable();
            recs.dedup();
        }
        let was = |k: usize| marks.iter().find(|m| m.0 == k).map_or(0, |m| m.1);
        let seen: smallvec::SmallVec<[(usize, Tick); 32]> =
            recs.iter().map(|&k| (k, view.get(k).marks)).collect();
        (seen.iter())
            .any(|&(k, m)| m.min(end) > was(k).min(end))
            .then(|| seen.into_vec())
    }

    /// The table's [`Flight`]; an error if it has none (a span was asked of a table made
    /// without one).
    pub(super) fn flight(&self) -> Result<&dyn Flight, TvhtError> {
        self.flight
            .as_deref()
            .ok_or_else(|| TvhtError::Config("this table keeps no span records".into()))
    }

    /// How many cells box `b` covers (what a span of it names in the record half), or an error
    /// for a bad box.
    pub fn cells_of(&self, body: BodyId, b: &Aabb) -> Result<u64, TvhtError> {
        let (lo, hi) = self.cell_range(body, 0, b)?;
        Ok((0..3)
            .map(|k| (i64::from(hi[k]) - i64::from(lo[k]) + 1) as u64)
            .product())
    }

    /// The keys a span request from `from` names: each body's record-half buckets (of its
    /// box's cells), then, with `entries`, each body's buckets of entries it says.
    fn plan_span(
        &self,
        from: Tick,
        bodies: &[SpanEntry],
        entries: Option<EntrySlices<'_>>,
        keys: &mut Vec<usize>,
    ) -> Result<Vec<std::ops::Range<usize>>, TvhtError> {
        self.plan_sleep(from, bodies, entries, keys)
    }

    /// Writes the spans of `bodies` of `entity`: each flies from its anchor at ticks
    /// `from..=to` under `tag` (see the module documentation). Every contact with another
    /// entity's entry, sleep record or span is found at its tick, refined from the boxes at
    /// that tick; the spans stop after the first tick that meets a contact for which `stops`
    /// holds. Returns the last tick they reach and every contact they met, sorted. One
    /// section; on error nothing is written. `stops` must be a function of the contact alone.
    pub fn write_span(
        &self,
        entity: EntityId,
        tag: u64,
        (from, to): (Tick, Tick),
        bodies: &[SpanEntry],
        stops: impl Fn(&Contact) -> bool,
    ) -> Result<(Tick, Vec<Contact>), TvhtError> {
        self.flight()?;
        let floor = self.floor();
        if from < floor {
            return Err(TvhtError::BehindFloor { tick: from, floor });
        }
        if to < from {
            return Err(TvhtError::Config(format!("empty span {from}..={to}")));
        }
        self.with_marks(
            (from, to),
            |entries, keys| self.plan_span(from, bodies, Some(entries), keys),
            |plan| self.write_span_planned(entity, tag, (from, to), bodies, &stops, plan),
        )
    }

    /// The section of [`Tvht::write_span`] over `keys` as planned: the spans written, or, if a
    /// mark of its record-half buckets has risen past what was planned, the marks to plan with
    /// again (nothing written).
    #[allow(clippy::too_many_arguments)]
    fn write_span_planned(
        &self,
        entity: EntityId,
        tag: u64,
        (from, to): (Tick, Tick),
        bodies: &[SpanEntry],
        stops: &impl Fn(&Contact) -> bool,
        (keys, ranges, marks): SpanPlan<'_>,
    ) -> Result<Marked, TvhtError> {
        let flight = self.flight()?;
        let floor = self.floor();
        let (recs, main) = ranges.split_at(bodies.len());
        // Each span's anchor, with a hold reserved for each of its record-half buckets (see
        // `runs.rs`): the buckets share it, and the request settles the holds after the
        // section.
        let anchors: Vec<NewAnchor> = (bodies.iter().zip(recs))
            .map(|(b, ks)| NewAnchor::new(b.anchor, ks.len()))
            .collect();
        let out = self.section(keys, |view, look| {
            // The marks: none may have risen past those planned with, at this span's slices.
            // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
            // `TIMEWARP_BROKEN=span_ignores_marks` (a loom negative control, see
            // `sync::broken`): the span trusts the marks it planned with.
            #[cfg(timewarp_broken)]
            let check = !crate::sync::broken("span_ignores_marks");
            #[cfg(not(timewarp_broken))]
            let check = true;
            if check {
                let recs = recs.iter().flat_map(|ks| &keys[ks.clone()]);
                if let Some(seen) = self.risen_marks(view, recs, marks, to) {
                    return Ok((Marked::Again(seen), Vec::new()));
                }
            }
            refining();
            // Nothing of these bodies at these ticks already: in the buckets of entries here;
            // in the record half, in the same pass as the meetings below.
            for (b, ks) in bodies.iter().zip(main) {
                for &k in &keys[ks.clone()] {
                    if let Some((tick, body)) =
                        view.get(k).held((from, to), (b.body, b.body)).next()
                    {
                        return Err(TvhtError::Duplicate { body, tick });
                    }
                }
            }
            // What the spans meet, each pair in its owner cell's bucket only, with the
            // record-half bucket its contact goes to.
            let mut met: Vec<(Contact, usize)> = Vec::new();
            let mut last = to;
            let mut meet = |c: Contact, k: usize, last: &mut Tick| {
                if c.tick() > *last {
                    return;
                }
                if stops(&c) && c.tick() < *last {
                    *last = c.tick();
                }
                met.push((c, k));
            };
            let mut cache: Vec<(Tick, TvhtEntry)> = Vec::new();
            // The spans as records, through `to` while they meet what is there; written
            // through `last`.
            let mut mine: Vec<SpanRec> = (bodies.iter().zip(&anchors))
                .map(|(b, a)| SpanRec {
                    entity,
                    body: b.body,
                    from,
                    until: to + 1,
                    tag,
                    aabb: b.aabb,
                    anchor: a.share(),
                })
                .collect();
            for (j, me) in mine.iter().enumerate() {
                // Its entry at each tick asked, computed once, sorted by tick (most spans need
                // none, and the rest a few of their hundreds of ticks).
                cache.clear();
                let mut at = |t: Tick| match cache.binary_search_by_key(&t, |c| c.0) {
                    Ok(i) => cache[i].1,
                    Err(i) => {
                        let e = me.at(flight, look, t);
                        cache.insert(i, (t, e));
                        e
                    }
                };
                // Its lowest cell, for the owner cell of each pair it meets.
                let lo = self.lo_of(&me.aabb);
                // Entries, in the buckets of entries of its cells at its slices.
                for &k in &keys[main[j].clone()] {
                    for x in view.get(k).near((from, last), entity, &me.aabb, look) {
                        if x.tick > last || !x.aabb.overlaps(&me.aabb) {
                            continue;
                        }
                        let owner = self.owner_cell_from(lo, &x.aabb);
                        if self.bucket_of(owner, x.tick) == k
                            && let Some(c) = me.meets_with(flight, x, &mut at)
                        {
                            meet(c, self.sleep_slot(owner), &mut last);
                        }
                    }
                }
                // Sleep records and spans, in its record-half buckets.
                for &k in &keys[recs[j].clone()] {
                    let bucket = view.get(k);
                    // Others' records only, and of those only the ones whose ticks and box
                    // meet the span's, passed over before any call through `Held`: in a
                    // group's buckets most records are the group's own, and in a record
                    // bucket most spans are gone by or fly clear of this one. A record of
                    // this body at these ticks (whatever its entity) is a duplicate: the
                    // first (records before spans) is the error, once the bucket is passed.
                    let duplicate = std::cell::Cell::new(None);
                    let near = |e: EntityId, b: BodyId, held: (Tick, Tick), x: &Aabb| {
                        if !lives_at(held, (from, to)) {
                            return false;
                        }
                        if let Some(t) = duplicated(me.body, (from, to), b, held) {
                            if duplicate.get().is_none() {
                                duplicate.set(Some(t));
                            }
                            return false;
                        }
                        e != entity && x.overlaps(&me.aabb)
                    };
                    let records = (bucket.records.iter())
                        .filter(|r| near(r.entity, r.body, (r.from, r.until), &r.aabb));
                    let spans = (bucket.spans.iter())
                        .filter(|s| near(s.entity, s.body, (s.from, s.until), &s.aabb));
                    let held =
                        (records.map(|r| r as &dyn Held)).chain(spans.map(|s| s as &dyn Held));
                    for o in held {
                        let ((f, u), b) = o.held();
                        if self.sleep_slot(self.owner_cell_from(lo, &b)) != k {
                            continue;
                        }
                        let (lo, hi) = (f.max(from), u.min(last + 1));
                        if lo < hi {
                            candidate_ticks(
                                (lo, hi - 1),
                                &near_of(flight, look, (me.body, me.anchor(look)), o),
                                &mut |t| {
                                    if t > last {
                                        return false;
                                    }
                                    let other = o.at(flight, look, t);
                                    if let Some(c) = me.meets_with(flight, &other, &mut at) {
                                        meet(c, k, &mut last);
                                    }
                                    true
                                },
                            );
                        }
                    }
                    if let Some(tick) = duplicate.get() {
                        return Err(TvhtError::Duplicate {
                            body: me.body,
                            tick,
                        });
                    }
                }
            }
            met.retain(|(c, _)| c.tick() <= last);
            // The anchors of the spans these buckets drop: each a bucket's hold, let go of
            // once the section commits.
            let mut dropped = Vec::new();
            for (rec, ks) in mine.iter_mut().zip(recs) {
                rec.until = last + 1;
                for &k in &keys[ks.clone()] {
                    let bucket = view.get_mut(k);
                    // What the floor left behind goes here, not through the ledger.
                    drop_spans(&mut bucket.spans, |s| s.until <= floor, &mut dropped);
                    bucket.met.retain(|c| c.tick() >= floor);
                    bucket.spans.push(rec.clone());
                }
            }
            for &(c, k) in &met {
                view.get_mut(k).met.push(c);
            }
            let met = met.into_iter().map(|(c, _)| c).collect::<Vec<_>>();
            Ok((Marked::Written(last, met), dropped))
        });
        // Every record-half bucket of a span took its anchor if the spans were written, none
        // otherwise (nothing was changed).
        let written = matches!(out, Ok((Marked::Written(..), _)));
        // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
        // `TIMEWARP_BROKEN=span_anchor_unheld` (a loom negative control, see `sync::broken`):
        // the request settles as if no bucket took its anchors, so the buckets hold anchors
        // whose holds are gone (freed under them, but for loom's graveyard).
        #[cfg(timewarp_broken)]
        let written = written && !crate::sync::broken("span_anchor_unheld");
        for (a, ks) in anchors.into_iter().zip(recs) {
            let taken = if written { ks.len() } else { 0 };
            // SAFETY: the anchor was made with `ks.len()` holds reserved, and the committed
            // section put it in each of its `ks.len()` distinct buckets if it wrote, in none if
            // it did not (or failed).
            unsafe { a.settle(ks.len(), taken, &self.graveyard) };
        }
        out.map(|(o, dropped)| {
            // SAFETY: `dropped` came out of buckets of the committed section, once per bucket.
            unsafe { self.release_all(dropped) };
            match o {
                Marked::Written(last, mut c) => {
                    self.refined_committed();
                    // Only the record half changed, and its buckets dropped what lay behind the
                    // floor as they took the spans: nothing to note in the ledger.
                    c.sort_unstable_by_key(Contact::key);
                    Marked::Written(last, c)
                }
                again => again,
            }
        })
    }

    /// Cuts the spans of `bodies` (each with the anchor and box it was written with) of
    /// `entity` and `tag` so that they end before tick `to` (a span that starts at or after
    /// `to` goes), and returns the contacts they had at ticks from `to` on, each once, sorted:
    /// the rollback of a span (Algorithm 7). One section; on error nothing changes.
    pub fn cut_span(
        &self,
        entity: EntityId,
        tag: u64,
        bodies: &[SpanEntry],
        to: Tick,
    ) -> Result<Vec<Contact>, TvhtError> {
        let mut keys = Vec::new();
        let recs = self.plan_span(to, bodies, None, &mut keys)?;
        let mine =
            |s: &SpanRec, b: &SpanEntry| s.entity == entity && s.body == b.body && s.tag == tag;
        let out = self.section(&keys, |view, look| {
            for (b, ks) in bodies.iter().zip(&recs) {
                for &k in &keys[ks.clone()] {
                    match view.get(k).spans.iter().find(|s| mine(s, b)) {
                        None => {
                            return Err(TvhtError::NotFound {
                                entity,
                                body: b.body,
                                tick: to,
                            });
                        }
                        Some(s) if s.aabb != b.aabb || *s.anchor(look) != b.anchor => {
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
            let mut dropped = Vec::new();
            for (b, ks) in bodies.iter().zip(&recs) {
                for &k in &keys[ks.clone()] {
                    let bucket = view.get_mut(k);
                    let (s_from, s_until) = (bucket.spans.iter())
                        .find(|s| mine(s, b))
                        .map(|s| (s.from, s.until))
                        .expect("checked above");
                    // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
                    // `TIMEWARP_BROKEN=span_cut_spares_its_tick` (a loom negative control, see
                    // `sync::broken`): the contacts at the cut tick itself stay.
                    #[cfg(timewarp_broken)]
                    let back = to + u64::from(crate::sync::broken("span_cut_spares_its_tick"));
                    #[cfg(not(timewarp_broken))]
                    let back = to;
                    bucket.met.retain(|c| {
                        let gone = involves(c, (entity, b.body, tag), back..s_until);
                        if gone {
                            contacts.push(*c);
                        }
                        !gone
                    });
                    if s_from >= to {
                        drop_spans(&mut bucket.spans, |x| mine(x, b), &mut dropped);
                    } else if let Some(x) = bucket.spans.iter_mut().find(|x| mine(x, b)) {
                        x.until = x.until.min(to);
                    }
                }
            }
            Ok((contacts, dropped))
        });
        out.map(|(mut c, dropped)| {
            // SAFETY: `dropped` came out of buckets of the committed section, once per bucket.
            unsafe { self.release_all(dropped) };
            c.sort_unstable_by_key(Contact::key);
            c
        })
    }
}

/// Removes the span records of `spans` for which `gone` holds, their anchors to `dropped`
/// (each a bucket's hold, for its caller to let go of once its section commits).
pub(super) fn drop_spans(
    spans: &mut Vec<SpanRec>,
    gone: impl Fn(&SpanRec) -> bool,
    dropped: &mut Vec<AnchorRef>,
) {
    spans.retain(|s| {
        let g = gone(s);
        if g {
            dropped.push(s.anchor.clone());
        }
        !g
    });
}

/// Sleep records meet spans too: the contacts of sleep record `r` (of a body of a sleeping
/// group, written now or before) with the spans of `spans` (one record-half bucket's, of
/// bucket `k`) at ticks up to `last`, owned by bucket `k`.
pub(super) fn record_meets_spans(
    tvht: &Tvht,
    flight: &dyn Flight,
    look: &Look,
    r: &SleepRec,
    spans: &[SpanRec],
    k: usize,
    last: Tick,
) -> Vec<Contact> {
    let mut found = Vec::new();
    for s in spans.iter().filter(|s| {
        s.entity != r.entity
            && s.aabb.overlaps(&r.aabb)
            && tvht.sleep_slot(tvht.owner_cell(&r.aabb, &s.aabb)) == k
    }) {
        let (lo, hi) = (s.from.max(r.from), s.until.min(r.until).min(last + 1));
        if lo < hi {
            candidate_ticks(
                (lo, hi - 1),
                &near_of(flight, look, (s.body, s.anchor(look)), r),
                &mut |t| {
                    found.extend(s.meets(flight, look, &r.at(t)));
                    true
                },
            );
        }
    }
    found
}
