//! The warp engine with contact groups (`WarpConfig::groups`) against the grouped sequential
//! reference (`timewarp::warp::reference::grouped_reference`, the rules of
//! `timewarp::warp::group_rules` in lock-step): committed frames bit for bit equal, and the
//! same fusions and fissions, for several thread counts, windows and both backends, on the
//! small scenes of `tests/groups.rs`: a pyramid that fuses, stands and sleeps; a slow landing
//! that fuses beside a fast hit that stays a collision; a box knocked off a stack that splits
//! off; a kick that wakes a sleeping box. Each run's island graph is validated at the end.
//! Run with `cargo test --release --all-features --test warp_groups`.

use glam::Vec3;
use timewarp::scene::{BodyDesc, Scene};
use timewarp::sync::Backend;
use timewarp::warp::reference::{GroupedRun, grouped_reference};
use timewarp::warp::rules::Rules;
use timewarp::warp::{Tick, WarpConfig};

#[path = "support/bodies.rs"]
mod bodies;
#[path = "support/frames.rs"]
mod frames;
use bodies::*;
use frames::{bits, warp_frames};

const TPS: u64 = 960;

/// Runs `bodies` for `seconds` in the grouped reference and in the warp engine with groups in
/// each of `configs` (threads, window), under every compiled backend; every committed frame
/// and the counts of fusions and fissions must be equal. Returns the reference's run.
fn check(name: &str, bodies: Vec<BodyDesc>, seconds: f64, configs: &[(usize, u64)]) -> GroupedRun {
    let scene = Scene {
        world: world(Vec3::new(0.0, -G, 0.0)),
        bodies,
    };
    let rules = Rules::new(&scene).unwrap();
    let end = (seconds * TPS as f64) as Tick;
    let run = grouped_reference(&rules, 16, end).unwrap();
    let want = bits(&run.frames);
    let fusions = run.changes.iter().filter(|c| c.is_fusion()).count() as u64;
    let fissions = run.changes.iter().filter(|c| c.is_fission()).count() as u64;
    assert_ne!(want[0], want[want.len() - 1], "{name}: nothing moves");
    for &backend in Backend::COMPILED {
        for &(threads, window) in configs {
            let config = WarpConfig {
                threads,
                backend,
                window: Some(window),
                chaos: None,
                groups: true,
            };
            let (got, stats) = warp_frames(&scene, config, end);
            let got = bits(&got);
            assert_eq!(got.len(), want.len(), "{name} {config:?}");
            for (f, (g, w)) in got.iter().zip(&want).enumerate() {
                if let Some(b) = (0..w.len()).find(|&b| g[b] != w[b]) {
                    panic!(
                        "{name} {config:?}: frame {f} (tick {}) body {b} differs from the grouped \
                         reference: {:?} vs {:?} ({stats:?}; reference changes {:?})",
                        f * 16,
                        g[b],
                        w[b],
                        run.changes
                    );
                }
            }
            assert_eq!(
                (stats.group_changes, stats.fusions, stats.fissions),
                (run.changes.len() as u64, fusions, fissions),
                "{name} {config:?}: group changes"
            );
            let asleep = run.islands.iter().filter(|i| i.asleep).count() as u64;
            assert_eq!(stats.sleeping_groups, asleep, "{name} {config:?}");
            eprintln!("{name} {backend:?} threads {threads} window {window}: {stats:?}");
        }
    }
    run
}

const CONFIGS: &[(usize, u64)] = &[(1, 256), (3, 1), (16, 256)];

#[test]
fn a_pyramid_fuses_stands_and_sleeps_as_in_the_reference() {
    let mut bodies = vec![ground()];
    bodies.extend(pyramid(6, Vec3::ZERO));
    let run = check("pyramid 21", bodies, 0.8, CONFIGS);
    assert_eq!(run.islands.len(), 1);
    assert!(run.islands[0].asleep, "the pyramid is awake at the end");
}

#[test]
fn a_slow_landing_fuses_and_a_fast_hit_stays_a_collision_as_in_the_reference() {
    let run = check("landing and hit", landing_and_hit(), 0.5, CONFIGS);
    assert!(run.changes.iter().any(|c| c.is_fusion()));
}

#[test]
fn a_box_knocked_off_a_stack_splits_off_as_in_the_reference() {
    let run = check("knocked box", knocked_stack(), 0.6, CONFIGS);
    assert!(run.changes.iter().any(|c| c.is_fission()));
}

#[test]
fn a_kick_wakes_a_sleeping_box_as_in_the_reference() {
    let run = check("kick wakes", falling_ball_on_box(), 1.5, CONFIGS);
    assert!(!run.wakes.is_empty() && !run.sleeps.is_empty());
}
