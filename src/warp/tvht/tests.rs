//! # Unit tests of the table's behaviour
//!
//! Writes and deletes between entities (exactly once, the second writer, stops at the first
//! contact), refusals without effect, the sweeps and the room they give back, the ledger,
//! sleep records and their contacts, and random operations checked against `validate` after
//! each. The pure parts (cells, plans) are tested beside their code; `tests/tvht.rs` holds the
//! table to a sequential model, and the loom models in `loom-tests/` check it under
//! concurrency.

use super::runs::Snapshot;
use super::*;
use crate::geometry::Aabb;
use glam::{Quat, Vec3};
use std::collections::BTreeSet;

fn state(x: f32) -> BodyState {
    BodyState {
        position: Vec3::new(x, 0.0, 0.0),
        rotation: Quat::IDENTITY,
        velocity: Vec3::ZERO,
        angular_velocity: Vec3::ZERO,
    }
}

fn cube(body: BodyId, c: Vec3, h: f32) -> BodyEntry {
    BodyEntry {
        body,
        aabb: Aabb::new(c - Vec3::splat(h), c + Vec3::splat(h)),
        state: state(c.x),
        asleep: false,
    }
}

fn config(buckets: usize) -> TvhtConfig {
    TvhtConfig {
        buckets,
        cell_size: 1.0,
        max_cells_per_body: 64,
        span_ticks: 4,
        grid_offset: 0.0,
        sleep_records: false,
    }
}

#[test]
fn second_writer_gets_the_contact_once_even_across_many_cells() {
    for &be in Backend::COMPILED {
        // 2 buckets: many cells collide in one bucket, the hardest case for exactly-once.
        for buckets in [2, 1024] {
            let t = Tvht::new(be, config(buckets)).unwrap();
            let a = cube(1, Vec3::new(0.5, 0.5, 0.5), 0.9); // covers 2x2x2 cells
            let b = cube(2, Vec3::new(0.7, 0.6, 0.4), 0.9);
            assert!(t.write(10, 5, &[a]).unwrap().is_empty());
            // Another tick, same place: no contact.
            assert!(t.write(20, 6, &[b]).unwrap().is_empty());
            let c = t.write(20, 5, &[b]).unwrap();
            assert_eq!(c.len(), 1);
            assert_eq!(
                c[0].key(),
                ContactKey {
                    tick: 5,
                    a: 1,
                    b: 2
                }
            );
            assert_eq!((c[0].a.state, c[0].b.state), (a.state, b.state));
            assert_eq!(c[0].other(20).unwrap().body, 1);
            assert_eq!(
                t.contacts(),
                vec![ContactKey {
                    tick: 5,
                    a: 1,
                    b: 2
                }]
            );
            t.validate_at_rest().unwrap();
            // Delete the first: returns the contact once; re-write reports it again.
            let d = t.delete(10, 5, &[a]).unwrap();
            assert_eq!(d.len(), 1);
            assert!(t.contacts().is_empty());
            t.validate_at_rest().unwrap();
            assert_eq!(t.write(10, 5, &[a]).unwrap().len(), 1);
            assert_eq!(t.delete(20, 5, &[b]).unwrap().len(), 1);
            assert!(t.delete(20, 5, &[b]).is_err());
            t.validate_at_rest().unwrap();
            assert_eq!(t.entries().len(), 2);
        }
    }
}

#[test]
fn same_entity_never_contacts_itself_and_touching_faces_do() {
    let t = Tvht::new(Backend::default(), config(64)).unwrap();
    let a = cube(1, Vec3::ZERO, 0.5);
    let b = cube(2, Vec3::new(1.0, 0.0, 0.0), 0.5); // touches a's face at x = 0.5
    assert!(t.write(1, 0, &[a, b]).unwrap().is_empty());
    let c = cube(3, Vec3::new(2.0, 0.0, 0.0), 0.5);
    let r = t.write(2, 0, &[c]).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(
        r[0].key(),
        ContactKey {
            tick: 0,
            a: 2,
            b: 3
        }
    );
    t.validate_at_rest().unwrap();
}

