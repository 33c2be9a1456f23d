//! One step of each built-in scene in both engines, 1 thread.
//!
//! `cargo bench --bench step` (add `-- --quick` for a short run).
//!
//! * `frame_step/<scene>`: one frame (1/60 s, 4 solver substeps) of the frame engine, averaged
//!   over frames 30..90: each block of at most 60 timed steps starts from a fresh engine
//!   advanced, untimed, to frame 30 (0.5 s in: bodies have met the ground, pyramids are not
//!   asleep yet), so the figure does not drift with how long criterion runs.
//! * `warp_20_frames/<scene>`: one `run_warp` of 20 frames (1/3 s, 320 ticks) from a fresh
//!   engine, construction included; throughput in frames, so criterion's `thrpt` is frames per
//!   second. Timing single frames from their commits does not work: the entities speculate up
//!   to a window (256 ticks, 16 frames) ahead, so frames commit in bursts, microseconds apart
//!   (measured: 1.5 µs "per frame" on parallel with 200 bodies). The warp engine runs smaller
//!   scenes here: it is still hundreds of times slower than the frame engine on scenes with
//!   contact.
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
const WARP_FRAMES: u64 = 20;

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

fn bench_warp(c: &mut Criterion) {
    let mut g = c.benchmark_group("warp_20_frames");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let config = WarpConfig {
        threads: 1,
        backend: Backend::COMPILED[0],
        window: None,
        full_window: false,
        chaos: None,
        groups: false,
        tvht_span: None,
        max_span: None,
        sleep: true,
        group_substep: timewarp::warp::group_rules::GROUP_SUBSTEP,
        anchor_cells: None,
    };
    for (name, n) in WARP_SIZES {
        let scene = builtin(name, Some(n)).unwrap();
        let end = WARP_FRAMES * u64::from(scene.world.frame_ticks);
        g.throughput(Throughput::Elements(WARP_FRAMES));
        g.bench_function(format!("{name}_{n}"), |b| {
            b.iter(|| {
                run_warp(&scene, config, end, &mut |_, states| {
                    std::hint::black_box(states);
                    Ok(())
                })
                .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_frame, bench_warp);
criterion_main!(benches);
