//! Concurrent TVHT stress tests against a sequential model, for every compiled backend.
//!
//! Many threads (16-64 on a 2-core machine, so they are preempted inside sections) each own a
//! few entities and write or delete their entries at random ticks and positions in a small
//! region, so contacts are frequent and boxes span several cells. Every entry written carries a
//! unique version number in its state, and every operation is stamped with a global counter
//! before and after it. The checks afterwards:
//!
//! * the final table equals the threads' own records of their live entries, its contact records
//!   are exactly the overlapping pairs of live entries of different entities at the same tick
//!   (computed by brute force), and `validate` passes (also while the threads run);
//! * every pair of entry versions is reported at most once by a write and at most once by a
//!   delete; a delete reports only pairs that a write reported; write reports minus delete
//!   reports are exactly the final live pairs (so each delete returned exactly the contacts
//!   involving the deleted entry);
//! * every reported pair truly overlapped at one tick, and its entries could have coexisted;
//!   every pair whose entries certainly coexisted (by the stamps) was reported;
//! * a fixed set of operations per entity, spread over 1, 3 or 16 threads and either backend,
//!   leaves the same final table.

use glam::{Quat, Vec3};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use timewarp::dynamics::BodyState;
use timewarp::geometry::Aabb;
use timewarp::scene::SplitMix64;
use timewarp::sync::Backend;
use timewarp::warp::{BodyEntry, BodyId, ContactKey, EntityId, Step, Tick, Tvht, TvhtConfig};

const TICKS: u64 = 5;
const BODIES_PER_ENTITY: u32 = 2;

fn config() -> TvhtConfig {
    TvhtConfig {
        buckets: 64,
        cell_size: 1.0,
        max_cells_per_body: 64,
        span_ticks: 2,
        grid_offset: 0.0,
        sleep_records: false,
    }
}

/// The random bodies of one entity at one tick; `version` goes into the state.
fn random_bodies(rng: &mut SplitMix64, entity: EntityId, version: &mut u32) -> Vec<BodyEntry> {
    let n = 1 + (rng.next_u64() % BODIES_PER_ENTITY as u64) as u32;
    (0..n)
        .map(|j| {
            let c = Vec3::new(rng.next_unit(), rng.next_unit(), rng.next_unit()) * 3.5;
            let h = 0.15 + 0.5 * rng.next_unit();
            *version += 1;
            BodyEntry {
                body: entity * BODIES_PER_ENTITY + j,
                aabb: Aabb::new(c - Vec3::splat(h), c + Vec3::splat(h)),
                state: BodyState {
                    position: c,
                    rotation: Quat::IDENTITY,
                    velocity: Vec3::new(*version as f32, 0.0, 0.0),
                    angular_velocity: Vec3::ZERO,
                },
                asleep: false,
            }
        })
        .collect()
}

fn ver(s: &BodyState) -> u32 {
    s.velocity.x as u32
}

/// The life of one entry version.
#[derive(Clone, Debug)]
struct Life {
    entity: EntityId,
    body: BodyId,
    tick: Tick,
    aabb: Aabb,
    written: (u64, u64),
    deleted: Option<(u64, u64)>,
}

type Pair = (u32, u32);

fn pair(a: &BodyState, b: &BodyState) -> Pair {
    let (x, y) = (ver(a), ver(b));
    (x.min(y), x.max(y))
}

#[derive(Default)]
struct Log {
    lives: BTreeMap<u32, Life>,
    write_reports: Vec<(u32, Pair)>,
    delete_reports: Vec<(u32, Pair)>,
    live: BTreeMap<(EntityId, Tick), Vec<BodyEntry>>,
}

