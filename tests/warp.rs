//! The warp engine against its sequential reference: committed frames bit for bit equal to
//! the lock-step, brute-force reference (`timewarp::warp::reference`) on the paper's three
//! scenes (seed 000, Section 6.1) with 100 bodies, for 1, 2 and 8 worker threads, windows 1 and
//! 256, and every compiled backend. Run with `cargo test --release --features stm,locks --test warp`.

use timewarp::scene::{Scene, builtin};
use timewarp::sync::Backend;
use timewarp::warp::reference::reference_frames;
use timewarp::warp::rules::Rules;
use timewarp::warp::{WarpConfig, WarpControl, run_warp};

#[path = "support/frames.rs"]
mod frames;
use frames::{bits, warp_frames, warp_frames_with};

/// Runs `scene` for `ticks` (a multiple of frame_ticks) in every configuration and compares.
fn check(name: &str, n: usize, ticks: u64, expect_collisions: bool) {
    let scene = builtin(name, Some(n)).unwrap();
    let rules = Rules::new(&scene).unwrap();
    let ft = u64::from(scene.world.frame_ticks);
    let want = bits(&reference_frames(&rules, ft, ticks));
    assert_eq!(want.len() as u64, ticks / ft + 1);
    // The reference itself must move the bodies (the comparison is not between two idle runs).
    assert_ne!(want[0], want[want.len() - 1]);
    for &backend in Backend::COMPILED {
        for window in [1, 256] {
            for threads in [1, 2, 8] {
                let config = WarpConfig {
                    threads,
                    backend,
                    window: Some(window),
                    full_window: true,
                    chaos: None,
                    groups: false,
                    tvht_span: None,
                    max_span: None,
                    sleep: true,
                    group_substep: timewarp::warp::group_rules::GROUP_SUBSTEP,
                    anchor_cells: None,
                };
                let (got, stats) = warp_frames(&scene, config, ticks);
                let got = bits(&got);
                assert_eq!(got.len(), want.len(), "{name} {config:?}");
                for (f, (g, w)) in got.iter().zip(&want).enumerate() {
                    if let Some(b) = (0..w.len()).find(|&b| g[b] != w[b]) {
                        panic!(
                            "{name} {config:?}: frame {f} body {b} differs from the reference: \
                             {:?} vs {:?} ({stats:?})",
                            g[b], w[b]
                        );
                    }
                }
                eprintln!("{name} {n} {backend:?} window {window} threads {threads}: {stats:?}");
                if expect_collisions {
                    assert!(stats.entities.events > 0, "{name} {config:?}: no events");
                } else {
                    assert_eq!(
                        stats.entities.events, 0,
                        "{name}: parallel bodies never touch"
                    );
                }
                // Every body-tick is in the TVHT: as an entry, or in a span record.
                let e = &stats.entities;
                assert!(e.tvht_writes + e.span_ticks >= n as u64 * (ticks + 1));
                // Under a window of one tick nobody flies a span; under 256, bodies do.
                assert_eq!(e.spans > 0, window > 1, "{name} {config:?}: {e:?}");
            }
        }
    }
}

#[test]
fn parallel_equals_the_reference() {
    check("parallel", 100, 480, false);
}

#[test]
fn cylinders_equals_the_reference() {
    // 100 spheres fall 5 m onto the cylinders (about 1 s) and bounce off them and each other.
    check("cylinders", 100, 1920, true);
}

#[test]
fn bouncing_equals_the_reference() {
    check("bouncing", 100, 960, true);
}

