//! Physics validation against analytic mechanics: ballistic flight, bouncing with restitution,
//! elastic collision, rolling down an incline, rolling resistance and resting contact, each on
//! **every** engine as users run them: the frame engine (stepping at 1/60 s), the warp engine
//! with contact groups (its default: bodies in slow contact fuse into islands stepped by the
//! island solver) and without them (every body on its own clock in ticks of 1/960 s, contacts
//! as impulses). Then, on the frame engine, a stacked pyramid, sleep and wake, and
//! bit-identical results across thread counts (the warp engine's determinism is checked in
//! `tests/warp.rs` and `tests/warp_determinism.rs`, its pyramids in `tests/warp_groups.rs`).
//!
//! The long ones are meant for `cargo test --release --test physics`.

use glam::{Quat, Vec3};
use timewarp::dynamics::BodyState;
use timewarp::frame::{FrameConfig, FrameEngine};
use timewarp::scene::{BodyDesc, Scene, Shape};

#[path = "support/bodies.rs"]
mod bodies;
use bodies::*;
#[path = "support/engines.rs"]
#[macro_use]
mod engines;
use engines::{Engine, simulate};

fn engine(scene: &Scene, threads: usize) -> FrameEngine {
    FrameEngine::new(
        scene,
        FrameConfig {
            threads,
            ..FrameConfig::default()
        },
    )
}

/// Seconds at frame `k`.
fn time_of(k: usize) -> f32 {
    k as f32 / 60.0
}

on_every_engine!(parabola: projectile_follows_the_parabola, warp_projectile_follows_the_parabola, warp_groups_projectile_follows_the_parabola);

fn parabola(engine: Engine) {
    let g = Vec3::new(0.0, -G, 0.0);
    let mut b = body(sphere(0.5), Vec3::new(0.0, 1.0, 0.0), 1.0);
    b.velocity = Vec3::new(3.0, 8.0, -1.0);
    b.angular_velocity = Vec3::new(0.0, 0.0, 5.0);
    let scene = Scene {
        world: world(g),
        bodies: vec![b.clone()],
    };
    let frames = simulate(&scene, engine, 120);
    let mut worst = 0.0f32;
    for (k, f) in frames.iter().enumerate() {
        let t = time_of(k);
        let x = b.position + b.velocity * t + g * (0.5 * t * t);
        worst = worst.max((f[0].position - x).length());
        let dv = (f[0].velocity - (b.velocity + g * t)).length();
        assert!(dv < 1e-3, "{engine:?}: velocity off by {dv} m/s at {t} s");
    }
    assert!(
        worst < 1e-3,
        "{engine:?}: deviation from the parabola: {worst} m"
    );
}

on_every_engine!(bounces: bounce_heights_scale_with_restitution_squared, warp_bounce_heights_scale_with_restitution_squared, warp_groups_bounce_heights_scale_with_restitution_squared);

fn bounces(engine: Engine) {
    let e_rest = 0.8;
    let r = 0.5;
    let h0 = 5.0;
    let mut ball = body(sphere(r), Vec3::new(0.0, h0 + r, 0.0), 1.0);
    ball.restitution = e_rest;
    let scene = Scene {
        world: world(Vec3::new(0.0, -G, 0.0)),
        bodies: vec![ground(), ball],
    };
    let mut apexes = Vec::new();
    let mut rising = false;
    let mut top = 0.0f32;
    for f in simulate(&scene, engine, 600) {
        if apexes.len() == 3 {
            break;
        }
        let s = f[1];
        if s.velocity.y > 0.0 {
            rising = true;
            top = top.max(s.position.y - r);
        } else if rising {
            rising = false;
            // Exact apex of the free flight between the sampled frames.
            apexes.push(top);
            top = 0.0;
        }
    }
    assert_eq!(
        apexes.len(),
        3,
        "{engine:?}: three bounces expected, saw {apexes:?}"
    );
    for (k, &h) in apexes.iter().enumerate() {
        let expect = h0 * e_rest.powi(2 * (k as i32 + 1));
        assert!(
            (h - expect).abs() <= 0.03 * expect,
            "{engine:?}: bounce {}: {h} m, expected {expect} m",
            k + 1
        );
    }
}