#[test]
fn write_steps_stops_at_the_first_contact() {
    let t = Tvht::new(Backend::default(), config(256)).unwrap();
    let far = cube(1, Vec3::new(10.0, 0.0, 0.0), 0.4);
    assert!(t.write(1, 3, &[far]).unwrap().is_empty());
    let s: Vec<[BodyEntry; 1]> = (0..5)
        .map(|i| [cube(2, Vec3::new(6.0 + i as f32, 0.0, 0.0), 0.4)])
        .collect();
    let steps: Vec<Step<'_>> = s
        .iter()
        .enumerate()
        .map(|(i, b)| Step {
            tick: i as Tick,
            bodies: b,
        })
        .collect();
    // Only at tick 4 would body 2 (x = 10) meet body 1 — but body 1 is at tick 3.
    let (n, c) = t.write_steps(2, &steps).unwrap();
    assert_eq!((n, c.len()), (5, 0));
    t.delete_steps(2, &steps).unwrap();
    assert!(t.write(1, 4, &[far]).unwrap().is_empty());
    let (n, c) = t.write_steps(2, &steps).unwrap();
    assert_eq!(
        (n, c[0].key()),
        (
            5,
            ContactKey {
                tick: 4,
                a: 1,
                b: 2
            }
        )
    );
    let near = cube(1, Vec3::new(7.0, 0.0, 0.0), 0.4);
    t.delete_steps(2, &steps).unwrap();
    assert!(t.write(1, 1, &[near]).unwrap().is_empty());
    let (n, c) = t.write_steps(2, &steps).unwrap();
    assert_eq!((n, c.len()), (2, 1));
    assert_eq!(t.entries().iter().filter(|e| e.body == 2).count(), 2);
    t.validate_at_rest().unwrap();
    // Writing until a contact that matters: body 2 meets body 1 at ticks 1 and 4; only the
    // second stops the write, and both contacts come back (each recorded once).
    t.delete_steps(2, &steps[..2]).unwrap();
    let key = |tick| ContactKey { tick, a: 1, b: 2 };
    let (n, c) = t
        .write_steps_until(2, 0, &steps, |c| c.tick() == 4)
        .unwrap();
    assert_eq!(n, 5);
    assert_eq!(
        c.iter().map(Contact::key).collect::<Vec<_>>(),
        [key(1), key(4)]
    );
    t.delete_steps(2, &steps).unwrap();
    let (n, c) = t
        .write_steps_until(2, 0, &steps, |c| c.tick() == 1)
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(c.iter().map(Contact::key).collect::<Vec<_>>(), [key(1)]);
    assert_eq!(t.contacts(), [key(1)]);
    t.validate_at_rest().unwrap();
}

