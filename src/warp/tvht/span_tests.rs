//! # Unit tests of span records (`span.rs`)
//!
//! Span records held to an independent, sequential model. A toy [`Flight`] flies a ball of
//! radius [`radius`] from its anchor on a parabola; the model keeps what each body is at each
//! tick (an entry, a sleep record or a span) and finds the contacts by brute force, tick by
//! tick and pair by pair, with the rules of `span.rs` and `sleep.rs`: entries meet entries, a
//! sleep record meets awake entries only (never an asleep entry or another record), a span
//! meets everything, each where the boxes at that tick overlap (a span's box at a tick is its
//! flight's, not its swept box). The random test checks, after each of 2000 operations, that
//! the table is valid and that the contacts its answers reported, less those given back, are
//! exactly the model's, each once, with both sides' states and boxes at the tick. The other
//! tests take the rules one at a time (refinement to the tick, where a span stops, a cut at
//! its first tick, refusals without effect), and a span of the engine's own rules ([`Rules`])
//! across another body's entries.

use super::runs::Snapshot;
use super::*;
use crate::geometry::Aabb;
use crate::scene::SplitMix64;
use crate::warp::rules::{Anchor, Rules};
use glam::{Quat, Vec3};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A ball flying from its anchor under `gravity`, `dt` seconds a tick: its state at tick `k`
/// is the parabola's at `(k - anchor.tick) dt`, its box the ball's (no sweep).
struct Toy {
    gravity: Vec3,
    dt: f32,
}

/// The toy ball's radius of each body.
fn radius(body: BodyId) -> f32 {
    0.2 + 0.05 * (body % 3) as f32
}

impl Flight for Toy {
    fn state(&self, _body: BodyId, a: &Anchor, tick: Tick) -> BodyState {
        let n = tick.checked_sub(a.tick).expect("flight back in time");
        let t = n as f32 * self.dt;
        BodyState {
            position: a.state.position + a.state.velocity * t + self.gravity * (0.5 * t * t),
            velocity: a.state.velocity + self.gravity * t,
            ..a.state
        }
    }

    fn aabb(&self, body: BodyId, s: &BodyState) -> Aabb {
        let r = Vec3::splat(radius(body));
        Aabb::new(s.position - r, s.position + r)
    }
}

fn at_rest(position: Vec3) -> BodyState {
    moving(position, Vec3::ZERO)
}

fn moving(position: Vec3, velocity: Vec3) -> BodyState {
    BodyState {
        position,
        rotation: Quat::IDENTITY,
        velocity,
        angular_velocity: Vec3::ZERO,
    }
}

/// The box around a flight's boxes at every tick of `from..=to` (a span's swept box).
fn swept(flight: &dyn Flight, body: BodyId, a: &Anchor, from: Tick, to: Tick) -> Aabb {
    (from..=to)
        .map(|t| flight.aabb(body, &flight.state(body, a, t)))
        .reduce(|x, y| x.merge(&y))
        .expect("a span has a tick")
}

fn table(be: Backend, buckets: usize, flight: Arc<dyn Flight>) -> Tvht {
    let config = TvhtConfig {
        buckets,
        cell_size: 1.0,
        max_cells_per_body: 512,
        span_ticks: 4,
        grid_offset: GRID_OFFSET,
        sleep_records: true,
    };
    Tvht::new(be, config).unwrap().with_flight(flight).unwrap()
}

fn key(tick: Tick, a: BodyId, b: BodyId) -> ContactKey {
    ContactKey { tick, a, b }
}

fn keys(c: &[Contact]) -> Vec<ContactKey> {
    c.iter().map(Contact::key).collect()
}

/// Everything the table holds, as text (to tell that a refused request changed nothing).
fn dump(t: &Tvht) -> Vec<String> {
    let snap = Snapshot::take(&t.table);
    let mut v: Vec<String> = Vec::new();
    for (k, b) in snap.buckets().iter().enumerate() {
        v.extend(b.entries(snap.look()).map(|e| format!("{k} entry {e:?}")));
        v.extend(b.contacts.iter().map(|c| format!("{k} contact {c:?}")));
        v.extend(b.records.iter().map(|r| format!("{k} record {r:?}")));
        v.extend(b.woken.iter().map(|c| format!("{k} woken {c:?}")));
        v.extend(b.spans.iter().map(|s| format!("{k} span {s:?}")));
        v.extend(b.met.iter().map(|c| format!("{k} met {c:?}")));
    }
    v.sort();
    v
}

/// Every contact the table keeps (between entries, with sleep records, of spans), sorted,
/// each as often as it is kept.
fn kept(t: &Tvht) -> Vec<ContactKey> {
    let mut v = t.contacts();
    for b in Snapshot::take(&t.table).buckets() {
        v.extend(b.met.iter().map(Contact::key));
    }
    v.sort_unstable();
    v
}

/// The spans the table keeps: (body, from, until), each once.
fn spans(t: &Tvht) -> BTreeSet<(BodyId, Tick, Tick)> {
    Snapshot::take(&t.table)
        .buckets()
        .iter()
        .flat_map(|b| b.spans.iter().map(|s| (s.body, s.from, s.until)))
        .collect()
}

// --- The model --------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Entry,
    Sleep,
    Span,
}

/// What a body is over `from..until`: an entry (one tick), a sleep record or a span.
#[derive(Clone, Copy, Debug)]
struct Rec {
    kind: Kind,
    entity: EntityId,
    body: BodyId,
    tag: u64,
    from: Tick,
    until: Tick,
    /// An entry's or a sleep record's box; a span's swept box.
    aabb: Aabb,
    /// An entry's or a sleep record's state.
    state: BodyState,
    /// An entry's flag.
    asleep: bool,
    /// A span's anchor.
    anchor: Anchor,
}

impl Rec {
    fn entry(entity: EntityId, tag: u64, tick: Tick, b: &BodyEntry) -> Rec {
        Rec {
            kind: Kind::Entry,
            entity,
            body: b.body,
            tag,
            from: tick,
            until: tick + 1,
            aabb: b.aabb,
            state: b.state,
            asleep: b.asleep,
            anchor: Anchor::at(0, b.state),
        }
    }

    fn sleep(entity: EntityId, tag: u64, (from, until): (Tick, Tick), b: &BodyEntry) -> Rec {
        Rec {
            kind: Kind::Sleep,
            asleep: true,
            from,
            until,
            ..Rec::entry(entity, tag, from, b)
        }
    }

    fn span(entity: EntityId, tag: u64, (from, until): (Tick, Tick), s: &SpanEntry) -> Rec {
        Rec {
            kind: Kind::Span,
            entity,
            body: s.body,
            tag,
            from,
            until,
            aabb: s.aabb,
            state: s.anchor.state,
            asleep: false,
            anchor: s.anchor,
        }
    }

    fn body_entry(&self) -> BodyEntry {
        BodyEntry {
            body: self.body,
            aabb: self.aabb,
            state: self.state,
            asleep: self.asleep,
        }
    }

    fn span_entry(&self) -> SpanEntry {
        SpanEntry {
            body: self.body,
            anchor: self.anchor,
            aabb: self.aabb,
        }
    }
}

