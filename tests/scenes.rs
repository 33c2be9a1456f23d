//! Scene-level validation of the frame engine on the built-in scenes (issue: physics core).
//!
//! Each test checks a physical property that follows from the scene's definition in DESIGN.md,
//! not from a recorded run: spheres never sink into static geometry, pyramids stand and sleep,
//! an elastic-ish gas in a closed box stays inside and never gains energy.

use glam::Vec3;
use timewarp::frame::{FrameConfig, FrameEngine};
use timewarp::scene::{self, Scene, Shape};

fn engine(scene: &Scene, threads: usize) -> FrameEngine {
    FrameEngine::new(
        scene,
        FrameConfig {
            threads,
            ..FrameConfig::default()
        },
    )
}

fn frames_for(scene: &Scene, seconds: f64) -> u64 {
    (seconds * scene.world.ticks_per_second as f64 / scene.world.frame_ticks as f64).round() as u64
}

#[test]
fn cylinders_500_nothing_sinks_or_tunnels() {
    let scene = scene::builtin("cylinders", Some(500)).unwrap();
    assert_eq!(scene.bodies.iter().filter(|b| !b.is_static).count(), 500);
    let cylinders: Vec<(Vec3, f32)> = scene
        .bodies
        .iter()
        .filter_map(|b| match b.shape {
            Shape::Cylinder { radius, .. } if b.is_static => Some((b.position, radius)),
            _ => None,
        })
        .collect();
    assert_eq!(cylinders.len(), 5);
    let mut e = engine(&scene, 2);
    let frames = frames_for(&scene, 10.0);
    let mut lowest = f32::INFINITY;
    let mut deepest_in_cylinder = 0.0f32;
    for _ in 0..frames {
        e.step();
        for (i, s) in e.states().iter().enumerate() {
            if scene.bodies[i].is_static {
                continue;
            }
            let p = s.position;
            assert!(
                p.is_finite(),
                "body {i} is not finite at frame {}",
                e.frame()
            );
            lowest = lowest.min(p.y);
            for &(c, r) in &cylinders {
                // Distance from the cylinder's axis (along z); the cylinders span z in [-5, 5].
                if p.z.abs() <= 5.0 {
                    let d = ((p.x - c.x).powi(2) + (p.y - c.y).powi(2)).sqrt();
                    deepest_in_cylinder = deepest_in_cylinder.max((r + 0.5) - d);
                }
            }
        }
    }
    assert!(
        lowest >= 0.45,
        "a sphere sank into the ground: lowest centre y = {lowest}"
    );
    assert!(
        deepest_in_cylinder <= 0.05,
        "a sphere sank {deepest_in_cylinder} m into a cylinder"
    );
}

/// Mean height of each pyramid's boxes, pyramids told apart by their x-z cell (12 m apart).
fn pyramid_heights(scene: &Scene, e: &FrameEngine) -> Vec<(i64, i64, f32, usize)> {
    let mut cells: Vec<(i64, i64, f32, usize)> = Vec::new();
    for (i, b) in scene.bodies.iter().enumerate() {
        if b.is_static {
            continue;
        }
        let p0 = b.position;
        let key = ((p0.x / 12.0).round() as i64, (p0.z / 12.0).round() as i64);
        let y = e.states()[i].position.y;
        match cells.iter_mut().find(|c| (c.0, c.1) == key) {
            Some(c) => {
                c.2 += y;
                c.3 += 1;
            }
            None => cells.push((key.0, key.1, y, 1)),
        }
    }
    cells.sort_by_key(|c| (c.0, c.1));
    cells
}

/// Every pyramid's mean height at `end` is within 1% of `start` ([`pyramid_heights`]).
fn assert_standing(start: &[(i64, i64, f32, usize)], end: &[(i64, i64, f32, usize)]) {
    assert_eq!(start.len(), end.len());
    for (a, b) in start.iter().zip(end) {
        let (h0, h1) = (a.2 / a.3 as f32, b.2 / b.3 as f32);
        assert!(
            (h1 - h0).abs() <= 0.01 * h0,
            "pyramid at cell ({}, {}) moved: mean height {h0} -> {h1}",
            a.0,
            a.1
        );
    }
}

