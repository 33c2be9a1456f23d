//! The TVHT's exactly-once contract under concurrency (seed 000, Section 4: "contacts are not
//! reported twice to distinct entities", "invalidated contacts are not reported twice"),
//! running the real `timewarp::warp::Tvht` under each backend of the sync seam.
//!
//! Two entities' bodies overlap at the same tick; each box covers two cells, so every write
//! and delete is one section over two buckets (checked: the entry is stored twice).
//!
//! * `tvht_write_write_*`: entity 1 and entity 2 write concurrently. In every interleaving the
//!   contact is reported exactly once (to whichever wrote second), with both stored states,
//!   and recorded once; `validate_at_rest` holds after (every run counts as many holds as the
//!   buckets that hold it).
//! * `tvht_write_delete_*`: entity 1 writes and then deletes (a rollback) while entity 2
//!   writes. Every interleaving must give the contacts of one of the three sequential orders
//!   — `(write 1, delete 1, write 2)` report `(0, 1, 1)`, `(1, 1, 0)` or `(0, 0, 0)` — so a
//!   delete returns exactly the contacts it invalidates; after it no record is left and only
//!   entity 2's entry remains.
//!
//! * `tvht_sleep_write_*` (sleep records, issue #5): entity 1 puts body 1 to sleep over ticks
//!   `TICK - 1 ..= TICK + 1` (one record per cell) while entity 2 writes body 2 at `TICK`. The
//!   contact is reported exactly once: to the write if the record came first, else to the
//!   record, which then stops at `TICK`. (A nap names the cell's bucket of entries only once
//!   the cell's mark says entries may be there, "Marks" in `span.rs`: here, where the write
//!   came first.)
//! * `tvht_wake_delete_*`: with that contact recorded, entity 1 wakes body 1 from `TICK` (a
//!   rollback into its nap cuts the record) while entity 2 deletes its entry: exactly one of
//!   the two gives the contact back.
//!
//! Negative control of every model: `TIMEWARP_BROKEN=unguarded_tvht` runs each write, delete,
//! sleep and wake on copies read in one section and written back in another (no guard around
//! the whole). Loom must find, for `tvht_write_write_*`, the interleaving where the contact is
//! reported 0 times (both read before either wrote back: `TVHT WRITES REPORTED THE CONTACT 0
//! TIMES`); for `tvht_sleep_write_*` the same between the sleep record and the write (`TVHT
//! SLEEP AND WRITE REPORTED THE CONTACT 0 TIMES`); for `tvht_write_delete_*` the one where
//! a write-back of stale bucket copies wipes out entity 2's entry (`TVHT DELETE LEFT THE
//! WRONG ENTRIES []`); for `tvht_wake_delete_*` the one where the wake and the delete both
//! read the contact's record before either wrote back, so both give it back (`TVHT CONTACT
//! GIVEN BACK 2 TIMES`). `TIMEWARP_BROKEN=sleep_ignores_marks` (a nap trusts the marks of
//! entries it planned with: at first none, so it names no bucket of entries) must be caught
//! by `tvht_sleep_write_*`, where the write came between the nap's plan and its section (`TVHT
//! SLEEP AND WRITE REPORTED THE CONTACT 0 TIMES`).
//!
//! Preemption bounds: the lock models are explored exhaustively (12 and 20 executions, the
//! same from bound 4 to 30); the STM models at bound 3 (about 3,000 and 7,800 executions,
//! a few seconds).
#![cfg(all(loom, feature = "engine"))]

use glam::{Quat, Vec3};
use loom::thread;
use std::sync::Arc;
use timewarp::dynamics::BodyState;
use timewarp::geometry::Aabb;
use timewarp::sync::Backend;
use timewarp::warp::{BodyEntry, Contact, ContactKey, Tvht, TvhtConfig};
use timewarp_loom_tests::Outcomes;

/// LOOM_MAX_PREEMPTIONS of the lock-backend models (exhaustive: no execution preempts more).
const LOCKS_PREEMPTIONS: usize = 6;
/// LOOM_MAX_PREEMPTIONS of the STM-backend models.
const STM_PREEMPTIONS: usize = 3;

const TICK: u64 = 5;

fn entry(body: u32, min: [f32; 3], max: [f32; 3]) -> BodyEntry {
    BodyEntry {
        body,
        aabb: Aabb::new(Vec3::from(min), Vec3::from(max)),
        state: BodyState {
            position: Vec3::new(body as f32, 0.5, 0.5),
            rotation: Quat::IDENTITY,
            velocity: Vec3::new(0.0, -(body as f32), 0.0),
            angular_velocity: Vec3::ZERO,
        },
        asleep: false,
    }
}

