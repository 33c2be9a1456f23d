//! Contact manifolds and the narrow-phase dispatcher.
//!
//! A [`Manifold`] describes how two shapes touch: one unit normal from A to B and up to
//! [`MAX_POINTS`] points. Each point stores the impulses the solver applied at it in the last step
//! (`normal_impulse`, `tangent_impulse`), so the next step can warm start from them: when the
//! narrow phase recomputes a manifold, [`Manifold::carry_impulses`] copies the impulses of points
//! with equal feature ids, as Box2D v3 does with its persistent contact pairs (seed 002).
//!
//! [`collide`] dispatches on the two shape kinds. It puts the pair in a canonical order (sphere,
//! box, cylinder, plane), calls the pair function and flips the normal back if it swapped, so every
//! pair function only handles one order.

use super::{boxes, cylinder, sphere};
use crate::scene::Shape;
use glam::{Quat, Vec3};

/// At most this many points per manifold (a face resting on a face needs four).
pub const MAX_POINTS: usize = 4;

/// A rigid placement of a shape: world position of its centre and rotation body-to-world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    pub position: Vec3,
    pub rotation: Quat,
}

impl Pose {
    #[inline]
    pub fn new(position: Vec3, rotation: Quat) -> Pose {
        Pose { position, rotation }
    }
}

/// One contact point.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ManifoldPoint {
    /// World position, midway between the two surfaces.
    pub position: Vec3,
    /// Penetration depth: positive when overlapping, negative (down to `-margin`) when the
    /// surfaces are still apart (a speculative point).
    pub depth: f32,
    /// Names the features that made this point; equal ids across steps mean the same point.
    pub id: u32,
    /// Normal impulse of the last solver step at this point (warm start).
    pub normal_impulse: f32,
    /// Friction impulse of the last solver step at this point, in world coordinates.
    pub tangent_impulse: Vec3,
}

/// The contact between two shapes: a normal from A to B and up to four points.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifold {
    /// Unit normal pointing from body A to body B (meaningless when `count == 0`).
    pub normal: Vec3,
    pub points: [ManifoldPoint; MAX_POINTS],
    pub count: u32,
}

impl Manifold {
    /// The points in use.
    #[inline]
    pub fn points(&self) -> &[ManifoldPoint] {
        &self.points[..self.count as usize]
    }

    #[inline]
    pub fn points_mut(&mut self) -> &mut [ManifoldPoint] {
        &mut self.points[..self.count as usize]
    }

    /// Whether the shapes touch or are within the speculative margin (an island edge).
    #[inline]
    pub fn is_touching(&self) -> bool {
        self.count > 0
    }

    /// Appends a point (ignored when full).
    #[inline]
    pub fn push(&mut self, position: Vec3, depth: f32, id: u32) {
        if (self.count as usize) < MAX_POINTS {
            self.points[self.count as usize] = ManifoldPoint {
                position,
                depth,
                id,
                normal_impulse: 0.0,
                tangent_impulse: Vec3::ZERO,
            };
            self.count += 1;
        }
    }

    /// Copies the warm-start impulses of `old`'s points into this manifold's points with the same
    /// feature id (points without a match start from zero).
    pub fn carry_impulses(&mut self, old: &Manifold) {
        for p in self.points_mut() {
            if let Some(q) = old.points().iter().find(|q| q.id == p.id) {
                p.normal_impulse = q.normal_impulse;
                p.tangent_impulse = q.tangent_impulse;
            }
        }
    }

    /// Scales the warm-start impulses of its points by `f` (an impulse over a substep of another
    /// length: the warp engine's groups keep theirs per tick).
    pub fn scale_impulses(&mut self, f: f32) {
        for p in self.points_mut() {
            p.normal_impulse *= f;
            p.tangent_impulse *= f;
        }
    }

    /// Reverses the normal (the manifold then describes the pair in the other order).
    #[inline]
    fn flip(&mut self) {
        self.normal = -self.normal;
    }

