//! Small scenes built by hand, shared by `tests/physics.rs`, `tests/groups.rs` and
//! `tests/warp_groups.rs`: a world at 960 ticks per second, bodies at rest, the ground plane,
//! unit boxes, Box2D's pyramid, and the contact-group scenes.
#![allow(dead_code)]

use glam::{Quat, Vec3};
use timewarp::dynamics::BodyState;
use timewarp::scene::{BodyDesc, Shape, World};

pub const G: f32 = 9.81;

pub fn world(gravity: Vec3) -> World {
    World {
        gravity,
        ticks_per_second: 960,
        frame_ticks: 16,
        window: 256,
        seconds: 10.0,
    }
}

pub fn body(shape: Shape, position: Vec3, mass: f32) -> BodyDesc {
    BodyDesc {
        shape,
        position,
        rotation: Quat::IDENTITY,
        velocity: Vec3::ZERO,
        angular_velocity: Vec3::ZERO,
        mass,
        restitution: 0.0,
        friction: 0.5,
        rolling_resistance: 0.0,
        is_static: false,
    }
}

pub fn ground() -> BodyDesc {
    BodyDesc {
        is_static: true,
        ..body(
            Shape::Plane {
                normal: Vec3::Y,
                offset: 0.0,
            },
            Vec3::ZERO,
            0.0,
        )
    }
}

pub fn sphere(r: f32) -> Shape {
    Shape::Sphere { radius: r }
}

pub fn unit_box() -> Shape {
    Shape::Cuboid {
        half_extents: Vec3::splat(0.5),
    }
}

/// A pyramid of unit boxes, `base` in its lowest row, every box touching its neighbours and
/// the ground (one group from the first tick, `initial_islands`).
pub fn pyramid(base: usize, offset: Vec3) -> Vec<BodyDesc> {
    pyramid_apart(base, offset, 0.0)
}

/// The same with each row `gap` metres above the one below (the lowest on the ground): the
/// rows fall onto each other and fuse over the first ticks.
pub fn pyramid_apart(base: usize, offset: Vec3, gap: f32) -> Vec<BodyDesc> {
    let mut v = Vec::new();
    for row in 0..base {
        let count = base - row;
        for i in 0..count {
            let x = (i as f32 - (count as f32 - 1.0) * 0.5) * 1.0;
            v.push(body(
                unit_box(),
                offset + Vec3::new(x, 0.5 + row as f32 * (1.0 + gap), 0.0),
                1.0,
            ));
        }
    }
    v
}

/// Box 0 rests on the ground; box 1 lands on it from 5 mm (0.31 m/s); far away, sphere 2 flies
/// at 6 m/s into box 3, which rests on the ground.
pub fn landing_and_hit() -> Vec<BodyDesc> {
    let far = Vec3::new(20.0, 0.0, 0.0);
    let mut ball = body(
        Shape::Sphere { radius: 0.25 },
        far + Vec3::new(-2.0, 0.5, 0.0),
        1.0,
    );
    ball.velocity = Vec3::new(6.0, 0.0, 0.0);
    vec![
        ground(),
        body(unit_box(), Vec3::new(0.0, 0.5, 0.0), 1.0),
        body(unit_box(), Vec3::new(0.0, 1.505, 0.0), 1.0),
        ball,
        body(unit_box(), far + Vec3::new(0.0, 0.5, 0.0), 1.0),
    ]
}

/// Boxes 0 and 1 stacked on the ground, box 1 a millimetre above box 0 (they fuse as it
/// settles); sphere 2 hits box 1 at 8 m/s.
pub fn knocked_stack() -> Vec<BodyDesc> {
    let mut ball = body(
        Shape::Sphere { radius: 0.25 },
        Vec3::new(-2.5, 1.5, 0.0),
        1.0,
    );
    ball.velocity = Vec3::new(8.0, 0.0, 0.0);
    vec![
        ground(),
        body(unit_box(), Vec3::new(0.0, 0.5, 0.0), 1.0),
        body(unit_box(), Vec3::new(0.0, 1.501, 0.0), 1.0),
        ball,
    ]
}

/// Box 0 rests on the ground and sleeps after 0.5 s; sphere 1 falls on it from 6 m and hits
/// it at about 9.5 m/s (a kick, not a fusion), waking it.
pub fn falling_ball_on_box() -> Vec<BodyDesc> {
    vec![
        ground(),
        body(unit_box(), Vec3::new(0.0, 0.5, 0.0), 1.0),
        body(Shape::Sphere { radius: 0.3 }, Vec3::new(0.1, 6.0, 0.0), 0.5),
    ]
}

/// The largest distance any body of `frame` is from where it started (`initial`).
pub fn largest_move(frame: &[BodyState], initial: &[BodyState]) -> f32 {
    frame
        .iter()
        .zip(initial)
        .map(|(s, s0)| (s.position - s0.position).length())
        .fold(0.0f32, f32::max)
}
