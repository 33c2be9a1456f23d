//! Axis-aligned bounding boxes: the broad phase's bound of a shape at a pose.
//!
//! An [`Aabb`] is the smallest box with faces parallel to the world axes that contains a shape.
//! The broad phase inflates it by a margin (the speculative contact distance plus the distance the
//! body may travel in one step), so that a pair enters the narrow phase a step before it touches.
//! Planes are unbounded: [`shape_aabb`] gives them the everything-box, and the engines handle them
//! outside the broad phase.

use crate::scene::Shape;
use glam::{Mat3, Quat, Vec3};

/// An axis-aligned box `min ..= max` (component-wise).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Aabb {
    pub min: Vec3,
    pub max: Vec3,
}

impl Aabb {
    /// The box that contains everything (used for planes).
    pub const EVERYTHING: Aabb = Aabb {
        min: Vec3::splat(f32::MIN),
        max: Vec3::splat(f32::MAX),
    };

    #[inline]
    pub fn new(min: Vec3, max: Vec3) -> Aabb {
        Aabb { min, max }
    }

    /// The box centred at `center` with half sizes `half`.
    #[inline]
    pub fn from_center_half(center: Vec3, half: Vec3) -> Aabb {
        Aabb {
            min: center - half,
            max: center + half,
        }
    }

    /// Whether the two closed boxes share a point.
    #[inline]
    pub fn overlaps(&self, other: &Aabb) -> bool {
        self.min.x <= other.max.x
            && other.min.x <= self.max.x
            && self.min.y <= other.max.y
            && other.min.y <= self.max.y
            && self.min.z <= other.max.z
            && other.min.z <= self.max.z
    }

    /// The smallest box containing both.
    #[inline]
    pub fn merge(&self, other: &Aabb) -> Aabb {
        Aabb {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    /// This box grown by `margin` on every side.
    #[inline]
    pub fn expanded(&self, margin: f32) -> Aabb {
        Aabb {
            min: self.min - Vec3::splat(margin),
            max: self.max + Vec3::splat(margin),
        }
    }

    #[inline]
    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// The least `n . x` over the box's points (its corner lowest along `n`): the box lies in
    /// the half-space `n . x <= d` iff this is at most `d`. The engines test bodies against a
    /// plane this way, since a plane's own box is [`Aabb::EVERYTHING`].
    #[inline]
    pub fn lowest_along(&self, n: Vec3) -> f32 {
        lowest_along(self.center(), self.half(), n)
    }

    /// Half the box's size per axis.
    #[inline]
    pub fn half(&self) -> Vec3 {
        (self.max - self.min) * 0.5
    }

    #[inline]
    pub fn contains_point(&self, p: Vec3) -> bool {
        p.cmpge(self.min).all() && p.cmple(self.max).all()
    }
}

/// [`Aabb::lowest_along`] of the box with centre `center` and half sizes `half` (for a caller
/// that tests one box against many normals).
#[inline]
pub fn lowest_along(center: Vec3, half: Vec3, n: Vec3) -> f32 {
    n.dot(center) - n.abs().dot(half)
}

/// The half sizes along the world axes of a box with half extents `e` rotated by `q`.
#[inline]
pub fn rotated_box_half(q: Quat, e: Vec3) -> Vec3 {
    let m = Mat3::from_quat(q);
    let a = m.x_axis.abs();
    let b = m.y_axis.abs();
    let c = m.z_axis.abs();
    a * e.x + b * e.y + c * e.z
}

/// The bounding box of `shape` at `position`, `rotation`. Planes get [`Aabb::EVERYTHING`].
pub fn shape_aabb(shape: &Shape, position: Vec3, rotation: Quat) -> Aabb {
    match *shape {
        Shape::Sphere { radius } => Aabb::from_center_half(position, Vec3::splat(radius)),
        Shape::Cuboid { half_extents } => {
            Aabb::from_center_half(position, rotated_box_half(rotation, half_extents))
        }
        Shape::Cylinder {
            radius,
            half_height,
        } => {
            let axis = rotation * Vec3::Y;
            let disc = (Vec3::ONE - axis * axis).max(Vec3::ZERO);
            let half = axis.abs() * half_height
                + Vec3::new(disc.x.sqrt(), disc.y.sqrt(), disc.z.sqrt()) * radius;
            Aabb::from_center_half(position, half)
        }
        Shape::Plane { .. } => Aabb::EVERYTHING,
    }
}

/// The largest distance from the centre to a point of the shape (infinite for planes); the
/// engines use it to bound how far a rotating body's surface moves.
pub fn shape_extent(shape: &Shape) -> f32 {
    match *shape {
        Shape::Sphere { radius } => radius,
        Shape::Cuboid { half_extents } => half_extents.length(),
        Shape::Cylinder {
            radius,
            half_height,
        } => (radius * radius + half_height * half_height).sqrt(),
        Shape::Plane { .. } => f32::INFINITY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_merge_expand() {
        let a = Aabb::new(Vec3::ZERO, Vec3::ONE);
        let b = Aabb::new(Vec3::splat(1.0), Vec3::splat(2.0));
        let c = Aabb::new(Vec3::splat(1.5), Vec3::splat(2.0));
        assert!(a.overlaps(&b) && b.overlaps(&a));
        assert!(!a.overlaps(&c));
        assert!(a.expanded(0.5).overlaps(&c));
        let m = a.merge(&c);
        assert_eq!(m, Aabb::new(Vec3::ZERO, Vec3::splat(2.0)));
        assert!(m.contains_point(Vec3::splat(1.7)));
    }

    #[test]
    fn rotated_box_and_cylinder_bounds() {
        let q = Quat::from_rotation_z(std::f32::consts::FRAC_PI_4);
        let bb = shape_aabb(
            &Shape::Cuboid {
                half_extents: Vec3::new(1.0, 1.0, 0.5),
            },
            Vec3::ZERO,
            q,
        );
        let s2 = std::f32::consts::SQRT_2;
        assert!((bb.max - Vec3::new(s2, s2, 0.5)).abs().max_element() < 1e-5);
        // A cylinder lying along z (rotated from y by 90 degrees about x).
        let cyl = Shape::Cylinder {
            radius: 1.0,
            half_height: 5.0,
        };
        let c = shape_aabb(
            &cyl,
            Vec3::new(0.0, 2.0, 0.0),
            Quat::from_rotation_x(std::f32::consts::FRAC_PI_2),
        );
        assert!((c.min - Vec3::new(-1.0, 1.0, -5.0)).abs().max_element() < 1e-3);
        assert!((c.max - Vec3::new(1.0, 3.0, 5.0)).abs().max_element() < 1e-3);
        let s = shape_aabb(&Shape::Sphere { radius: 0.5 }, Vec3::ONE, Quat::IDENTITY);
        assert_eq!(s, Aabb::new(Vec3::splat(0.5), Vec3::splat(1.5)));
    }
}
