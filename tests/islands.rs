//! Integration tests of the persistent island graph (seed 002) against independent references:
//! a brute-force label-propagation connected-components solver, a sequential application of
//! touch changes, and exact binary time steps for sleep.

use glam::Vec3;
use rayon::prelude::*;
use timewarp::islands::{
    ContactId, IslandError, IslandGraph, IslandId, SleepConfig, TouchChanges, merge_touch_changes,
};

/// SplitMix64: a tiny seeded generator so the tests need no extra dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn ok(g: &IslandGraph) {
    if let Err(e) = g.validate() {
        panic!("invariant broken: {e}");
    }
}

/// Brute force: label propagation to a fixpoint over the dynamic-dynamic edges; returns for each
/// dynamic body the smallest body id of its component (`usize::MAX` for static bodies).
fn reference_components(is_static: &[bool], edges: &[(usize, usize)]) -> Vec<usize> {
    let mut label: Vec<usize> = (0..is_static.len())
        .map(|b| if is_static[b] { usize::MAX } else { b })
        .collect();
    loop {
        let mut changed = false;
        for &(a, b) in edges {
            if is_static[a] || is_static[b] {
                continue;
            }
            let l = label[a].min(label[b]);
            if label[a] != l || label[b] != l {
                label[a] = l;
                label[b] = l;
                changed = true;
            }
        }
        if !changed {
            return label;
        }
    }
}

/// The graph's partition in the same canonical form: each dynamic body mapped to the smallest
/// body id of its island.
fn graph_components(g: &IslandGraph) -> Vec<usize> {
    let mut label = vec![usize::MAX; g.body_count()];
    for island in g.islands() {
        let bodies: Vec<usize> = g.bodies(island).unwrap().collect();
        let min = *bodies.iter().min().unwrap();
        for b in bodies {
            label[b] = min;
        }
    }
    label
}

#[test]
fn new_graph_has_one_island_per_dynamic_body() {
    let is_static = [false, true, false, false];
    let g = IslandGraph::new(&is_static).unwrap();
    ok(&g);
    assert_eq!(
        g.islands().collect::<Vec<_>>(),
        vec![IslandId(0), IslandId(2), IslandId(3)]
    );
    assert_eq!(g.island_of(1).unwrap(), None);
    for b in [0, 2, 3] {
        let i = g.island_of(b).unwrap().unwrap();
        assert_eq!(i, IslandId(b as u32));
        assert!(g.is_awake(i).unwrap());
        assert_eq!(g.bodies(i).unwrap().collect::<Vec<_>>(), vec![b]);
    }
    assert_eq!(g.awake_islands().count(), 3);
}

#[test]
fn link_merges_and_keeps_the_larger_island_id() {
    let mut g = IslandGraph::new(&[false; 5]).unwrap();
    let c01 = g.link(0, 1).unwrap();
    ok(&g);
    // Tie: the lower id survives.
    assert_eq!(g.island_of(1).unwrap(), Some(IslandId(0)));
    assert_eq!(g.contact_island(c01).unwrap(), IslandId(0));
    let _c34 = g.link(4, 3).unwrap();
    ok(&g);
    assert_eq!(g.island_of(4).unwrap(), Some(IslandId(3)));
    let c23 = g.link(2, 3).unwrap();
    ok(&g);
    // {2} joins {3,4}: the larger keeps its id.
    assert_eq!(g.island_of(2).unwrap(), Some(IslandId(3)));
    let c13 = g.link(1, 3).unwrap();
    ok(&g);
    // {0,1} (2 bodies) joins {2,3,4} (3 bodies): id 3 survives.
    let all = IslandId(3);
    for b in 0..5 {
        assert_eq!(g.island_of(b).unwrap(), Some(all));
    }
    assert!(!g.is_island(IslandId(0)));
    assert_eq!(g.island_body_count(all).unwrap(), 5);
    let mut bodies: Vec<usize> = g.bodies(all).unwrap().collect();
    bodies.sort();
    assert_eq!(bodies, vec![0, 1, 2, 3, 4]);
    let contacts: Vec<ContactId> = g.contacts(all).unwrap().collect();
    assert_eq!(contacts.len(), 4);
    assert!(contacts.contains(&c01) && contacts.contains(&c23) && contacts.contains(&c13));
    // A second contact between bodies already in one island does not merge anything.
    let before = g.islands().count();
    g.link(0, 4).unwrap();
    ok(&g);
    assert_eq!(g.islands().count(), before);
    assert_eq!(g.island_contact_count(all).unwrap(), 5);
}