    /// Checks the invariants: unit normal, finite points, distinct ids.
    pub fn validate(&self) -> Result<(), String> {
        if self.count as usize > MAX_POINTS {
            return Err(format!("manifold has {} points", self.count));
        }
        if self.count > 0 && (self.normal.length() - 1.0).abs() > 1e-3 {
            return Err(format!("manifold normal {:?} is not unit", self.normal));
        }
        for (i, p) in self.points().iter().enumerate() {
            if !p.position.is_finite() || !p.depth.is_finite() {
                return Err(format!("manifold point {i} is not finite: {p:?}"));
            }
            if self.points()[..i].iter().any(|q| q.id == p.id) {
                return Err(format!("manifold point id {} repeated", p.id));
            }
        }
        Ok(())
    }
}

fn kind(shape: &Shape) -> u8 {
    match shape {
        Shape::Sphere { .. } => 0,
        Shape::Cuboid { .. } => 1,
        Shape::Cylinder { .. } => 2,
        Shape::Plane { .. } => 3,
    }
}

/// The contact manifold of shape `a` at `pa` against shape `b` at `pb`, with points kept down to
/// depth `-margin`. The normal points from A to B. Two planes never touch (both are static).
pub fn collide(a: &Shape, pa: &Pose, b: &Shape, pb: &Pose, margin: f32) -> Manifold {
    let mut m = Manifold::default();
    if kind(a) <= kind(b) {
        collide_ordered(a, pa, b, pb, margin, &mut m);
    } else {
        collide_ordered(b, pb, a, pa, margin, &mut m);
        m.flip();
    }
    m
}

fn collide_ordered(a: &Shape, pa: &Pose, b: &Shape, pb: &Pose, margin: f32, m: &mut Manifold) {
    match (*a, *b) {
        (Shape::Sphere { radius: ra }, Shape::Sphere { radius: rb }) => {
            sphere::sphere_sphere(pa.position, ra, pb.position, rb, margin, m)
        }
        (Shape::Sphere { radius }, Shape::Cuboid { half_extents }) => {
            sphere::sphere_box(pa.position, radius, pb, half_extents, margin, m)
        }
        (
            Shape::Sphere { radius },
            Shape::Cylinder {
                radius: rc,
                half_height,
            },
        ) => sphere::sphere_cylinder(pa.position, radius, pb, rc, half_height, margin, m),
        (Shape::Sphere { radius }, Shape::Plane { normal, offset }) => {
            sphere::sphere_plane(pa.position, radius, normal, offset, margin, m)
        }
        (Shape::Cuboid { half_extents: ea }, Shape::Cuboid { half_extents: eb }) => {
            boxes::box_box(pa, ea, pb, eb, margin, m)
        }
        (Shape::Cuboid { half_extents }, Shape::Plane { normal, offset }) => {
            boxes::box_plane(pa, half_extents, normal, offset, margin, m)
        }
        (
            Shape::Cylinder {
                radius,
                half_height,
            },
            Shape::Plane { normal, offset },
        ) => cylinder::cylinder_plane(pa, radius, half_height, normal, offset, margin, m),
        (Shape::Plane { .. }, Shape::Plane { .. }) => {}
        _ => parry_contact(a, pa, b, pb, margin, m),
    }
}

/// A parry3d shape on the stack (no allocation per query).
pub(super) enum ParryShape {
    Ball(parry3d::shape::Ball),
    Cuboid(parry3d::shape::Cuboid),
    Cylinder(parry3d::shape::Cylinder),
    HalfSpace(parry3d::shape::HalfSpace),
}

impl ParryShape {
    pub(super) fn as_dyn(&self) -> &dyn parry3d::shape::Shape {
        match self {
            ParryShape::Ball(s) => s,
            ParryShape::Cuboid(s) => s,
            ParryShape::Cylinder(s) => s,
            ParryShape::HalfSpace(s) => s,
        }
    }
}

