//! Fast bodies never tunnel: a small sphere (radius 0.05 m) at up to 50 m/s against a 0.1 m
//! thick static wall, and against another body in its path (a resting sphere, a resting thin
//! plate, a slow sphere coming the other way), in both engines, at several angles and speeds.
//!
//! At 50 m/s the sphere moves 0.83 m per frame of the frame engine (1/60 s), eight times the
//! wall's thickness, and 5.2 cm per tick of the warp engine (1/960 s). The check is made at
//! every committed frame, from the states handed to the output sink, not only at the end: the
//! sphere's centre stays on its side of the wall's near face (it may sink into the wall by less
//! than its radius: contacts are soft), and in the body cases the sphere stays behind the
//! body's centre along its direction of flight. Each case also checks that a collision really
//! happened (the sphere turned back, the body was pushed), so a sphere that missed would fail.
//!
//! The expectation is geometric, independent of either engine: the sphere's path is aimed at
//! the middle of the wall or body, so the only way to get to the far side is through it.

use glam::{Quat, Vec3};
use timewarp::dynamics::BodyState;
use timewarp::output::FrameSink;
use timewarp::run::{EngineKind, RunOptions, run_scene};
use timewarp::scene::{BodyDesc, Scene, Shape, World};

const RADIUS: f32 = 0.05;
/// The wall: a static box 0.1 m thick (x), 2 m by 2 m.
const WALL_HALF: Vec3 = Vec3::new(0.05, 1.0, 1.0);

/// Records every committed frame (all bodies, scene order).
#[derive(Default)]
struct Record(Vec<Vec<BodyState>>);

impl FrameSink for Record {
    fn frame(&mut self, frame: u64, _: f64, states: &[BodyState]) -> std::io::Result<()> {
        assert_eq!(frame, self.0.len() as u64, "frames in order");
        self.0.push(states.to_vec());
        Ok(())
    }
}

fn body(shape: Shape, position: Vec3, velocity: Vec3) -> BodyDesc {
    BodyDesc {
        shape,
        position,
        rotation: Quat::IDENTITY,
        velocity,
        angular_velocity: Vec3::ZERO,
        mass: 1.0,
        restitution: 0.5,
        friction: 0.3,
        rolling_resistance: 0.0,
        is_static: false,
    }
}

fn scene(bodies: Vec<BodyDesc>) -> Scene {
    Scene {
        world: World {
            gravity: Vec3::ZERO,
            ..World::default()
        },
        bodies,
    }
}

/// Runs `scene` for `seconds` in `engine` and returns every committed frame. The frame engine
/// steps at the scene's frame (1/60 s); the warp engine is told to commit a frame at every tick
/// (`frame_ticks = 1`, which changes nothing in its physics), so that every tick is checked.
fn run(scene: &Scene, engine: EngineKind, seconds: f64) -> Vec<Vec<BodyState>> {
    let mut scene = scene.clone();
    if engine == EngineKind::Warp {
        scene.world.frame_ticks = 1;
    }
    let scene = &scene;
    let options = RunOptions {
        engine,
        // The default: whichever guard this build carries (both give the same bits).
        threads: 2,
        seconds: Some(seconds),
        label: "fast".into(),
        ..RunOptions::default()
    };
    let mut rec = Record::default();
    run_scene(scene, &options, &mut rec).unwrap();
    for (f, states) in rec.0.iter().enumerate() {
        for (i, s) in states.iter().enumerate() {
            assert!(
                s.to_array().iter().all(|x| x.is_finite()),
                "{engine:?}: frame {f} body {i} not finite: {s:?}"
            );
        }
    }
    rec.0
}

const ENGINES: [EngineKind; 2] = [EngineKind::Frame, EngineKind::Warp];

/// The sphere at `speed` from 2 m away, its path at `angle` (radians, about y, from the wall's
/// normal) and tilted by `tilt` (about z), aimed at the centre of a wall turned by `wall_turn`
/// about y. Checks every frame; returns the sphere's deepest penetration past the near face.
fn wall_case(engine: EngineKind, speed: f32, angle: f32, tilt: f32, wall_turn: f32) -> f32 {
    let turn = Quat::from_rotation_y(wall_turn);
    let normal = turn * Vec3::NEG_X; // the wall's near face looks at the sphere
    let dir = (turn * Quat::from_rotation_y(angle) * Quat::from_rotation_z(tilt)) * Vec3::X;
    let start = -dir * 2.0;
    let wall = BodyDesc {
        rotation: turn,
        is_static: true,
        mass: 0.0,
        velocity: Vec3::ZERO,
        ..body(
            Shape::Cuboid {
                half_extents: WALL_HALF,
            },
            Vec3::ZERO,
            Vec3::ZERO,
        )
    };
    let ball = body(Shape::Sphere { radius: RADIUS }, start, dir * speed);
    let frames = run(&scene(vec![wall, ball]), engine, 0.25);
    let what = format!(
        "{engine:?} {speed} m/s, angle {:.0} deg, tilt {:.0} deg, wall turned {:.0} deg",
        angle.to_degrees(),
        tilt.to_degrees(),
        wall_turn.to_degrees()
    );
    let mut deepest = f32::NEG_INFINITY;
    for (f, states) in frames.iter().enumerate() {
        let p = states[1].position;
        // Height of the centre above the near face (positive: in front of the wall).
        let height = p.dot(normal) - WALL_HALF.x;
        deepest = deepest.max(-height);
        assert!(
            height > -RADIUS,
            "{what}: frame {f}: the sphere's centre is {:.3} m past the wall's near face \
             (at {p:?})",
            -height
        );
    }
    let last = frames.last().unwrap()[1];
    assert!(
        last.velocity.dot(normal) > 0.0,
        "{what}: the sphere did not turn back: {last:?}"
    );
    assert!(
        last.position.dot(normal) > WALL_HALF.x + RADIUS,
        "{what}: the sphere did not come back out: {last:?}"
    );
    eprintln!("{what}: deepest {deepest:.4} m past the face");
    deepest
}