on_every_engine!(elastic_swap: elastic_head_on_collision_swaps_velocities, warp_elastic_head_on_collision_swaps_velocities, warp_groups_elastic_head_on_collision_swaps_velocities);

fn elastic_swap(engine: Engine) {
    let mut a = body(sphere(0.5), Vec3::new(-2.0, 0.0, 0.0), 2.0);
    a.velocity = Vec3::new(3.0, 0.0, 0.0);
    a.restitution = 1.0;
    a.friction = 0.0;
    let mut b = body(sphere(0.5), Vec3::new(2.0, 0.0, 0.0), 2.0);
    b.velocity = Vec3::new(-1.0, 0.0, 0.0);
    b.restitution = 1.0;
    b.friction = 0.0;
    let scene = Scene {
        world: world(Vec3::ZERO),
        bodies: vec![a.clone(), b.clone()],
    };
    let f = simulate(&scene, engine, 90).pop().unwrap();
    let (sa, sb) = (f[0], f[1]);
    assert!(
        (sa.velocity - b.velocity).length() < 1e-4,
        "{engine:?}: {:?}",
        sa.velocity
    );
    assert!(
        (sb.velocity - a.velocity).length() < 1e-4,
        "{:?}",
        sb.velocity
    );
    let p0 = a.velocity * a.mass + b.velocity * b.mass;
    let p1 = sa.velocity * a.mass + sb.velocity * b.mass;
    assert!((p0 - p1).length() < 1e-4);
    assert!(
        sa.position.x < sb.position.x - 1.0,
        "they passed through each other"
    );
}

on_every_engine!(incline: sphere_rolls_down_an_incline, warp_sphere_rolls_down_an_incline, warp_groups_sphere_rolls_down_an_incline);

/// A sphere (r 0.5, 1 kg, friction 0.6) released on a 30° slope (friction 0.6) rolls without
/// slipping: `(5/7) g sin θ t² / 2` down the slope, 7.007 m in 2 s (no rolling resistance).
fn incline(engine: Engine) {
    let theta = 30f32.to_radians();
    let q = Quat::from_rotation_z(theta);
    let n = q * Vec3::Y; // the slope's outward normal
    let down = q * -Vec3::X; // down the slope
    let mut ramp = body(
        Shape::Cuboid {
            half_extents: Vec3::new(20.0, 0.5, 5.0),
        },
        Vec3::ZERO,
        0.0,
    );
    ramp.rotation = q;
    ramp.is_static = true;
    ramp.friction = 0.6;
    let r = 0.5;
    let start = n * (0.5 + r) - down * 10.0;
    let mut ball = body(sphere(r), start, 1.0);
    ball.friction = 0.6;
    let scene = Scene {
        world: world(Vec3::new(0.0, -G, 0.0)),
        bodies: vec![ramp, ball],
    };
    let t = time_of(120);
    let s = simulate(&scene, engine, 120).pop().unwrap()[1];
    let travelled = (s.position - start).dot(down);
    let expect = 0.5 * (5.0 / 7.0) * G * theta.sin() * t * t;
    println!(
        "incline, {engine:?}: rolled {travelled} m in {t} s, expected {expect} m ({:+.2}%)",
        100.0 * (travelled / expect - 1.0)
    );
    assert!(
        (travelled - expect).abs() <= 0.03 * expect,
        "{engine:?}: rolled {travelled} m in {t} s, expected {expect} m"
    );
    // Rolling without slipping: the contact point is at rest.
    let contact_v = s.velocity + s.angular_velocity.cross(-n * r);
    assert!(
        contact_v.length() < 0.05 * s.velocity.length(),
        "{engine:?}: slipping: {contact_v:?}"
    );
    // It stays on the surface.
    let off = (s.position - start).dot(n);
    assert!(off.abs() < 0.01, "{engine:?}: {off} m off the surface");
}

on_every_engine!(rolling_resistance: rolling_resistance_slows_a_ball_at_the_analytic_rate, warp_rolling_resistance_slows_a_ball_at_the_analytic_rate, warp_groups_rolling_resistance_slows_a_ball_at_the_analytic_rate);