/// Past what the span-wide test against the static bodies clears, a single body's span goes
/// on tick by tick (rule 2b at each tick) and ends at the first tick with a static kick
/// (`Entity::fly`): a ball thrown over a floor flies into each bounce and out of it in spans,
/// and steps no tick on its own (its one entry is its first, at tick 0), where it used to
/// step and write the ticks about each bounce one by one. Its frames are the reference's.
#[test]
fn a_bouncing_ball_flies_into_and_out_of_each_bounce() {
    use timewarp::scene::{BodySpec, SceneBuilder};
    let ball = BodySpec::sphere(0.25)
        .position(glam::Vec3::new(0.0, 1.5, 0.0))
        .velocity(glam::Vec3::new(2.0, 0.0, 0.0))
        .restitution(0.8);
    let scene = SceneBuilder::new()
        .body(BodySpec::plane(glam::Vec3::Y, 0.0).restitution(0.8))
        .body(ball)
        .build()
        .unwrap();
    let rules = Rules::new(&scene).unwrap();
    let ft = u64::from(scene.world.frame_ticks);
    // Two seconds: it meets the floor at 0.5 s, 1.3 s and 1.96 s (restitution 0.8).
    let ticks = 2 * u64::from(scene.world.ticks_per_second);
    let want = bits(&reference_frames(&rules, ft, ticks));
    let heights: Vec<f32> = want.iter().map(|f| f32::from_bits(f[0][1])).collect();
    let bounces = heights
        .windows(3)
        .filter(|h| h[1] < h[0] && h[1] <= h[2])
        .count();
    assert_eq!(
        bounces, 3,
        "the reference's ball bounces three times: {heights:?}"
    );
    for &backend in Backend::COMPILED {
        for threads in [1, 2] {
            let config = WarpConfig {
                threads,
                backend,
                window: Some(256),
                full_window: true,
                ..WarpConfig::default()
            };
            let (got, stats) = warp_frames(&scene, config, ticks);
            assert_eq!(bits(&got), want, "{config:?} {stats:?}");
            let e = &stats.entities;
            assert_eq!(
                e.tvht_writes, 1,
                "ticks stepped one by one: {config:?} {e:?}"
            );
            assert!(e.spans > 3, "{config:?} {e:?}");
        }
    }
}

#[test]
fn many_threads_on_few_cores_still_equal_the_reference() {
    // Oversubscribed: 32 workers on the test machine's cores, small window.
    let scene = builtin("bouncing", Some(30)).unwrap();
    let rules = Rules::new(&scene).unwrap();
    let want = bits(&reference_frames(&rules, 16, 480));
    for window in [4, 64] {
        let config = WarpConfig {
            threads: 32,
            backend: Backend::default(),
            window: Some(window),
            full_window: true,
            chaos: None,
            groups: false,
            tvht_span: None,
            max_span: None,
            sleep: true,
            group_substep: timewarp::warp::group_rules::GROUP_SUBSTEP,
            anchor_cells: None,
        };
        let (got, stats) = warp_frames(&scene, config, 480);
        assert_eq!(bits(&got), want, "{config:?} {stats:?}");
    }
}

#[test]
fn sink_errors_stop_the_run() {
    let scene = builtin("parallel", Some(4)).unwrap();
    let config = WarpConfig {
        threads: 2,
        backend: Backend::default(),
        window: Some(16),
        full_window: true,
        chaos: None,
        groups: false,
        tvht_span: None,
        max_span: None,
        sleep: true,
        group_substep: timewarp::warp::group_rules::GROUP_SUBSTEP,
        anchor_cells: None,
    };
    let mut n = 0;
    let r = run_warp(&scene, config, 960, &mut |_, _| {
        n += 1;
        if n == 3 {
            Err("disk full".into())
        } else {
            Ok(())
        }
    });
    assert_eq!(r.unwrap_err(), "disk full");
    assert_eq!(n, 3);
}

