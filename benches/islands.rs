//! Island maintenance on the contact graph of `pyramids` with 10010 boxes (182 pyramids of 55
//! boxes: rows of 10, 9, ..., 1 in a wall, each box touching its row neighbours, the boxes below
//! and above it, and — bottom row — the static ground). The topology is built directly, without
//! physics: 10010 dynamic bodies, 26390 contacts (1820 of them with the ground).
//!
//! Seed 002 compares the persistent graph's per-step cost in this steady state (no contact
//! begins or ends) with Box2D v2.4's per-step depth-first rebuild of all islands (0.01 ms against
//! 0.69 ms, ~69x). Here:
//!
//! - `steady/persistent_awake`: merge two empty per-worker touch sets, apply them, sleep
//!   bookkeeping for 10010 awake moving bodies, `split_one` (nothing flagged);
//! - `steady/persistent_asleep`: the same with every island asleep;
//! - `steady/persistent_edges_only`: merge + apply + split_one, no sleep bookkeeping;
//! - `steady/dfs_rebuild`: v2.4's `SolveIslands` over a prebuilt flat adjacency (cheaper than
//!   v2.4's linked contact edges, so the comparison favours the baseline), with step-counter
//!   marks, building every island's body and contact lists, plus the same sleep bookkeeping
//!   per island (`dfs_rebuild_no_sleep`: the DFS alone, to set against `persistent_edges_only`);
//! - `link/build_all`, `split/*`, `sleep/*`, `wake/*`: the incremental operations.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use glam::Vec3;
use timewarp::islands::{ContactId, IslandGraph, TouchChanges, merge_touch_changes};

const PYRAMIDS: usize = 182;
const BASE: usize = 10;
const PER_PYRAMID: usize = BASE * (BASE + 1) / 2;
const DT: f32 = 1.0 / 60.0;

/// Body 0 is the static ground; box (p, row, i) is body `1 + p * 55 + row_start(row) + i`.
fn pyramids() -> (Vec<bool>, Vec<(u32, u32)>) {
    let n = 1 + PYRAMIDS * PER_PYRAMID;
    let mut is_static = vec![false; n];
    is_static[0] = true;
    let mut contacts = Vec::new();
    for p in 0..PYRAMIDS {
        let mut row_start = [0usize; BASE + 1];
        for r in 1..=BASE {
            row_start[r] = row_start[r - 1] + (BASE - (r - 1));
        }
        let id = |r: usize, i: usize| (1 + p * PER_PYRAMID + row_start[r] + i) as u32;
        for r in 0..BASE {
            let len = BASE - r;
            for i in 0..len {
                if r == 0 {
                    contacts.push((0, id(0, i)));
                } else {
                    contacts.push((id(r - 1, i), id(r, i)));
                    contacts.push((id(r - 1, i + 1), id(r, i)));
                }
                if i + 1 < len {
                    contacts.push((id(r, i), id(r, i + 1)));
                }
            }
        }
    }
    assert_eq!(contacts.len(), PYRAMIDS * 145);
    (is_static, contacts)
}

fn build_graph(
    is_static: &[bool],
    contacts: &[(u32, u32)],
) -> (IslandGraph, Vec<Option<ContactId>>) {
    let mut g = IslandGraph::new(is_static).unwrap();
    let ids = contacts
        .iter()
        .map(|&(a, b)| Some(g.link(a as usize, b as usize).unwrap()))
        .collect();
    (g, ids)
}

/// Box2D v2.4's per-step island build, over a flat adjacency built once.
struct DfsRebuild {
    is_static: Vec<bool>,
    adj_start: Vec<u32>,
    adj: Vec<(u32, u32)>, // (contact, other body)
    body_mark: Vec<u32>,
    contact_mark: Vec<u32>,
    stamp: u32,
    stack: Vec<u32>,
    island_bodies: Vec<u32>,
    island_contacts: Vec<u32>,
    island_ends: Vec<(u32, u32)>,
    sleep_time: Vec<f32>,
}

