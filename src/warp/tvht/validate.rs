//! # Looking at the whole table: snapshots and invariants
//!
//! For tests, loom models and the end of a run: consistent snapshots of every bucket (one
//! section over all of them, which serialises with every other section), and the invariants of
//! the table checked on one ([`Tvht::validate`]). Live entries (at or after the floor) are in
//! exactly the buckets their boxes' cells hash to, with identical copies, each run well formed
//! (`bucket.rs`); every live contact record sits in the owner bucket of two overlapping entries
//! of different entities at its tick, once, and every such pair has its record ("Exactly once"
//! in the module documentation of `tvht`); sleep records and their contacts keep their own
//! rules (`sleep.rs`). At rest, with no request in flight, every run's count of holds equals
//! the buckets that hold it (`runs.rs`). A snapshot's runs are read while the thread is pinned
//! (`runs.rs`, "Why a look at a run is safe").

use super::bucket::{Bucket, ContactRec, RUN_TICKS, holders};
use super::cells::cells;
use super::runs::{Look, Snapshot};
use super::sleep::SleepRec;
use super::span::{Held, SpanRec};
use super::{BodyEntry, BodyId, ContactKey, EntityId, Tick, Tvht, TvhtEntry, TvhtError};
use crate::primitive::Ordering;
use std::collections::{BTreeMap, BTreeSet};

impl Tvht {
    /// Every live entry (each once, whatever the number of cells it covers), sorted by tick
    /// then body. A consistent snapshot.
    pub fn entries(&self) -> Vec<TvhtEntry> {
        let mut m = BTreeMap::new();
        let snap = Snapshot::take(&self.table);
        for b in snap.buckets() {
            for e in b.entries(snap.look()) {
                m.insert((e.tick, e.body), *e);
            }
        }
        m.into_values().collect()
    }