/// Two equal spheres meet head on without gravity (restitution 1, no friction): the reference
/// and the engine both swap their velocities (analytic), conserving momentum, and agree.
#[test]
fn head_on_collision_swaps_velocities() {
    use glam::{Quat, Vec3};
    use timewarp::scene::{BodyDesc, Shape, World};
    let ball = |x: f32, v: f32| BodyDesc {
        shape: Shape::Sphere { radius: 0.5 },
        position: Vec3::new(x, 0.0, 0.0),
        rotation: Quat::IDENTITY,
        velocity: Vec3::new(v, 0.0, 0.0),
        angular_velocity: Vec3::ZERO,
        mass: 2.0,
        restitution: 1.0,
        friction: 0.0,
        rolling_resistance: 0.0,
        is_static: false,
    };
    let scene = Scene {
        world: World {
            gravity: Vec3::ZERO,
            ..World::default()
        },
        bodies: vec![ball(-2.0, 3.0), ball(2.0, -1.0)],
    };
    // They touch after (4 - 1) / 4 = 0.75 s; run 1 s = 960 ticks.
    let rules = Rules::new(&scene).unwrap();
    let want = reference_frames(&rules, 16, 960);
    let last = &want[want.len() - 1];
    assert!((last[0].velocity.x + 1.0).abs() < 1e-4, "{:?}", last[0]);
    assert!((last[1].velocity.x - 3.0).abs() < 1e-4, "{:?}", last[1]);
    assert!(last[0].position.x < last[1].position.x - 1.0);
    for threads in [1, 2] {
        let config = WarpConfig {
            threads,
            backend: Backend::default(),
            window: Some(256),
            full_window: true,
            chaos: None,
            groups: false,
            tvht_span: None,
            max_span: None,
            sleep: true,
            group_substep: timewarp::warp::group_rules::GROUP_SUBSTEP,
            anchor_cells: None,
        };
        let (got, stats) = warp_frames(&scene, config, 960);
        assert_eq!(bits(&got), bits(&want));
        assert_eq!(stats.entities.events, 1, "one collision, reported once");
    }
}

/// The adaptive lead (`timewarp::warp::lead`, the default) changes how far entities run ahead
/// of the GVT, never the frames: equal to the reference with 1 and 32 workers. One worker
/// never starves while an entity can step, so it never raises the lead, and entities that
/// step tick by tick (no spans) stay within the floor of the lead (at most 64 ticks; with the
/// full window of 256 they run further ahead; spans fly up to the window by design, see
/// "Spans" in `warp::entity`); 32 workers on 100 entities stepping tick by tick starve, idle
/// for more than 5% of their time, and raise it, never past the window. (Tick by tick, because
/// that is where the lead holds entities back: with spans they fly up to the window, and
/// whether 32 workers then find an entity waiting at the lead depends on how the two cores
/// schedule them; it raised the lead in 2 of 3 command-line runs with three busy loops
/// competing, and failed this test once in CI. Tick by tick it raised it 3-9 times in each of 6
/// such runs.)
#[test]
fn the_adaptive_lead_keeps_the_frames_and_follows_the_workers() {
    use timewarp::warp::lead::LEAD_FLOOR;
    let scene = builtin("bouncing", Some(100)).unwrap();
    let rules = Rules::new(&scene).unwrap();
    let ticks = 960;
    let want = bits(&reference_frames(&rules, 16, ticks));
    let run_spans = |threads, full_window, max_span| {
        let config = WarpConfig {
            threads,
            window: Some(256),
            full_window,
            max_span,
            ..WarpConfig::default()
        };
        let (got, stats) = warp_frames(&scene, config, ticks);
        assert!(
            bits(&got) == want,
            "{config:?}: frames differ from the reference"
        );
        assert!(stats.lead.lead <= 256 && stats.window == 256, "{stats:?}");
        stats
    };
    let run = |threads, full_window| run_spans(threads, full_window, None);
    let one = run(1, false);
    assert!(
        one.lead.raised == 0 && one.lead.lead <= LEAD_FLOOR && one.entities.spans > 0,
        "one worker raised the lead ({one:?})"
    );
    let ticks_only = run_spans(1, false, Some(0));
    assert!(
        ticks_only.mean_lead() <= LEAD_FLOOR as f64 && ticks_only.entities.spans == 0,
        "one worker, tick by tick: mean LVT - GVT {} past the lead's floor ({ticks_only:?})",
        ticks_only.mean_lead()
    );
    let full = run(1, true);
    assert!(
        full.mean_lead() > LEAD_FLOOR as f64 && full.lead.lead == 256,
        "the full window: mean LVT - GVT {} ({full:?})",
        full.mean_lead()
    );
    let many = run_spans(32, false, Some(0));
    assert!(
        many.lead.raised > 0 && many.entities.spans == 0,
        "32 workers never starved: {many:?}"
    );
}