/// A writer's buffers carry nothing from one request to the next: requests of one body
/// and of groups of changing sizes, some refused (duplicates, a NaN box), written through
/// one set of buffers, leave the table as fresh buffers do, with the same answers.
#[test]
fn a_writers_buffers_carry_nothing_over() {
    for &be in Backend::COMPILED {
        let (fresh, reused) = (
            Tvht::new(be, config(16)).unwrap(),
            Tvht::new(be, config(16)).unwrap(),
        );
        let mut bufs = WriteBuffers::default();
        let mut rng = crate::scene::SplitMix64::new(7);
        let mut next = |n: u64| rng.next_u64() % n;
        let mut lvt = [0u64; 4];
        let mut last: [Option<Vec<BodyEntry>>; 4] = Default::default();
        let mut refused = 0;
        for round in 0..300 {
            let entity = next(4) as EntityId;
            // Entity e has bodies 10 e .. 10 e + 3; a request names 1 to 4 of them.
            let width = 1 + next(4) as usize;
            let ticks = 1 + next(6);
            let mut steps_bodies = Vec::new();
            for k in 0..ticks {
                let bodies: Vec<BodyEntry> = (0..width)
                    .map(|j| {
                        let c = Vec3::new(
                            next(6) as f32 * 0.5,
                            (lvt[entity as usize] + k) as f32 * 0.1,
                            j as f32 * 0.9,
                        );
                        let mut b = cube(10 * entity as BodyId + j as BodyId, c, 0.4);
                        if next(50) == 0 {
                            b.aabb.max.y = f32::NAN;
                        }
                        b
                    })
                    .collect();
                steps_bodies.push(bodies);
            }
            // Now and then a request starts with the entity's last step again: a
            // duplicate, refused in the section (the same boxes, so the same buckets).
            let mut first = lvt[entity as usize] + 1;
            if let (0, Some(l)) = (next(8), &last[entity as usize]) {
                steps_bodies.insert(0, l.clone());
                first -= 1;
            }
            let steps: Vec<Step<'_>> = steps_bodies
                .iter()
                .enumerate()
                .map(|(k, bodies)| Step {
                    tick: first + k as Tick,
                    bodies,
                })
                .collect();
            let stops = |c: &Contact| c.tick() % 3 == 0;
            let a = fresh.write_steps_until(entity, round, &steps, stops);
            let b = reused.write_steps_buffered(&mut bufs, entity, round, &steps, stops);
            assert_eq!(a, b, "round {round}");
            refused += usize::from(a.is_err());
            if let Ok((n, _)) = a {
                lvt[entity as usize] = first + n as Tick - 1;
                last[entity as usize] = Some(steps_bodies[n - 1].clone());
            }
        }
        assert_eq!(fresh.entries(), reused.entries());
        assert_eq!(fresh.contacts(), reused.contacts());
        assert!(!fresh.contacts().is_empty(), "the writes met each other");
        assert!(refused > 20, "{refused} requests refused");
        reused.validate_at_rest().unwrap();
    }
}

#[test]
fn bad_input_is_refused_without_effect() {
    let t = Tvht::new(Backend::default(), config(64)).unwrap();
    let a = cube(1, Vec3::ZERO, 0.5);
    t.write(1, 0, &[a]).unwrap();
    let mut nan = a;
    nan.aabb.min.x = f32::NAN;
    assert_eq!(
        t.write(2, 0, &[nan]),
        Err(TvhtError::BadAabb { body: 1, tick: 0 })
    );
    let huge = cube(3, Vec3::ZERO, 100.0);
    assert!(matches!(
        t.write(2, 0, &[huge]),
        Err(TvhtError::TooManyCells { .. })
    ));
    // 2^22 x 2^21 x 2^21 cells: 2^64, which a product in u64 took to 0 (a panic in a
    // debug build, and in a release build a box accepted as covering no cells).
    let mut vast = a;
    vast.aabb.min = Vec3::ZERO;
    vast.aabb.max = Vec3::new(4_194_303.5, 2_097_151.5, 2_097_151.5);
    assert_eq!(
        t.write(2, 0, &[vast]),
        Err(TvhtError::TooManyCells {
            body: 1,
            tick: 0,
            cells: u64::MAX,
            max: 64
        })
    );
    let far = cube(3, Vec3::splat(2.0e9), 0.5);
    assert!(matches!(
        t.write(2, 0, &[far]),
        Err(TvhtError::BadAabb { .. })
    ));
    assert_eq!(
        t.write(1, 0, &[a]),
        Err(TvhtError::Duplicate { body: 1, tick: 0 })
    );
    let b = cube(2, Vec3::ZERO, 0.5);
    // Batch with one bad body: nothing written.
    assert!(t.write(2, 0, &[b, a]).is_err());
    assert_eq!(t.entries().len(), 1);
    assert_eq!(
        t.delete(2, 0, &[a]),
        Err(TvhtError::NotFound {
            entity: 2,
            body: 1,
            tick: 0
        })
    );
    let mut moved = a;
    moved.aabb.max.x += 0.01;
    assert_eq!(
        t.delete(1, 0, &[moved]),
        Err(TvhtError::BoundsMismatch { body: 1, tick: 0 })
    );
    assert!(Tvht::new(Backend::default(), config(3)).is_err());
    let mut c = config(4);
    c.cell_size = 0.0;
    assert!(Tvht::new(Backend::default(), c).is_err());
    for offset in [-0.1, 1.0, f32::NAN] {
        let c = TvhtConfig {
            grid_offset: offset,
            ..config(4)
        };
        assert!(
            matches!(Tvht::new(Backend::default(), c), Err(TvhtError::Config(m)) if m.contains("grid offset")),
            "grid offset {offset}"
        );
    }
    t.validate_at_rest().unwrap();
}

