//! # Writes: an entity's entries, and the contacts they meet
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Algorithm 6: an entity writes the states of its
//! bodies at a batch of ticks in one section over all their buckets, step by step, and stops
//! after the first step that meets a contact (for the engine, one that makes an event: boxes
//! that overlap without the bodies touching do not stop it).
//!
//! A request's entries are made before its section, in runs (`bucket.rs`), each with its
//! holds reserved (`runs.rs`). The section first checks everything (no entry or sleep record
//! of the request's bodies at its ticks) and drops what is behind the floor in the buckets it
//! holds anyway. Then it picks, in each bucket, the runs the request can meet ([`Others`]:
//! other entities' runs at its ticks whose box touches the box around everything it writes):
//! neighbours that do not come near over the batch are never looked at tick by tick, and when
//! no bucket has a run to meet, nor a sleep record, every step is written without a look. A
//! step that looks meets, in each of its buckets, the entries of those runs at its tick whose
//! boxes overlap its own, and reports a pair only in the bucket of its owner cell, where it
//! records it; an awake entry meets the sleep records of its cells the same way. The request's
//! own entries go into the buckets at the end ([`Holds`]), a run's bits at once per bucket:
//! nothing in the section looks for the writer's own entries in between.
//!
//! Invariants: on error nothing is written; a contact is reported once, to the second writer,
//! and recorded once, in its owner bucket; the section has no effect outside its view (it
//! returns the contacts, the holds its buckets took and the runs it dropped, and the request
//! settles the holds, lets go of the dropped runs and notes its buckets in the ledger after it
//! commits).

use super::bucket::{Bucket, ContactRec, RUN_TICKS, Run};
use super::plan::{Plan, Planned};
use super::runs::{Dropped, Graveyard, Look, NewRun};
use super::sleep::SleepContact;
use super::{BodyEntry, BodyId, Contact, EntityId, Step, Tick, Tvht, TvhtEntry, TvhtError};
use crate::geometry::Aabb;
use crate::sync::View;

/// The vectors a write request plans and makes its runs in, kept by a writer from one request
/// to the next ([`Tvht::write_steps_buffered`]; the engine keeps one per worker): emptied,
/// with their room. (Made and freed for every request, they were ten allocations a write,
/// 1.5% of a `parallel` run's instructions.)
#[derive(Default)]
pub struct WriteBuffers {
    pub(super) planned: Planned,
    pub(super) prev: Vec<u32>,
    slots: Vec<(usize, usize)>,
    open_runs: Vec<(usize, BodyId, Tick)>,
    open: Vec<usize>,
    runs: Vec<NewRun>,
    bounds: Vec<Aabb>,
}

/// Takes `v` out of its buffer, emptied.
pub(super) fn emptied<T>(v: &mut Vec<T>) -> Vec<T> {
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

/// A write request's entries in runs (see `bucket.rs`): each body's
/// entries at consecutive ticks, at most [`RUN_TICKS`] of them, share one allocation. Each
/// run is made with a hold for the request and one for each bucket of its section (see
/// `runs.rs`); the request settles them when dropped, by what its committed section put. Its
/// entries are read through the request's own holds, with no `Look`.
pub(super) struct Runs<'g> {
    pub(super) runs: Vec<NewRun>,
    /// Holds reserved per run: the section's buckets.
    pub(super) reserved: usize,
    /// Per run, the buckets that took it in the committed section (empty until it commits).
    taken: Vec<u32>,
    pub(super) graveyard: &'g Graveyard,
    /// Each run's [`Run::bounds`].
    pub(super) bounds: Vec<Aabb>,
    /// A box around all of the request's boxes.
    pub(super) all: Aabb,
    /// For each body of each step (the order of [`Planned::plans`]): its run and its index
    /// there.
    slots: Vec<(usize, usize)>,
}

impl Runs<'_> {
    /// The `j`th entry of the request.
    #[inline]
    fn entry(&self, j: usize) -> &TvhtEntry {
        let (r, i) = self.slots[j];
        &self.runs[r].entries()[i]
    }
}