#[test]
fn a_fast_sphere_never_passes_a_thin_wall() {
    for engine in ENGINES {
        for speed in [10.0, 25.0, 50.0] {
            for angle in [0.0f32, 30.0, 60.0] {
                wall_case(engine, speed, angle.to_radians(), 0.0, 0.0);
            }
        }
        // Out of the x-z plane, and a wall turned about y.
        wall_case(engine, 50.0, 20f32.to_radians(), 25f32.to_radians(), 0.0);
        wall_case(engine, 50.0, 15f32.to_radians(), 10f32.to_radians(), 0.7);
        wall_case(engine, 50.0, 0.0, 0.0, 1.1);
    }
}

/// Past the 50 m/s asked for: both engines' swept tests have no speed limit of their own (the
/// frame engine's speculative margin and the warp engine's swept boxes and gap test grow with
/// the speed), so the wall holds at 100, 200 and 500 m/s too (8.3 m per frame, 52 cm per tick).
#[test]
fn higher_speeds_do_not_pass_the_wall_either() {
    for engine in ENGINES {
        for speed in [100.0, 200.0, 500.0] {
            wall_case(engine, speed, 0.0, 0.0, 0.0);
            wall_case(engine, speed, 45f32.to_radians(), 10f32.to_radians(), 0.3);
        }
    }
}

/// The sphere at `speed` along +x from 2 m away, at `offset` (m) beside the line through the
/// target's centre. Checks every frame that the sphere stays behind the target's centre along x;
/// returns the closest approach of the two centres.
fn body_case(engine: EngineKind, what: &str, target: BodyDesc, speed: f32, offset: f32) {
    let ball = body(
        Shape::Sphere { radius: RADIUS },
        target.position + Vec3::new(-2.0, offset, 0.0),
        Vec3::new(speed, 0.0, 0.0),
    );
    let v0 = target.velocity;
    let frames = run(&scene(vec![ball, target]), engine, 0.25);
    let what = format!("{engine:?} {what}, {speed} m/s, offset {offset}");
    for (f, states) in frames.iter().enumerate() {
        let (b, t) = (states[0].position, states[1].position);
        assert!(
            b.x < t.x,
            "{what}: frame {f}: the sphere (x = {}) is past the body's centre (x = {})",
            b.x,
            t.x
        );
    }
    let last = frames.last().unwrap();
    assert!(
        last[1].velocity.x > v0.x + 0.1,
        "{what}: the body was not pushed: {:?}",
        last[1]
    );
    assert!(
        last[0].velocity.x < speed * 0.9,
        "{what}: the sphere was not slowed: {:?}",
        last[0]
    );
}

#[test]
fn a_fast_sphere_never_passes_through_a_body() {
    let resting_sphere = body(Shape::Sphere { radius: 0.3 }, Vec3::ZERO, Vec3::ZERO);
    let small_sphere = BodyDesc {
        mass: 0.5,
        ..body(Shape::Sphere { radius: RADIUS }, Vec3::ZERO, Vec3::ZERO)
    };
    let plate = body(
        Shape::Cuboid {
            half_extents: Vec3::new(0.05, 0.5, 0.5),
        },
        Vec3::ZERO,
        Vec3::ZERO,
    );
    let cube = BodyDesc {
        rotation: Quat::from_rotation_y(0.4),
        ..body(
            Shape::Cuboid {
                half_extents: Vec3::splat(0.2),
            },
            Vec3::ZERO,
            Vec3::ZERO,
        )
    };
    let slow = body(
        Shape::Sphere { radius: 0.2 },
        Vec3::ZERO,
        Vec3::new(-1.0, 0.0, 0.0),
    );
    for engine in ENGINES {
        for speed in [10.0, 50.0] {
            body_case(
                engine,
                "resting sphere r 0.3",
                resting_sphere.clone(),
                speed,
                0.0,
            );
            body_case(
                engine,
                "resting sphere r 0.3",
                resting_sphere.clone(),
                speed,
                0.1,
            );
            body_case(
                engine,
                "resting sphere r 0.05",
                small_sphere.clone(),
                speed,
                0.0,
            );
            body_case(engine, "resting plate 0.1 thick", plate.clone(), speed, 0.0);
            body_case(engine, "resting plate 0.1 thick", plate.clone(), speed, 0.1);
            body_case(engine, "resting cube, turned", cube.clone(), speed, 0.05);
            body_case(engine, "slow sphere coming back", slow.clone(), speed, 0.0);
        }
    }
}