/// Entity 1's body 1: cells (0,0,0) and (1,0,0).
fn b1() -> BodyEntry {
    entry(1, [0.2, 0.2, 0.2], [1.4, 0.8, 0.8])
}

/// Entity 2's body 2: the same two cells, overlapping body 1.
fn b2() -> BodyEntry {
    entry(2, [0.6, 0.3, 0.3], [1.7, 0.9, 0.9])
}

fn table(backend: Backend) -> Tvht {
    table_with(backend, false)
}

fn table_with(backend: Backend, sleep_records: bool) -> Tvht {
    let config = TvhtConfig {
        buckets: 16,
        cell_size: 1.0,
        max_cells_per_body: 8,
        span_ticks: 1,
        grid_offset: 0.0,
        sleep_records,
    };
    Tvht::new(backend, config).expect("valid TVHT configuration")
}

/// A reported or invalidated contact must be the pair (1, 2) at `TICK`, carrying both
/// bodies' written states whoever reported it.
fn check_contact(c: &Contact) {
    let key = ContactKey {
        tick: TICK,
        a: 1,
        b: 2,
    };
    assert!(
        c.key() == key
            && (c.a.entity, c.b.entity) == (1, 2)
            && c.a.state == b1().state
            && c.b.state == b2().state
            && c.a.aabb == b1().aabb
            && c.b.aabb == b2().aabb,
        "TVHT REPORTED A WRONG CONTACT: {c:?}"
    );
}

fn validate(t: &Tvht) {
    if let Err(e) = t.validate_at_rest() {
        panic!("TVHT INVARIANT BROKEN: {e}");
    }
}

fn bound(backend: Backend) -> usize {
    match backend {
        Backend::Locks => LOCKS_PREEMPTIONS,
        Backend::Stm => STM_PREEMPTIONS,
    }
}

fn write_write(name: &str, backend: Backend) {
    let outcomes = Outcomes::new(&["entity 2 wrote second", "entity 1 wrote second"]);
    let seen = outcomes.clone();
    timewarp_loom_tests::model_bounded(name, bound(backend), move || {
        let t = Arc::new(table(backend));
        let t2 = t.clone();
        let h = thread::spawn(move || t2.write(2, TICK, &[b2()]).expect("entity 2's write"));
        let c1 = t.write(1, TICK, &[b1()]).expect("entity 1's write");
        let c2 = h.join().unwrap();
        let n = c1.len() + c2.len();
        assert!(
            n == 1,
            "TVHT WRITES REPORTED THE CONTACT {n} TIMES (entity 1 got {}, entity 2 got {})",
            c1.len(),
            c2.len()
        );
        c1.iter().chain(&c2).for_each(check_contact);
        seen.saw(c1.len());
        let records = t.contacts();
        assert!(
            records
                == [ContactKey {
                    tick: TICK,
                    a: 1,
                    b: 2
                }],
            "TVHT WRITES RECORDED THE CONTACT {} TIMES",
            records.len()
        );
        assert_eq!(t.stored_entries(), 4, "each box covers two buckets");
        validate(&t);
    });
    outcomes.check_all_reached(name);
}

fn write_delete(name: &str, backend: Backend) {
    let outcomes = Outcomes::new(&[
        "(write 1, write 2, delete 1) = (0, 1, 1)",
        "(write 2, write 1, delete 1) = (1, 1, 0)",
        "(write 1, delete 1, write 2) = (0, 0, 0)",
    ]);
    let seen = outcomes.clone();
    timewarp_loom_tests::model_bounded(name, bound(backend), move || {
        let t = Arc::new(table(backend));
        let t2 = t.clone();
        let h = thread::spawn(move || {
            let w = t2.write(1, TICK, &[b1()]).expect("entity 1's write");
            let d = t2.delete(1, TICK, &[b1()]).expect("entity 1's delete");
            (w, d)
        });
        let w2 = t.write(2, TICK, &[b2()]).expect("entity 2's write");
        let (w1, d1) = h.join().unwrap();
        let outcome = (w1.len(), d1.len(), w2.len());
        match outcome {
            (0, 1, 1) => seen.saw(0),
            (1, 1, 0) => seen.saw(1),
            (0, 0, 0) => seen.saw(2),
            _ => panic!(
                "TVHT DELETE OUTCOME NOT SEQUENTIAL: (write 1, delete 1, write 2) got \
                 {outcome:?} contacts"
            ),
        }
        w1.iter().chain(&d1).chain(&w2).for_each(check_contact);
        let records = t.contacts();
        assert!(
            records.is_empty(),
            "TVHT DELETE LEFT CONTACT RECORDS {records:?}"
        );
        let entries = t.entries();
        assert!(
            entries.len() == 1 && entries[0].body == 2 && entries[0].entity == 2,
            "TVHT DELETE LEFT THE WRONG ENTRIES {entries:?}"
        );
        assert_eq!(t.stored_entries(), 2, "a box covers two buckets");
        validate(&t);
    });
    outcomes.check_all_reached(name);
}