/// Regression: a crowded moment must not leave its room behind in the buckets once swept
/// (the lock backend changes buckets in place; the heap of long runs grew without bound).
#[test]
fn a_swept_bucket_gives_its_room_back() {
    for &backend in Backend::COMPILED {
        let t = Tvht::new(backend, config(64)).unwrap();
        // 400 bodies crowd one cell for 16 ticks, then nothing: one bucket per tick slice.
        for tick in 0..16 {
            let crowd: Vec<BodyEntry> = (0..400).map(|b| cube(b, Vec3::splat(0.5), 0.1)).collect();
            t.write(0, tick, &crowd).unwrap();
        }
        assert!(t.reserved() >= 16 * 400, "{backend:?}: {}", t.reserved());
        t.prune_before(16);
        assert_eq!(t.stored_entries(), 0);
        assert_eq!(t.reserved(), 0, "{backend:?}: room kept by emptied buckets");
    }
}

/// Regression: a sweep used to leave an emptied bucket up to 8 entries of room (1 KiB),
/// so a run that passes through many cells ended with every bucket holding some: on
/// `parallel` 2000 (1 s, one worker, locks) RSS crept up for the whole run, and peak RSS
/// fell from 220 MB to 175 MB with the fix.
#[test]
fn buckets_touched_once_keep_nothing_after_the_sweep() {
    for &backend in Backend::COMPILED {
        let t = Tvht::new(backend, config(1024)).unwrap();
        // One body moving through 300 cells, a few ticks in each: small, short lists.
        for tick in 0..900 {
            let x = (tick / 3) as f32 * 2.0 + 0.5;
            t.write(0, tick, &[cube(1, Vec3::new(x, 0.5, 0.5), 0.1)])
                .unwrap();
        }
        assert!(t.reserved() >= 900, "{backend:?}: {}", t.reserved());
        t.prune_before(900);
        assert_eq!(t.stored_entries(), 0);
        assert_eq!(t.reserved(), 0, "{backend:?}: room kept by emptied buckets");
    }
}

#[test]
fn prune_reclaims_behind_the_floor() {
    let t = Tvht::new(Backend::default(), config(128)).unwrap();
    for tick in 0..20 {
        t.write(1, tick, &[cube(1, Vec3::ZERO, 0.3)]).unwrap();
        t.write(2, tick, &[cube(2, Vec3::new(0.2, 0.0, 0.0), 0.3)])
            .unwrap();
    }
    assert_eq!(t.contacts().len(), 20);
    let stored = t.stored_entries();
    let removed = t.prune_before(15);
    assert_eq!(stored - removed, t.stored_entries());
    assert!(removed >= 30);
    assert_eq!(t.floor(), 15);
    assert_eq!(t.contacts().len(), 5);
    assert_eq!(t.entries().len(), 10);
    assert_eq!(
        t.write(1, 14, &[cube(1, Vec3::ZERO, 0.3)]),
        Err(TvhtError::BehindFloor {
            tick: 14,
            floor: 15
        })
    );
    t.prune_before(3); // never lowers
    assert_eq!(t.floor(), 15);
    // Round-robin steps: after a whole table's worth, nothing before 18 is left.
    let stored = t.stored_entries();
    let removed: usize = (0..16).map(|_| t.prune_step(18, 8)).sum();
    assert_eq!(stored - removed, t.stored_entries());
    assert!(t.entries().iter().all(|e| e.tick >= 18));
    t.validate_at_rest().unwrap();
}