    /// Every recorded contact (between entries, and between an entry and a sleep record),
    /// sorted. A consistent snapshot.
    pub fn contacts(&self) -> Vec<ContactKey> {
        let mut v = Vec::new();
        for b in Snapshot::take(&self.table).buckets() {
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
        Snapshot::take(&self.table)
            .buckets()
            .iter()
            .map(Bucket::len)
            .sum()
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
    /// holds is then exactly the buckets that hold it (see `runs.rs`): none was let go
    /// too often (it would be freed while held) or too rarely (it would never be freed).
    pub fn validate_at_rest(&self) -> Result<(), TvhtError> {
        self.validate_with(true)
    }

    fn validate_with(&self, at_rest: bool) -> Result<(), TvhtError> {
        let swept = self.swept.load(Ordering::Acquire);
        let snapshot = Snapshot::take(&self.table);
        let (snap, look) = (snapshot.buckets(), snapshot.look());
        if at_rest {
            for (r, n) in holders(snap.iter().flat_map(|b| &b.runs).map(|r| &r.entries)) {
                if r.holds(look) != n {
                    return Err(TvhtError::Invalid(format!(
                        "a run of body {} from tick {} held by {n} buckets counts {} holds",
                        r.entries(look)[0].body,
                        r.entries(look)[0].tick,
                        r.holds(look)
                    )));
                }
            }
            for (a, n) in holders(snap.iter().flat_map(|b| &b.spans).map(|s| &s.anchor)) {
                if a.holds(look) != n {
                    return Err(TvhtError::Invalid(format!(
                        "a span's anchor at tick {} held by {n} buckets counts {} holds",
                        a.get(look).tick,
                        a.holds(look)
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
                    && r.entries.entries(look).len() as u64 <= RUN_TICKS
                    && (r.entries.entries(look).len() as u64 == RUN_TICKS
                        || r.present >> r.entries.entries(look).len() == 0)
                    && r.entries.entries(look).iter().enumerate().all(|(i, e)| {
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
            let entries: Vec<&TvhtEntry> = b.entries(look).collect();
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
                let (Some(x), Some(y)) = (b.find(r.a, r.tick, look), b.find(r.b, r.tick, look))
                else {
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
            // Its cells' record-half buckets are marked past its slice (see "Marks" in
            // `span.rs`): a span looks for it there.
            if self.sleep {
                let (lo, hi) = self
                    .cell_range(*body, *tick, &e.aabb)
                    .expect("checked above");
                let slice = *tick >> self.span_shift;
                if let Some(c) = cells(lo, hi).find(|&c| snap[self.sleep_slot(c)].marks <= slice) {
                    return err(format!(
                        "entry {e:?} at slice {slice}: the record-half bucket of its cell {c:?} \
                         is marked only below {}",
                        snap[self.sleep_slot(c)].marks
                    ));
                }
            }
        }
        // At rest, no mark's hint is below the mark (a span would plan with too few buckets
        // and always plan again).
        if self.sleep {
            for (k, b) in snap.iter().enumerate().skip(self.buckets()) {
                let hint = self.mark_hint(k).load(std::sync::atomic::Ordering::Relaxed);
                if hint < b.marks {
                    return err(format!(
                        "record-half bucket {k} is marked below {}, its hint says {hint}",
                        b.marks
                    ));
                }
            }
        }
        let live: BTreeMap<(Tick, BodyId), TvhtEntry> =
            copies.into_iter().map(|(k, (e, _))| (k, e)).collect();
        let sleepers = self.validate_sleep(snap, floor, &live)?;
        self.validate_spans((snap, look), floor, &live, &sleepers)
    }

    /// The sleep records' invariants: each live record is in exactly the sleep buckets of its
    /// cells, with identical copies; a body's records and entries never share a tick; every
    /// sleep contact joins a live awake entry of another entity and a record at its tick, in
    /// their owner cell's sleep bucket, once; every such overlapping pair has its contact.
    /// Returns the live records, each with the buckets holding it.
    fn validate_sleep(
        &self,
        snap: &[Bucket],
        floor: Tick,
        live: &BTreeMap<(Tick, BodyId), TvhtEntry>,
    ) -> Result<SleepRecs, TvhtError> {
        let err = |s: String| Err(TvhtError::Invalid(s));
        let mut recs: SleepRecs = BTreeMap::new();
        let mut woken = BTreeSet::new();
        for (k, b) in snap.iter().enumerate() {
            if (k < self.buckets() || !self.sleep) && !(b.records.is_empty() && b.woken.is_empty())
            {
                return err(format!("bucket {k} of entries holds sleep records"));
            }
            copies(
                k,
                &b.records,
                |r| (r.entity, r.body, r.tag, r.from, r.until),
                floor,
                &mut recs,
            )?;
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
        Ok(recs)
    }

    /// The span records' invariants (`span.rs`): each live span is in exactly the record-half
    /// buckets of its box's cells, with identical copies; a body has at a tick one entry, sleep
    /// record or span, never two; every contact of a span joins a live span and a live entry,
    /// sleep record or span of another entity whose boxes at its tick overlap, in their owner
    /// cell's record-half bucket, once; every such pair at a common live tick has its contact.
    /// `sleepers` are the live sleep records ([`Tvht::validate_sleep`]).
    fn validate_spans(
        &self,
        (snap, look): (&[Bucket], &Look),
        floor: Tick,
        live: &BTreeMap<(Tick, BodyId), TvhtEntry>,
        sleepers: &SleepRecs,
    ) -> Result<(), TvhtError> {
        let err = |s: String| Err(TvhtError::Invalid(s));
        let sleepers = || sleepers.values().map(|(r, _)| r);
        let mut spans: BTreeMap<RecKey, (SpanRec, Vec<usize>)> = BTreeMap::new();
        for (k, b) in snap.iter().enumerate() {
            if (k < self.buckets() || self.flight.is_none())
                && !(b.spans.is_empty() && b.met.is_empty())
            {
                return err(format!("bucket {k} holds span records it cannot hold"));
            }
            copies(
                k,
                &b.spans,
                |s| (s.entity, s.body, s.tag, s.from, s.until),
                floor,
                &mut spans,
            )?;
        }
        let Some(flight) = self.flight.as_deref() else {
            return Ok(());
        };
        // Where each span is, and that it shares no tick with its body's other presences.
        let mut taken: BTreeMap<BodyId, Vec<(Tick, Tick)>> = BTreeMap::new();
        for r in sleepers() {
            taken.entry(r.body).or_default().push((r.from, r.until));
        }
        for (s, buckets) in spans.values() {
            let mut want = Vec::new();
            let probe = BodyEntry {
                body: s.body,
                aabb: s.aabb,
                state: s.anchor(look).state,
                asleep: false,
            };
            if let Err(x) = self.plan_sleep(s.from, &[probe], None, &mut want) {
                return err(format!("span {s:?} has a bad box: {x}"));
            }
            if *buckets != want {
                return err(format!(
                    "span {s:?} is in buckets {buckets:?}, its cells hash to {want:?}"
                ));
            }
            if let Some((&(tick, _), _)) = live
                .range((s.from.max(floor), s.body)..(s.until, 0))
                .find(|((_, b), _)| *b == s.body)
            {
                return err(format!("body {} has an entry and a span at {tick}", s.body));
            }
            taken.entry(s.body).or_default().push((s.from, s.until));
        }
        for (body, mut t) in taken {
            t.sort_unstable();
            if t.windows(2).any(|w| w[1].0 < w[0].1) {
                return err(format!(
                    "body {body} has overlapping records or spans {t:?}"
                ));
            }
        }
        // A side of a span's contact as the table keeps it: its entry at the tick and the
        // box its owner cell is taken from, if it is live.
        let side = |e: &TvhtEntry| -> Option<(bool, crate::geometry::Aabb)> {
            let mine = |s: &&SpanRec| {
                s.entity == e.entity && s.body == e.body && s.tag == e.tag && s.covers(e.tick)
            };
            if let Some(s) = spans.values().map(|x| &x.0).find(mine) {
                return (s.at(flight, look, e.tick) == *e).then_some((true, s.aabb));
            }
            if let Some(r) = sleepers().find(|r| {
                r.entity == e.entity && r.body == e.body && r.tag == e.tag && r.covers(e.tick)
            }) {
                return (r.at(e.tick) == *e).then_some((false, r.aabb));
            }
            (live.get(&(e.tick, e.body)) == Some(e)).then_some((false, e.aabb))
        };
        let mut met = BTreeSet::new();
        for (k, b) in snap.iter().enumerate() {
            for c in &b.met {
                if c.tick() < floor {
                    continue;
                }
                if !met.insert(c.key()) {
                    return err(format!("span contact {:?} recorded twice", c.key()));
                }
                let (Some((sa, ba)), Some((sb, bb))) = (side(&c.a), side(&c.b)) else {
                    return err(format!(
                        "span contact {:?} in bucket {k} lacks a side",
                        c.key()
                    ));
                };
                if !(sa || sb)
                    || c.a.entity == c.b.entity
                    || !c.a.aabb.overlaps(&c.b.aabb)
                    || self.sleep_slot(self.owner_cell(&ba, &bb)) != k
                {
                    return err(format!(
                        "span contact {:?} in bucket {k} is not an owned overlap with a span",
                        c.key()
                    ));
                }
            }
        }
        // Completeness: every span against everything of other entities at its live ticks.
        let mut others: Vec<TvhtEntry> = Vec::new();
        for (s, _) in spans.values() {
            others.clear();
            let ticks = s.from.max(floor)..s.until;
            others.extend(
                live.range((ticks.start, 0)..(ticks.end, 0))
                    .map(|(_, e)| *e)
                    .filter(|e| e.aabb.overlaps(&s.aabb)),
            );
            let held = sleepers()
                .map(|r| r as &dyn Held)
                .chain(spans.values().map(|(o, _)| o as &dyn Held));
            for o in held {
                let ((from, until), b) = o.held();
                if b.overlaps(&s.aabb) {
                    let common = from.max(ticks.start)..until.min(ticks.end);
                    others.extend(common.map(|t| o.at(flight, look, t)));
                }
            }
            for x in others.iter().filter(|x| x.entity != s.entity) {
                if let Some(c) = s.meets(flight, look, x)
                    && !met.contains(&c.key())
                {
                    return err(format!("span {s:?} meets {x:?} with no contact"));
                }
            }
        }
        Ok(())
    }
}

/// A record's key: entity, body, tag, first tick.
type RecKey = (EntityId, BodyId, u64, Tick);

/// The live sleep records, each with the buckets that hold a copy.
type SleepRecs = BTreeMap<RecKey, (SleepRec, Vec<usize>)>;

/// Adds bucket `k`'s live records of one kind (sleep records or spans; `of` gives a record's
/// key and its ticks `from..until`) to `seen`, each with the buckets that hold a copy: an error
/// for an empty record, or for two copies of one record that differ.
fn copies<R: Clone + PartialEq + std::fmt::Debug>(
    k: usize,
    records: &[R],
    of: impl Fn(&R) -> (EntityId, BodyId, u64, Tick, Tick),
    floor: Tick,
    seen: &mut BTreeMap<RecKey, (R, Vec<usize>)>,
) -> Result<(), TvhtError> {
    for r in records {
        let (entity, body, tag, from, until) = of(r);
        if from >= until {
            return Err(TvhtError::Invalid(format!(
                "empty record {r:?} in bucket {k}"
            )));
        }
        if until <= floor {
            continue;
        }
        let c = seen
            .entry((entity, body, tag, from))
            .or_insert((r.clone(), Vec::new()));
        if c.0 != *r {
            return Err(TvhtError::Invalid(format!(
                "copies of a record differ: {:?} and {r:?}",
                c.0
            )));
        }
        c.1.push(k);
    }
    Ok(())
}