/// Rolling resistance c (the scene material, mixed as the larger of the two bodies'): a sphere
/// rolling without slipping on flat ground meets a resisting torque `c r m g`, shared between
/// its spin and the friction force, so it slows at `(5/7) c g` (1.40 m/s² at c = 0.2). Here
/// the ball carries c and the ground none for one value, and the ground carries it for the
/// other; the deceleration is measured between 0.25 s and 1.25 s.
fn rolling_resistance(engine: Engine) {
    for (ball_c, ground_c) in [(0.2, 0.0), (0.0, 0.05)] {
        let r = 0.5;
        let mut ball = body(sphere(r), Vec3::new(0.0, r, 0.0), 1.0);
        ball.velocity = Vec3::new(5.0, 0.0, 0.0);
        ball.angular_velocity = Vec3::new(0.0, 0.0, -5.0 / r);
        ball.rolling_resistance = ball_c;
        let mut floor = ground();
        floor.rolling_resistance = ground_c;
        let scene = Scene {
            world: world(Vec3::new(0.0, -G, 0.0)),
            bodies: vec![floor, ball],
        };
        let frames = simulate(&scene, engine, 75);
        let (v0, v1) = (frames[15][1].velocity.x, frames[75][1].velocity.x);
        let measured = (v0 - v1) / (time_of(75) - time_of(15));
        let c = f32::max(ball_c, ground_c);
        let expect = 5.0 / 7.0 * c * G;
        println!(
            "rolling resistance {c}, {engine:?}: slows at {measured} m/s², expected {expect} ({:+.2}%)",
            100.0 * (measured / expect - 1.0)
        );
        assert!(
            (measured - expect).abs() <= 0.05 * expect,
            "{engine:?}, resistance {c}: slows at {measured} m/s², expected {expect}"
        );
        // Still rolling, not sliding, and on the ground.
        let s = frames[75][1];
        let contact_v = s.velocity + s.angular_velocity.cross(-Vec3::Y * r);
        assert!(
            contact_v.length() < 0.05 * s.velocity.length(),
            "{engine:?}: slipping: {contact_v:?}"
        );
        assert!((s.position.y - r).abs() < 0.01, "{engine:?}: at {s:?}");
    }
}

fn resting_box() -> (BodyDesc, Scene) {
    let b = body(unit_box(), Vec3::new(0.3, 0.5, -0.2), 1.0);
    let scene = Scene {
        world: world(Vec3::new(0.0, -G, 0.0)),
        bodies: vec![ground(), b.clone()],
    };
    (b, scene)
}

#[test]
fn warp_box_rests_without_drift() {
    box_rests(Engine::Warp);
}

#[test]
fn warp_groups_box_rests_without_drift() {
    box_rests(Engine::WarpGroups);
}

fn box_rests(engine: Engine) {
    let (b, scene) = resting_box();
    for f in simulate(&scene, engine, 600) {
        let drift = (f[1].position - b.position).length();
        assert!(drift < 1e-3, "{engine:?}: drifted {drift} m");
    }
}

#[test]
fn box_rests_without_drift_and_sleeps() {
    let (b, scene) = resting_box();
    let mut e = engine(&scene, 1);
    for _ in 0..600 {
        e.step();
    }
    let drift = (e.states()[1].position - b.position).length();
    assert!(drift < 1e-3, "drifted {drift} m");
    assert!(e.is_sleeping(1), "the box did not fall asleep");
    assert!(!e.is_sleeping(0));
}

#[test]
fn pyramid_of_55_boxes_stands_and_sleeps() {
    let mut bodies = vec![ground()];
    bodies.extend(pyramid(10, Vec3::ZERO));
    assert_eq!(bodies.len(), 56);
    let scene = Scene {
        world: world(Vec3::new(0.0, -G, 0.0)),
        bodies,
    };
    let mean_height = |s: &[BodyState]| s[1..].iter().map(|b| b.position.y).sum::<f32>() / 55.0;
    let h0 = mean_height(
        &scene
            .bodies
            .iter()
            .map(BodyState::from_desc)
            .collect::<Vec<_>>(),
    );
    let mut e = engine(&scene, 2);
    for _ in 0..600 {
        e.step();
    }
    let h = mean_height(e.states());
    assert!((h - h0).abs() <= 0.01 * h0, "mean height {h} m, was {h0} m");
    let worst = e.states()[1..]
        .iter()
        .zip(&scene.bodies[1..])
        .map(|(s, d)| (s.position - d.position).length())
        .fold(0.0f32, f32::max);
    assert!(worst < 0.05, "a box moved {worst} m");
    for i in 1..56 {
        assert!(e.is_sleeping(i), "box {i} is awake");
    }
    assert_eq!(e.stats().islands_sleeping_last, 1);
    e.validate().unwrap();
}