#[test]
fn chains_of_links_merge_many_islands() {
    for seed in 0..20u64 {
        let mut rng = Rng(seed);
        let n = 200;
        let mut g = IslandGraph::new(&vec![false; n]).unwrap();
        let mut order: Vec<usize> = (0..n - 1).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for (k, &i) in order.iter().enumerate() {
            g.link(i, i + 1).unwrap();
            if k % 17 == 0 {
                ok(&g);
            }
            assert_eq!(g.islands().count(), n - 1 - k);
        }
        ok(&g);
        let island = g.island_of(0).unwrap().unwrap();
        assert_eq!(g.island_body_count(island).unwrap(), n);
        assert_eq!(g.island_contact_count(island).unwrap(), n - 1);
        assert_eq!(g.islands().collect::<Vec<_>>(), vec![island]);
    }
}

#[test]
fn statics_never_join_or_link_islands() {
    let mut g = IslandGraph::new(&[false, true, false]).unwrap();
    let c0 = g.link(0, 1).unwrap();
    let c2 = g.link(1, 2).unwrap();
    ok(&g);
    assert_ne!(g.island_of(0).unwrap(), g.island_of(2).unwrap());
    assert_eq!(g.contact_island(c0).unwrap(), IslandId(0));
    assert_eq!(g.contact_island(c2).unwrap(), IslandId(2));
    assert_eq!(g.body_contacts(1).unwrap().count(), 0);
    // Removing a static contact cannot split anything: no flag.
    g.unlink(c0).unwrap();
    ok(&g);
    assert!(!g.may_split(IslandId(0)).unwrap());
    assert_eq!(g.split_one(), None);
    // Bad input is an error naming the problem, and changes nothing.
    let snapshot = g.clone();
    assert_eq!(g.link(1, 1), Err(IslandError::SelfContact { body: 1 }));
    let mut two_static = IslandGraph::new(&[true, true]).unwrap();
    assert_eq!(
        two_static.link(0, 1),
        Err(IslandError::StaticPair { a: 0, b: 1 })
    );
    assert_eq!(
        g.link(0, 3),
        Err(IslandError::BodyOutOfRange { body: 3, bodies: 3 })
    );
    assert_eq!(g.unlink(c0), Err(IslandError::UnknownContact(c0)));
    assert_eq!(
        g.wake(IslandId(1)),
        Err(IslandError::UnknownIsland(IslandId(1)))
    );
    assert_eq!(g, snapshot);
    assert!(g.link(0, 1).is_ok());
    ok(&g);
}

/// Random graphs, many seeds: random links and unlinks with deferred splits, checked after
/// every split against brute-force connected components.
#[test]
fn unlink_and_split_match_brute_force_components() {
    for seed in 0..60u64 {
        let mut rng = Rng(1000 + seed);
        let n = 10 + rng.below(60);
        let is_static: Vec<bool> = (0..n).map(|_| rng.below(8) == 0).collect();
        let mut g = IslandGraph::new(&is_static).unwrap();
        let mut live: Vec<(ContactId, usize, usize)> = Vec::new();
        for _round in 0..6 {
            let links = rng.below(3 * n);
            for _ in 0..links {
                let a = rng.below(n);
                let b = rng.below(n);
                if a == b || (is_static[a] && is_static[b]) {
                    continue;
                }
                let c = g.link(a, b).unwrap();
                live.push((c, a, b));
            }
            ok(&g);
            let unlinks = rng.below(live.len() + 1);
            for _ in 0..unlinks {
                let k = rng.below(live.len());
                let (c, _, _) = live.swap_remove(k);
                g.unlink(c).unwrap();
            }
            ok(&g);
            let edges: Vec<(usize, usize)> = live.iter().map(|&(_, a, b)| (a, b)).collect();
            let reference = reference_components(&is_static, &edges);
            // Before splitting, islands are unions of components.
            let coarse = graph_components(&g);
            for &(a, b) in &edges {
                if !is_static[a] && !is_static[b] {
                    assert_eq!(coarse[a], coarse[b]);
                }
            }
            // Deferred splits, one per step, until none is flagged.
            let mut steps = 0;
            while let Some(split) = g.split_one() {
                ok(&g);
                assert!(!split.islands.is_empty());
                for &i in &split.islands {
                    assert!(!g.may_split(i).unwrap());
                }
                steps += 1;
                assert!(steps <= n, "splitting does not terminate");
            }
            assert_eq!(graph_components(&g), reference, "seed {seed}");
            // Each contact is in the island of its dynamic bodies (also checked by validate).
            for &(c, a, b) in &live {
                let dynamic = if is_static[a] { b } else { a };
                assert_eq!(
                    g.contact_island(c).unwrap(),
                    g.island_of(dynamic).unwrap().unwrap()
                );
            }
            // Island ids are representatives (invariant R).
            for i in g.islands() {
                assert_eq!(g.island_of(i.index()).unwrap(), Some(i));
            }
        }
    }
}