/// Whether two things of different entities whose boxes overlap at a tick meet there.
fn meet(x: &Rec, y: &Rec) -> bool {
    match (x.kind, y.kind) {
        (Kind::Span, _) | (_, Kind::Span) | (Kind::Entry, Kind::Entry) => true,
        (Kind::Entry, Kind::Sleep) => !x.asleep,
        (Kind::Sleep, Kind::Entry) => !y.asleep,
        (Kind::Sleep, Kind::Sleep) => false,
    }
}

struct Model {
    flight: Arc<Toy>,
    recs: Vec<Rec>,
}

impl Model {
    /// `r` at `tick` as the table must show it in a contact.
    fn at(&self, r: &Rec, tick: Tick) -> TvhtEntry {
        let (state, aabb) = match r.kind {
            Kind::Span => {
                let s = self.flight.state(r.body, &r.anchor, tick);
                (s, self.flight.aabb(r.body, &s))
            }
            Kind::Entry | Kind::Sleep => (r.state, r.aabb),
        };
        TvhtEntry {
            entity: r.entity,
            body: r.body,
            tick,
            aabb,
            state,
            tag: r.tag,
            asleep: r.asleep,
        }
    }

    /// The kinds of the two sides of contact `c`, in order.
    fn kinds(&self, c: &Contact) -> (Kind, Kind) {
        let of = |e: &TvhtEntry| {
            self.recs
                .iter()
                .find(|r| r.body == e.body && r.from <= e.tick && e.tick < r.until)
                .expect("a side of a live contact")
                .kind
        };
        let (x, y) = (of(&c.a), of(&c.b));
        (x.min(y), x.max(y))
    }

    /// Every contact, by brute force: every pair of things of different entities, at every
    /// tick both cover, whose boxes at that tick overlap and which meet by their kinds.
    fn contacts(&self) -> BTreeMap<ContactKey, Contact> {
        let mut out = BTreeMap::new();
        let end = self.recs.iter().map(|r| r.until).max().unwrap_or(0);
        for tick in 0..end {
            let here: Vec<(&Rec, TvhtEntry)> = self
                .recs
                .iter()
                .filter(|r| r.from <= tick && tick < r.until)
                .map(|r| (r, self.at(r, tick)))
                .collect();
            for (i, (x, ex)) in here.iter().enumerate() {
                for (y, ey) in &here[i + 1..] {
                    if x.entity != y.entity && ex.aabb.overlaps(&ey.aabb) && meet(x, y) {
                        let c = Contact::new(*ex, *ey);
                        assert!(out.insert(c.key(), c).is_none(), "a body twice at a tick");
                    }
                }
            }
        }
        out
    }

    /// Whether adding `new` would put a body twice at a tick; and if so, whether the table
    /// is sure to see it (the two boxes share a cell, so the new request's buckets hold the
    /// old one: `TvhtError::Duplicate` documents what it finds).
    fn clash(&self, new: &[Rec]) -> Option<bool> {
        // (`table`'s cells: of side 1, their boundaries `GRID_OFFSET` below the integers.)
        let cells = |b: &Aabb| {
            let at = |v: Vec3| (v + Vec3::splat(GRID_OFFSET)).floor();
            (at(b.min), at(b.max))
        };
        let mut clash = None;
        for n in new {
            for r in self.recs.iter().filter(|r| r.body == n.body) {
                if r.from < n.until && n.from < r.until {
                    let ((alo, ahi), (blo, bhi)) = (cells(&n.aabb), cells(&r.aabb));
                    let shared = alo.max(blo).cmple(ahi.min(bhi)).all();
                    clash = Some(clash.unwrap_or(false) || shared);
                }
            }
        }
        clash
    }
}

/// The stop rules a random write picks from (functions of the contact alone).
fn stops(mode: u64, k: &ContactKey) -> bool {
    match mode {
        0 => true,
        1 => false,
        2 => k.tick % 3 == 0,
        // Only contacts with entity 0's bodies.
        _ => k.a / 2 == 0 || k.b / 2 == 0,
    }
}

/// Each contact of `c` is one of the model's `want`, both sides as the model has them at its
/// tick (state, box, tag, entity, whether asleep).
fn check_sides(want: &BTreeMap<ContactKey, Contact>, c: &[Contact]) {
    for c in c {
        assert_eq!(
            want.get(&c.key()),
            Some(c),
            "contact {:?} as the model has it",
            c.key()
        );
    }
}

/// What the caller has been told: the contacts reported, less those given back.
struct Told(BTreeSet<ContactKey>);

impl Told {
    fn reported(&mut self, c: &[Contact]) {
        assert!(c.is_sorted_by_key(Contact::key), "contacts are sorted");
        for c in c {
            assert!(self.0.insert(c.key()), "{:?} reported twice", c.key());
        }
    }

    fn given_back(&mut self, c: &[Contact]) {
        assert!(c.is_sorted_by_key(Contact::key), "contacts are sorted");
        for c in c {
            assert!(
                self.0.remove(&c.key()),
                "{:?} given back, not live",
                c.key()
            );
        }
    }
}

/// The contacts in `after` and not in `before` (or the other way round).
fn added(
    before: &BTreeMap<ContactKey, Contact>,
    after: &BTreeMap<ContactKey, Contact>,
) -> Vec<ContactKey> {
    after
        .keys()
        .filter(|k| !before.contains_key(k))
        .copied()
        .collect()
}

