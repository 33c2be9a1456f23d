//! TVHT span records (`timewarp::warp::tvht`, `span.rs`, issue #31) under concurrency: a
//! contact of a span is found once, by the second writer, refined to its tick, and given back
//! once by a cut, running the real `timewarp::warp::Tvht` under each backend of the sync seam.
//!
//! Bodies fly along x at y = z = 0.5 (a [`Line`] flight: one metre a tick times the anchor's
//! velocity, a box of half side 0.3), inside one cell (cells of 4 m) and one time slice (8
//! ticks), so every section names one bucket of entries and one of the record half (a span
//! first names the record half alone, and the bucket of entries once the cell's mark says
//! entries may be there: see "Marks" in `span.rs`). Body 1
//! (entity 1) flies over `TICK - 2 ..= TICK` from x = 0.5 at 1 m a tick.
//!
//! * `tvht_span_span_*`: while entity 1 writes body 1's span, entity 2 writes body 2's over
//!   `TICK ..= TICK + 2`, coming back from x = 2.7: their swept boxes overlap, their boxes at a
//!   tick only at `TICK` (body 1's last tick, body 2's first). The contact is reported exactly
//!   once, to the second writer, with both spans' states at `TICK`; body 2's span, written
//!   second, stops there (both stop at every contact); it is kept once (cutting both spans
//!   at their first ticks gives it back once), and `validate_at_rest` holds.
//! * `tvht_span_entry_*`: while entity 1 writes body 1's span, entity 2 writes body 2's
//!   entries at `TICK` and `TICK + 1` at x = 2.5 (a write that stops at its first contact).
//!   Exactly once; the entries' write stops after `TICK` if it got the contact; the cut and
//!   the delete afterwards give it back once.
//! * `tvht_cut_write_*`: body 1's span over `TICK - 1 ..= TICK + 1` (from x = 1 at half a
//!   metre a tick) is in the table; while entity 1 cuts it at `TICK` (a rollback), entity 2
//!   writes body 2's entries at `TICK - 1` and `TICK` at x = 1.5, which meet it at both.
//!   Every interleaving is one of the two sequential orders: the write first reports both
//!   contacts and the cut gives back the one at `TICK`; the cut first leaves the write the one
//!   at `TICK - 1`. Either way no contact is lost or doubled: what is reported less what is
//!   given back is the contact at `TICK - 1`, which the table keeps, once.
//!
//! Negative controls. `TIMEWARP_BROKEN=unguarded_tvht` runs every TVHT section on copies read
//! in one section and written back in another: loom must find, for `tvht_span_span_*` and
//! `tvht_span_entry_*`, the interleaving where both read before either wrote back, so that
//! neither reports the contact (`TVHT SPANS REPORTED THE CONTACT 0 TIMES`, `TVHT SPAN AND
//! ENTRY REPORTED THE CONTACT 0 TIMES`), and for `tvht_cut_write_*` the one where the write
//! sees the span uncut and the cut does not see the write's contact, so that the contact at
//! `TICK` is reported and never given back (`TVHT CUT AND WRITE LOST OR DOUBLED A
//! CONTACT`). `TIMEWARP_BROKEN=span_last_tick_unmet` (a span meets nothing at its last tick,
//! as a swept box that left it out would) must be caught by the first two: `TICK` is body 1's
//! last tick (for the span model, only where body 1's span is written second). And
//! `TIMEWARP_BROKEN=span_cut_spares_its_tick` (a cut gives back its contacts after the cut
//! tick only) by the third, where the write came first. `TIMEWARP_BROKEN=span_ignores_marks`
//! (a span trusts the marks of entries it planned with: at first none, so it names no bucket
//! of entries) must be caught by `tvht_span_entry_*`, where the entries were written between
//! the span's plan and its section (`TVHT SPAN AND ENTRY REPORTED THE CONTACT 0 TIMES`).
//! `TIMEWARP_BROKEN=span_anchor_unheld` (a span's write settles its anchor's holds as if no
//! bucket took it, so the anchor would be freed while buckets hold it) must be caught by
//! `tvht_span_span_*` in `validate_at_rest`, which counts every anchor's holds against the
//! buckets that hold it (`SPAN TABLE INVARIANT BROKEN`).
//!
//! Preemption bounds: the lock models are explored exhaustively, the STM models at bound 3.
#![cfg(all(loom, feature = "engine"))]