#[test]
fn at_most_one_split_per_step_largest_first() {
    // Island A: chain 0-1-2-3-4 (5 bodies); island B: chain 5-6-7 (3 bodies).
    let mut g = IslandGraph::new(&[false; 8]).unwrap();
    let mut a = Vec::new();
    for i in 0..4 {
        a.push(g.link(i, i + 1).unwrap());
    }
    let b0 = g.link(5, 6).unwrap();
    g.link(6, 7).unwrap();
    g.unlink(a[1]).unwrap(); // A splits into {0,1} and {2,3,4}
    g.unlink(b0).unwrap(); // B splits into {5} and {6,7}
    ok(&g);
    let ia = g.island_of(0).unwrap().unwrap();
    let ib = g.island_of(5).unwrap().unwrap();
    assert_eq!(g.split_flagged().collect::<Vec<_>>(), vec![ia, ib]);
    let first = g.split_one().unwrap();
    ok(&g);
    assert_eq!(first.parent, ia, "the larger island splits first");
    assert_eq!(first.islands.len(), 2);
    // B is still whole and flagged: one split per call.
    assert_eq!(g.island_of(5).unwrap(), g.island_of(7).unwrap());
    assert!(g.may_split(ib).unwrap());
    let second = g.split_one().unwrap();
    ok(&g);
    assert_eq!(second.parent, ib);
    assert_eq!(second.islands, vec![IslandId(5), IslandId(6)]);
    assert_eq!(g.split_one(), None);
}

#[test]
fn sleepy_flagged_island_splits_before_a_larger_awake_one() {
    let mut g = IslandGraph::new(&[false; 7]).unwrap();
    let big: Vec<ContactId> = (0..3).map(|i| g.link(i, i + 1).unwrap()).collect(); // 0..=3
    let small = g.link(4, 5).unwrap();
    g.link(5, 6).unwrap(); // 4..=6
    g.set_sleep_config(SleepConfig {
        linear_threshold: 0.05,
        angular_threshold: 0.03,
        time_to_sleep: 0.5,
    })
    .unwrap();
    let mut v = vec![Vec3::ZERO; 7];
    v[..4].fill(Vec3::X); // the big island keeps moving
    let w = vec![Vec3::ZERO; 7];
    g.unlink(big[0]).unwrap();
    g.unlink(small).unwrap();
    for _ in 0..4 {
        assert_eq!(g.update_sleep(0.125, &v, &w).unwrap(), vec![]);
    }
    ok(&g);
    let small_island = g.island_of(4).unwrap().unwrap();
    assert!(g.is_sleepy(small_island).unwrap());
    // Flagged for splitting, so it did not sleep; it is the candidate despite being smaller.
    assert!(g.is_awake(small_island).unwrap());
    assert_eq!(g.split_candidate(), Some(small_island));
    let split = g.split_one().unwrap();
    ok(&g);
    assert_eq!(split.islands, vec![IslandId(4), IslandId(5)]);
    // The pieces keep their timers and sleep at the next update.
    let slept = g.update_sleep(0.125, &v, &w).unwrap();
    ok(&g);
    assert_eq!(slept, vec![IslandId(4), IslandId(5)]);
}