/// Two spheres held apart on a diagonal, without gravity: their boxes overlap at every tick,
/// the spheres never touch. An entity's batch ends at the first contact that makes an event,
/// not at the first overlap of boxes: the second writer of each tick met the other's box and
/// used to end its batch there (one tick a turn from then on: on `bouncing` 2000 a body took a
/// turn every 3 ticks, against 32 on `parallel`). Frames equal the reference, no event, and
/// the two entities take few turns.
#[test]
fn boxes_that_overlap_without_touching_do_not_end_a_batch() {
    let scene = timewarp::scene::from_toml_str(
        r#"
[world]
gravity = [0.0, 0.0, 0.0]
ticks_per_second = 960
frame_ticks = 16

[[body]]
shape = "sphere"
radius = 0.5
position = [0.0, 0.0, 0.0]

[[body]]
shape = "sphere"
radius = 0.5
position = [0.7, 0.7, 0.7]
"#,
    )
    .unwrap();
    let rules = Rules::new(&scene).unwrap();
    let ticks = 960;
    let want = bits(&reference_frames(&rules, 16, ticks));
    let config = WarpConfig {
        threads: 1,
        groups: false,
        ..WarpConfig::default()
    };
    let (got, stats) = warp_frames(&scene, config, ticks);
    assert!(bits(&got) == want, "frames differ from the reference");
    assert_eq!(stats.entities.events, 0, "{stats:?}");
    // 2 entities x 960 ticks; one tick a turn would be 1920 turns.
    assert!(
        stats.entities.turns <= 2 * ticks / 8,
        "{} turns: {stats:?}",
        stats.entities.turns
    );
}

/// Regression: the parallelism estimate of a run with many workers failed with "the graph has
/// a cycle" (`timewarp bench`, `bouncing` 500, 8 workers, on a 16-core machine). A worker
/// closed its task after the turn's tail, when the entity could already have run its next
/// turn on another worker, so the two tasks' links to the entity's previous task crossed.
/// Oversubscribed workers under chaos (which now pauses in that tail) cross them here; the
/// task DAG must be acyclic, its figures consistent, and profiling must not change a frame.
#[test]
fn the_parallelism_estimate_holds_with_many_workers() {
    for (name, n, ticks, groups) in [("bouncing", 500, 160, false), ("pyramids", 110, 320, true)] {
        let mut scene = builtin(name, Some(n)).unwrap();
        if groups {
            // Rows a millimetre apart (laid out touching, each pyramid is one group from the
            // first tick): they land on each other and fuse, with messages between groups.
            for b in scene.bodies.iter_mut().filter(|b| !b.is_static) {
                b.position.y = 0.5 + (b.position.y - 0.5) * 1.001;
            }
        }
        let plain = WarpConfig {
            threads: 1,
            backend: Backend::COMPILED[0],
            window: None,
            full_window: false,
            chaos: None,
            groups,
            tvht_span: None,
            max_span: None,
            sleep: true,
            group_substep: timewarp::warp::group_rules::GROUP_SUBSTEP,
            anchor_cells: None,
        };
        let (want, _) = warp_frames(&scene, plain, ticks);
        let want = bits(&want);
        for &backend in Backend::COMPILED {
            for (threads, chaos) in [(16, Some(1)), (32, Some(2)), (32, Some(3)), (8, None)] {
                let config = WarpConfig {
                    threads,
                    backend,
                    chaos,
                    ..plain
                };
                let control = WarpControl {
                    profile: true,
                    ..WarpControl::default()
                };
                let (got, stats) = warp_frames_with(&scene, config, ticks, control);
                assert!(
                    bits(&got) == want,
                    "{name} {config:?}: profiling changed the frames"
                );
                let p = stats.parallelism.expect("a profiled run has an estimate");
                // Every entity turn is a task (so are the passes of an empty slot's mail).
                assert!(p.tasks >= stats.entities.turns, "{name} {config:?}: {p:?}");
                assert!(p.work > 0.0 && p.span > 0.0, "{name} {config:?}: {p:?}");
                assert!(p.span <= p.work, "{name} {config:?}: {p:?}");
                assert!(p.span_without_gvt <= p.span, "{name} {config:?}: {p:?}");
                assert!(p.message_edges > 0, "{name} {config:?}: {p:?}");
            }
        }
    }
}