use glam::{Quat, Vec3};
use loom::thread;
use std::collections::BTreeSet;
use std::sync::Arc;
use timewarp::dynamics::BodyState;
use timewarp::geometry::Aabb;
use timewarp::sync::Backend;
use timewarp::warp::rules::Anchor;
use timewarp::warp::tvht::{Flight, SpanEntry};
use timewarp::warp::{BodyEntry, BodyId, Contact, ContactKey, Step, Tick, Tvht, TvhtConfig};
use timewarp_loom_tests::Outcomes;

/// LOOM_MAX_PREEMPTIONS of the lock-backend models (exhaustive: no execution preempts more).
const LOCKS_PREEMPTIONS: usize = 6;
/// LOOM_MAX_PREEMPTIONS of the STM-backend models.
const STM_PREEMPTIONS: usize = 3;

const TICK: Tick = 5;
const HALF: f32 = 0.3;

/// A body flies straight from its anchor, `velocity` metres a tick, in a box of half side
/// [`HALF`].
struct Line;

impl Flight for Line {
    fn state(&self, _body: BodyId, a: &Anchor, tick: Tick) -> BodyState {
        let n = (tick - a.tick) as f32;
        BodyState {
            position: a.state.position + a.state.velocity * n,
            ..a.state
        }
    }

    fn aabb(&self, _body: BodyId, s: &BodyState) -> Aabb {
        Aabb::new(
            s.position - Vec3::splat(HALF),
            s.position + Vec3::splat(HALF),
        )
    }
}

fn at(x: f32, vx: f32) -> BodyState {
    BodyState {
        position: Vec3::new(x, 0.5, 0.5),
        rotation: Quat::IDENTITY,
        velocity: Vec3::new(vx, 0.0, 0.0),
        angular_velocity: Vec3::ZERO,
    }
}

/// Body `body`'s span over `from..=to` from `x` at `tick`, at `vx` a tick, in the box of its
/// sweep.
fn span(body: BodyId, (x, vx): (f32, f32), from: Tick, to: Tick) -> SpanEntry {
    let anchor = Anchor::at(from, at(x, vx));
    let aabb = (from..=to)
        .map(|t| Line.aabb(body, &Line.state(body, &anchor, t)))
        .reduce(|a, b| a.merge(&b))
        .expect("a span has a tick");
    SpanEntry { body, anchor, aabb }
}

/// Body 1's span of the first two models: x = 0.5, 1.5, 2.5 at `TICK - 2 ..= TICK`.
fn s1() -> SpanEntry {
    span(1, (0.5, 1.0), TICK - 2, TICK)
}

/// Body 2's span of `tvht_span_span_*`: x = 2.7, 1.7, 0.7 at `TICK ..= TICK + 2`.
fn s2() -> SpanEntry {
    span(2, (2.7, -1.0), TICK, TICK + 2)
}

/// Body 2 at rest at `x`.
fn still(x: f32) -> BodyEntry {
    let state = at(x, 0.0);
    BodyEntry {
        body: 2,
        aabb: Line.aabb(2, &state),
        state,
        asleep: false,
    }
}

fn table(backend: Backend) -> Tvht {
    let config = TvhtConfig {
        buckets: 16,
        cell_size: 4.0,
        max_cells_per_body: 8,
        span_ticks: 8,
        grid_offset: 0.0,
        sleep_records: true,
    };
    Tvht::new(backend, config)
        .expect("valid TVHT configuration")
        .with_flight(Arc::new(Line))
        .expect("a table with a record half")
}

fn validate(t: &Tvht) {
    if let Err(e) = t.validate_at_rest() {
        panic!("SPAN TABLE INVARIANT BROKEN: {e}");
    }
}

fn bound(backend: Backend) -> usize {
    match backend {
        Backend::Locks => LOCKS_PREEMPTIONS,
        Backend::Stm => STM_PREEMPTIONS,
    }
}