/// Random requests of four entities of two bodies each (entity `e` has bodies `2e` and
/// `2e + 1`), crowded in a few cells over 50 ticks: entries (asleep or not) written a few
/// ticks at a time with a random stop rule, spans of up to 12 ticks from random anchors (some
/// with a box larger than their sweep), sleep records (new, or extending one), deletes, cuts
/// and wakes of what is there (some of a few bodies at once, at a tick before, inside or
/// after what they cut), and requests that are refused (a body twice at a tick where the two
/// boxes share a cell, a cut of a span that is gone). After each: `validate_at_rest` holds;
/// a write's answer (last tick or steps written, and contacts) is the model's; a delete, cut
/// or wake gives back exactly the contacts the model loses; the contacts reported less those
/// given back are the model's, each once, and the table keeps each of them once; a refusal
/// changes nothing.
#[test]
fn random_spans_entries_and_records_keep_the_models_contacts_exactly_once() {
    let toy = Arc::new(Toy {
        gravity: Vec3::new(0.0, -0.5, -1.0),
        dt: 0.1,
    });
    for &be in Backend::COMPILED {
        for (buckets, seed) in [(8, 1), (1024, 2)] {
            let t = table(be, buckets, toy.clone());
            let mut model = Model {
                flight: toy.clone(),
                recs: Vec::new(),
            };
            let mut told = Told(BTreeSet::new());
            let mut rng = SplitMix64::new(seed);
            let mut next = move |n: u64| rng.next_u64() % n;
            let mut tag = 1000;
            // Spans cut away whole: (entity, tag, span), to cut again.
            let mut gone: Vec<(EntityId, u64, SpanEntry)> = Vec::new();
            let mut counts = [0usize; 8];
            // The kinds of the two sides of every contact reported.
            let mut pairs = BTreeMap::new();
            for op in 0..2000 {
                let e = next(4) as EntityId;
                let bodies: Vec<BodyId> = match next(3) {
                    0 => vec![2 * e],
                    1 => vec![2 * e + 1],
                    _ => vec![2 * e, 2 * e + 1],
                };
                let from = next(48);
                let anchor = |next: &mut dyn FnMut(u64) -> u64| {
                    let q = |v: u64| v as f32 * 0.125;
                    Anchor::at(
                        from - next(3).min(from),
                        moving(
                            Vec3::new(q(next(17)), q(next(17)), q(next(9))),
                            Vec3::new(q(next(17)) - 1.0, q(next(17)) - 1.0, q(next(9)) - 0.5),
                        ),
                    )
                };
                let before = model.contacts();
                match next(16) {
                    // Entries.
                    0..=3 => {
                        let n = 1 + next(4);
                        let anchors: Vec<Anchor> =
                            bodies.iter().map(|_| anchor(&mut next)).collect();
                        let asleep = next(4) == 0;
                        let steps_bodies: Vec<Vec<BodyEntry>> = (from..from + n)
                            .map(|tick| {
                                bodies
                                    .iter()
                                    .zip(&anchors)
                                    .map(|(&body, a)| {
                                        let state = toy.state(body, a, tick);
                                        BodyEntry {
                                            body,
                                            aabb: toy.aabb(body, &state),
                                            state,
                                            asleep,
                                        }
                                    })
                                    .collect()
                            })
                            .collect();
                        let steps: Vec<Step<'_>> = steps_bodies
                            .iter()
                            .enumerate()
                            .map(|(i, b)| Step {
                                tick: from + i as Tick,
                                bodies: b,
                            })
                            .collect();
                        let new: Vec<Rec> = steps
                            .iter()
                            .enumerate()
                            .flat_map(|(i, s)| {
                                s.bodies
                                    .iter()
                                    .map(move |b| Rec::entry(e, tag + i as u64, s.tick, b))
                            })
                            .collect();
                        let mode = next(4);
                        let clash = model.clash(&new);
                        if clash == Some(false) {
                            continue; // the table need not see it: not a fair request
                        }
                        let snapshot = clash.map(|_| dump(&t));
                        let got = t.write_steps_until(e, tag, &steps, |c| stops(mode, &c.key()));
                        match clash {
                            Some(_) => {
                                assert!(
                                    matches!(got, Err(TvhtError::Duplicate { .. })),
                                    "op {op}: {got:?}"
                                );
                                assert_eq!(
                                    Some(dump(&t)),
                                    snapshot,
                                    "op {op}: a refusal changed it"
                                );
                                counts[6] += 1;
                            }
                            None => {
                                let (n_got, c) = got.unwrap();
                                // The steps up to the first one that meets a contact that
                                // stops the write.
                                model.recs.extend(&new);
                                let all = model.contacts();
                                let last = added(&before, &all)
                                    .iter()
                                    .filter(|k| stops(mode, k))
                                    .map(|k| k.tick)
                                    .min()
                                    .unwrap_or(from + n - 1);
                                model.recs.retain(|r| {
                                    !(r.kind == Kind::Entry && r.entity == e && r.tag >= tag)
                                        || r.from <= last
                                });
                                assert_eq!(n_got as Tick, last - from + 1, "op {op}");
                                let after = model.contacts();
                                assert_eq!(keys(&c), added(&before, &after), "op {op}");
                                check_sides(&after, &c);
                                told.reported(&c);
                                for c in &c {
                                    *pairs.entry(model.kinds(c)).or_insert(0) += 1;
                                }
                                counts[0] += 1;
                            }
                        }
                        tag += 16;
                    }
                    // A span.
                    4..=6 => {
                        let to = from + next(12);
                        let spans: Vec<SpanEntry> = bodies
                            .iter()
                            .map(|&body| {
                                let a = anchor(&mut next);
                                let mut aabb = swept(&*toy, body, &a, from, to);
                                if next(3) == 0 {
                                    aabb = aabb.expanded(0.125 * next(4) as f32);
                                }
                                SpanEntry {
                                    body,
                                    anchor: a,
                                    aabb,
                                }
                            })
                            .collect();
                        let new: Vec<Rec> = spans
                            .iter()
                            .map(|s| Rec::span(e, tag, (from, to + 1), s))
                            .collect();
                        let mode = next(4);
                        let clash = model.clash(&new);
                        if clash == Some(false) {
                            continue;
                        }
                        let snapshot = clash.map(|_| dump(&t));
                        let got =
                            t.write_span(e, tag, (from, to), &spans, |c| stops(mode, &c.key()));
                        match clash {
                            Some(_) => {
                                assert!(
                                    matches!(got, Err(TvhtError::Duplicate { .. })),
                                    "op {op}: {got:?}"
                                );
                                assert_eq!(
                                    Some(dump(&t)),
                                    snapshot,
                                    "op {op}: a refusal changed it"
                                );
                                counts[6] += 1;
                            }
                            None => {
                                let (last_got, c) = got.unwrap();
                                model.recs.extend(&new);
                                let all = model.contacts();
                                let last = added(&before, &all)
                                    .iter()
                                    .filter(|k| stops(mode, k))
                                    .map(|k| k.tick)
                                    .min()
                                    .unwrap_or(to);
                                for r in model.recs.iter_mut().filter(|r| {
                                    r.kind == Kind::Span && r.entity == e && r.tag == tag
                                }) {
                                    r.until = last + 1;
                                }
                                assert_eq!(last_got, last, "op {op}");
                                let after = model.contacts();
                                assert_eq!(keys(&c), added(&before, &after), "op {op}");
                                assert!(c.iter().all(|c| c.tick() <= last));
                                check_sides(&after, &c);
                                told.reported(&c);
                                for c in &c {
                                    *pairs.entry(model.kinds(c)).or_insert(0) += 1;
                                }
                                counts[1] += 1;
                            }
                        }
                        tag += 1;
                    }
                    // Sleep records: new ones, or one extended.
                    7..=8 => {
                        let old: Vec<Rec> = model
                            .recs
                            .iter()
                            .filter(|r| r.kind == Kind::Sleep)
                            .copied()
                            .collect();
                        let (e, tag_used, from, sleepers) = if !old.is_empty() && next(3) == 0 {
                            let r = old[next(old.len() as u64) as usize];
                            let group: Vec<BodyEntry> = old
                                .iter()
                                .filter(|o| {
                                    o.entity == r.entity && o.tag == r.tag && o.until == r.until
                                })
                                .map(Rec::body_entry)
                                .collect();
                            (r.entity, r.tag, r.until, group)
                        } else {
                            let group = bodies
                                .iter()
                                .map(|&body| {
                                    let state = anchor(&mut next).state;
                                    BodyEntry {
                                        body,
                                        aabb: toy.aabb(body, &state),
                                        state: at_rest(state.position),
                                        asleep: true,
                                    }
                                })
                                .collect();
                            tag += 1;
                            (e, tag, from, group)
                        };
                        let to = from + next(8);
                        let new: Vec<Rec> = sleepers
                            .iter()
                            .map(|b| Rec::sleep(e, tag_used, (from, to + 1), b))
                            .collect();
                        let clash = model.clash(&new);
                        if clash == Some(false) {
                            continue;
                        }
                        let snapshot = clash.map(|_| dump(&t));
                        let got = t.sleep(e, tag_used, from, to, &sleepers);
                        match clash {
                            Some(_) => {
                                assert!(
                                    matches!(got, Err(TvhtError::Duplicate { .. })),
                                    "op {op}: {got:?}"
                                );
                                assert_eq!(
                                    Some(dump(&t)),
                                    snapshot,
                                    "op {op}: a refusal changed it"
                                );
                                counts[6] += 1;
                            }
                            None => {
                                let (last_got, c) = got.unwrap();
                                let n = model.recs.len();
                                model.recs.extend(&new);
                                let all = model.contacts();
                                // Records stop at the first tick with any contact.
                                let last = added(&before, &all)
                                    .iter()
                                    .map(|k| k.tick)
                                    .min()
                                    .unwrap_or(to);
                                for r in &mut model.recs[n..] {
                                    r.until = last + 1;
                                }
                                assert_eq!(last_got, last, "op {op}");
                                let after = model.contacts();
                                assert_eq!(keys(&c), added(&before, &after), "op {op}");
                                check_sides(&after, &c);
                                told.reported(&c);
                                for c in &c {
                                    *pairs.entry(model.kinds(c)).or_insert(0) += 1;
                                }
                                counts[2] += 1;
                            }
                        }
                    }
                    // A delete of an entity's entries over a few ticks.
                    9..=10 => {
                        let n = 1 + next(6);
                        let steps_bodies: Vec<(Tick, Vec<BodyEntry>)> = (from..from + n)
                            .map(|tick| {
                                let mine = model.recs.iter().filter(|r| {
                                    r.kind == Kind::Entry && r.entity == e && r.from == tick
                                });
                                (tick, mine.map(Rec::body_entry).collect::<Vec<_>>())
                            })
                            .filter(|(_, b)| !b.is_empty())
                            .collect();
                        let steps: Vec<Step<'_>> = steps_bodies
                            .iter()
                            .map(|(tick, bodies)| Step {
                                tick: *tick,
                                bodies,
                            })
                            .collect();
                        if steps.is_empty() {
                            // Nothing there to delete: refused.
                            let ghost = BodyEntry {
                                body: 2 * e,
                                aabb: Aabb::new(Vec3::splat(0.5), Vec3::splat(0.75)),
                                state: at_rest(Vec3::splat(0.6)),
                                asleep: false,
                            };
                            let snapshot = Some(dump(&t));
                            let got = t.delete(e, from, &[ghost]);
                            assert!(
                                matches!(got, Err(TvhtError::NotFound { .. })),
                                "op {op}: {got:?}"
                            );
                            assert_eq!(Some(dump(&t)), snapshot, "op {op}: a refusal changed it");
                            counts[7] += 1;
                            continue;
                        }
                        let c = t.delete_steps(e, &steps).unwrap();
                        check_sides(&before, &c);
                        model.recs.retain(|r| {
                            !(r.kind == Kind::Entry
                                && r.entity == e
                                && steps.iter().any(|s| s.tick == r.from))
                        });
                        assert_eq!(keys(&c), added(&model.contacts(), &before), "op {op}");
                        told.given_back(&c);
                        counts[3] += 1;
                    }
                    // A cut of spans, or a wake of sleep records, of one write.
                    _ => {
                        let kind = if next(2) == 0 {
                            Kind::Span
                        } else {
                            Kind::Sleep
                        };
                        let of_kind: Vec<Rec> = model
                            .recs
                            .iter()
                            .filter(|r| r.kind == kind)
                            .copied()
                            .collect();
                        if kind == Kind::Span && !gone.is_empty() && next(4) == 0 {
                            // A span cut away whole is not there to cut.
                            let (e, tag, s) = gone[next(gone.len() as u64) as usize];
                            let snapshot = Some(dump(&t));
                            let got = t.cut_span(e, tag, &[s], next(40));
                            assert!(
                                matches!(got, Err(TvhtError::NotFound { .. })),
                                "op {op}: {got:?}"
                            );
                            assert_eq!(Some(dump(&t)), snapshot, "op {op}: a refusal changed it");
                            counts[7] += 1;
                            continue;
                        }
                        if of_kind.is_empty() {
                            continue;
                        }
                        let r = of_kind[next(of_kind.len() as u64) as usize];
                        // Its write's bodies (a sleep record extended is one record).
                        let mut group: Vec<Rec> = Vec::new();
                        for o in of_kind
                            .iter()
                            .filter(|o| o.entity == r.entity && o.tag == r.tag)
                        {
                            if !group.iter().any(|g| g.body == o.body) {
                                group.push(*o);
                            }
                        }
                        if next(2) == 0 {
                            group.retain(|g| g.body == r.body);
                        }
                        let cut = r.from.saturating_sub(2) + next(r.until - r.from + 4);
                        let c = if kind == Kind::Span {
                            let s: Vec<SpanEntry> = group.iter().map(Rec::span_entry).collect();
                            t.cut_span(r.entity, r.tag, &s, cut).unwrap()
                        } else {
                            let s: Vec<BodyEntry> = group.iter().map(Rec::body_entry).collect();
                            t.wake(r.entity, r.tag, &s, cut).unwrap()
                        };
                        check_sides(&before, &c);
                        for m in model.recs.iter_mut().filter(|m| {
                            m.kind == kind
                                && m.entity == r.entity
                                && m.tag == r.tag
                                && group.iter().any(|g| g.body == m.body)
                        }) {
                            m.until = m.until.min(cut);
                        }
                        gone.extend(
                            model
                                .recs
                                .iter()
                                .filter(|m| m.kind == Kind::Span && m.from >= m.until)
                                .map(|m| (m.entity, m.tag, m.span_entry())),
                        );
                        model.recs.retain(|m| m.from < m.until);
                        assert_eq!(
                            keys(&c),
                            added(&model.contacts(), &before),
                            "op {op}: {kind:?} {r:?} of {group:?} cut at {cut}"
                        );
                        told.given_back(&c);
                        counts[if kind == Kind::Span { 4 } else { 5 }] += 1;
                    }
                }
                t.validate_at_rest()
                    .unwrap_or_else(|x| panic!("op {op}: {x}"));
                let want: Vec<ContactKey> = model.contacts().into_keys().collect();
                assert_eq!(
                    told.0.iter().copied().collect::<Vec<_>>(),
                    want,
                    "op {op}: told"
                );
                assert_eq!(kept(&t), want, "op {op}: kept");
            }
            // Every kind of request was made, and met something.
            assert!(
                counts.iter().all(|&n| n >= 10),
                "{be:?} {buckets}: writes, spans, sleeps, deletes, cuts, wakes, \
                 duplicates, not found: {counts:?}"
            );
            use Kind::{Entry, Sleep, Span};
            assert_eq!(
                pairs.keys().copied().collect::<BTreeSet<_>>(),
                BTreeSet::from([
                    (Entry, Entry),
                    (Entry, Sleep),
                    (Entry, Span),
                    (Sleep, Span),
                    (Span, Span)
                ]),
                "{be:?} {buckets}: every kind of contact was reported"
            );
        }
    }
}