/// The ledger: whatever writes and naps put in buckets is swept once the floor passes its
/// slice, though those buckets are never written again, and the ledger itself stays short.
#[test]
fn the_ledger_sweeps_what_writes_and_naps_leave_behind() {
    for &be in Backend::COMPILED {
        let t = Tvht::new(be, sleeping(1024)).unwrap();
        // Body 2 naps at the origin for ticks 0..=39; body 1 flies through it along x,
        // into a new cell every other tick: most buckets it writes get nothing more.
        let asleep = BodyEntry {
            asleep: true,
            ..cube(2, Vec3::ZERO, 0.3)
        };
        assert_eq!(t.sleep(20, 7, 0, 39, &[asleep]).unwrap().0, 39);
        let mut met = 0;
        for tick in 0..200 {
            let x = -5.0 + tick as f32 * 0.5;
            met += t
                .write(1, tick, &[cube(1, Vec3::new(x, 0.0, 0.0), 0.3)])
                .unwrap()
                .len();
            if tick < 8 || tick % 4 != 0 {
                continue;
            }
            let floor = tick - 8;
            t.prune_touched(floor);
            assert_eq!(t.floor(), floor);
            // Nothing is left from the slices wholly behind the floor (span 4).
            let start = floor & !3;
            let snap = Snapshot::take(&t.table);
            for b in snap.buckets() {
                assert!(
                    b.entries(snap.look()).all(|e| e.tick >= start),
                    "{be:?} {floor}"
                );
                assert!(b.contacts.iter().all(|c| c.tick >= start));
                assert!(b.records.iter().all(|r| r.until > start), "{be:?} {floor}");
                assert!(b.woken.iter().all(|c| c.awake.tick >= start));
            }
            // At most 16 buckets a write since then (its 8 cells, and their sleep buckets
            // when it meets the record), and until the nap is behind, its 8 sleep buckets
            // (the others it only looked at).
            let nap = if start < 40 { 8 } else { 0 };
            assert!(
                t.noted() <= 16 * (tick - start + 1) as usize + nap,
                "{}",
                t.noted()
            );
        }
        assert!(met > 0, "body 1 met the sleep record on its way");
        t.prune_touched(1000);
        assert!(
            Snapshot::take(&t.table)
                .buckets()
                .iter()
                .all(|b| b.runs.is_empty()
                    && b.contacts.is_empty()
                    && b.records.is_empty()
                    && b.woken.is_empty())
        );
        assert_eq!(t.noted(), 0);
        t.validate_at_rest().unwrap();
    }
}

fn sleeping(buckets: usize) -> TvhtConfig {
    config(buckets).with_sleep_records(true)
}

fn key(tick: Tick, a: BodyId, b: BodyId) -> ContactKey {
    ContactKey { tick, a, b }
}