fn run_thread(
    t: &Tvht,
    clock: &AtomicU64,
    thread: u32,
    entities: &[EntityId],
    ops: usize,
    validate_every: usize,
) -> Log {
    let mut rng = SplitMix64::new(0x5eed ^ thread as u64);
    let mut version = thread * 100_000;
    let mut log = Log::default();
    for op in 0..ops {
        let e = entities[(rng.next_u64() % entities.len() as u64) as usize];
        let tick = rng.next_u64() % TICKS;
        if let Some(bodies) = log.live.remove(&(e, tick)) {
            let s = clock.fetch_add(1, Ordering::SeqCst);
            let contacts = t.delete(e, tick, &bodies).unwrap();
            let end = clock.fetch_add(1, Ordering::SeqCst);
            for b in &bodies {
                log.lives.get_mut(&version_of(b)).unwrap().deleted = Some((s, end));
            }
            for c in contacts {
                assert_eq!(c.tick(), tick);
                assert!(c.a.body < c.b.body);
                let mine = if c.a.entity == e { &c.a } else { &c.b };
                assert_eq!(mine.entity, e);
                assert!(c.other(e).is_some());
                log.delete_reports
                    .push((ver(&mine.state), pair(&c.a.state, &c.b.state)));
            }
        } else {
            let bodies = random_bodies(&mut rng, e, &mut version);
            let s = clock.fetch_add(1, Ordering::SeqCst);
            let contacts = t.write(e, tick, &bodies).unwrap();
            let end = clock.fetch_add(1, Ordering::SeqCst);
            for b in &bodies {
                log.lives.insert(
                    version_of(b),
                    Life {
                        entity: e,
                        body: b.body,
                        tick,
                        aabb: b.aabb,
                        written: (s, end),
                        deleted: None,
                    },
                );
            }
            for c in contacts {
                assert_eq!(c.tick(), tick);
                let mine = if c.a.entity == e { &c.a } else { &c.b };
                assert_eq!(mine.entity, e, "the writer is one side of its contacts");
                assert!(bodies.iter().any(|b| b.state == mine.state));
                log.write_reports
                    .push((ver(&mine.state), pair(&c.a.state, &c.b.state)));
            }
            log.live.insert((e, tick), bodies);
        }
        if validate_every > 0 && op % validate_every == 0 {
            t.validate().unwrap();
        }
    }
    log
}

fn version_of(b: &BodyEntry) -> u32 {
    ver(&b.state)
}

fn overlapping_pairs(entries: &[(EntityId, BodyId, Tick, Aabb)]) -> BTreeSet<ContactKey> {
    let mut out = BTreeSet::new();
    for (i, x) in entries.iter().enumerate() {
        for y in &entries[i + 1..] {
            if x.2 == y.2 && x.0 != y.0 && x.3.overlaps(&y.3) {
                out.insert(ContactKey {
                    tick: x.2,
                    a: x.1.min(y.1),
                    b: x.1.max(y.1),
                });
            }
        }
    }
    out
}