// --- The rules one at a time ------------------------------------------------------------

/// A toy without gravity, one second a tick: a body at `x` with velocity `v` is at `x + v t`
/// after `t` ticks.
fn line() -> Arc<Toy> {
    Arc::new(Toy {
        gravity: Vec3::ZERO,
        dt: 1.0,
    })
}

/// A body at `(x, 0.5, 0.5)` at `tick`, flying along x at `vx` a tick.
fn flier(tick: Tick, x: f32, vx: f32) -> Anchor {
    Anchor::at(
        tick,
        moving(Vec3::new(x, 0.5, 0.5), Vec3::new(vx, 0.0, 0.0)),
    )
}

/// Body `body`'s span over `from..=to` from `anchor`, in the box of its sweep.
fn span_of(toy: &Toy, body: BodyId, anchor: Anchor, from: Tick, to: Tick) -> SpanEntry {
    SpanEntry {
        body,
        anchor,
        aabb: swept(toy, body, &anchor, from, to),
    }
}

/// Body `body` at rest at `(x, 0.5, 0.5)`, in its toy box.
fn still(toy: &Toy, body: BodyId, x: f32) -> BodyEntry {
    let state = at_rest(Vec3::new(x, 0.5, 0.5));
    BodyEntry {
        body,
        aabb: toy.aabb(body, &state),
        state,
        asleep: false,
    }
}