#[test]
fn a_sleep_record_meets_an_awake_entry_once_whichever_comes_second() {
    for &be in Backend::COMPILED {
        for buckets in [2, 1024] {
            let t = Tvht::new(be, sleeping(buckets)).unwrap();
            let s = cube(1, Vec3::new(0.5, 0.5, 0.5), 0.9); // 2x2x2 cells
            let a = cube(2, Vec3::new(0.7, 0.6, 0.4), 0.9);
            // The entry first: the record stops at its tick and reports it.
            assert!(t.write(20, 5, &[a]).unwrap().is_empty());
            let (last, c) = t.sleep(10, 7, 3, 9, &[s]).unwrap();
            assert_eq!(last, 5);
            assert_eq!(
                c.iter().map(Contact::key).collect::<Vec<_>>(),
                [key(5, 1, 2)]
            );
            assert_eq!((c[0].a.state, c[0].b.state), (s.state, a.state));
            assert!(c[0].a.asleep && !c[0].b.asleep);
            assert_eq!((c[0].a.tag, c[0].a.entity), (7, 10));
            t.validate_at_rest().unwrap();
            // Extended past it: nothing more to meet.
            assert_eq!(t.sleep(10, 7, 6, 9, &[s]).unwrap(), (9, Vec::new()));
            t.validate_at_rest().unwrap();
            // The record first: the entry's write reports it; an asleep entry meets nothing.
            let c = t.write(20, 8, &[a]).unwrap();
            assert_eq!(
                c.iter().map(Contact::key).collect::<Vec<_>>(),
                [key(8, 1, 2)]
            );
            assert_eq!(c[0].a.tag, 7);
            let mut dozing = cube(3, Vec3::new(0.6, 0.5, 0.5), 0.9);
            dozing.asleep = true;
            let c = t.write(30, 8, &[dozing]).unwrap();
            assert_eq!(
                c.iter().map(Contact::key).collect::<Vec<_>>(),
                [key(8, 2, 3)]
            );
            assert_eq!(t.contacts(), [key(5, 1, 2), key(8, 1, 2), key(8, 2, 3)]);
            t.validate_at_rest().unwrap();
            // A body is either in a record or in an entry at a tick, never both.
            assert!(matches!(
                t.write(10, 4, &[s]),
                Err(TvhtError::Duplicate { body: 1, tick: 4 })
            ));
            assert!(matches!(
                t.sleep(20, 1, 6, 9, &[a]),
                Err(TvhtError::Duplicate { body: 2, tick: 8 })
            ));
            // Deleting the entry gives the contact back once.
            let d = t.delete(20, 8, &[a]).unwrap();
            assert_eq!(
                d.iter().map(Contact::key).collect::<Vec<_>>(),
                [key(8, 1, 2), key(8, 2, 3)]
            );
            assert!(t.delete(20, 8, &[a]).is_err());
            t.validate_at_rest().unwrap();
            // Waking at 5 cuts the record to 3..5 and gives back its contact at 5.
            let w = t.wake(10, 7, &[s], 5).unwrap();
            assert_eq!(
                w.iter().map(Contact::key).collect::<Vec<_>>(),
                [key(5, 1, 2)]
            );
            assert!(t.contacts().is_empty());
            t.validate_at_rest().unwrap();
            // The body may now be written at 5, or sleep again from 5 under a new tag.
            assert_eq!(t.write(10, 5, &[s]).unwrap().len(), 1);
            assert!(t.sleep(10, 8, 5, 6, &[s]).is_err());
            assert_eq!(t.sleep(10, 8, 6, 12, &[s]).unwrap(), (12, Vec::new()));
            t.validate_at_rest().unwrap();
            // Waking before a record's start removes it.
            assert!(t.wake(10, 8, &[s], 6).unwrap().is_empty());
            assert!(t.wake(10, 8, &[s], 6).is_err());
            t.validate_at_rest().unwrap();
        }
    }
}

#[test]
fn sleep_records_refuse_bad_requests_without_effect() {
    let off = Tvht::new(Backend::default(), config(64)).unwrap();
    let s = cube(1, Vec3::ZERO, 0.4);
    assert!(matches!(
        off.sleep(1, 0, 0, 5, &[s]),
        Err(TvhtError::Config(_))
    ));
    let t = Tvht::new(Backend::default(), sleeping(64)).unwrap();
    assert!(matches!(
        t.sleep(1, 0, 5, 4, &[s]),
        Err(TvhtError::Config(_))
    ));
    assert!(matches!(
        t.sleep(1, 0, 0, 5, &[s, s]),
        Err(TvhtError::Duplicate { .. })
    ));
    assert!(matches!(
        t.wake(1, 0, &[s], 3),
        Err(TvhtError::NotFound { .. })
    ));
    assert_eq!(t.sleep(1, 0, 0, 5, &[s]).unwrap().0, 5);
    let moved = cube(1, Vec3::splat(0.1), 0.4);
    assert!(matches!(
        t.sleep(1, 0, 6, 9, &[moved]),
        Err(TvhtError::BoundsMismatch { .. })
    ));
    assert!(matches!(
        t.wake(1, 0, &[moved], 3),
        Err(TvhtError::NotFound { .. } | TvhtError::BoundsMismatch { .. })
    ));
    t.prune_before(4);
    assert!(matches!(
        t.sleep(1, 1, 3, 9, &[s]),
        Err(TvhtError::BehindFloor { .. })
    ));
    t.validate_at_rest().unwrap();
    // Swept once it ends behind the floor.
    t.prune_before(6);
    assert_eq!(
        Snapshot::take(&t.table)
            .buckets()
            .iter()
            .map(|b| b.records.len())
            .sum::<usize>(),
        0
    );
    t.validate_at_rest().unwrap();
}

