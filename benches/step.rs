//! One step of each built-in scene in both engines, 1 thread.
//!
//! `cargo bench --bench step` (add `-- --quick` for a short run).
//!
//! * `frame_step/<scene>`: one frame (1/60 s, 4 solver substeps) of the frame engine, averaged
//!   over frames 30..90: each block of at most 60 timed steps starts from a fresh engine
//!   advanced, untimed, to frame 30 (0.5 s in: bodies have met the ground, pyramids are not
//!   asleep yet), so the figure does not drift with how long criterion runs.
//! * `warp_frame/<scene>`: one frame of the warp engine in its steady state: each block is one
//!   `run_warp` of 3 + n frames, timed from the commit of frame 3 to the commit of frame 3 + n
//!   (n at most 10), so that engine construction and the first frames are left out. The warp
//!   engine runs smaller scenes here: it is still hundreds of times slower than the frame
//!   engine on scenes with contact.
//!
//! Sizes: frame engine parallel, cylinders and bouncing at 500, pyramids at 1100, avalanche at
//! 300; warp engine the sphere scenes at 200, pyramids at 55 (one pyramid), avalanche at 60.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use timewarp::frame::{FrameConfig, FrameEngine};
use timewarp::scene::{Scene, builtin};
use timewarp::sync::Backend;
use timewarp::warp::{WarpConfig, run_warp};

const FRAME_SIZES: [(&str, usize); 5] = [
    ("parallel", 500),
    ("cylinders", 500),
    ("bouncing", 500),
    ("pyramids", 1100),
    ("avalanche", 300),
];
const WARP_SIZES: [(&str, usize); 5] = [
    ("parallel", 200),
    ("cylinders", 200),
    ("bouncing", 200),
    ("pyramids", 55),
    ("avalanche", 60),
];
const SKIP: u64 = 30;
const BLOCK: u64 = 60;
const WARP_SKIP: u64 = 3;
const WARP_BLOCK: u64 = 10;

fn frame_engine(scene: &Scene) -> FrameEngine {
    let mut e = FrameEngine::try_new(
        scene,
        FrameConfig {
            threads: 1,
            ..FrameConfig::default()
        },
    )
    .unwrap();
    for _ in 0..SKIP {
        e.step();
    }
    e
}

fn bench_frame(c: &mut Criterion) {
    let mut g = c.benchmark_group("frame_step");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (name, n) in FRAME_SIZES {
        let scene = builtin(name, Some(n)).unwrap();
        g.throughput(Throughput::Elements(1));
        g.bench_function(format!("{name}_{n}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let mut e = frame_engine(&scene);
                    let k = (iters - done).min(BLOCK);
                    let t = Instant::now();
                    for _ in 0..k {
                        e.step();
                    }
                    total += t.elapsed();
                    std::hint::black_box(e.states());
                    done += k;
                }
                total
            })
        });
    }
    g.finish();
}

/// Wall time from the commit of frame `WARP_SKIP` to that of `WARP_SKIP + frames`.
fn warp_frames(scene: &Scene, frames: u64) -> Duration {
    let ft = u64::from(scene.world.frame_ticks);
    let config = WarpConfig {
        threads: 1,
        backend: Backend::COMPILED[0],
        window: None,
    };
    let mut from = None;
    let mut to = None;
    run_warp(
        scene,
        config,
        (WARP_SKIP + frames) * ft,
        &mut |t, states| {
            std::hint::black_box(states);
            if t == WARP_SKIP * ft {
                from = Some(Instant::now());
            }
            if t == (WARP_SKIP + frames) * ft {
                to = Some(Instant::now());
            }
            Ok(())
        },
    )
    .unwrap();
    to.unwrap() - from.unwrap()
}

fn bench_warp(c: &mut Criterion) {
    let mut g = c.benchmark_group("warp_frame");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (name, n) in WARP_SIZES {
        let scene = builtin(name, Some(n)).unwrap();
        g.throughput(Throughput::Elements(1));
        g.bench_function(format!("{name}_{n}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let k = (iters - done).min(WARP_BLOCK);
                    total += warp_frames(&scene, k);
                    done += k;
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_frame, bench_warp);
criterion_main!(benches);