#[test]
fn island_sleeps_after_time_to_sleep() {
    // Exact binary steps: 0.125 s, time to sleep 0.5 s.
    let mut g = IslandGraph::new(&[false, false, false, true]).unwrap();
    g.link(0, 1).unwrap();
    g.link(1, 3).unwrap();
    g.set_sleep_config(SleepConfig {
        linear_threshold: 0.05,
        angular_threshold: 0.035,
        time_to_sleep: 0.5,
    })
    .unwrap();
    let island = g.island_of(0).unwrap().unwrap();
    let mut v = vec![Vec3::ZERO; 4];
    let mut w = vec![Vec3::ZERO; 4];
    v[3] = Vec3::splat(100.0); // static bodies' velocities are ignored
    // Body 1 moves for two steps: the island may not sleep before 0.5 s after it stopped.
    v[1] = Vec3::new(0.0, 0.06, 0.0);
    for _ in 0..2 {
        assert!(g.update_sleep(0.125, &v, &w).unwrap().is_empty());
    }
    v[1] = Vec3::new(0.0, 0.04, 0.0); // below the threshold
    w[0] = Vec3::new(0.0, 0.0, 0.036); // above the angular threshold
    assert!(g.update_sleep(0.125, &v, &w).unwrap().is_empty());
    w[0] = Vec3::ZERO;
    for k in 1..=4 {
        let slept = g.update_sleep(0.125, &v, &w).unwrap();
        ok(&g);
        if k == 1 {
            // Body 2 (alone) has rested since the start: 4 steps of 0.125 s.
            assert_eq!(slept, vec![IslandId(2)]);
        } else if k < 4 {
            assert!(slept.is_empty(), "asleep too early at step {k}");
        } else {
            assert_eq!(slept, vec![island]);
        }
        assert_eq!(g.is_awake(island).unwrap(), k < 4);
    }
    assert!(!g.is_awake(island).unwrap());
    assert!(!g.is_body_awake(1).unwrap());
    assert!(!g.is_awake(IslandId(2)).unwrap());
    assert_eq!(g.awake_islands().count(), 0);
    // Sleeping islands are skipped: their timers stay as they were.
    let t = g.sleep_time(0).unwrap();
    g.update_sleep(0.125, &v, &w).unwrap();
    assert_eq!(g.sleep_time(0).unwrap(), t);
    // Bad input is an error naming it.
    let mut bad = v.clone();
    bad[2] = Vec3::new(f32::NAN, 0.0, 0.0);
    // Velocities of sleeping bodies are not read ...
    assert_eq!(g.update_sleep(0.125, &bad, &w), Ok(vec![]));
    // ... those of awake bodies are checked, and nothing changes on error.
    g.wake(IslandId(2)).unwrap();
    let snapshot = g.clone();
    assert_eq!(
        g.update_sleep(0.125, &bad, &w),
        Err(IslandError::NonFinite {
            what: "linear velocity",
            index: 2
        })
    );
    assert_eq!(g, snapshot);
    assert!(matches!(
        g.update_sleep(0.125, &v[..3], &w),
        Err(IslandError::BadLength { .. })
    ));
    assert!(
        g.set_sleep_config(SleepConfig {
            time_to_sleep: 0.0,
            ..SleepConfig::default()
        })
        .is_err()
    );
}

#[test]
fn wake_by_touch_propagates_through_a_sleeping_island() {
    // A sleeping pyramid of 6 boxes (rows 3, 2, 1) on static ground 0, and a falling box 7.
    let is_static = [true, false, false, false, false, false, false, false];
    let mut g = IslandGraph::new(&is_static).unwrap();
    for b in 1..=3 {
        g.link(0, b).unwrap();
    }
    for (a, b) in [
        (1, 2),
        (2, 3),
        (4, 5),
        (1, 4),
        (2, 4),
        (2, 5),
        (3, 5),
        (4, 6),
        (5, 6),
    ] {
        g.link(a, b).unwrap();
    }
    let v = vec![Vec3::ZERO; 8];
    let mut v7 = v.clone();
    v7[7] = Vec3::new(0.0, -3.0, 0.0);
    let mut slept = Vec::new();
    for _ in 0..5 {
        slept.extend(g.update_sleep(0.125, &v7, &v).unwrap());
    }
    ok(&g);
    let pyramid = g.island_of(1).unwrap().unwrap();
    assert_eq!(slept, vec![pyramid]);
    assert!((1..=6).all(|b| !g.is_body_awake(b).unwrap()));
    assert!(g.is_body_awake(7).unwrap());
    // The falling box touches the top box only: the whole pyramid wakes at once.
    g.link(7, 6).unwrap();
    ok(&g);
    let merged = g.island_of(7).unwrap().unwrap();
    assert!(g.is_awake(merged).unwrap());
    for b in 1..=7 {
        assert!(g.is_body_awake(b).unwrap(), "body {b} still asleep");
        assert_eq!(g.island_of(b).unwrap(), Some(merged));
        assert_eq!(g.sleep_time(b).unwrap(), 0.0, "timer of body {b} not reset");
    }
    // Explicit wake of a sleeping island also resets its timers.
    for _ in 0..5 {
        g.update_sleep(0.125, &v, &v).unwrap();
    }
    assert!(!g.is_awake(merged).unwrap());
    g.wake(merged).unwrap();
    ok(&g);
    assert!(g.is_awake(merged).unwrap());
    assert_eq!(g.sleep_time(3).unwrap(), 0.0);
}

