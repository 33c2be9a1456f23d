//! Body state and mass properties.
//!
//! A body's kinematic state ([`BodyState`]) is what a tick stores and a frame commits. Its mass
//! properties ([`MassProps`]) are constant: inverse mass and the diagonal inverse inertia in the
//! body's local frame, both zero for static bodies, so that every solver formula treats a static
//! body as one of infinite mass without a branch. The inertia tensors are those of uniform solids:
//! sphere `2/5 m r²`; box `m/3 (b² + c²)` about the axis with half extents `b`, `c` across it;
//! cylinder (axis y) `m r²/2` about its axis and `m (3 r² + 4 h²)/12` across it, `h` the half
//! height. In world coordinates the inverse inertia is `R diag(I⁻¹) Rᵀ`.

use crate::geometry::{Motion, Pose};
use crate::scene::{BodyDesc, Shape};
use glam::{Mat3, Quat, Vec3};

/// The kinematic state of one body at one instant: what a tick stores and a frame commits.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BodyState {
    pub position: Vec3,
    /// Unit quaternion, body to world.
    pub rotation: Quat,
    pub velocity: Vec3,
    /// World-frame angular velocity in rad/s.
    pub angular_velocity: Vec3,
}

impl BodyState {
    /// The 13 numbers of a committed frame row, in the output's column order:
    /// position x y z, rotation x y z w, velocity x y z, angular velocity x y z.
    #[inline]
    pub fn to_array(&self) -> [f32; 13] {
        let (p, q, v, w) = (
            self.position,
            self.rotation,
            self.velocity,
            self.angular_velocity,
        );
        [
            p.x, p.y, p.z, q.x, q.y, q.z, q.w, v.x, v.y, v.z, w.x, w.y, w.z,
        ]
    }

    /// The initial state of a scene body.
    pub fn from_desc(desc: &BodyDesc) -> BodyState {
        if desc.is_static {
            BodyState {
                position: desc.position,
                rotation: desc.rotation,
                velocity: Vec3::ZERO,
                angular_velocity: Vec3::ZERO,
            }
        } else {
            BodyState {
                position: desc.position,
                rotation: desc.rotation,
                velocity: desc.velocity,
                angular_velocity: desc.angular_velocity,
            }
        }
    }

    /// Velocity of the body's material point at world position `p`.
    #[inline]
    pub fn point_velocity(&self, p: Vec3) -> Vec3 {
        self.velocity + self.angular_velocity.cross(p - self.position)
    }

    /// Its pose moving at its velocities, as the time-of-impact queries take it
    /// ([`crate::geometry::impact`]).
    #[inline]
    pub fn motion(&self) -> Motion {
        Motion {
            pose: Pose::new(self.position, self.rotation),
            velocity: self.velocity,
            angular_velocity: self.angular_velocity,
        }
    }
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

    /// The mass properties of a uniform solid `shape` of the given mass. Planes, and masses that
    /// are not positive and finite, give [`MassProps::STATIC`].
    pub fn from_shape(shape: &Shape, mass: f32) -> MassProps {
        if !(mass > 0.0 && mass.is_finite()) {
            return MassProps::STATIC;
        }
        let inertia = match *shape {
            Shape::Sphere { radius } => Vec3::splat(0.4 * mass * radius * radius),
            Shape::Cuboid { half_extents: e } => {
                let e2 = e * e;
                Vec3::new(e2.y + e2.z, e2.x + e2.z, e2.x + e2.y) * (mass / 3.0)
            }
            Shape::Cylinder {
                radius,
                half_height,
            } => {
                let across =
                    mass * (3.0 * radius * radius + 4.0 * half_height * half_height) / 12.0;
                Vec3::new(across, 0.5 * mass * radius * radius, across)
            }
            Shape::Plane { .. } => return MassProps::STATIC,
        };
        MassProps {
            inv_mass: 1.0 / mass,
            inv_inertia_local: Vec3::ONE / inertia,
        }
    }

    /// The mass properties of a scene body (static ones get [`MassProps::STATIC`]).
    pub fn for_body(desc: &BodyDesc) -> MassProps {
        if desc.is_static {
            MassProps::STATIC
        } else {
            MassProps::from_shape(&desc.shape, desc.mass)
        }
    }

    #[inline]
    pub fn is_static(&self) -> bool {
        self.inv_mass == 0.0
    }

    /// The inverse inertia tensor in world coordinates for a body rotated by `q`: `R D Rᵀ`.
    #[inline]
    pub fn world_inv_inertia(&self, q: Quat) -> Mat3 {
        let r = Mat3::from_quat(q);
        let d = self.inv_inertia_local;
        let rd = Mat3::from_cols(r.x_axis * d.x, r.y_axis * d.y, r.z_axis * d.z);
        rd * r.transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inertia_of_solids() {
        let s = MassProps::from_shape(&Shape::Sphere { radius: 2.0 }, 5.0);
        assert!((s.inv_mass - 0.2).abs() < 1e-7);
        assert!((1.0 / s.inv_inertia_local.x - 0.4 * 5.0 * 4.0).abs() < 1e-4);
        let b = MassProps::from_shape(
            &Shape::Cuboid {
                half_extents: Vec3::new(0.5, 1.0, 1.5),
            },
            12.0,
        );
        // Full sizes 1, 2, 3: I_x = m/12 (2² + 3²) = 13.
        assert!((1.0 / b.inv_inertia_local.x - 13.0).abs() < 1e-4);
        assert!((1.0 / b.inv_inertia_local.y - 10.0).abs() < 1e-4);
        assert!((1.0 / b.inv_inertia_local.z - 5.0).abs() < 1e-4);
        let c = MassProps::from_shape(
            &Shape::Cylinder {
                radius: 1.0,
                half_height: 1.5,
            },
            6.0,
        );
        assert!((1.0 / c.inv_inertia_local.y - 3.0).abs() < 1e-5);
        assert!((1.0 / c.inv_inertia_local.x - 6.0 * (3.0 + 9.0) / 12.0).abs() < 1e-5);
        let p = MassProps::from_shape(
            &Shape::Plane {
                normal: Vec3::Y,
                offset: 0.0,
            },
            1.0,
        );
        assert!(p.is_static());
    }

    #[test]
    fn world_inverse_inertia_rotates() {
        let b = MassProps::from_shape(
            &Shape::Cuboid {
                half_extents: Vec3::new(0.5, 1.0, 1.5),
            },
            12.0,
        );
        // A quarter turn about z swaps the x and y principal axes.
        let w = b.world_inv_inertia(Quat::from_rotation_z(std::f32::consts::FRAC_PI_2));
        assert!((w.x_axis.x - b.inv_inertia_local.y).abs() < 1e-6);
        assert!((w.y_axis.y - b.inv_inertia_local.x).abs() < 1e-6);
        assert!(w.x_axis.y.abs() < 1e-6);
    }
}
