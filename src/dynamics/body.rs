//! Body state and mass properties.

use glam::{Quat, Vec3};

/// The kinematic state of one body at one instant: what a tick stores and a frame commits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyState {
    pub position: Vec3,
    /// Unit quaternion, body to world.
    pub rotation: Quat,
    pub velocity: Vec3,
    /// World-frame angular velocity in rad/s.
    pub angular_velocity: Vec3,
}

/// Inverse mass and inverse inertia (diagonal, in the body's local frame). Zero for static bodies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MassProps {
    pub inv_mass: f32,
    pub inv_inertia_local: Vec3,
}

impl MassProps {
    pub const STATIC: MassProps = MassProps {
        inv_mass: 0.0,
        inv_inertia_local: Vec3::ZERO,
    };
}