/// A toy "narrow phase": pair `p` touches at step `s` when a hash of (p, s) says so, with
/// strong persistence so few pairs change per step.
fn touching(seed: u64, p: usize, step: usize) -> bool {
    let mut r = Rng(seed ^ ((p as u64) << 20) ^ ((step as u64 / 3) << 44));
    r.next() % 3 == 0
}

fn run_steps(
    is_static: &[bool],
    pairs: &[(u32, u32)],
    seed: u64,
    steps: usize,
    threads: usize,
    chunk: usize,
) -> Vec<IslandGraph> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let mut g = IslandGraph::new(is_static).unwrap();
    let mut pair_contact: Vec<Option<ContactId>> = vec![None; pairs.len()];
    let mut history = Vec::new();
    for step in 0..steps {
        let was: Vec<bool> = pair_contact.iter().map(|c| c.is_some()).collect();
        let per_worker: Vec<TouchChanges> = pool.install(|| {
            (0..pairs.len())
                .into_par_iter()
                .with_min_len(chunk)
                .fold(
                    || TouchChanges::new(pairs.len()),
                    |mut t, p| {
                        let now = touching(seed, p, step);
                        if now && !was[p] {
                            t.began.set(p);
                        } else if !now && was[p] {
                            t.ended.set(p);
                        }
                        t
                    },
                )
                .collect()
        });
        let merged = merge_touch_changes(&per_worker);
        g.apply_touch_changes(&merged, pairs, &mut pair_contact)
            .unwrap();
        g.split_one();
        ok(&g);
        history.push(g.clone());
    }
    history
}

#[test]
fn touch_change_merge_is_deterministic_for_any_partition() {
    let mut rng = Rng(77);
    let n = 300;
    let is_static: Vec<bool> = (0..n).map(|b| b % 50 == 0).collect();
    let mut pairs = Vec::new();
    while pairs.len() < 900 {
        let a = rng.below(n);
        let b = rng.below(n);
        if a < b && !(is_static[a] && is_static[b]) {
            pairs.push((a as u32, b as u32));
        }
    }
    let reference = run_steps(&is_static, &pairs, 5, 24, 1, pairs.len());
    // The reference must have seen real changes: merges, splits and unlinks.
    assert!(reference.windows(2).any(|w| w[0] != w[1]));
    for (threads, chunk) in [(2, 1), (3, 7), (16, 13), (64, 1)] {
        let other = run_steps(&is_static, &pairs, 5, 24, threads, chunk);
        assert!(
            reference == other,
            "graphs differ with {threads} threads, chunk {chunk}"
        );
    }
    // And against applying every change sequentially by hand, in ascending pair order.
    let mut g = IslandGraph::new(&is_static).unwrap();
    let mut pc: Vec<Option<ContactId>> = vec![None; pairs.len()];
    for (step, expected) in reference.iter().enumerate() {
        for p in 0..pairs.len() {
            let now = touching(5, p, step);
            match (pc[p], now) {
                (None, true) => {
                    pc[p] = Some(g.link(pairs[p].0 as usize, pairs[p].1 as usize).unwrap())
                }
                (Some(c), false) => {
                    g.unlink(c).unwrap();
                    pc[p] = None;
                }
                _ => {}
            }
        }
        g.split_one();
        assert!(
            &g == expected,
            "sequential application differs at step {step}"
        );
    }
}

