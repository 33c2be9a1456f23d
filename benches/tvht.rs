//! TVHT and GVT-buffer throughput, STM against ordered locks, at 1, 2, 4 and 8 threads.
//!
//! Run with both backends compiled in: `cargo bench --features stm,locks --bench tvht`.
//!
//! * `tvht_write_delete/<backend>/<threads>`: a table pre-filled with 512 bodies x 64 ticks
//!   (the entries a window of 64 ticks keeps); each thread owns one entity and, per operation,
//!   writes a body (r = 0.5) at a random place and a random tick of the window, then deletes it:
//!   two sections of about four buckets each, with the contacts they find. Throughput is in
//!   write+delete pairs.
//! * `tvht_write/<backend>/<threads>` and `tvht_delete/<backend>/<threads>`: the two halves
//!   apart. On the same pre-filled table each thread writes `OPS` bodies (each a new entity,
//!   at a random place and tick of the window) in one timed phase, then deletes them in a
//!   second; the threads meet at a barrier between phases, and the calling thread times each
//!   phase. Throughput is in writes (deletes) over all threads.
//! * `gvt_record_commit/<backend>/<threads>`: 256 bodies split into one block per thread; each
//!   thread records ticks 0..512 for its block (running ahead at most the window of 64), and
//!   every tick commits when the last block records it (frames every 16 ticks). Throughput is
//!   in committed ticks.
//!
//! After each group a line on stderr gives the section retry ratio and the STM abort ratio.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glam::{Quat, Vec3};
use std::time::{Duration, Instant};
use timewarp::dynamics::BodyState;
use timewarp::geometry::Aabb;
use timewarp::scene::SplitMix64;
use timewarp::sync::{self, Backend};
use timewarp::warp::{BodyEntry, GvtBuffer, GvtConfig, Tick, Tvht, TvhtConfig};

const THREADS: [usize; 4] = [1, 2, 4, 8];
const BODIES: u32 = 512;
const WINDOW: u64 = 64;
const SIDE: f32 = 16.0;
const OPS: usize = 500;

fn sphere(rng: &mut SplitMix64, body: u32) -> BodyEntry {
    let c = Vec3::new(rng.next_unit(), rng.next_unit(), rng.next_unit()) * SIDE;
    BodyEntry {
        body,
        aabb: Aabb::new(c - Vec3::splat(0.5), c + Vec3::splat(0.5)),
        state: BodyState {
            position: c,
            rotation: Quat::IDENTITY,
            velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
        },
        asleep: false,
    }
}

fn filled_table(backend: Backend) -> Tvht {
    let t = Tvht::new(backend, TvhtConfig::for_scene(BODIES as usize, 1.0, WINDOW)).unwrap();
    let mut rng = SplitMix64::new(1);
    for tick in 0..WINDOW {
        for b in 0..BODIES {
            t.write(b, tick, &[sphere(&mut rng, b)]).unwrap();
        }
    }
    t
}

fn report(what: &str, before: &sync::SyncStats) {
    let s = sync::stats().since(before);
    #[cfg(feature = "stm")]
    let stm = format!(
        ", STM commits {} aborts {} (ratio {:.4})",
        s.stm.commits,
        s.stm.aborts(),
        s.stm.abort_ratio()
    );
    #[cfg(not(feature = "stm"))]
    let stm = String::new();
    eprintln!(
        "{what}: {} sections, {:.2} keys/section, retry ratio {:.4}, lock acquisitions {}{stm}",
        s.sections,
        s.mean_keys(),
        s.retry_ratio(),
        s.lock_acquisitions
    );
}

fn bench_tvht(c: &mut Criterion) {
    let mut g = c.benchmark_group("tvht_write_delete");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1));
    for &backend in Backend::COMPILED {
        let table = filled_table(backend);
        for threads in THREADS {
            g.throughput(Throughput::Elements((threads * OPS) as u64));
            let before = sync::stats();
            g.bench_function(format!("{backend}/{threads}"), |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    for i in 0..iters {
                        std::thread::scope(|s| {
                            for th in 0..threads {
                                let table = &table;
                                s.spawn(move || {
                                    let entity = 10_000 + th as u32;
                                    let mut rng = SplitMix64::new(i * 64 + th as u64);
                                    for _ in 0..OPS {
                                        let tick = rng.next_u64() % WINDOW;
                                        let e = [sphere(&mut rng, entity)];
                                        std::hint::black_box(
                                            table.write(entity, tick, &e).unwrap(),
                                        );
                                        std::hint::black_box(
                                            table.delete(entity, tick, &e).unwrap(),
                                        );
                                    }
                                });
                            }
                        });
                    }
                    start.elapsed()
                })
            });
            report(&format!("tvht {backend}/{threads}"), &before);
        }
    }
    g.finish();
}