impl DfsRebuild {
    fn new(is_static: &[bool], contacts: &[(u32, u32)]) -> Self {
        let n = is_static.len();
        let mut degree = vec![0u32; n + 1];
        for &(a, b) in contacts {
            for x in [a, b] {
                if !is_static[x as usize] {
                    degree[x as usize + 1] += 1;
                }
            }
        }
        for i in 0..n {
            degree[i + 1] += degree[i];
        }
        let mut fill = degree.clone();
        let mut adj = vec![(0, 0); degree[n] as usize];
        for (c, &(a, b)) in contacts.iter().enumerate() {
            for (x, y) in [(a, b), (b, a)] {
                if !is_static[x as usize] {
                    adj[fill[x as usize] as usize] = (c as u32, y);
                    fill[x as usize] += 1;
                }
            }
        }
        DfsRebuild {
            is_static: is_static.to_vec(),
            adj_start: degree,
            adj,
            body_mark: vec![0; n],
            contact_mark: vec![0; contacts.len()],
            stamp: 0,
            stack: Vec::new(),
            island_bodies: Vec::with_capacity(n),
            island_contacts: Vec::with_capacity(contacts.len()),
            island_ends: Vec::new(),
            sleep_time: vec![0.0; n],
        }
    }

    /// Builds every island from scratch, then runs IslandSleep on each; returns the count.
    fn step(&mut self, v: &[Vec3], w: &[Vec3], sleep: bool) -> usize {
        self.stamp += 1;
        let stamp = self.stamp;
        self.island_bodies.clear();
        self.island_contacts.clear();
        self.island_ends.clear();
        for seed in 0..self.is_static.len() {
            if self.is_static[seed] || self.body_mark[seed] == stamp {
                continue;
            }
            self.body_mark[seed] = stamp;
            self.stack.push(seed as u32);
            while let Some(b) = self.stack.pop() {
                self.island_bodies.push(b);
                let (s, e) = (self.adj_start[b as usize], self.adj_start[b as usize + 1]);
                for &(c, other) in &self.adj[s as usize..e as usize] {
                    if self.contact_mark[c as usize] == stamp {
                        continue;
                    }
                    self.contact_mark[c as usize] = stamp;
                    self.island_contacts.push(c);
                    let o = other as usize;
                    if !self.is_static[o] && self.body_mark[o] != stamp {
                        self.body_mark[o] = stamp;
                        self.stack.push(other);
                    }
                }
            }
            self.island_ends.push((
                self.island_bodies.len() as u32,
                self.island_contacts.len() as u32,
            ));
        }
        if !sleep {
            return self.island_ends.len();
        }
        // IslandSleep per island.
        let mut start = 0usize;
        let mut sleeping = 0;
        for &(end, _) in &self.island_ends {
            let mut min = f32::INFINITY;
            for &b in &self.island_bodies[start..end as usize] {
                let b = b as usize;
                let t = if v[b].length_squared() <= 0.05 * 0.05
                    && w[b].length_squared() <= 0.035 * 0.035
                {
                    self.sleep_time[b] + DT
                } else {
                    0.0
                };
                self.sleep_time[b] = t;
                min = min.min(t);
            }
            if min >= 0.5 {
                sleeping += 1;
            }
            start = end as usize;
        }
        self.island_ends.len() + sleeping
    }
}