/// One step per `(tick, entry)`.
fn steps_of(entries: &[(Tick, [BodyEntry; 1])]) -> Vec<Step<'_>> {
    entries
        .iter()
        .map(|(tick, bodies)| Step {
            tick: *tick,
            bodies,
        })
        .collect()
}

/// A span meets an entry, an asleep entry, a sleep record and another span at the tick where
/// their boxes at that tick overlap, never at the ticks where only its swept box does, once,
/// whichever of the two is written second; the contact carries the span's state and box at
/// that tick (its flight's) and its tag; cuts and deletes give each back once.
#[test]
fn a_span_meets_what_it_touches_at_the_tick_once_whoever_comes_second() {
    let toy = line();
    for &be in Backend::COMPILED {
        for buckets in [2, 1024] {
            // Body 1 (entity 1) flies along x, at x = t at tick t; body 2 (entity 2) rests
            // at x = 5, in body 1's swept box: their boxes overlap at tick 5 alone.
            let s1 = span_of(&toy, 1, flier(0, 0.0, 1.0), 0, 10);
            let e2 = still(&toy, 2, 5.0);
            let entries2: Vec<(Tick, [BodyEntry; 1])> = (0..=10).map(|t| (t, [e2])).collect();
            let steps2 = steps_of(&entries2);
            let at5 = toy.state(1, &s1.anchor, 5);
            assert_eq!(at5.position.x, 5.0);

            // The entries first: the span finds the contact, at 5 only.
            let t = table(be, buckets, toy.clone());
            assert_eq!(
                t.write_steps_until(2, 0, &steps2, |_| true).unwrap(),
                (11, Vec::new())
            );
            let (last, c) = t.write_span(1, 7, (0, 10), &[s1], |_| false).unwrap();
            assert_eq!((last, keys(&c)), (10, vec![key(5, 1, 2)]));
            let side1 = TvhtEntry {
                entity: 1,
                body: 1,
                tick: 5,
                aabb: toy.aabb(1, &at5),
                state: at5,
                tag: 7,
                asleep: false,
            };
            let side2 = TvhtEntry {
                entity: 2,
                body: 2,
                tick: 5,
                aabb: e2.aabb,
                state: e2.state,
                tag: 5,
                asleep: false,
            };
            assert_eq!((c[0].a, c[0].b), (side1, side2));
            assert_eq!(kept(&t), [key(5, 1, 2)]);
            t.validate_at_rest().unwrap();
            // The entry's delete gives it back; written again, the entry finds it.
            assert_eq!(keys(&t.delete(2, 5, &[e2]).unwrap()), [key(5, 1, 2)]);
            assert!(kept(&t).is_empty());
            let c = t.write(2, 5, &[e2]).unwrap();
            assert_eq!(keys(&c), [key(5, 1, 2)]);
            assert_eq!(c[0].a.state, at5);
            t.validate_at_rest().unwrap();

            // The span first: the entries' write finds the contact at 5 (and stops there).
            let t = table(be, buckets, toy.clone());
            assert_eq!(
                t.write_span(1, 7, (0, 10), &[s1], |_| true).unwrap(),
                (10, Vec::new())
            );
            let (n, c) = t.write_steps(2, &steps2).unwrap();
            assert_eq!((n, keys(&c)), (6, vec![key(5, 1, 2)]));
            assert_eq!((c[0].a, c[0].b), (side1, side2));
            // An asleep entry meets a span (body 3 at x = 7, tick 7); so does a sleep record,
            // which stops at the tick it meets it (body 4 resting at x = 9: tick 9).
            let mut e3 = still(&toy, 3, 7.0);
            e3.asleep = true;
            assert_eq!(keys(&t.write(3, 7, &[e3]).unwrap()), [key(7, 1, 3)]);
            let mut e4 = still(&toy, 4, 9.0);
            e4.asleep = true;
            let (last, c) = t.sleep(4, 3, 0, 10, &[e4]).unwrap();
            assert_eq!((last, keys(&c)), (9, vec![key(9, 1, 4)]));
            assert!(c[0].b.asleep && c[0].b.tag == 3);
            // A span of body 5 (entity 5) flying back from x = 10 meets them all in one
            // write: body 4's record at tick 1 (x = 9), and bodies 1 and 2 at tick 5.
            let s5 = span_of(&toy, 5, flier(0, 10.0, -1.0), 0, 10);
            let (last, c) = t.write_span(5, 8, (0, 10), &[s5], |_| false).unwrap();
            assert_eq!(
                (last, keys(&c)),
                (10, vec![key(1, 4, 5), key(5, 1, 5), key(5, 2, 5)])
            );
            assert_eq!(c[1].a, side1);
            let all = [
                key(1, 4, 5),
                key(5, 1, 2),
                key(5, 1, 5),
                key(5, 2, 5),
                key(7, 1, 3),
                key(9, 1, 4),
            ];
            assert_eq!(kept(&t), all);
            t.validate_at_rest().unwrap();
            // Cut at 5, body 1's span gives back its own contacts from 5 on, each once.
            let c = t.cut_span(1, 7, &[s1], 5).unwrap();
            assert_eq!(
                keys(&c),
                [key(5, 1, 2), key(5, 1, 5), key(7, 1, 3), key(9, 1, 4)]
            );
            assert_eq!(kept(&t), [key(1, 4, 5), key(5, 2, 5)]);
            t.validate_at_rest().unwrap();
            // Waking body 4 at 0 gives back its contact with body 5's span.
            assert_eq!(keys(&t.wake(4, 3, &[e4], 0).unwrap()), [key(1, 4, 5)]);
            assert_eq!(keys(&t.cut_span(5, 8, &[s5], 0).unwrap()), [key(5, 2, 5)]);
            assert!(kept(&t).is_empty());
            assert_eq!(spans(&t), BTreeSet::from([(1, 0, 5)]));
            t.validate_at_rest().unwrap();
        }
    }
}