/// Which phase of [`write_then_delete`] a bench times.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Write,
    Delete,
}

/// `threads` threads each write `OPS` entries, then (after a barrier) delete them; returns the
/// wall time of the write phase and of the delete phase.
fn write_then_delete(table: &Tvht, threads: usize, seed: u64) -> (Duration, Duration) {
    let barrier = std::sync::Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for th in 0..threads {
            let barrier = &barrier;
            s.spawn(move || {
                let mut rng = SplitMix64::new(seed * 64 + th as u64);
                let mine: Vec<(u32, Tick, [BodyEntry; 1])> = (0..OPS)
                    .map(|k| {
                        let entity = 10_000 + (th * OPS + k) as u32;
                        let tick = rng.next_u64() % WINDOW;
                        (entity, tick, [sphere(&mut rng, entity)])
                    })
                    .collect();
                barrier.wait();
                for (entity, tick, e) in &mine {
                    std::hint::black_box(table.write(*entity, *tick, e).unwrap());
                }
                barrier.wait();
                for (entity, tick, e) in &mine {
                    std::hint::black_box(table.delete(*entity, *tick, e).unwrap());
                }
                barrier.wait();
            });
        }
        barrier.wait();
        let t0 = Instant::now();
        barrier.wait();
        let t1 = Instant::now();
        barrier.wait();
        (t1 - t0, t1.elapsed())
    })
}

fn bench_tvht_phases(c: &mut Criterion) {
    for (group, phase) in [("tvht_write", Phase::Write), ("tvht_delete", Phase::Delete)] {
        let mut g = c.benchmark_group(group);
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_secs(1));
        for &backend in Backend::COMPILED {
            let table = filled_table(backend);
            for threads in THREADS {
                g.throughput(Throughput::Elements((threads * OPS) as u64));
                let before = sync::stats();
                g.bench_function(format!("{backend}/{threads}"), |b| {
                    b.iter_custom(|iters| {
                        (0..iters)
                            .map(|i| {
                                let (w, d) = write_then_delete(&table, threads, i);
                                if phase == Phase::Write { w } else { d }
                            })
                            .sum()
                    })
                });
                report(&format!("{group} {backend}/{threads}"), &before);
            }
        }
        g.finish();
    }
}

const GVT_BODIES: usize = 256;
const GVT_TICKS: Tick = 512;

fn run_gvt(backend: Backend, threads: usize) {
    let g = GvtBuffer::new(backend, GvtConfig::new(GVT_BODIES, 16, WINDOW)).unwrap();
    std::thread::scope(|s| {
        for th in 0..threads {
            let g = &g;
            s.spawn(move || {
                let mine: Vec<u32> = (0..GVT_BODIES as u32)
                    .filter(|&b| b as usize * threads / GVT_BODIES == th)
                    .collect();
                let state = BodyState {
                    position: Vec3::ONE,
                    rotation: Quat::IDENTITY,
                    velocity: Vec3::ZERO,
                    angular_velocity: Vec3::ZERO,
                };
                let states: Vec<(u32, BodyState)> = mine.iter().map(|&b| (b, state)).collect();
                for t in 0..GVT_TICKS {
                    while t > g.lvt_upper_bound() {
                        std::thread::yield_now();
                    }
                    g.record(t, &states).unwrap();
                }
            });
        }
    });
    assert_eq!(g.gvt(), GVT_TICKS);
    std::hint::black_box(g.drain_committed());
}

fn bench_gvt(c: &mut Criterion) {
    let mut g = c.benchmark_group("gvt_record_commit");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1));
    for &backend in Backend::COMPILED {
        for threads in THREADS {
            g.throughput(Throughput::Elements(GVT_TICKS));
            let before = sync::stats();
            g.bench_function(format!("{backend}/{threads}"), |b| {
                b.iter(|| run_gvt(backend, threads))
            });
            report(&format!("gvt {backend}/{threads}"), &before);
        }
    }
    g.finish();
}

criterion_group!(benches, bench_tvht, bench_tvht_phases, bench_gvt);
criterion_main!(benches);
