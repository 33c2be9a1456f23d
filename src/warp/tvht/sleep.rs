//! # Sleep records: one record for a sleeping body's whole interval
//!
//! A sleeping contact group (issue #5; Mirtich's contact groups, seed 001, Section 4.4) does
//! not move, so its entries would repeat tick after tick. With `sleep_records` on, the table
//! has a second half of buckets hashed by space alone (record cells, `cells.rs`), and
//! [`Tvht::sleep`] puts each body of a sleeping group there once for a whole interval
//! `from..until`, a copy in each record bucket of the cells of its box, instead of one entry
//! per tick. A record is a run of identical entries, and keeps their rules: it meets the
//! entries of other entities at its ticks exactly once, found by whichever is written second
//! (an entry's write also names the sleep buckets of its cells; a record's write names the
//! buckets of its cells at every time slice it spans), and stops at the first tick that meets
//! one; the contact is kept, with a copy of the entry, in the sleep bucket of the owner cell,
//! and given back once by the entry's delete or by the record's [`Tvht::wake`], which cuts the
//! record short when the group is rolled back (Algorithm 7 for an interval).
//!
//! A sleep record meets only *awake* entries: two sleeping bodies neither kick nor fuse with
//! each other (the rules of `group_rules`), so nothing is lost by not looking. Invariants: a
//! body has either an entry or a record at a tick, never both; a live record is in exactly the
//! sleep buckets of its cells, with identical copies; a body's records never overlap in time;
//! every awake entry of another entity that overlaps a record at one of its ticks has exactly
//! one sleep contact, in the owner cell's sleep bucket. `validate` checks all of it.

use super::cells::{Cell, cells};
use super::plan::push_distinct;
use super::span::{Marked, SpanPlan, involves, record_meets_spans, refining};
use super::{BodyEntry, BodyId, Contact, EntityId, Tick, Tvht, TvhtEntry, TvhtError};
use crate::dynamics::BodyState;
use crate::geometry::Aabb;

/// A sleep record: one body of a sleeping group, present with one box and one (pre-event)
/// state at every tick of `from..until` (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct SleepRec {
    pub(super) entity: EntityId,
    pub(super) body: BodyId,
    pub(super) from: Tick,
    pub(super) until: Tick,
    pub(super) aabb: Aabb,
    pub(super) state: BodyState,
    pub(super) tag: u64,
}

impl SleepRec {
    pub(super) fn covers(&self, tick: Tick) -> bool {
        self.from <= tick && tick < self.until
    }