/// A contact of body 1 (`tag` 7, its span's state at the tick) with body 2, at `tick`.
fn check_contact(c: &Contact, tick: Tick, b2: &BodyState) {
    let s1 = Line.state(1, &span(1, (0.5, 1.0), TICK - 2, TICK).anchor, tick);
    assert!(
        c.key() == ContactKey { tick, a: 1, b: 2 }
            && (c.a.entity, c.b.entity) == (1, 2)
            && c.a.tag == 7
            && c.a.state == s1
            && c.a.aabb == Line.aabb(1, &s1)
            && c.b.state == *b2,
        "TVHT REPORTED A WRONG SPAN CONTACT: {c:?}"
    );
}

fn span_span(name: &str, backend: Backend) {
    let outcomes = Outcomes::new(&["entity 2 wrote second", "entity 1 wrote second"]);
    let seen = outcomes.clone();
    timewarp_loom_tests::model_bounded(name, bound(backend), move || {
        let t = Arc::new(table(backend));
        let t2 = t.clone();
        let h = thread::spawn(move || {
            t2.write_span(2, 8, (TICK, TICK + 2), &[s2()], |_| true)
                .expect("entity 2's span")
        });
        let (last1, c1) = t
            .write_span(1, 7, (TICK - 2, TICK), &[s1()], |_| true)
            .expect("entity 1's span");
        let (last2, c2) = h.join().unwrap();
        let n = c1.len() + c2.len();
        assert!(
            n == 1,
            "TVHT SPANS REPORTED THE CONTACT {n} TIMES (entity 1 got {}, entity 2 got {})",
            c1.len(),
            c2.len()
        );
        let s2_at = Line.state(2, &s2().anchor, TICK);
        c1.iter()
            .chain(&c2)
            .for_each(|c| check_contact(c, TICK, &s2_at));
        assert!(
            last1 == TICK && last2 == if c2.is_empty() { TICK + 2 } else { TICK },
            "TVHT SPAN DID NOT STOP AT ITS CONTACT: {last1}, {last2}"
        );
        seen.saw(c1.len());
        validate(&t);
        // Kept once: the cuts of both spans at their first ticks give it back once.
        let back1 = t.cut_span(1, 7, &[s1()], TICK - 2).expect("cut of span 1");
        let back2 = t.cut_span(2, 8, &[s2()], TICK).expect("cut of span 2");
        assert!(
            back1.len() + back2.len() == 1,
            "TVHT SPAN CONTACT KEPT {} TIMES",
            back1.len() + back2.len()
        );
        validate(&t);
    });
    outcomes.check_all_reached(name);
}

fn span_entry(name: &str, backend: Backend) {
    let outcomes = Outcomes::new(&["the entries came second", "the span came second"]);
    let seen = outcomes.clone();
    timewarp_loom_tests::model_bounded(name, bound(backend), move || {
        let t = Arc::new(table(backend));
        let t2 = t.clone();
        let h = thread::spawn(move || {
            let b = [still(2.5)];
            let steps = [
                Step {
                    tick: TICK,
                    bodies: &b,
                },
                Step {
                    tick: TICK + 1,
                    bodies: &b,
                },
            ];
            t2.write_steps(2, &steps).expect("entity 2's entries")
        });
        let (last, c1) = t
            .write_span(1, 7, (TICK - 2, TICK), &[s1()], |_| true)
            .expect("entity 1's span");
        let (steps, c2) = h.join().unwrap();
        let n = c1.len() + c2.len();
        assert!(
            n == 1,
            "TVHT SPAN AND ENTRY REPORTED THE CONTACT {n} TIMES (the span got {}, the entries {})",
            c1.len(),
            c2.len()
        );
        c1.iter()
            .chain(&c2)
            .for_each(|c| check_contact(c, TICK, &still(2.5).state));
        assert!(
            last == TICK && steps == if c2.is_empty() { 2 } else { 1 },
            "TVHT SPAN OR ENTRIES DID NOT STOP AT THE CONTACT: {last}, {steps} steps"
        );
        seen.saw(c1.len());
        validate(&t);
        let back1 = t
            .cut_span(1, 7, &[s1()], TICK - 2)
            .expect("cut of the span");
        let back2 = t
            .delete(2, TICK, &[still(2.5)])
            .expect("delete of the entry");
        assert!(
            back1.len() + back2.len() == 1,
            "TVHT SPAN AND ENTRY CONTACT KEPT {} TIMES",
            back1.len() + back2.len()
        );
        validate(&t);
    });
    outcomes.check_all_reached(name);
}