/// Boxes that overlap only as swept boxes make no contact: two spans whose paths cross at
/// different ticks, an entry and a sleep record in a span's swept box at ticks when the span
/// is elsewhere. The same crossing at a common tick makes one, at that tick.
#[test]
fn boxes_that_overlap_only_as_swept_boxes_make_no_contact() {
    let toy = line();
    for &be in Backend::COMPILED {
        let t = table(be, 64, toy.clone());
        // Body 1 flies along x (x = t at tick t); body 2 along y at x = 5, across body 1's
        // path at tick 8, when body 1 is at x = 8.
        let s1 = span_of(&toy, 1, flier(0, 0.0, 1.0), 0, 10);
        let late = Anchor::at(0, moving(Vec3::new(5.0, -7.5, 0.5), Vec3::Y));
        let s2 = span_of(&toy, 2, late, 0, 10);
        assert!(s1.aabb.overlaps(&s2.aabb));
        assert_eq!(
            t.write_span(1, 1, (0, 10), &[s1], |_| true).unwrap(),
            (10, Vec::new())
        );
        assert_eq!(
            t.write_span(2, 2, (0, 10), &[s2], |_| true).unwrap(),
            (10, Vec::new())
        );
        // Body 3 at x = 5 at tick 2, body 4 asleep at x = 9 over ticks 0..=3.
        let e3 = still(&toy, 3, 5.0);
        let e4 = still(&toy, 4, 9.0);
        assert!(s1.aabb.overlaps(&e3.aabb) && s1.aabb.overlaps(&e4.aabb));
        assert!(t.write(3, 2, &[e3]).unwrap().is_empty());
        assert_eq!(t.sleep(4, 4, 0, 3, &[e4]).unwrap(), (3, Vec::new()));
        assert!(kept(&t).is_empty());
        t.validate_at_rest().unwrap();
        // Body 2 crossing at tick 5 instead: one contact, at 5.
        assert!(t.cut_span(2, 2, &[s2], 0).unwrap().is_empty());
        let early = Anchor::at(0, moving(Vec3::new(5.0, -4.5, 0.5), Vec3::Y));
        let s2 = span_of(&toy, 2, early, 0, 10);
        let (last, c) = t.write_span(2, 3, (0, 10), &[s2], |_| false).unwrap();
        assert_eq!((last, keys(&c)), (10, vec![key(5, 1, 2)]));
        assert_eq!(kept(&t), [key(5, 1, 2)]);
        t.validate_at_rest().unwrap();
    }
}

/// A span stops after the first tick with a contact for which `stops` holds: it returns that
/// tick, and the contacts up to it, none after (none is kept after it either, and the body is
/// free after it); every body of the request ends there. A cut gives back the contacts from
/// its tick on; a cut at the span's first tick removes it whole.
#[test]
fn a_span_stops_after_the_first_tick_with_a_contact_that_stops_it() {
    let toy = line();
    for &be in Backend::COMPILED {
        let t = table(be, 16, toy.clone());
        // Body 2 (entity 2) runs along body 1's path at ticks 3..=9: they meet at each.
        let entries2: Vec<(Tick, [BodyEntry; 1])> =
            (3..=9).map(|t| (t, [still(&toy, 2, t as f32)])).collect();
        let steps2 = steps_of(&entries2);
        assert_eq!(
            t.write_steps_until(2, 0, &steps2, |_| false).unwrap(),
            (7, Vec::new())
        );
        // Body 1 with body 4 of the same entity, far away: the contacts at 3 and 4 do not
        // stop them, the one at 5 does.
        let s1 = span_of(&toy, 1, flier(0, 0.0, 1.0), 0, 12);
        let far = Anchor::at(0, moving(Vec3::new(0.0, 20.5, 0.5), Vec3::X));
        let s4 = span_of(&toy, 4, far, 0, 12);
        let (last, c) = t
            .write_span(1, 7, (0, 12), &[s1, s4], |c| c.tick() >= 5)
            .unwrap();
        assert_eq!(
            (last, keys(&c)),
            (5, vec![key(3, 1, 2), key(4, 1, 2), key(5, 1, 2)])
        );
        assert_eq!(spans(&t), BTreeSet::from([(1, 0, 6), (4, 0, 6)]));
        assert_eq!(kept(&t), [key(3, 1, 2), key(4, 1, 2), key(5, 1, 2)]);
        t.validate_at_rest().unwrap();
        // Body 1 is free from tick 6: its entry there is no duplicate, and meets body 2's.
        let e1 = still(&toy, 1, 6.0);
        assert_eq!(keys(&t.write(1, 6, &[e1]).unwrap()), [key(6, 1, 2)]);
        t.validate_at_rest().unwrap();
        // A cut at 4 gives back 4 and 5; at the first tick, the span goes, with the rest.
        let c = t.cut_span(1, 7, &[s1, s4], 4).unwrap();
        assert_eq!(keys(&c), [key(4, 1, 2), key(5, 1, 2)]);
        assert_eq!(spans(&t), BTreeSet::from([(1, 0, 4), (4, 0, 4)]));
        assert_eq!(kept(&t), [key(3, 1, 2), key(6, 1, 2)]);
        t.validate_at_rest().unwrap();
        assert_eq!(
            keys(&t.cut_span(1, 7, &[s1, s4], 0).unwrap()),
            [key(3, 1, 2)]
        );
        assert!(spans(&t).is_empty());
        assert_eq!(kept(&t), [key(6, 1, 2)]);
        t.validate_at_rest().unwrap();
        // Stopping at every contact: the first, at 3; at none: all seven.
        assert_eq!(keys(&t.delete(1, 6, &[e1]).unwrap()), [key(6, 1, 2)]);
        let (last, c) = t.write_span(1, 8, (0, 12), &[s1], |_| true).unwrap();
        assert_eq!((last, keys(&c)), (3, vec![key(3, 1, 2)]));
        assert_eq!(keys(&t.cut_span(1, 8, &[s1], 0).unwrap()), [key(3, 1, 2)]);
        let (last, c) = t.write_span(1, 9, (0, 12), &[s1], |_| false).unwrap();
        let all: Vec<ContactKey> = (3..=9).map(|k| key(k, 1, 2)).collect();
        assert_eq!((last, keys(&c)), (12, all.clone()));
        assert_eq!(kept(&t), all);
        t.validate_at_rest().unwrap();
    }
}