pub(super) fn to_parry(shape: &Shape, pose: &Pose) -> (parry3d::math::Pose, ParryShape) {
    use parry3d::shape as ps;
    let iso = parry3d::math::Pose::from_parts(pose.position, pose.rotation);
    match *shape {
        Shape::Sphere { radius } => (iso, ParryShape::Ball(ps::Ball::new(radius))),
        Shape::Cuboid { half_extents } => (iso, ParryShape::Cuboid(ps::Cuboid::new(half_extents))),
        Shape::Cylinder {
            radius,
            half_height,
        } => (
            iso,
            ParryShape::Cylinder(ps::Cylinder::new(half_height, radius)),
        ),
        Shape::Plane { normal, offset } => (
            parry3d::math::Pose::from_translation(normal * offset),
            ParryShape::HalfSpace(ps::HalfSpace::new(normal)),
        ),
    }
}

/// The general path: parry3d's GJK/EPA contact query, one point.
fn parry_contact(a: &Shape, pa: &Pose, b: &Shape, pb: &Pose, margin: f32, m: &mut Manifold) {
    let (xa, sa) = to_parry(a, pa);
    let (xb, sb) = to_parry(b, pb);
    if let Ok(Some(c)) = parry3d::query::contact(&xa, sa.as_dyn(), &xb, sb.as_dyn(), margin) {
        let n = c.normal1;
        if n.is_finite() && n.length_squared() > 0.5 {
            m.normal = n;
            m.push((c.point1 + c.point2) * 0.5, -c.dist, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_flips_normal_for_swapped_pairs() {
        let plane = Shape::Plane {
            normal: Vec3::Y,
            offset: 0.0,
        };
        let ball = Shape::Sphere { radius: 0.5 };
        let pp = Pose::new(Vec3::ZERO, Quat::IDENTITY);
        let pball = Pose::new(Vec3::new(0.0, 0.4, 0.0), Quat::IDENTITY);
        let m1 = collide(&plane, &pp, &ball, &pball, 0.01);
        let m2 = collide(&ball, &pball, &plane, &pp, 0.01);
        assert_eq!(m1.count, 1);
        assert_eq!(m2.count, 1);
        assert!((m1.normal - Vec3::Y).length() < 1e-6);
        assert!((m2.normal + Vec3::Y).length() < 1e-6);
        assert!((m1.points[0].depth - 0.1).abs() < 1e-6);
    }

    #[test]
    fn box_cylinder_through_parry() {
        // A cylinder along z (static in the scenes) and a unit box resting on it, sunk 1 cm.
        let cyl = Shape::Cylinder {
            radius: 1.0,
            half_height: 5.0,
        };
        let pc = Pose::new(
            Vec3::ZERO,
            Quat::from_rotation_x(std::f32::consts::FRAC_PI_2),
        );
        let bx = Shape::Cuboid {
            half_extents: Vec3::splat(0.5),
        };
        let pbx = Pose::new(Vec3::new(0.0, 1.49, 0.0), Quat::IDENTITY);
        let m = collide(&bx, &pbx, &cyl, &pc, 0.02);
        m.validate().unwrap();
        assert_eq!(m.count, 1);
        assert!((m.normal + Vec3::Y).length() < 1e-3, "{:?}", m.normal);
        assert!((m.points[0].depth - 0.01).abs() < 1e-3);
        assert!((m.points[0].position.y - 0.995).abs() < 2e-3);
    }

    #[test]
    fn carry_impulses_matches_ids() {
        let mut old = Manifold::default();
        old.push(Vec3::ZERO, 0.0, 7);
        old.points[0].normal_impulse = 3.0;
        let mut new = Manifold::default();
        new.push(Vec3::X, 0.0, 5);
        new.push(Vec3::Y, 0.0, 7);
        new.carry_impulses(&old);
        assert_eq!(new.points[0].normal_impulse, 0.0);
        assert_eq!(new.points[1].normal_impulse, 3.0);
    }
}

#[cfg(test)]
mod reference_tests {
    //! The hand-written pairs against parry3d's GJK/EPA `contact` on random poses: same normal,
    //! same deepest penetration.
    use super::*;

    fn lcg(s: &mut u64) -> f32 {
        *s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*s >> 40) as f32) / (1u64 << 24) as f32
    }

    fn random_rotation(s: &mut u64) -> Quat {
        let q = Quat::from_xyzw(lcg(s) - 0.5, lcg(s) - 0.5, lcg(s) - 0.5, lcg(s) - 0.5);
        if q.length() < 1e-3 {
            Quat::IDENTITY
        } else {
            q.normalize()
        }
    }

    fn check_against_parry(a: Shape, b: Shape, seed: u64, cases: usize) -> usize {
        let mut s = seed;
        let mut checked = 0;
        for _ in 0..cases {
            let pa = Pose::new(Vec3::ZERO, random_rotation(&mut s));
            let dir = Vec3::new(lcg(&mut s) - 0.5, lcg(&mut s) - 0.5, lcg(&mut s) - 0.5);
            let dist = 0.6 + 1.2 * lcg(&mut s);
            let pb = Pose::new(dir.normalize_or(Vec3::X) * dist, random_rotation(&mut s));
            let mine = collide(&a, &pa, &b, &pb, 0.0);
            let mut reference = Manifold::default();
            parry_contact(&a, &pa, &b, &pb, 0.0, &mut reference);
            if reference.count == 0 || reference.points[0].depth < 1e-3 {
                continue;
            }
            mine.validate().unwrap();
            assert!(
                mine.count > 0,
                "parry finds depth {} and we find none",
                reference.points[0].depth
            );
            let deepest = mine
                .points()
                .iter()
                .map(|p| p.depth)
                .fold(f32::MIN, f32::max);
            let expect = reference.points[0].depth;
            // Two boxes may report a face axis up to the preference tolerance (1 cm) shallower
            // than the true minimum (an edge axis); round shapes must match.
            let slack = if matches!(a, Shape::Cuboid { .. }) {
                0.0115
            } else {
                0.0
            };
            assert!(
                deepest > expect - 2e-3 - 0.02 * expect
                    && deepest < expect + slack + 2e-3 + 0.02 * expect,
                "{a:?} vs {b:?}: depth {deepest} vs parry {expect}"
            );
            // The normal: parry's for round shapes; for two boxes any axis whose overlap is within
            // the face/edge preference tolerance (1 cm) of the minimum is a right answer.
            if let (Shape::Cuboid { half_extents: ea }, Shape::Cuboid { half_extents: eb }) = (a, b)
            {
                let radius = |e: Vec3, q: Quat, l: Vec3| {
                    (0..3)
                        .map(|i| e[i] * (q * Vec3::AXES[i]).dot(l).abs())
                        .sum::<f32>()
                };
                let l = mine.normal;
                let overlap = radius(ea, pa.rotation, l) + radius(eb, pb.rotation, l)
                    - (pb.position - pa.position).dot(l).abs();
                assert!(
                    overlap > expect - 1e-3 && overlap < expect + 0.0115,
                    "overlap {overlap} along our normal, parry's minimum {expect}"
                );
                assert!(
                    (pb.position - pa.position).dot(l) > 0.0,
                    "normal points from B to A"
                );
            } else {
                assert!(
                    mine.normal.dot(reference.normal) > 0.99,
                    "{a:?} vs {b:?}: normal {:?} vs parry {:?}",
                    mine.normal,
                    reference.normal
                );
            }
            checked += 1;
        }
        checked
    }

    #[test]
    fn boxes_agree_with_parry() {
        let a = Shape::Cuboid {
            half_extents: Vec3::new(0.5, 0.3, 0.4),
        };
        let b = Shape::Cuboid {
            half_extents: Vec3::new(0.4, 0.5, 0.2),
        };
        assert!(check_against_parry(a, b, 1, 400) > 50);
    }

    #[test]
    fn sphere_pairs_agree_with_parry() {
        let ball = Shape::Sphere { radius: 0.5 };
        let cuboid = Shape::Cuboid {
            half_extents: Vec3::new(0.5, 0.3, 0.4),
        };
        let cyl = Shape::Cylinder {
            radius: 0.4,
            half_height: 0.6,
        };
        assert!(check_against_parry(ball, ball, 2, 200) > 30);
        assert!(check_against_parry(ball, cuboid, 3, 300) > 50);
        assert!(check_against_parry(ball, cyl, 4, 300) > 50);
    }
}