/// Random writes, deletes, sleeps and wakes of a few bodies crowded in a few cells: after
/// each, the table's invariants hold (`validate`: every overlapping pair of an awake entry
/// and a record has exactly one contact, and so on), and every contact a write or sleep
/// reported is given back by exactly one delete or wake, or is still recorded.
#[test]
fn random_sleeps_and_wakes_keep_every_contact_exactly_once() {
    for &be in Backend::COMPILED {
        let t = Tvht::new(be, sleeping(8)).unwrap();
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        // Per body (its own entity): its box, the ticks it wrote, its records (tag, from, until).
        let boxes: Vec<BodyEntry> = (0..4)
            .map(|b| cube(b, Vec3::new(0.3 * b as f32, 0.2, 0.1 * b as f32), 0.6))
            .collect();
        let mut ticks: Vec<BTreeSet<Tick>> = vec![BTreeSet::new(); 4];
        let mut recs: Vec<Vec<(u64, Tick, Tick)>> = vec![Vec::new(); 4];
        let mut live: BTreeSet<ContactKey> = BTreeSet::new();
        let mut tag = 0;
        for _ in 0..400 {
            let b = next(4) as usize;
            let mut e = boxes[b];
            let tick = next(12);
            match next(4) {
                0 => {
                    e.asleep = next(3) == 0;
                    if let Ok(c) = t.write(b as EntityId, tick, &[e]) {
                        ticks[b].insert(tick);
                        for c in c {
                            assert!(live.insert(c.key()), "{:?} reported twice", c.key());
                        }
                    }
                }
                1 => {
                    if ticks[b].remove(&tick) {
                        for c in t.delete(b as EntityId, tick, &[e]).unwrap() {
                            assert!(live.remove(&c.key()), "{:?} not live", c.key());
                        }
                    } else {
                        assert!(t.delete(b as EntityId, tick, &[e]).is_err());
                    }
                }
                2 => {
                    tag += 1;
                    let to = tick + next(6);
                    if let Ok((last, c)) = t.sleep(b as EntityId, tag, tick, to, &[e]) {
                        assert!(last >= tick && last <= to);
                        recs[b].push((tag, tick, last + 1));
                        for c in c {
                            assert_eq!(c.tick(), last);
                            assert!(live.insert(c.key()), "{:?} reported twice", c.key());
                        }
                    }
                }
                _ => {
                    if let Some(&(tag, from, until)) = recs[b].last() {
                        for c in t.wake(b as EntityId, tag, &[e], tick).unwrap() {
                            assert!(c.tick() >= tick && c.tick() < until);
                            assert!(live.remove(&c.key()), "{:?} not live", c.key());
                        }
                        recs[b].pop();
                        if tick > from {
                            recs[b].push((tag, from, until.min(tick)));
                        }
                    }
                }
            }
            t.validate_at_rest().unwrap();
            assert_eq!(t.contacts(), live.iter().copied().collect::<Vec<_>>());
        }
        assert!(recs.iter().any(|r| !r.is_empty()) && !live.is_empty());
    }
}

#[test]
fn default_config_scales_with_bodies() {
    let c = TvhtConfig::for_scene(1000, 1.0, 256);
    assert_eq!((c.buckets, c.cell_size, c.span_ticks), (1 << 12, 2.0, 64));
    assert_eq!(c.grid_offset, GRID_OFFSET);
    let c = TvhtConfig::for_scene_with_span(1000, 1.0, 256, 16);
    assert_eq!((c.buckets, c.span_ticks), (1 << 14, 16));
    assert_eq!(TvhtConfig::for_scene(1, f32::NAN, 256).buckets, 1 << 10);
    // A window past BUCKETS_WINDOW sizes the table as that window; a shorter one for itself.
    assert_eq!(TvhtConfig::for_scene(1000, 1.0, 1024).buckets, 1 << 12);
    assert_eq!(TvhtConfig::for_scene(4000, 1.0, 64).buckets, 1 << 12);
}