/// Regression: a cut of a span, or a wake of a sleep record, gives back the contacts of that
/// span or record alone, not those its body has at later ticks as an entry, another record
/// or another span (they were given back, and their records dropped, while what made them
/// stayed in the table: `validate` then failed, and their own delete gave nothing back).
#[test]
fn a_cut_or_a_wake_gives_back_only_its_own_contacts() {
    let toy = line();
    for &be in Backend::COMPILED {
        let t = table(be, 16, toy.clone());
        // Body 2 (entity 2) rests at x = 5 as a span over 0..=20.
        let s2 = span_of(&toy, 2, flier(0, 5.0, 0.0), 0, 20);
        assert_eq!(
            t.write_span(2, 1, (0, 20), &[s2], |_| true).unwrap(),
            (20, Vec::new())
        );
        // Body 1 meets it as a span over 0..=6 (at 5), an entry at 10, a sleep record from
        // 12 (which stops there) and a span over 15..=16.
        let a = span_of(&toy, 1, flier(0, 0.0, 1.0), 0, 6);
        let (_, c) = t.write_span(1, 2, (0, 6), &[a], |_| false).unwrap();
        assert_eq!(keys(&c), [key(5, 1, 2)]);
        let e = still(&toy, 1, 5.0);
        assert_eq!(keys(&t.write(1, 10, &[e]).unwrap()), [key(10, 1, 2)]);
        let (last, c) = t.sleep(1, 3, 12, 14, &[e]).unwrap();
        assert_eq!((last, keys(&c)), (12, vec![key(12, 1, 2)]));
        let b = span_of(&toy, 1, flier(15, 5.0, 0.0), 15, 16);
        let (_, c) = t.write_span(1, 4, (15, 16), &[b], |_| false).unwrap();
        assert_eq!(keys(&c), [key(15, 1, 2), key(16, 1, 2)]);
        t.validate_at_rest().unwrap();
        // Cutting the first span at 2 gives back its contact at 5 alone.
        assert_eq!(keys(&t.cut_span(1, 2, &[a], 2).unwrap()), [key(5, 1, 2)]);
        let later = [key(10, 1, 2), key(12, 1, 2), key(15, 1, 2), key(16, 1, 2)];
        assert_eq!(kept(&t), later);
        t.validate_at_rest().unwrap();
        // Cutting it past its end gives back nothing.
        assert!(t.cut_span(1, 2, &[a], 11).unwrap().is_empty());
        // Waking the record at 0 gives back its contact at 12 alone.
        assert_eq!(keys(&t.wake(1, 3, &[e], 0).unwrap()), [key(12, 1, 2)]);
        assert_eq!(kept(&t), [key(10, 1, 2), key(15, 1, 2), key(16, 1, 2)]);
        t.validate_at_rest().unwrap();
        // The entry and the last span give back their own.
        assert_eq!(keys(&t.delete(1, 10, &[e]).unwrap()), [key(10, 1, 2)]);
        let c = t.cut_span(1, 4, &[b], 0).unwrap();
        assert_eq!(keys(&c), [key(15, 1, 2), key(16, 1, 2)]);
        assert!(kept(&t).is_empty());
        t.validate_at_rest().unwrap();
    }
}

/// A span over a tick where its body has an entry, a sleep record or a span is refused
/// (`Duplicate`, at that tick) and writes nothing, even for the other bodies of its request;
/// so are a sleep or an entry inside a span, bad requests, cuts of what is not there.
#[test]
fn spans_refuse_duplicates_and_bad_requests_without_effect() {
    let toy = line();
    for &be in Backend::COMPILED {
        let t = table(be, 64, toy.clone());
        let dup = |tick| Err(TvhtError::Duplicate { body: 1, tick });
        // Body 1's entry at 7 on its way, a sleep record over 12..=15, a span over 20..=25.
        assert!(t.write(1, 7, &[still(&toy, 1, 7.0)]).unwrap().is_empty());
        assert_eq!(
            t.sleep(1, 2, 12, 15, &[still(&toy, 1, 12.0)]).unwrap(),
            (15, Vec::new())
        );
        let s = span_of(&toy, 1, flier(20, 20.0, 1.0), 20, 25);
        assert_eq!(
            t.write_span(1, 3, (20, 25), &[s], |_| true).unwrap(),
            (25, Vec::new())
        );
        let before = dump(&t);
        let far = Anchor::at(0, moving(Vec3::new(0.0, 20.5, 0.5), Vec3::X));
        let s4 = span_of(&toy, 4, far, 0, 10);
        let on = |from, to| span_of(&toy, 1, flier(0, 0.0, 1.0), from, to);
        assert_eq!(t.write_span(1, 4, (0, 10), &[on(0, 10)], |_| true), dup(7));
        assert_eq!(
            t.write_span(1, 4, (0, 10), &[s4, on(0, 10)], |_| true),
            dup(7)
        );
        assert_eq!(
            t.write_span(1, 4, (10, 14), &[on(10, 14)], |_| true),
            dup(12)
        );
        assert_eq!(
            t.write_span(1, 4, (22, 30), &[on(22, 30)], |_| true),
            dup(22)
        );
        assert_eq!(t.sleep(1, 5, 24, 26, &[still(&toy, 1, 24.0)]), dup(24));
        assert_eq!(
            t.write(1, 23, &[still(&toy, 1, 23.0)]),
            Err(TvhtError::Duplicate { body: 1, tick: 23 })
        );
        assert_eq!(
            t.write_span(1, 4, (40, 41), &[on(40, 41), on(40, 41)], |_| true),
            Err(TvhtError::Duplicate { body: 1, tick: 40 })
        );
        // An empty span; a cut of a span not there, or with another box or anchor.
        assert!(matches!(
            t.write_span(1, 4, (5, 4), &[on(4, 5)], |_| true),
            Err(TvhtError::Config(_))
        ));
        assert_eq!(
            t.cut_span(1, 9, &[s], 21),
            Err(TvhtError::NotFound {
                entity: 1,
                body: 1,
                tick: 21
            })
        );
        let moved = SpanEntry {
            aabb: s.aabb.expanded(0.125),
            ..s
        };
        let other = SpanEntry {
            anchor: flier(19, 19.0, 1.0),
            ..s
        };
        for wrong in [moved, other] {
            assert!(matches!(
                t.cut_span(1, 3, &[wrong], 21),
                Err(TvhtError::BoundsMismatch { body: 1, .. } | TvhtError::NotFound { .. })
            ));
        }
        assert_eq!(
            t.cut_span(1, 3, &[other], 21),
            Err(TvhtError::BoundsMismatch { body: 1, tick: 21 })
        );
        assert_eq!(dump(&t), before, "a refusal changed the table");
        t.validate_at_rest().unwrap();
        // Behind the floor.
        t.prune_before(2);
        assert_eq!(
            t.write_span(4, 4, (1, 3), &[s4], |_| true),
            Err(TvhtError::BehindFloor { tick: 1, floor: 2 })
        );
        // Spans need a flight, and a flight needs the record half.
        let config = TvhtConfig {
            buckets: 64,
            cell_size: 1.0,
            max_cells_per_body: 512,
            span_ticks: 4,
            grid_offset: 0.0,
            sleep_records: false,
        };
        assert!(matches!(
            Tvht::new(be, config).unwrap().with_flight(toy.clone()),
            Err(TvhtError::Config(_))
        ));
        let no_flight = Tvht::new(be, config.with_sleep_records(true)).unwrap();
        assert!(matches!(
            no_flight.write_span(4, 4, (0, 3), &[s4], |_| true),
            Err(TvhtError::Config(_))
        ));
    }
}