#[test]
fn pyramids_1100_stand_and_sleep() {
    let scene = scene::builtin("pyramids", Some(1100)).unwrap();
    assert_eq!(scene.bodies.iter().filter(|b| !b.is_static).count(), 1100);
    let mut e = engine(&scene, 2);
    let start = pyramid_heights(&scene, &e);
    assert_eq!(start.len(), 20, "1100 boxes make 20 pyramids of 55");
    assert!(start.iter().all(|c| c.3 == 55));
    for _ in 0..frames_for(&scene, 10.0) {
        e.step();
    }
    assert_standing(&start, &pyramid_heights(&scene, &e));
    let awake: Vec<usize> = (0..scene.bodies.len())
        .filter(|&i| !scene.bodies[i].is_static && !e.is_sleeping(i))
        .collect();
    assert!(
        awake.is_empty(),
        "{} boxes still awake at 10 s",
        awake.len()
    );
}

/// `--sleep off` (`FrameConfig::sleep`): the two pyramids of `pyramids` 110 rest from the start
/// and are asleep at 2 s with sleep on; with it off no island is put to sleep in any frame, no
/// box is ever asleep, and both pyramids are still solved, awake, at 2 s. Either way they stand.
#[test]
fn pyramids_110_never_sleep_with_sleep_off() {
    let scene = scene::builtin("pyramids", Some(110)).unwrap();
    for sleep in [true, false] {
        let config = FrameConfig {
            threads: 2,
            sleep,
            ..FrameConfig::default()
        };
        let mut e = FrameEngine::new(&scene, config);
        let start = pyramid_heights(&scene, &e);
        for _ in 0..frames_for(&scene, 2.0) {
            e.step();
            let s = e.stats();
            if !sleep {
                assert_eq!((s.sleeps, s.islands_sleeping_last), (0, 0), "{s:?}");
                assert!(
                    (0..scene.bodies.len()).all(|i| !e.is_sleeping(i)),
                    "a box is asleep at frame {} with sleep off",
                    e.frame()
                );
            }
        }
        let s = e.stats();
        let (awake, asleep) = if sleep { (0, 2) } else { (2, 0) };
        assert_eq!(
            (s.islands_awake_last, s.islands_sleeping_last),
            (awake, asleep),
            "sleep {sleep}: {s:?}"
        );
        assert_eq!(s.sleeps > 0, sleep, "{s:?}");
        assert_standing(&start, &pyramid_heights(&scene, &e));
    }
}

#[test]
fn bouncing_200_stays_in_the_box_without_gaining_energy() {
    let scene = scene::builtin("bouncing", Some(200)).unwrap();
    let half = 0.5 * 250.0f32.cbrt();
    let energy = |e: &FrameEngine| -> f64 {
        let mut k = 0.0f64;
        for (i, b) in scene.bodies.iter().enumerate() {
            if b.is_static {
                continue;
            }
            let Shape::Sphere { radius } = b.shape else {
                panic!("bouncing holds spheres only")
            };
            let s = e.states()[i];
            let inertia = 0.4 * b.mass * radius * radius;
            k += 0.5 * (b.mass * s.velocity.length_squared()) as f64
                + 0.5 * (inertia * s.angular_velocity.length_squared()) as f64;
        }
        k
    };
    let mut e = engine(&scene, 2);
    let k0 = energy(&e);
    assert!(k0 > 0.0);
    for _ in 0..frames_for(&scene, 10.0) {
        e.step();
        let k = energy(&e);
        assert!(
            k <= 1.01 * k0,
            "kinetic energy rose to {k} from {k0} at frame {}",
            e.frame()
        );
        for (i, s) in e.states().iter().enumerate() {
            if scene.bodies[i].is_static {
                continue;
            }
            let p = s.position;
            assert!(
                p.abs().max_element() <= half,
                "sphere {i} left the box: {p} (half side {half})"
            );
        }
    }
}
