//! Small scenes built by hand, shared by `tests/physics.rs` and `tests/groups.rs`: a world at
//! 960 ticks per second, bodies at rest, the ground plane, unit boxes, and Box2D's pyramid.
#![allow(dead_code)]

use glam::{Quat, Vec3};
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

pub fn pyramid(base: usize, offset: Vec3) -> Vec<BodyDesc> {
    let mut v = Vec::new();
    for row in 0..base {
        let count = base - row;
        for i in 0..count {
            let x = (i as f32 - (count as f32 - 1.0) * 0.5) * 1.0;
            v.push(body(
                unit_box(),
                offset + Vec3::new(x, 0.5 + row as f32, 0.0),
                1.0,
            ));
        }
    }
    v
}