fn stress(backend: Backend, threads: u32, entities_per_thread: u32, ops: usize) {
    let t = Arc::new(Tvht::new(backend, config()).unwrap());
    let clock = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|th| {
            let (t, clock) = (t.clone(), clock.clone());
            std::thread::spawn(move || {
                let ents: Vec<EntityId> = (0..entities_per_thread)
                    .map(|i| th * entities_per_thread + i)
                    .collect();
                run_thread(&t, &clock, th, &ents, ops, if th == 0 { 25 } else { 0 })
            })
        })
        .collect();
    let mut log = Log::default();
    for h in handles {
        let l = h.join().unwrap();
        log.lives.extend(l.lives);
        log.write_reports.extend(l.write_reports);
        log.delete_reports.extend(l.delete_reports);
        log.live.extend(l.live);
    }
    t.validate_at_rest().unwrap();

    // The final table holds exactly the live entries.
    let mut model: Vec<(Tick, BodyId, BodyState)> = log
        .live
        .iter()
        .flat_map(|(&(_, tick), bs)| bs.iter().map(move |b| (tick, b.body, b.state)))
        .collect();
    model.sort_by_key(|m| (m.0, m.1));
    let table: Vec<(Tick, BodyId, BodyState)> = t
        .entries()
        .iter()
        .map(|e| (e.tick, e.body, e.state))
        .collect();
    assert_eq!(table, model);

    // Its contacts are exactly the overlapping live pairs.
    let live: Vec<(EntityId, BodyId, Tick, Aabb)> = t
        .entries()
        .iter()
        .map(|e| (e.entity, e.body, e.tick, e.aabb))
        .collect();
    let want = overlapping_pairs(&live);
    let have: BTreeSet<ContactKey> = t.contacts().into_iter().collect();
    assert_eq!(have.len(), t.contacts().len(), "a contact recorded twice");
    assert_eq!(have, want);

    // Reports: each pair at most once per kind; deletes only undo writes; the rest is live.
    let wr: BTreeSet<Pair> = log.write_reports.iter().map(|r| r.1).collect();
    let dr: BTreeSet<Pair> = log.delete_reports.iter().map(|r| r.1).collect();
    assert_eq!(
        wr.len(),
        log.write_reports.len(),
        "a pair reported twice by writes"
    );
    assert_eq!(
        dr.len(),
        log.delete_reports.len(),
        "a pair reported twice by deletes"
    );
    assert!(
        dr.is_subset(&wr),
        "a delete returned a contact never reported"
    );
    let live_versions: BTreeSet<u32> = log.live.values().flatten().map(version_of).collect();
    let live_pairs: BTreeSet<Pair> = wr.difference(&dr).copied().collect();
    for p in &live_pairs {
        assert!(live_versions.contains(&p.0) && live_versions.contains(&p.1));
    }
    assert_eq!(live_pairs.len(), want.len());
    for &(deleter, p) in &log.delete_reports {
        assert!(p.0 == deleter || p.1 == deleter);
    }
    for &(writer, p) in &log.write_reports {
        assert!(p.0 == writer || p.1 == writer);
        let other = if p.0 == writer { p.1 } else { p.0 };
        let (w, o) = (&log.lives[&writer], &log.lives[&other]);
        assert!(w.tick == o.tick && w.entity != o.entity && w.body != o.body);
        assert!(w.aabb.overlaps(&o.aabb));
        // The other was written before this write ended and not deleted before it began.
        assert!(o.written.0 < w.written.1, "reported to the first writer");
        assert!(o.deleted.is_none_or(|d| d.1 > w.written.0));
    }

    // Completeness: every pair that certainly coexisted was reported.
    let mut by_tick: BTreeMap<Tick, Vec<(u32, &Life)>> = BTreeMap::new();
    for (&v, l) in &log.lives {
        by_tick.entry(l.tick).or_default().push((v, l));
    }
    let mut certain = 0;
    for lives in by_tick.values() {
        for (i, &(va, a)) in lives.iter().enumerate() {
            for &(vb, b) in &lives[i + 1..] {
                if a.entity == b.entity || !a.aabb.overlaps(&b.aabb) {
                    continue;
                }
                let born = a.written.1.max(b.written.1);
                let died = a
                    .deleted
                    .map_or(u64::MAX, |d| d.0)
                    .min(b.deleted.map_or(u64::MAX, |d| d.0));
                if born < died {
                    certain += 1;
                    assert!(
                        wr.contains(&(va.min(vb), va.max(vb))),
                        "missed contact {va} {vb}"
                    );
                }
            }
        }
    }
    assert!(
        certain > 50,
        "the stress test made too few contacts ({certain})"
    );
    assert!(!log.delete_reports.is_empty());
}

#[test]
fn concurrent_writes_and_deletes_match_the_model_16_threads() {
    for &b in Backend::COMPILED {
        stress(b, 16, 3, 300);
    }
}

#[test]
fn concurrent_writes_and_deletes_match_the_model_64_threads() {
    for &b in Backend::COMPILED {
        stress(b, 64, 1, 120);
    }
}