#[test]
fn bad_touch_changes_are_rejected_without_change() {
    let mut g = IslandGraph::new(&[false, false, true]).unwrap();
    let pairs = [(0u32, 1u32), (1, 2), (2, 2)];
    let mut pc = vec![None; 3];
    let mut t = TouchChanges::new(3);
    t.began.set(0);
    t.began.set(1);
    g.apply_touch_changes(&t, &pairs, &mut pc).unwrap();
    ok(&g);
    let snapshot = (g.clone(), pc.clone());
    let mut again = TouchChanges::new(3);
    again.began.set(0);
    assert!(matches!(
        g.apply_touch_changes(&again, &pairs, &mut pc),
        Err(IslandError::InconsistentChange { pair: 0, .. })
    ));
    let mut both = TouchChanges::new(3);
    both.began.set(1);
    both.ended.set(1);
    assert!(g.apply_touch_changes(&both, &pairs, &mut pc).is_err());
    let mut static_pair = TouchChanges::new(3);
    static_pair.ended.set(0);
    static_pair.began.set(2);
    assert!(
        g.apply_touch_changes(&static_pair, &pairs, &mut pc)
            .is_err()
    );
    let mut beyond = TouchChanges::new(3);
    beyond.ended.set(9);
    assert_eq!(
        g.apply_touch_changes(&beyond, &pairs, &mut pc),
        Err(IslandError::PairOutOfRange { pair: 9, pairs: 3 })
    );
    assert_eq!((g.clone(), pc.clone()), snapshot);
}

/// Every operation mixed at random, `validate` after each, with semantic checks: a link leaves
/// both bodies awake in one island; an island put to sleep has every body's timer at least
/// `time_to_sleep`; a split's pieces are connected components of the parent's bodies.
#[test]
fn random_operation_mix_keeps_every_invariant() {
    for seed in 0..40u64 {
        let mut rng = Rng(9000 + seed);
        let n = 5 + rng.below(40);
        let is_static: Vec<bool> = (0..n).map(|_| rng.below(6) == 0).collect();
        let mut g = IslandGraph::new(&is_static).unwrap();
        let tts = 0.25;
        g.set_sleep_config(SleepConfig {
            time_to_sleep: tts,
            ..SleepConfig::default()
        })
        .unwrap();
        let mut live: Vec<(ContactId, usize, usize)> = Vec::new();
        for _ in 0..400 {
            match rng.below(10) {
                0..=3 => {
                    let (a, b) = (rng.below(n), rng.below(n));
                    if a == b || (is_static[a] && is_static[b]) {
                        assert!(g.link(a, b).is_err());
                        continue;
                    }
                    let c = g.link(a, b).unwrap();
                    live.push((c, a, b));
                    for x in [a, b] {
                        assert_eq!(g.is_body_awake(x).unwrap(), !is_static[x]);
                    }
                    if !is_static[a] && !is_static[b] {
                        assert_eq!(g.island_of(a).unwrap(), g.island_of(b).unwrap());
                    }
                }
                4..=5 if !live.is_empty() => {
                    let (c, _, _) = live.swap_remove(rng.below(live.len()));
                    g.unlink(c).unwrap();
                }
                6 => {
                    let before = g.clone();
                    if let Some(split) = g.split_one() {
                        let parent_bodies: Vec<usize> =
                            before.bodies(split.parent).unwrap().collect();
                        let mut pieces: Vec<usize> = split
                            .islands
                            .iter()
                            .flat_map(|&i| g.bodies(i).unwrap().collect::<Vec<_>>())
                            .collect();
                        pieces.sort();
                        let mut expected = parent_bodies.clone();
                        expected.sort();
                        assert_eq!(pieces, expected);
                        let edges: Vec<(usize, usize)> =
                            live.iter().map(|&(_, a, b)| (a, b)).collect();
                        let reference = reference_components(&is_static, &edges);
                        let got = graph_components(&g);
                        for &b in &parent_bodies {
                            assert_eq!(got[b], reference[b], "seed {seed}");
                        }
                        let was_awake = before.is_awake(split.parent).unwrap();
                        for &i in &split.islands {
                            assert_eq!(g.is_awake(i).unwrap(), was_awake);
                        }
                    }
                }
                7..=8 => {
                    let v: Vec<Vec3> = (0..n)
                        .map(|_| Vec3::new(0.0, if rng.below(8) == 0 { 1.0 } else { 0.0 }, 0.0))
                        .collect();
                    let w = vec![Vec3::ZERO; n];
                    let slept = g.update_sleep(0.0625, &v, &w).unwrap();
                    for i in slept {
                        assert!(!g.is_awake(i).unwrap());
                        assert!(!g.may_split(i).unwrap());
                        for b in g.bodies(i).unwrap() {
                            assert!(g.sleep_time(b).unwrap() >= tts);
                        }
                    }
                }
                _ => {
                    let b = rng.below(n);
                    g.wake_body(b).unwrap();
                    if !is_static[b] {
                        assert!(g.is_body_awake(b).unwrap());
                    }
                }
            }
            ok(&g);
        }
    }
}
