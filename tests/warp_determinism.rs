//! Determinism of the warp engine (DESIGN.md, "Determinism is a contract"): the committed
//! frames are a pure function of the scene, whatever the thread count, the backend, the window
//! and the schedule.
//!
//! * At scale, as a user runs it: the `timewarp` binary's `--checksum` on cylinders and bouncing
//!   with 500 bodies is the same for 1, 2, 3, 8 and 32 worker threads under both backends (the
//!   32-thread runs oversubscribe the machine, which is what finds races on 2 cores); so is
//!   `pyramids` 110 with `--sleep off` for 1, 2 and 8.
//! * Under chaos: the scheduler's test-only chaos mode (`WarpConfig::chaos`: random yields,
//!   sleeps, spins between a message's push and its receiver's scheduling, and deferred tasks)
//!   over 20 seeds, each run's committed frames compared bit for bit with the sequential
//!   reference (`timewarp::warp::reference`), an independent, lock-step computation.
//!
//! Needs a build with both backends: `cargo test --release --all-features --test warp_determinism`.

use std::process::Command;
use timewarp::dynamics::BodyState;
use timewarp::scene::builtin;
use timewarp::sync::Backend;
use timewarp::warp::reference::reference_frames;
use timewarp::warp::rules::Rules;
use timewarp::warp::{WarpConfig, run_warp};

fn checksum(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_timewarp"))
        .args(args)
        .args(["--engine", "warp", "--checksum", "--quiet"])
        .output()
        .expect("the timewarp binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "timewarp {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("checksum: "))
        .unwrap_or_else(|| panic!("no checksum line in {stdout:?}"));
    assert_eq!(line.len(), "checksum: ".len() + 16, "{line:?}");
    line.to_string()
}

/// The checksum of `scene` with `bodies` for `seconds` is the same for every thread count and
/// backend; the runs must also have had collisions to agree on (checked by the caller's span).
fn same_everywhere(scene: &str, bodies: &str, seconds: &str) {
    let base = ["run", scene, "--bodies", bodies, "--seconds", seconds];
    same_for_threads(&base, &["1", "2", "3", "8", "32"]);
}

/// The checksum of the run `base` is the same for each of `threads` under both backends;
/// returns it.
fn same_for_threads(base: &[&str], threads: &[&str]) -> String {
    let reference = checksum(&[base, &["--threads", threads[0], "--backend", "stm"]].concat());
    for backend in ["stm", "locks"] {
        for &t in threads {
            if (backend, t) == ("stm", threads[0]) {
                continue;
            }
            let args = [base, &["--threads", t, "--backend", backend]].concat();
            assert_eq!(
                checksum(&args),
                reference,
                "{base:?}: --threads {t} --backend {backend} differs from --threads {} \
                 --backend stm",
                threads[0]
            );
        }
    }
    reference
}

/// `--sleep off` on `pyramids` 110 (the warp engine with contact groups, which fall asleep
/// within 1 s with sleep on): the checksum is the same for 1, 2 and 8 worker threads under both
/// backends, and differs from the run with sleep on.
#[test]
fn pyramids_110_with_sleep_off_is_the_same_for_every_thread_count_and_backend() {
    let base = ["run", "pyramids", "--bodies", "110", "--seconds", "1"];
    let off = same_for_threads(&[&base[..], &["--sleep", "off"]].concat(), &["1", "2", "8"]);
    let on = checksum(&[&base[..], &["--threads", "2"]].concat());
    assert_ne!(
        off, on,
        "sleep off must change the frames of resting pyramids"
    );
}

#[test]
fn cylinders_500_is_the_same_for_every_thread_count_and_backend() {
    // The spheres reach the cylinders after about 0.9 s and the lowest layers collide with
    // them and with each other from then on.
    same_everywhere("cylinders", "500", "1.25");
}

#[test]
fn bouncing_500_is_the_same_for_every_thread_count_and_backend() {
    // Jittered lattice with random velocities: collisions from the first ticks.
    same_everywhere("bouncing", "500", "0.25");
}

fn bits(frames: &[Vec<BodyState>]) -> Vec<Vec<[u32; 13]>> {
    frames
        .iter()
        .map(|f| f.iter().map(|s| s.to_array().map(f32::to_bits)).collect())
        .collect()
}

#[test]
fn chaos_schedules_over_20_seeds_equal_the_reference() {
    let scene = builtin("bouncing", Some(60)).unwrap();
    let rules = Rules::new(&scene).unwrap();
    let ft = u64::from(scene.world.frame_ticks);
    let end = 480;
    let want = bits(&reference_frames(&rules, ft, end));
    let mut events = 0;
    for seed in 0..20u64 {
        let config = WarpConfig {
            threads: [2, 8, 32][seed as usize % 3],
            backend: Backend::COMPILED[seed as usize % Backend::COMPILED.len()],
            window: Some([4, 64, 256][seed as usize % 3]),
            full_window: true,
            chaos: Some(seed),
            groups: false,
            // The TVHT's time slice changes which entities share a bucket, never the frames.
            tvht_span: Some([1, 4, 16, 64, 256][seed as usize % 5]),
            // Nor the longest span a body flies as one record (0: tick by tick).
            max_span: Some([0, 4, 7, 64, u64::MAX][seed as usize / 5 % 5]),
            sleep: true,
            group_substep: timewarp::warp::group_rules::GROUP_SUBSTEP,
            // Nor the GVT buffer's anchor cells per body (2: a body records at most a frame or
            // so ahead of the GVT word, and waits for it).
            anchor_cells: Some([2, 3, 32][seed as usize / 3 % 3]),
        };
        let mut got = Vec::new();
        let stats = run_warp(&scene, config, end, &mut |_, s| {
            got.push(s.to_vec());
            Ok(())
        })
        .unwrap();
        let got = bits(&got);
        assert_eq!(got.len(), want.len(), "{config:?}");
        for (f, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g == w,
                "chaos seed {seed} {config:?}: frame {f} differs from the reference ({stats:?})"
            );
        }
        events += stats.entities.events;
    }
    assert!(events > 0, "the chaos runs must have had collisions");
}
