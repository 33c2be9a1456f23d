//! The scene model: plain data, validated once at load time, shared by both engines.
//!
//! Everything downstream (geometry, dynamics, the engines) may assume a [`Scene`] is valid:
//! finite numbers, positive sizes and masses, unit quaternions, planes static.

use glam::{Quat, Vec3};

/// Global settings of a scene (`[world]` in the TOML file).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct World {
    /// Gravity in m/s².
    pub gravity: Vec3,
    /// Ticks per simulated second: the substep and rollback granularity.
    pub ticks_per_second: u32,
    /// Ticks per output frame (960 / 16 = 60 frames per second).
    pub frame_ticks: u32,
    /// LVT_ub − GVT, in ticks (warp engine).
    pub window: u32,
    /// Default simulated duration in seconds.
    pub seconds: f64,
}

impl Default for World {
    fn default() -> Self {
        World {
            gravity: Vec3::new(0.0, -9.81, 0.0),
            ticks_per_second: 960,
            frame_ticks: 16,
            window: 256,
            seconds: 10.0,
        }
    }
}

/// A body's shape in its local frame.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Shape {
    Sphere {
        radius: f32,
    },
    /// A box with the given half extents along its local axes.
    Cuboid {
        half_extents: Vec3,
    },
    /// A cylinder along its local y axis.
    Cylinder {
        radius: f32,
        half_height: f32,
    },
    /// A static half-space: points p with `normal · p = offset` form its surface, the solid side is
    /// `normal · p < offset`. `normal` is a unit vector. A plane body's position and rotation are
    /// ignored.
    Plane {
        normal: Vec3,
        offset: f32,
    },
}

/// One body of a scene, in scene order. Body ids are indices into [`Scene::bodies`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BodyDesc {
    pub shape: Shape,
    pub position: Vec3,
    /// Unit quaternion.
    pub rotation: Quat,
    pub velocity: Vec3,
    pub angular_velocity: Vec3,
    /// Mass in kg (resolved from density at load time when the file gives a density);
    /// ignored for static bodies.
    pub mass: f32,
    pub restitution: f32,
    pub friction: f32,
    /// Rolling and spinning resistance (Box2D v3's `rollingResistance`, dimensionless): a
    /// contact resists its bodies' relative rotation with an angular impulse of at most this
    /// times the lever (centre to contact point) times the normal impulse. 0 (the default)
    /// is none: a ball rolls on flat ground forever, as in Box2D and rapier.
    pub rolling_resistance: f32,
    pub is_static: bool,
}

/// A validated scene: world settings and bodies in scene order.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Scene {
    pub world: World,
    pub bodies: Vec<BodyDesc>,
}

/// Two touching bodies combine their materials as Box2D does.
#[inline]
pub fn mix_restitution(a: f32, b: f32) -> f32 {
    a.max(b)
}

/// Two touching bodies combine their materials as Box2D does.
#[inline]
pub fn mix_friction(a: f32, b: f32) -> f32 {
    (a * b).sqrt()
}

/// Two touching bodies combine their rolling resistance as Box2D v3 does: the larger.
#[inline]
pub fn mix_rolling_resistance(a: f32, b: f32) -> f32 {
    a.max(b)
}