    /// The record as an entry at `tick`.
    pub(super) fn at(&self, tick: Tick) -> TvhtEntry {
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
pub(super) struct SleepContact {
    pub(super) awake: TvhtEntry,
    pub(super) sleeper: BodyId,
}

/// The buckets of entries a record request names beside its record-half buckets: those of
/// its cells at each time slice of `from..=to`; with `marks` (the mark of a record-half
/// bucket, as the caller knows it), a cell's only at the slices below the mark of its
/// record-half bucket (see "Marks" in `span.rs`).
#[derive(Clone, Copy)]
pub(super) struct EntrySlices<'a> {
    pub(super) from: Tick,
    pub(super) to: Tick,
    pub(super) marks: Option<&'a dyn Fn(usize) -> Tick>,
}

/// A body and its box, as a record request plans them ([`Tvht::plan_sleep`]).
pub(super) trait Boxed {
    fn body(&self) -> BodyId;
    fn aabb(&self) -> &Aabb;
}

impl Boxed for BodyEntry {
    fn body(&self) -> BodyId {
        self.body
    }
    fn aabb(&self) -> &Aabb {
        &self.aabb
    }
}

impl Tvht {
    /// The cells of each body's box (checked at `tick`) and the buckets a sleep request names:
    /// the sleep buckets of the cells and, if `slices` is given, the buckets of entries it
    /// says. Returns ranges of `keys`: each body's distinct sleep buckets, then (with
    /// `slices`) each body's distinct buckets of entries.
    pub(super) fn plan_sleep<B: Boxed>(
        &self,
        tick: Tick,
        bodies: &[B],
        slices: Option<EntrySlices<'_>>,
        keys: &mut Vec<usize>,
    ) -> Result<Vec<std::ops::Range<usize>>, TvhtError> {
        if !self.sleep {
            return Err(TvhtError::Config(
                "this table keeps no sleep records".into(),
            ));
        }
        // Each body's cells, with the sleep bucket of each, hashed once: `at[j]..at[j + 1]`.
        let mut cells_of: smallvec::SmallVec<[(Cell, usize); 32]> = smallvec::SmallVec::new();
        let mut at: smallvec::SmallVec<[usize; 8]> = smallvec::smallvec![0];
        for (j, b) in bodies.iter().enumerate() {
            if bodies[..j].iter().any(|o| o.body() == b.body()) {
                return Err(TvhtError::Duplicate {
                    body: b.body(),
                    tick,
                });
            }
            let (lo, hi) = self.cell_range(b.body(), tick, b.aabb())?;
            cells_of.extend(cells(lo, hi).map(|c| (c, self.sleep_slot(c))));
            at.push(cells_of.len());
        }
        let of = |j: usize| &cells_of[at[j]..at[j + 1]];
        let mut ranges: Vec<_> = (0..bodies.len())
            .map(|j| push_distinct(keys, of(j).iter().map(|c| c.1)))
            .collect();
        if let Some(e) = slices {
            let (first, end) = (e.from >> self.span_shift, (e.to >> self.span_shift) + 1);
            for j in 0..bodies.len() {
                let all = of(j).iter().flat_map(|&(c, slot)| {
                    let end = e.marks.map_or(end, |mark| end.min(mark(slot)));
                    (first..end).map(move |s| self.bucket_of(c, s << self.span_shift))
                });
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
        // A nap names the buckets of entries of a cell only at the slices below its mark,
        // where entries may be ("Marks" in `span.rs`).
        self.with_marks(
            (from, to),
            |entries, keys| self.plan_sleep(from, bodies, Some(entries), keys),
            |plan| self.sleep_planned((entity, tag), (from, to), bodies, plan),
        )
    }

    /// [`Tvht::sleep`]'s section for one plan: `keys`, split by `ranges` into each body's
    /// sleep buckets, then each body's buckets of entries at the slices below the `marks` the
    /// plan took.
    fn sleep_planned(
        &self,
        (entity, tag): (EntityId, u64),
        (from, to): (Tick, Tick),
        bodies: &[BodyEntry],
        (keys, ranges, marks): SpanPlan<'_>,
    ) -> Result<Marked, TvhtError> {
        let (sleep, main) = ranges.split_at(bodies.len());
        let out = self.section(keys, |view, look| {
            // The marks: none may have risen past those planned with, at the nap's slices.
            // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
            // `TIMEWARP_BROKEN=sleep_ignores_marks` (a loom negative control, see
            // `sync::broken`): the nap trusts the marks it planned with.
            #[cfg(timewarp_broken)]
            let check = !crate::sync::broken("sleep_ignores_marks");
            #[cfg(not(timewarp_broken))]
            let check = true;
            if check {
                let recs = sleep.iter().flat_map(|ks| &keys[ks.clone()]);
                if let Some(seen) = self.risen_marks(view, recs, marks, to) {
                    return Ok(Marked::Again(seen));
                }
            }
            refining();
            // Check first: no entry or record of these bodies at these ticks, and a record to
            // extend keeps its box.
            for (b, ks) in bodies.iter().zip(sleep) {
                for &k in &keys[ks.clone()] {
                    if let Some(tick) = view.get(k).recorded(b.body, from, to) {
                        return Err(TvhtError::Duplicate { body: b.body, tick });
                    }
                    for r in view.get(k).records.iter().filter(|r| r.body == b.body) {
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
                    for x in view.get(k).within(from, last, look) {
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
            // The spans these records meet, refined to the tick, each pair in its owner
            // cell's record-half bucket; the first tick with any contact stops them too.
            let mut flown: Vec<(Contact, usize)> = Vec::new();
            if let Some(flight) = self.flight.as_deref() {
                for (b, ks) in bodies.iter().zip(sleep) {
                    let probe = SleepRec {
                        entity,
                        body: b.body,
                        from,
                        until: to + 1,
                        aabb: b.aabb,
                        state: b.state,
                        tag,
                    };
                    for &k in &keys[ks.clone()] {
                        let spans = &view.get(k).spans;
                        for c in record_meets_spans(self, flight, look, &probe, spans, k, last) {
                            if c.tick() < last {
                                last = c.tick();
                                met.clear();
                                flown.retain(|(c, _)| c.tick() <= last);
                            }
                            if c.tick() <= last {
                                flown.push((c, k));
                            }
                        }
                    }
                }
            }
            flown.retain(|(c, _)| c.tick() <= last);
            met.retain(|(x, _)| x.tick <= last);
            let mut found = Vec::with_capacity(met.len() + flown.len());
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
            for (c, k) in flown {
                view.get_mut(k).met.push(c);
                found.push(c);
            }
            Ok(Marked::Written(last, found))
        });
        out.map(|o| match o {
            Marked::Written(last, mut c) => {
                self.refined_committed();
                // Only the sleep buckets change (the others were only looked at).
                let changed = sleep.iter().flat_map(|r| keys[r.clone()].iter().copied());
                self.note(entity, last, changed);
                c.sort_unstable_by_key(Contact::key);
                Marked::Written(last, c)
            }
            again => again,
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
        let out = self.section(&keys, |view, _| {
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
                    bucket.met.retain(|c| {
                        let gone = involves(c, (entity, b.body, tag), to..r.until);
                        if gone {
                            contacts.push(*c);
                        }
                        !gone
                    });
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
}