/// A contact between body 1's sleep record and body 2's entry at `TICK`.
fn check_sleep_contact(c: &Contact) {
    assert!(
        c.key()
            == ContactKey {
                tick: TICK,
                a: 1,
                b: 2,
            }
            && c.a.asleep
            && c.a.tag == 7
            && c.a.state == b1().state
            && c.b.state == b2().state,
        "TVHT REPORTED A WRONG SLEEP CONTACT: {c:?}"
    );
}

fn sleep_write(name: &str, backend: Backend) {
    let outcomes = Outcomes::new(&["the write came second", "the sleep record came second"]);
    let seen = outcomes.clone();
    timewarp_loom_tests::model_bounded(name, bound(backend), move || {
        let t = Arc::new(table_with(backend, true));
        let t2 = t.clone();
        let h = thread::spawn(move || t2.write(2, TICK, &[b2()]).expect("entity 2's write"));
        let (last, c1) = t
            .sleep(1, 7, TICK - 1, TICK + 1, &[b1()])
            .expect("entity 1's sleep");
        let c2 = h.join().unwrap();
        let n = c1.len() + c2.len();
        assert!(
            n == 1,
            "TVHT SLEEP AND WRITE REPORTED THE CONTACT {n} TIMES (the record got {}, the write {})",
            c1.len(),
            c2.len()
        );
        assert_eq!(last, if c1.is_empty() { TICK + 1 } else { TICK });
        c1.iter().chain(&c2).for_each(check_sleep_contact);
        seen.saw(c1.len());
        let records = t.contacts();
        assert!(
            records.len() == 1,
            "TVHT SLEEP AND WRITE RECORDED THE CONTACT {} TIMES",
            records.len()
        );
        validate(&t);
    });
    outcomes.check_all_reached(name);
}

fn wake_delete(name: &str, backend: Backend) {
    let outcomes = Outcomes::new(&["the wake gave it back", "the delete gave it back"]);
    let seen = outcomes.clone();
    timewarp_loom_tests::model_bounded(name, bound(backend), move || {
        let t = Arc::new(table_with(backend, true));
        t.sleep(1, 7, TICK - 1, TICK + 1, &[b1()])
            .expect("entity 1's sleep");
        let c = t.write(2, TICK, &[b2()]).expect("entity 2's write");
        assert_eq!(c.len(), 1);
        let t2 = t.clone();
        let h = thread::spawn(move || t2.delete(2, TICK, &[b2()]).expect("entity 2's delete"));
        let w = t.wake(1, 7, &[b1()], TICK).expect("entity 1's wake");
        let d = h.join().unwrap();
        let n = w.len() + d.len();
        assert!(
            n == 1,
            "TVHT CONTACT GIVEN BACK {n} TIMES (the wake {}, the delete {})",
            w.len(),
            d.len()
        );
        w.iter().chain(&d).for_each(check_sleep_contact);
        seen.saw(d.len());
        let records = t.contacts();
        assert!(
            records.is_empty(),
            "TVHT WAKE OR DELETE LEFT CONTACT RECORDS {records:?}"
        );
        validate(&t);
    });
    outcomes.check_all_reached(name);
}

#[test]
fn tvht_sleep_write_locks() {
    sleep_write("tvht_sleep_write_locks", Backend::Locks);
}

#[test]
fn tvht_sleep_write_stm() {
    sleep_write("tvht_sleep_write_stm", Backend::Stm);
}

#[test]
fn tvht_wake_delete_locks() {
    wake_delete("tvht_wake_delete_locks", Backend::Locks);
}

#[test]
fn tvht_wake_delete_stm() {
    wake_delete("tvht_wake_delete_stm", Backend::Stm);
}

#[test]
fn tvht_write_write_locks() {
    write_write("tvht_write_write_locks", Backend::Locks);
}

#[test]
fn tvht_write_write_stm() {
    write_write("tvht_write_write_stm", Backend::Stm);
}

#[test]
fn tvht_write_delete_locks() {
    write_delete("tvht_write_delete_locks", Backend::Locks);
}

#[test]
fn tvht_write_delete_stm() {
    write_delete("tvht_write_delete_stm", Backend::Stm);
}