/// Spheres on a jittered lattice falling on boxes resting on the ground.
fn spheres_on_boxes() -> Scene {
    let mut bodies = vec![ground()];
    for i in 0..4 {
        for k in 0..4 {
            let mut b = body(
                Shape::Cuboid {
                    half_extents: Vec3::new(0.8, 0.4, 0.8),
                },
                Vec3::new(-3.0 + 2.0 * i as f32, 0.4, -3.0 + 2.0 * k as f32),
                3.0,
            );
            b.rotation = Quat::from_rotation_y(0.2 * (i * 4 + k) as f32);
            bodies.push(b);
        }
    }
    let mut seed = 12345u64;
    let mut rnd = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    };
    for y in 0..4 {
        for x in 0..6 {
            for z in 0..6 {
                let p = Vec3::new(
                    -3.0 + 1.2 * x as f32 + 0.2 * rnd(),
                    2.0 + 1.2 * y as f32,
                    -3.0 + 1.2 * z as f32 + 0.2 * rnd(),
                );
                let mut s = body(sphere(0.45), p, 1.0);
                s.restitution = 0.5;
                bodies.push(s);
            }
        }
    }
    Scene {
        world: world(Vec3::new(0.0, -G, 0.0)),
        bodies,
    }
}

fn bits(states: &[BodyState]) -> Vec<u32> {
    states
        .iter()
        .flat_map(|s| {
            let mut v = Vec::new();
            v.extend(s.position.to_array());
            v.extend(s.rotation.to_array());
            v.extend(s.velocity.to_array());
            v.extend(s.angular_velocity.to_array());
            v
        })
        .map(f32::to_bits)
        .collect()
}

#[test]
fn identical_states_for_any_thread_count() {
    let scene = spheres_on_boxes();
    let run = |threads| {
        let mut e = engine(&scene, threads);
        for _ in 0..150 {
            e.step();
        }
        assert!(
            e.stats().contacts_max > 100,
            "too few contacts to test anything"
        );
        (bits(e.states()), e.stats())
    };
    let (reference, stats) = run(1);
    for threads in [2, 3, 8, 32] {
        let (b, s) = run(threads);
        assert!(b == reference, "{threads} threads differ from 1 thread");
        assert_eq!(s, stats);
    }
    // The spheres landed: none fell through the ground or the boxes.
    let mut e = engine(&scene, 2);
    for _ in 0..150 {
        e.step();
    }
    assert!(e.states()[17..].iter().all(|s| s.position.y > 0.3));
    e.validate().unwrap();
}

#[test]
fn a_falling_sphere_wakes_a_sleeping_box_and_both_sleep_again() {
    let bx = body(unit_box(), Vec3::new(0.0, 0.5, 0.0), 1.0);
    let ball = body(sphere(0.3), Vec3::new(0.1, 6.0, 0.0), 0.5);
    let scene = Scene {
        world: world(Vec3::new(0.0, -G, 0.0)),
        bodies: vec![ground(), bx, ball],
    };
    let mut e = engine(&scene, 2);
    for _ in 0..45 {
        e.step();
    }
    assert!(
        e.is_sleeping(1),
        "the box should sleep while the ball falls"
    );
    assert!(!e.is_sleeping(2));
    let resting = e.states()[1];
    let mut woke = false;
    for _ in 45..240 {
        e.step();
        if !e.is_sleeping(1) {
            woke = true;
        }
        if e.is_sleeping(1) && !woke {
            // Asleep means frozen.
            assert_eq!(e.states()[1], resting);
        }
    }
    assert!(woke, "the impact did not wake the box");
    assert!(
        e.is_sleeping(1) && e.is_sleeping(2),
        "they did not fall asleep again"
    );
    let s = e.states()[2];
    assert!(
        (s.position.y - 1.3).abs() < 0.01,
        "ball at {:?}",
        s.position
    );
    assert!(e.stats().wakes >= 1 && e.stats().sleeps >= 2);
}