impl Runs<'_> {
    /// Settles every run's holds (see [`Runs`]).
    fn settle(&mut self) {
        for (i, r) in self.runs.drain(..).enumerate() {
            let taken = self.taken.get(i).map_or(0, |&n| n as usize);
            // SAFETY: each run was made with `self.reserved` holds (`runs_of`), and `taken` is
            // set only from what the committed section's `Holds` counted: the buckets that
            // took the run, each once (`Bucket::hold`); empty, as for a refused request, is
            // none.
            unsafe { r.settle(self.reserved, taken, self.graveyard) };
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
        runs.push(NewRun::new((0..n).map(|i| entry(i, 0)).collect(), reserved));
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
            NewRun::new(
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
    bounds.extend(runs.iter().map(|r: &NewRun| {
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
pub(super) struct Holds {
    /// Per body place in the step: the plan, the run, and the entries' bits.
    open: Vec<Option<(u32, usize, u64)>>,
    /// Per run of the request: the buckets that took it.
    added: Vec<u32>,
}

impl Holds {
    pub(super) fn new(runs: &Runs) -> Holds {
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
    pub(super) fn flush(
        mut self,
        view: &mut View<'_, Bucket>,
        runs: &Runs,
        planned: &Planned,
    ) -> Vec<u32> {
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
            if view.at_mut(at).hold(&runs.runs[r], runs.bounds[r], mask) {
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

impl Tvht {
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
        let out = self.section(&planned.sorted, |view, look| {
            super::span::refining();
            // Check everything before changing anything: one pass over each bucket, which
            // also learns whether any holds a sleep record (most sections meet none: then
            // no step need look for them).
            let mut sleepers = false;
            for i in 0..view.keys().len() {
                let bucket = view.at(i);
                sleepers |= !bucket.records.is_empty() || !bucket.spans.is_empty();
                if let Some((tick, body)) = bucket
                    .held((tmin, tmax), (bmin, bmax))
                    .find(|p| seen.binary_search(p).is_ok())
                {
                    return Err(TvhtError::Duplicate { body, tick });
                }
            }
            // Nor a sleep record or a span of one of the request's bodies at one of its ticks.
            for (s, ps) in planned.per_step(steps).filter(|_| sleepers) {
                for p in ps.iter().map(|&i| planned.plan(i)) {
                    if planned
                        .sleep_slots(p)
                        .iter()
                        .any(|&i| view.at(i).recorded(p.body, s.tick, s.tick).is_some())
                    {
                        return Err(TvhtError::Duplicate {
                            body: p.body,
                            tick: s.tick,
                        });
                    }
                }
            }
            // The record-half buckets of the request's cells learn that entries may be at its
            // slices (see "Marks" in `span.rs`): once a slice, most requests change nothing.
            for p in planned.plans() {
                for (&i, &k) in planned.sleep_slots(p).iter().zip(planned.sleep_buckets(p)) {
                    if view.at(i).marks <= p.slice {
                        view.at_mut(i).marks = p.slice + 1;
                        self.mark_hint(k)
                            .fetch_max(p.slice + 1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
            // Reclaim what is behind the floor in the buckets this section holds anyway.
            let mut dropped = Dropped::default();
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
                    (view, look),
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
            self.refined_committed();
            // The section committed: its runs' holds settle by what the buckets took; let go
            // of the holds of the runs it dropped.
            runs.taken = added;
            // SAFETY: `dropped` is what the committed run of the section took out of its
            // buckets (`Bucket::prune`), once per bucket.
            unsafe { self.release_dropped(dropped) };
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
        (view, look): (&mut View<'_, Bucket>, &Look),
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
            let me = runs.entry(from + j);
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
                for x in meets
                    .iter()
                    .filter_map(|&r| bucket.runs[r].at(s.tick, look))
                {
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
            if !others.sleepers {
                continue;
            }
            // Spans at this tick, refined to it: every entry meets them.
            if let Some(flight) = self.flight.as_deref() {
                for (&k, &at) in planned.sleep_buckets(p).iter().zip(planned.sleep_slots(p)) {
                    let found: Vec<Contact> = view
                        .at(at)
                        .spans
                        .iter()
                        .filter(|q| {
                            // The cheap tests before the owner cell's hash.
                            q.covers(me.tick)
                                && q.aabb.overlaps(&me.aabb)
                                && self.sleep_slot(self.owner_cell(&me.aabb, &q.aabb)) == k
                        })
                        .filter_map(|q| q.meets(flight, look, me))
                        .collect();
                    if !found.is_empty() {
                        view.at_mut(at).met.extend(&found);
                        contacts.extend(found);
                    }
                }
            }
            // Sleep records at this tick: an asleep entry and a sleep record never touch
            // (neither wakes nor fuses with the other), so only an awake entry looks.
            if me.asleep {
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
}