/// With the engine's rules (`Rules`, the `Flight` of the warp engine): body 0 flies from
/// its anchor over a span, in the box `Rules::span_aabb` gives it, and body 1 comes the other
/// way, written as an entry per tick in its `Rules::aabb` box. The span's box meets body 1's
/// boxes ticks before the bodies do; the table finds the contact at exactly the first tick
/// where the two per-tick boxes overlap and the bodies touch (`Rules::in_contact`: the rules
/// keep no other pair), whichever is written second, with body 0's state there from
/// `Rules::flight`.
#[test]
fn a_span_of_the_rules_meets_entries_at_the_first_tick_their_boxes_overlap() {
    let scene = crate::scene::builtin("bouncing", Some(8)).unwrap();
    let rules = Arc::new(Rules::new(&scene).unwrap());
    let side = rules.largest_side;
    let p0 = Vec3::new(1.0, 1.0, 1.0);
    let a0 = Anchor::at(3, moving(p0, Vec3::new(4.0, 0.0, 0.0)));
    let p1 = p0 + Vec3::new(6.0 * side, 0.3 * side, 0.1 * side);
    let a1 = Anchor::at(0, moving(p1, Vec3::new(-2.0, 0.0, 0.0)));
    let (from, to) = (3, 3 + (side / rules.dt).ceil() as Tick + 20);
    let sweep = rules.span(0, &a0, from, to);
    let span = SpanEntry {
        body: 0,
        anchor: a0,
        aabb: rules.span_aabb(&sweep),
    };
    let box0 = |t| rules.aabb(0, &rules.flight(&a0, t));
    let box1 = |t| rules.aabb(1, &rules.flight(&a1, t));
    for t in from..=to {
        assert_eq!(span.aabb.merge(&box0(t)), span.aabb, "tick {t}");
    }
    // The rules keep only pairs that touch (`Flight::touches`: rule 2's `in_contact`, which
    // also finds a meeting within the tick): the first tick where the boxes overlap and the
    // bodies touch. Their boxes overlap a tick or more before (the margins and the sweep), and
    // those ticks give no contact.
    let touch = |t| {
        box0(t).overlaps(&box1(t))
            && rules.in_contact(0, &rules.flight(&a0, t), 1, &rules.flight(&a1, t))
    };
    let first = (from..=to)
        .find(|&t| touch(t))
        .expect("the bodies meet within the span");
    let boxes = (from..=to)
        .find(|&t| box0(t).overlaps(&box1(t)))
        .expect("their boxes overlap first");
    assert!(
        boxes < first,
        "boxes overlap first at {boxes}, touch at {first}"
    );
    assert!(first > from + 5, "{first}");
    assert!((from..first).any(|t| span.aabb.overlaps(&box1(t))));
    let entries1: Vec<(Tick, [BodyEntry; 1])> = (0..=to)
        .map(|t| {
            let state = rules.flight(&a1, t);
            let aabb = rules.aabb(1, &state);
            (
                t,
                [BodyEntry {
                    body: 1,
                    aabb,
                    state,
                    asleep: false,
                }],
            )
        })
        .collect();
    let steps1 = steps_of(&entries1);
    let config = TvhtConfig::for_scene(rules.bodies(), side, 256).with_sleep_records(true);
    for &be in Backend::COMPILED {
        let table = || {
            Tvht::new(be, config)
                .unwrap()
                .with_flight(rules.clone())
                .unwrap()
        };
        // The entries first: the span stops at the first tick the boxes overlap.
        let t = table();
        assert_eq!(
            t.write_steps_until(1, 0, &steps1, |_| false).unwrap(),
            (steps1.len(), Vec::new())
        );
        let (last, c) = t.write_span(0, 1, (from, to), &[span], |_| true).unwrap();
        assert_eq!((last, keys(&c)), (first, vec![key(first, 0, 1)]));
        let s = rules.flight(&a0, first);
        assert_eq!((c[0].a.state, c[0].a.aabb), (s, box0(first)));
        assert_eq!(c[0].b.state, rules.flight(&a1, first));
        assert_eq!(kept(&t), [key(first, 0, 1)]);
        t.validate_at_rest().unwrap();
        // The span first: the entries' write stops at that tick.
        let t = table();
        assert_eq!(
            t.write_span(0, 1, (from, to), &[span], |_| true).unwrap(),
            (to, Vec::new())
        );
        let (n, c) = t.write_steps(1, &steps1).unwrap();
        assert_eq!((n as Tick, keys(&c)), (first + 1, vec![key(first, 0, 1)]));
        assert_eq!(c[0].a.state, s);
        t.validate_at_rest().unwrap();
    }
}

/// Two spans of the engine's rules that cross, refined by halving their common interval
/// (`Flight::sweep`): the contact is at exactly the first tick where the two bodies' per-tick
/// boxes overlap and they touch (a tick by tick scan of the two flights says which), whichever
/// span is written second, and that span stops there. Two bodies flying together, whose
/// spans' boxes overlap but never their per-tick boxes, give no contact.
#[test]
fn two_spans_of_the_rules_meet_at_the_first_tick_they_touch() {
    let scene = crate::scene::builtin("bouncing", Some(8)).unwrap();
    let rules = Arc::new(Rules::new(&scene).unwrap());
    let side = rules.largest_side;
    let p0 = Vec3::new(1.0, 1.0, 1.0);
    let config = TvhtConfig::for_scene(rules.bodies(), side, 256).with_sleep_records(true);
    let span = |body: BodyId, a: Anchor, (from, to): (Tick, Tick)| SpanEntry {
        body,
        anchor: a,
        aabb: rules.span_aabb(&rules.span(body as usize, &a, from, to)),
    };
    let mut met = 0;
    // Head-on and off-centre crossings, and body 1 three sides ahead of body 0 at the same
    // velocity (their spans' boxes overlap, their per-tick boxes never do).
    for (case, (lateral, ahead, v1)) in [(0.3f32, 8.0, -3.0f32), (0.9, 8.0, -3.0), (0.3, 3.0, 3.0)]
        .into_iter()
        .enumerate()
    {
        let a0 = Anchor::at(2, moving(p0, Vec3::new(3.0, 0.0, 0.0)));
        let p1 = p0 + Vec3::new(ahead * side, lateral * side, 0.1 * side);
        let a1 = Anchor::at(2, moving(p1, Vec3::new(v1, 0.0, 0.0)));
        let (from, to) = (3, 3 + (8.0 * side / (6.0 * rules.dt)).ceil() as Tick + 40);
        let (s0, s1) = (span(0, a0, (from, to)), span(1, a1, (from, to)));
        assert!(
            s0.aabb.overlaps(&s1.aabb),
            "case {case}: the spans' boxes overlap"
        );
        let touch = |t| {
            let (x, y) = (rules.flight(&a0, t), rules.flight(&a1, t));
            rules.aabb(0, &x).overlaps(&rules.aabb(1, &y)) && rules.in_contact(0, &x, 1, &y)
        };
        let first = (from..=to).find(|&t| touch(t));
        met += usize::from(first.is_some());
        for &be in Backend::COMPILED {
            for order in [[0usize, 1], [1, 0]] {
                let t = Tvht::new(be, config)
                    .unwrap()
                    .with_flight(rules.clone())
                    .unwrap();
                let spans = [s0, s1];
                let (a, b) = (spans[order[0]], spans[order[1]]);
                assert_eq!(
                    t.write_span(a.body, 1, (from, to), &[a], |_| true).unwrap(),
                    (to, Vec::new())
                );
                let (last, c) = t.write_span(b.body, 2, (from, to), &[b], |_| true).unwrap();
                match first {
                    Some(f) => {
                        assert_eq!((last, keys(&c)), (f, vec![key(f, 0, 1)]), "case {case}");
                        assert_eq!(c[0].a.state, rules.flight(&a0, f));
                        assert_eq!(c[0].b.state, rules.flight(&a1, f));
                    }
                    None => {
                        assert_eq!((last, c), (to, Vec::new()), "case {case}");
                        // Halving proved it without looking at a single tick.
                        assert_eq!(t.refinements(), (0, 0), "case {case}");
                    }
                }
                t.validate_at_rest().unwrap();
            }
        }
    }
    assert_eq!(
        met, 2,
        "the crossings touch, the bodies flying together do not"
    );
}