fn cut_write(name: &str, backend: Backend) {
    let outcomes = Outcomes::new(&["the write came first", "the cut came first"]);
    let seen = outcomes.clone();
    timewarp_loom_tests::model_bounded(name, bound(backend), move || {
        let t = Arc::new(table(backend));
        let s = span(1, (1.0, 0.5), TICK - 1, TICK + 1);
        let (last, c) = t
            .write_span(1, 7, (TICK - 1, TICK + 1), &[s], |_| true)
            .expect("entity 1's span");
        assert!(
            last == TICK + 1 && c.is_empty(),
            "TVHT SPAN BEFORE THE RACE: {last}, {c:?}"
        );
        let t2 = t.clone();
        let h = thread::spawn(move || {
            let b = [still(1.5)];
            let steps = [
                Step {
                    tick: TICK - 1,
                    bodies: &b,
                },
                Step {
                    tick: TICK,
                    bodies: &b,
                },
            ];
            t2.write_steps_until(2, 0, &steps, |_| false)
                .expect("entity 2's entries")
        });
        let back = t.cut_span(1, 7, &[s], TICK).expect("entity 1's cut");
        let (steps, reported) = h.join().unwrap();
        let keys = |c: &[Contact]| c.iter().map(Contact::key).collect::<Vec<_>>();
        let (r, b) = (keys(&reported), keys(&back));
        let left: BTreeSet<ContactKey> = r.iter().filter(|k| !b.contains(k)).copied().collect();
        let key = |tick| ContactKey { tick, a: 1, b: 2 };
        let sequential = (r == [key(TICK - 1), key(TICK)] && b == [key(TICK)])
            || (r == [key(TICK - 1)] && b.is_empty());
        assert!(
            sequential && steps == 2 && left == BTreeSet::from([key(TICK - 1)]),
            "TVHT CUT AND WRITE LOST OR DOUBLED A CONTACT: reported {r:?}, given back {b:?} \
             ({steps} steps)"
        );
        for c in reported.iter() {
            let s1 = Line.state(1, &s.anchor, c.tick());
            assert!(
                c.a.state == s1 && c.a.tag == 7 && c.b.state == still(1.5).state,
                "TVHT REPORTED A WRONG CONTACT OF A CUT SPAN: {c:?}"
            );
        }
        seen.saw(usize::from(back.is_empty()));
        validate(&t);
        // The table keeps the contact at `TICK - 1`, once: the entries' delete gives it back.
        let b = [still(1.5)];
        let steps = [
            Step {
                tick: TICK - 1,
                bodies: &b,
            },
            Step {
                tick: TICK,
                bodies: &b,
            },
        ];
        let gone = keys(&t.delete_steps(2, &steps).expect("entity 2's delete"));
        assert!(
            gone == [key(TICK - 1)],
            "TVHT CUT LEFT THE WRONG CONTACTS: the delete gave back {gone:?}"
        );
        validate(&t);
    });
    outcomes.check_all_reached(name);
}

#[test]
fn tvht_span_span_locks() {
    span_span("tvht_span_span_locks", Backend::Locks);
}

#[test]
fn tvht_span_span_stm() {
    span_span("tvht_span_span_stm", Backend::Stm);
}

#[test]
fn tvht_span_entry_locks() {
    span_entry("tvht_span_entry_locks", Backend::Locks);
}

#[test]
fn tvht_span_entry_stm() {
    span_entry("tvht_span_entry_stm", Backend::Stm);
}

#[test]
fn tvht_cut_write_locks() {
    cut_write("tvht_cut_write_locks", Backend::Locks);
}

#[test]
fn tvht_cut_write_stm() {
    cut_write("tvht_cut_write_stm", Backend::Stm);
}