fn bench_steady(c: &mut Criterion) {
    let (is_static, contacts) = pyramids();
    let n = is_static.len();
    let (graph, ids) = build_graph(&is_static, &contacts);
    assert_eq!(graph.islands().count(), PYRAMIDS);
    graph.validate().unwrap();
    let moving = vec![Vec3::X; n];
    let still = vec![Vec3::ZERO; n];
    let workers = vec![TouchChanges::new(contacts.len()); 2];
    let mut group = c.benchmark_group("steady");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));

    let mut g = graph.clone();
    let mut pc = ids.clone();
    group.bench_function("persistent_awake", |bench| {
        bench.iter(|| {
            let merged = merge_touch_changes(black_box(&workers));
            g.apply_touch_changes(&merged, &contacts, &mut pc).unwrap();
            let slept = g.update_sleep(DT, &moving, &still).unwrap();
            black_box((slept, g.split_one()))
        })
    });
    assert_eq!(g.awake_islands().count(), PYRAMIDS);

    let mut g = graph.clone();
    let mut pc = ids.clone();
    while g.awake_islands().count() > 0 {
        g.update_sleep(DT, &still, &still).unwrap();
    }
    group.bench_function("persistent_asleep", |bench| {
        bench.iter(|| {
            let merged = merge_touch_changes(black_box(&workers));
            g.apply_touch_changes(&merged, &contacts, &mut pc).unwrap();
            let slept = g.update_sleep(DT, &still, &still).unwrap();
            black_box((slept, g.split_one()))
        })
    });

    let mut g = graph.clone();
    let mut pc = ids.clone();
    group.bench_function("persistent_edges_only", |bench| {
        bench.iter(|| {
            let merged = merge_touch_changes(black_box(&workers));
            g.apply_touch_changes(&merged, &contacts, &mut pc).unwrap();
            black_box(g.split_one())
        })
    });

    let mut dfs = DfsRebuild::new(&is_static, &contacts);
    assert_eq!(dfs.step(&moving, &still, true), PYRAMIDS);
    group.bench_function("dfs_rebuild", |bench| {
        bench.iter(|| black_box(dfs.step(black_box(&moving), &still, true)))
    });
    group.bench_function("dfs_rebuild_no_sleep", |bench| {
        bench.iter(|| black_box(dfs.step(black_box(&moving), &still, false)))
    });
    group.finish();
}

fn bench_ops(c: &mut Criterion) {
    let (is_static, contacts) = pyramids();
    let n = is_static.len();
    let (graph, _) = build_graph(&is_static, &contacts);
    let still = vec![Vec3::ZERO; n];
    let mut group = c.benchmark_group("ops");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));

    group.bench_function("link/build_all_10010", |bench| {
        bench.iter(|| black_box(build_graph(&is_static, &contacts).0.islands().count()))
    });

    // Split: the top box of pyramid 0 loses both its supports; the 55-body island splits into
    // {top} and the 54 others.
    let mut flagged = graph.clone();
    let top = PER_PYRAMID as u32; // body id of (p 0, row 9, i 0)
    let cs: Vec<ContactId> = flagged.body_contacts(top as usize).unwrap().collect();
    assert_eq!(cs.len(), 2);
    for c in cs {
        flagged.unlink(c).unwrap();
    }
    group.bench_function("split/one_pyramid_55", |bench| {
        bench.iter_batched_ref(
            || flagged.clone(),
            |g| {
                let s = g.split_one().unwrap();
                assert_eq!(s.islands.len(), 2);
                black_box(s)
            },
            BatchSize::LargeInput,
        )
    });

    // Sleep: every pyramid's timers one step short of time-to-sleep; one update puts all 182
    // islands to sleep.
    let mut sleepy = graph.clone();
    let steps = (0.5 / DT).ceil() as usize;
    for _ in 0..steps - 1 {
        sleepy.update_sleep(DT, &still, &still).unwrap();
    }
    assert_eq!(sleepy.awake_islands().count(), PYRAMIDS);
    group.bench_function("sleep/all_182_islands", |bench| {
        bench.iter_batched_ref(
            || sleepy.clone(),
            |g| {
                let slept = g.update_sleep(DT, &still, &still).unwrap();
                assert_eq!(slept.len(), PYRAMIDS);
                black_box(slept)
            },
            BatchSize::LargeInput,
        )
    });

    // Wake by touch: a contact between two sleeping pyramids wakes and merges both (110 bodies).
    let mut asleep = sleepy.clone();
    asleep.update_sleep(DT, &still, &still).unwrap();
    assert_eq!(asleep.awake_islands().count(), 0);
    let (a, b) = (1 + 9, 1 + PER_PYRAMID); // right end of pyramid 0's base, left end of pyramid 1's
    group.bench_function("wake/link_two_sleeping_pyramids", |bench| {
        bench.iter_batched_ref(
            || {
                let mut g = asleep.clone();
                g.reserve_contacts(1);
                g
            },
            |g| black_box(g.link(a, b).unwrap()),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_steady, bench_ops);
criterion_main!(benches);