/// Fixed operations per entity (from the entity's own seed), spread over `threads` threads.
fn deterministic_final(
    backend: Backend,
    threads: usize,
) -> (Vec<(Tick, BodyId, BodyState)>, Vec<ContactKey>) {
    let entities = 24u32;
    let t = Arc::new(Tvht::new(backend, config()).unwrap());
    let handles: Vec<_> = (0..threads)
        .map(|th| {
            let t = t.clone();
            std::thread::spawn(move || {
                let mine: Vec<EntityId> = (0..entities)
                    .filter(|e| *e as usize % threads == th)
                    .collect();
                let mut rngs: Vec<SplitMix64> = mine
                    .iter()
                    .map(|&e| SplitMix64::new(1000 + e as u64))
                    .collect();
                let mut live: Vec<BTreeMap<Tick, Vec<BodyEntry>>> =
                    vec![BTreeMap::new(); mine.len()];
                for _ in 0..60 {
                    for (i, &e) in mine.iter().enumerate() {
                        let tick = rngs[i].next_u64() % TICKS;
                        if let Some(b) = live[i].remove(&tick) {
                            t.delete(e, tick, &b).unwrap();
                        } else {
                            let mut version = e * 1000 + live[i].len() as u32 * 100;
                            let b = random_bodies(&mut rngs[i], e, &mut version);
                            t.write(e, tick, &b).unwrap();
                            live[i].insert(tick, b);
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    t.validate_at_rest().unwrap();
    let entries = t
        .entries()
        .iter()
        .map(|e| (e.tick, e.body, e.state))
        .collect();
    (entries, t.contacts())
}

#[test]
fn final_table_is_the_same_for_any_thread_count_and_backend() {
    let reference = deterministic_final(Backend::COMPILED[0], 1);
    assert!(!reference.1.is_empty());
    for &b in Backend::COMPILED {
        for threads in [1, 3, 16] {
            assert_eq!(
                deterministic_final(b, threads),
                reference,
                "{b} with {threads} threads"
            );
        }
    }
}

#[test]
fn memory_stays_flat_when_pruned_behind_gvt() {
    for &b in Backend::COMPILED {
        let t = Tvht::new(b, config()).unwrap();
        let window = 16;
        let mut rng = SplitMix64::new(3);
        let mut peak = 0;
        let mut version = 0;
        for tick in 0..400u64 {
            for e in 0..6 {
                let bodies = random_bodies(&mut rng, e, &mut version);
                t.write(e, tick, &bodies).unwrap();
            }
            if tick >= window {
                // As the engine would: a slice of the table per committed tick.
                t.prune_step(tick - window, t.buckets() / window as usize);
            }
            if tick % 8 == 7 && tick >= 2 * window {
                let stored = t.stored_entries();
                if tick < 100 {
                    peak = peak.max(stored);
                } else {
                    // 6 entities x <= 2 bodies x <= 8 cells x (2 window + 1) ticks.
                    assert!(stored <= 6 * 2 * 8 * (2 * window as usize + 1));
                    assert!(stored <= 2 * peak, "memory grows: {stored} vs {peak}");
                }
                assert!(t.entries().iter().all(|e| e.tick >= tick - 2 * window));
            }
        }
        t.validate_at_rest().unwrap();
        t.prune_before(390);
        assert!(t.entries().iter().all(|e| e.tick >= 390));
        t.validate_at_rest().unwrap();
    }
}

/// Multi-step requests against a sequential model, for every backend: writes of 1 to 150
/// steps (so a body's entries cross the 64-tick runs the table keeps them in), some with
/// gaps between their ticks, some of group entities whose bodies come in varying order;
/// deletes of arbitrary subsets of an entity's ticks (rollbacks delete suffixes, but a run
/// must also lose entries from its middle); sweeps behind a rising floor. After every call:
/// the table's entries are the model's live entries, each call returned exactly the
/// contacts the model predicts (a write stops after its first step with any), and
/// `validate` passes.
#[test]
fn multi_step_writes_and_deletes_match_the_model() {
    fn steps_of<'a>(ticks: &[Tick], rows: &'a [Vec<BodyEntry>]) -> Vec<Step<'a>> {
        ticks
            .iter()
            .zip(rows)
            .map(|(&tick, r)| Step { tick, bodies: r })
            .collect()
    }
    fn rest(position: Vec3) -> BodyState {
        BodyState {
            position,
            rotation: Quat::IDENTITY,
            velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
        }
    }
    type Live = BTreeMap<(Tick, BodyId), (EntityId, Aabb)>;
    fn overlaps_at(
        live: &Live,
        me: EntityId,
        tick: Tick,
        body: BodyId,
        b: &Aabb,
    ) -> Vec<ContactKey> {
        live.range((tick, 0)..=(tick, BodyId::MAX))
            .filter(|(_, (e, x))| *e != me && x.overlaps(b))
            .map(|(&(_, o), _)| ContactKey {
                tick,
                a: body.min(o),
                b: body.max(o),
            })
            .collect()
    }
    for &backend in Backend::COMPILED {
        let t = Tvht::new(backend, config()).unwrap();
        let mut rng = SplitMix64::new(0x7275_6e73);
        let mut live = Live::new();
        let mut floor = 0;
        let (mut long, mut mid_deletes, mut met) = (0, 0, 0);
        for op in 0..3000 {
            let e = (rng.next_u64() % 4) as EntityId;
            let bodies: Vec<BodyId> = (0..=e % 2).map(|j| e * 2 + j).collect();
            let mine: Vec<Tick> = live
                .iter()
                .filter(|(_, (o, _))| *o == e)
                .map(|(&(t, _), _)| t)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            if rng.next_u64() % 3 == 0 && !mine.is_empty() {
                // Delete a random subset of this entity's ticks, or a suffix.
                let pick: Vec<Tick> = if rng.next_u64() % 2 == 0 {
                    let from = mine[(rng.next_u64() % mine.len() as u64) as usize];
                    mine.iter().copied().filter(|&t| t >= from).collect()
                } else {
                    mine.iter()
                        .copied()
                        .filter(|_| rng.next_u64() % 3 == 0)
                        .collect()
                };
                if pick.len() > 1 && pick.last().unwrap() - pick[0] + 1 > pick.len() as u64 {
                    mid_deletes += 1;
                }
                let rows: Vec<Vec<BodyEntry>> = pick
                    .iter()
                    .map(|&tick| {
                        bodies
                            .iter()
                            .map(|&b| BodyEntry {
                                body: b,
                                aabb: live[&(tick, b)].1,
                                state: rest(Vec3::ZERO),
                                asleep: false,
                            })
                            .collect()
                    })
                    .collect();
                let steps = steps_of(&pick, &rows);
                let mut want = BTreeSet::new();
                for s in &steps {
                    for b in s.bodies {
                        live.remove(&(s.tick, b.body));
                    }
                }
                for s in &steps {
                    for b in s.bodies {
                        want.extend(overlaps_at(&live, e, s.tick, b.body, &b.aabb));
                    }
                }
                let got: BTreeSet<ContactKey> = t
                    .delete_steps(e, &steps)
                    .unwrap()
                    .iter()
                    .map(|c| c.key())
                    .collect();
                assert_eq!(got, want, "{backend:?} op {op}: delete of {pick:?}");
            } else {
                // Write n steps from a free tick, every tick or every other one.
                let n = [1, 3, 32, 70, 150][(rng.next_u64() % 5) as usize];
                let stride = 1 + rng.next_u64() % 2 * (rng.next_u64() % 2);
                let start = floor + rng.next_u64() % 60;
                let ticks: Vec<Tick> = (0..n).map(|i| start + i * stride).collect();
                if ticks.iter().any(|t| mine.binary_search(t).is_ok()) {
                    continue;
                }
                // Half the writes stay in the entity's own region, where nothing meets them
                // (so they run long); the others share one small region.
                let away = Vec3::X * 10.0 * (1 + e) as f32 * (rng.next_u64() % 2) as f32;
                let rows: Vec<Vec<BodyEntry>> = ticks
                    .iter()
                    .map(|_| {
                        let mut r: Vec<BodyEntry> = bodies
                            .iter()
                            .map(|&b| {
                                let c =
                                    Vec3::new(rng.next_unit(), rng.next_unit(), rng.next_unit())
                                        * 1.0
                                        + away;
                                let h = 0.1 + 0.3 * rng.next_unit();
                                BodyEntry {
                                    body: b,
                                    aabb: Aabb::new(c - Vec3::splat(h), c + Vec3::splat(h)),
                                    state: rest(c),
                                    asleep: false,
                                }
                            })
                            .collect();
                        if rng.next_u64() % 4 == 0 {
                            r.reverse();
                        }
                        r
                    })
                    .collect();
                let steps = steps_of(&ticks, &rows);
                let (mut written, mut want) = (0, BTreeSet::new());
                for s in &steps {
                    written += 1;
                    for b in s.bodies {
                        want.extend(overlaps_at(&live, e, s.tick, b.body, &b.aabb));
                    }
                    for b in s.bodies {
                        live.insert((s.tick, b.body), (e, b.aabb));
                    }
                    if !want.is_empty() {
                        break;
                    }
                }
                let (n_got, found) = t.write_steps(e, &steps).unwrap();
                let got: BTreeSet<ContactKey> = found.iter().map(|c| c.key()).collect();
                assert_eq!(
                    (n_got, &got),
                    (written, &want),
                    "{backend:?} op {op}: write from {start}"
                );
                long += usize::from(written > 64);
                met += usize::from(!got.is_empty());
            }
            if op % 100 == 99 {
                floor += 20;
                t.prune_before(floor);
                live.retain(|&(tick, _), _| tick >= floor);
            }
            let table: Live = t
                .entries()
                .iter()
                .map(|x| ((x.tick, x.body), (x.entity, x.aabb)))
                .collect();
            assert_eq!(table, live, "{backend:?} op {op}");
            t.validate_at_rest().unwrap();
        }
        // The cases were met (107 writes over 64 ticks, 659 deletes with holes, 133 writes
        // that met a contact, under either backend, when written).
        assert!(
            long > 10 && mid_deletes > 10 && met > 100,
            "{long} {mid_deletes} {met}"
        );
    }
}
