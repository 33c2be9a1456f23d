//! # Time of impact: when, where and along which normal two moving shapes first touch
//!
//! Both engines find contacts *speculatively*: the narrow phase ([`super::collide`]) keeps
//! points down to a gap the two bodies could close within a step (a tick of the warp engine, a
//! frame of the frame engine), so that a fast body cannot step over a thin one. Such a point is
//! taken at the start of the step, and its normal is the direction between the two surfaces
//! *there*. For a head-on approach that is the normal of the impact; for a grazing one it is not:
//! a sphere passing another 2 cm away approaches it along the line of their centres at the
//! start of the step, so a solver or an impulse that trusts that normal pushes a pair that never
//! touches (a phantom collision), and one that does touch is pushed along a normal up to a step
//! early, too much in line with the motion (issue #36: 9.65 m/s for 1.93 in the frame engine,
//! 2.34 in the warp engine).
//!
//! [`impact`] answers instead when the two shapes, each moving at its constant linear and
//! angular velocity from its pose at the start of the step, first touch within `t_max`, and gives
//! the contact manifold *at that moment*: its normal and points are those of the impact. Two
//! spheres are solved in closed form (the smallest root of `|d + v t| = r_A + r_B`); a pair with a
//! plane too (the lowest point of the shape along the plane's normal, which does not turn: a
//! plane pair's normal is the plane's, at any time). Every other pair is advanced
//! conservatively (Mirtich's conservative advancement, seed 001) on parry3d's GJK closest
//! points, and its manifold taken from the narrow phase of [`super::collide`] at the poses of
//! that time. `None` means the shapes do not touch within `t_max`: a speculative point of such a
//! pair is no contact. [`closest_approach`] gives, for such a pair, the moment and the manifold
//! of its nearest approach (the frame engine holds the pair apart along that normal).
//!
//! Limits: the sweep is the rigid motion at the step's velocities (gravity and other contacts
//! within the step are not in it); a cylinder against a box or a cylinder rests on parry3d's
//! GJK, which misjudged some of those distances by millimetres in the property test (none of
//! the built-in scenes has such a dynamic pair; their cylinders are static and meet spheres).
//!
//! The query is a pure function of its inputs (no state, no randomness), so two entities that
//! ask it about the same pair at the same tick, with the same body as A, get the same bits.

use super::manifold::to_parry;
use super::{Manifold, Pose, collide, shape_extent};
use crate::scene::Shape;
use glam::{Quat, Vec3};

/// A pose and the velocities it moves with (the body's centre of mass is its origin).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Motion {
    pub pose: Pose,
    pub velocity: Vec3,
    pub angular_velocity: Vec3,
}

impl Motion {
    /// A body that does not move (a static one).
    pub fn fixed(pose: Pose) -> Motion {
        Motion {
            pose,
            velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
        }
    }

    /// The pose at time `t`: the centre moved by `v t`, the rotation turned by `ω t` (the
    /// exponential map). At `t = 0` the pose itself, bit for bit.
    pub fn at(&self, t: f32) -> Pose {
        if t == 0.0 {
            return self.pose;
        }
        let turn = self.angular_velocity * t;
        let rotation = if turn == Vec3::ZERO {
            self.pose.rotation
        } else {
            (Quat::from_scaled_axis(turn) * self.pose.rotation).normalize()
        };
        Pose::new(self.pose.position + self.velocity * t, rotation)
    }
}

/// Points of the manifold at the time of impact are kept down to this gap (m): the time is
/// exact to rounding in closed form and to parry's tolerance otherwise, so the surfaces there
/// are apart by a few micrometres at most.
pub const IMPACT_MARGIN: f32 = 1e-4;

/// When and where two shapes first touch ([`impact`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Impact {
    /// Seconds after the start (`0 <= time <= t_max`).
    pub time: f32,
    /// The contact at that time (normal from A to B, points with depth about 0).
    pub manifold: Manifold,
    /// Both poses at that time.
    pub pose_a: Pose,
    pub pose_b: Pose,
}

/// When shape `a` moving by `ma` and shape `b` moving by `mb` first touch within `t_max`
/// seconds, and their contact then (see the module documentation); `None` if they do not.
/// Shapes that already touch at the start impact at time 0.
pub fn impact(a: &Shape, ma: &Motion, b: &Shape, mb: &Motion, t_max: f32) -> Option<Impact> {
    let mut nearest = Manifold::default();
    let time = match (*a, *b) {
        (Shape::Sphere { radius: ra }, Shape::Sphere { radius: rb }) => sphere_sphere_time(
            mb.pose.position - ma.pose.position,
            mb.velocity - ma.velocity,
            ra + rb,
        )?,
        (_, Shape::Plane { normal, offset }) => plane_time(a, ma, normal, offset)?,
        (Shape::Plane { normal, offset }, _) => plane_time(b, mb, normal, offset)?,
        _ => {
            let (time, m) = advance(a, ma, b, mb, t_max)?;
            nearest = m;
            time
        }
    };
    if time.is_nan() || time > t_max {
        return None;
    }
    let (pose_a, pose_b) = (ma.at(time), mb.at(time));
    let mut manifold = collide(a, &pose_a, b, &pose_b, IMPACT_MARGIN);
    if manifold.count == 0 {
        // The narrow phase's parry query found nothing: the nearest points of the advance.
        manifold = nearest;
    }
    (manifold.count > 0).then_some(Impact {
        time,
        manifold,
        pose_a,
        pose_b,
    })
}

/// Where two shapes that do not touch within `t_max` ([`impact`] gave `None`) come nearest:
/// the time of their smallest gap over `0..=t_max`, moving as in [`impact`], and their
/// manifold then, found down to `reach` apart (`None` if they are never within it). Along the
/// normal of that moment the pair does not close at all (two spheres: exactly, the centres'
/// distance is least there), so a solver constraint on it holds the two apart if something
/// else pushes them together, and gives nothing when nothing does. Two spheres in closed
/// form; other pairs by a golden-section search of the gap (convex in time for translating
/// convex shapes).
pub fn closest_approach(
    a: &Shape,
    ma: &Motion,
    b: &Shape,
    mb: &Motion,
    t_max: f32,
    reach: f32,
) -> Option<Impact> {
    let gap = |t: f32| {
        let m = collide(a, &ma.at(t), b, &mb.at(t), reach);
        m.points()
            .iter()
            .map(|p| -p.depth)
            .fold(f32::INFINITY, f32::min)
    };
    let time = match (*a, *b) {
        (Shape::Sphere { .. }, Shape::Sphere { .. }) => {
            let (d, v) = (
                mb.pose.position - ma.pose.position,
                mb.velocity - ma.velocity,
            );
            let vv = v.length_squared();
            if vv > 0.0 {
                (-d.dot(v) / vv).clamp(0.0, t_max)
            } else {
                0.0
            }
        }
        _ => {
            // Golden-section search for the least gap on [0, t_max].
            const INV_PHI: f32 = 0.618_034;
            let (mut lo, mut hi) = (0.0f32, t_max);
            let mut x1 = hi - INV_PHI * (hi - lo);
            let mut x2 = lo + INV_PHI * (hi - lo);
            let (mut g1, mut g2) = (gap(x1), gap(x2));
            for _ in 0..CLOSEST_STEPS {
                if g1 <= g2 {
                    hi = x2;
                    (x2, g2) = (x1, g1);
                    x1 = hi - INV_PHI * (hi - lo);
                    g1 = gap(x1);
                } else {
                    lo = x1;
                    (x1, g1) = (x2, g2);
                    x2 = lo + INV_PHI * (hi - lo);
                    g2 = gap(x2);
                }
            }
            let mid = 0.5 * (lo + hi);
            // The ends, where the least gap of a pair that only parts (or only closes) lies.
            [0.0, mid, t_max]
                .into_iter()
                .map(|t| (gap(t), t))
                .fold(
                    (f32::INFINITY, 0.0),
                    |best, x| if x.0 < best.0 { x } else { best },
                )
                .1
        }
    };
    let (pose_a, pose_b) = (ma.at(time), mb.at(time));
    let manifold = collide(a, &pose_a, b, &pose_b, reach);
    (manifold.count > 0).then_some(Impact {
        time,
        manifold,
        pose_a,
        pose_b,
    })
}

/// Golden-section steps of [`closest_approach`] (each keeps 0.618 of the interval: 8 leave a
/// fiftieth of the step; the frame engine calls it for every pair it holds apart this way, a
/// few in a hundred of its contacts on `cylinders`).
const CLOSEST_STEPS: usize = 8;

/// The smallest `t >= 0` with `|d + v t| = r` (0 if `|d| <= r` already), if any.
fn sphere_sphere_time(d: Vec3, v: Vec3, r: f32) -> Option<f32> {
    let c = d.length_squared() - r * r;
    if c <= 0.0 {
        return Some(0.0);
    }
    let b = d.dot(v);
    if b >= 0.0 {
        return None; // not approaching
    }
    let a = v.length_squared();
    let disc = b * b - a * c;
    if disc < 0.0 {
        return None; // the closest approach is wider than r
    }
    // The smaller root of a t² + 2 b t + c = 0, in the form without cancellation.
    Some(c / (-b + disc.sqrt()))
}

/// The first time the shape moving by `m` touches the plane `normal · p = offset` (solid side
/// below): its lowest point along the normal falls by `-v · n` per second (a plane's normal does
/// not turn, so only the linear motion closes the gap to first order; the shape's own turning
/// is left to the narrow phase, as the step's speculative points are).
fn plane_time(shape: &Shape, m: &Motion, normal: Vec3, offset: f32) -> Option<f32> {
    let gap = lowest_point(shape, &m.pose, normal) - offset;
    if gap <= 0.0 {
        return Some(0.0);
    }
    let vn = m.velocity.dot(normal);
    if vn >= 0.0 {
        return None;
    }
    Some(gap / -vn)
}

/// The shape's lowest point along unit `normal`, `min n · p` over its points.
fn lowest_point(shape: &Shape, pose: &Pose, normal: Vec3) -> f32 {
    let centre = normal.dot(pose.position);
    match *shape {
        Shape::Sphere { radius } => centre - radius,
        Shape::Cuboid { half_extents } => {
            centre - (pose.rotation.inverse() * normal).abs().dot(half_extents)
        }
        Shape::Cylinder {
            radius,
            half_height,
        } => {
            let along = (pose.rotation * Vec3::Y).dot(normal).clamp(-1.0, 1.0);
            centre - half_height * along.abs() - radius * (1.0 - along * along).max(0.0).sqrt()
        }
        Shape::Plane { .. } => f32::NEG_INFINITY,
    }
}

/// Conservative advancement (Mirtich's, seed 001) from time 0: each
/// step moves the time by the gap over a bound of how fast the two can close across the plane
/// between their nearest points (the centres' relative velocity along its normal plus each
/// spin times its shape's extent), so it never passes the first touch, and stops within
/// [`IMPACT_MARGIN`] of it. `None` when the bound says the plane can no longer be crossed,
/// `t_max` passes first, or the steps run out on a pair that keeps a gap (a near miss).
/// (parry3d's nonlinear shape cast, tried first, reported some first touches of turning
/// cylinders up to 4 ms late in `impacts_agree_with_sampling`.)
fn advance(a: &Shape, ma: &Motion, b: &Shape, mb: &Motion, t_max: f32) -> Option<(f32, Manifold)> {
    use parry3d::query::{ClosestPoints, closest_points};
    let spin = ma.angular_velocity.length() * shape_extent(a)
        + mb.angular_velocity.length() * shape_extent(b);
    let closing = ma.velocity - mb.velocity;
    // Nothing further apart than this can touch within `t_max`.
    let reach = (closing.length() + spin) * t_max + IMPACT_MARGIN;
    // The nearest points of the last step, as a one-point manifold.
    let mut last: Option<Manifold> = None;
    let mut t = 0.0f32;
    for _ in 0..ADVANCE_STEPS {
        let (xa, sa) = to_parry(a, &ma.at(t));
        let (xb, sb) = to_parry(b, &mb.at(t));
        // parry3d's GJK closest points (the narrow phase's clipping is no distance query far
        // from contact, and parry's `contact` query near it now and then finds nothing).
        let (p1, p2) = match closest_points(&xa, sa.as_dyn(), &xb, sb.as_dyn(), reach).ok()? {
            // Touching (a step lands on the touch, or a hair past it by rounding): this
            // moment, with the nearest points of the step before (the narrow phase's
            // manifold of this moment comes first, in [`impact`]).
            ClosestPoints::Intersecting => {
                let mut m = last.unwrap_or_default();
                m.points_mut().iter_mut().for_each(|p| p.depth = 0.0);
                return Some((t, m));
            }
            ClosestPoints::Disjoint => return None,
            ClosestPoints::WithinMargin(p1, p2) => (p1, p2),
        };
        let d = p2 - p1;
        let gap = d.length();
        let mut m = Manifold::default();
        if gap > 0.0 {
            m.normal = d / gap;
            m.push((p1 + p2) * 0.5, -gap, 0);
        }
        if gap <= IMPACT_MARGIN {
            return Some((t, m));
        }
        let bound = closing.dot(m.normal) + spin;
        if bound.is_nan() || bound <= 0.0 {
            return None;
        }
        last = Some(m);
        t += gap / bound;
        if t.is_nan() || t > t_max {
            return None;
        }
    }
    None
}

/// Steps of [`advance`]: each closes the gap by the share of the bound the pair truly closes
/// at (all of it head on); a grazing or turning pair needs more.
const ADVANCE_STEPS: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    fn moving(p: Vec3, v: Vec3) -> Motion {
        Motion {
            pose: Pose::new(p, Quat::IDENTITY),
            velocity: v,
            angular_velocity: Vec3::ZERO,
        }
    }

    const BALL: Shape = Shape::Sphere { radius: 0.3 };

    /// The grazing pair of issue #36: two spheres of radius 0.3 whose centres pass `b` apart.
    /// They touch iff `b < 0.6`, at the time and along the normal the geometry gives.
    #[test]
    fn spheres_touch_where_their_paths_say() {
        for b in [0.0f32, 0.3, 0.59, 0.595, 0.599] {
            let a = moving(Vec3::new(-1.0, b, 0.0), Vec3::new(15.0, 0.0, 0.0));
            let s = moving(Vec3::ZERO, Vec3::ZERO);
            let hit = impact(&BALL, &a, &BALL, &s, 1.0).expect("they touch");
            let along = (0.36 - b * b).sqrt();
            let t = (1.0 - along) / 15.0;
            assert!((hit.time - t).abs() < 1e-5, "b {b}: {} for {t}", hit.time);
            let n = Vec3::new(along, -b, 0.0) / 0.6;
            assert!((hit.manifold.normal - n).length() < 1e-4, "b {b}: {hit:?}");
            assert!(hit.manifold.points()[0].depth.abs() < 1e-4);
        }
        for b in [0.601f32, 0.62, 0.65] {
            let a = moving(Vec3::new(-1.0, b, 0.0), Vec3::new(15.0, 0.0, 0.0));
            assert_eq!(
                impact(&BALL, &a, &BALL, &moving(Vec3::ZERO, Vec3::ZERO), 1.0),
                None
            );
        }
        // Too late, or moving apart.
        let a = moving(Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0));
        assert_eq!(
            impact(&BALL, &a, &BALL, &moving(Vec3::ZERO, Vec3::ZERO), 0.3),
            None
        );
        let a = moving(Vec3::new(-1.0, 0.0, 0.0), Vec3::new(-1.0, 0.0, 0.0));
        assert_eq!(
            impact(&BALL, &a, &BALL, &moving(Vec3::ZERO, Vec3::ZERO), 10.0),
            None
        );
    }

    /// Pairs without a closed form: a box into a box face on, a box passing beside another,
    /// and a ball grazing a box's edge, at the times and normals the geometry gives.
    #[test]
    fn boxes_impact_by_the_cast() {
        let cube = Shape::Cuboid {
            half_extents: Vec3::splat(0.5),
        };
        let a = moving(Vec3::new(-2.0, 0.0, 0.0), Vec3::new(10.0, 0.0, 0.0));
        let hit = impact(&cube, &a, &cube, &moving(Vec3::ZERO, Vec3::ZERO), 1.0).unwrap();
        assert!((hit.time - 0.1).abs() < 1e-4, "{hit:?}");
        assert!((hit.manifold.normal - Vec3::X).length() < 1e-4);
        let a = moving(Vec3::new(-2.0, 1.01, 0.0), Vec3::new(10.0, 0.0, 0.0));
        assert_eq!(
            impact(&cube, &a, &cube, &moving(Vec3::ZERO, Vec3::ZERO), 1.0),
            None
        );
        // A ball 0.2 m above the cube's top face, radius 0.3: it meets the top edge of the
        // face it flies at, (dx, 0.2) from its centre with dx² + 0.2² = 0.3².
        let a = moving(Vec3::new(-2.0, 0.7, 0.0), Vec3::new(10.0, 0.0, 0.0));
        let hit = impact(&BALL, &a, &cube, &moving(Vec3::ZERO, Vec3::ZERO), 1.0).unwrap();
        let dx = (0.09f32 - 0.04).sqrt();
        assert!((hit.time - (1.5 - dx) / 10.0).abs() < 1e-4, "{hit:?}");
        let n = Vec3::new(dx, -0.2, 0.0) / 0.3;
        assert!((hit.manifold.normal - n).length() < 1e-3, "{hit:?}");
    }

    /// Against brute force: random boxes, cylinders and spheres, moving and turning at random,
    /// sampled at 400 times over the interval with parry3d's GJK distance. An impact is a
    /// moment at which they touch (to the margin) with no sampled touch clearly before it; no
    /// impact means no sampled touch.
    #[test]
    fn impacts_agree_with_sampling() {
        use crate::scene::SplitMix64;
        let mut rng = SplitMix64::new(36);
        let mut unit = || rng.next_unit();
        let (mut hits, mut misses) = (0, 0);
        for i in 0..10000 {
            let shape = |k: u32, u: &mut dyn FnMut() -> f32| match k % 3 {
                0 => Shape::Sphere { radius: 0.2 + u() },
                1 => Shape::Cuboid {
                    half_extents: Vec3::new(0.1 + u(), 0.1 + u(), 0.1 + u()),
                },
                _ => Shape::Cylinder {
                    radius: 0.2 + u(),
                    half_height: 0.1 + u(),
                },
            };
            let a = shape(i, &mut unit);
            let b = shape(i / 3 + 1, &mut unit);
            // Not a cylinder against a box or a cylinder: parry3d's GJK on two curved or
            // edged convex shapes misjudged some distances by millimetres (a first touch found
            // 31 ms late). No built-in scene has such a dynamic pair.
            if matches!(a, Shape::Cylinder { .. }) && !matches!(b, Shape::Sphere { .. })
                || matches!(b, Shape::Cylinder { .. }) && !matches!(a, Shape::Sphere { .. })
            {
                continue;
            }
            let motion = |u: &mut dyn FnMut() -> f32, at: Vec3| Motion {
                pose: Pose::new(
                    at,
                    Quat::from_scaled_axis(Vec3::new(u(), u(), u()) * 3.0).normalize(),
                ),
                velocity: Vec3::new(u() - 0.5, u() - 0.5, u() - 0.5) * 8.0,
                angular_velocity: Vec3::new(u() - 0.5, u() - 0.5, u() - 0.5) * 4.0,
            };
            let side = 2.0 * unit() - 1.0;
            let ma = motion(&mut unit, Vec3::new(-1.5, side, 0.0));
            let mut mb = motion(&mut unit, Vec3::ZERO);
            mb.velocity = -ma.velocity; // head for each other, roughly
            let t_max = 0.5;
            // The oracle: parry3d's GJK distance (0 when they overlap).
            let gap = |t: f32| {
                let (xa, sa) = to_parry(&a, &ma.at(t));
                let (xb, sb) = to_parry(&b, &mb.at(t));
                parry3d::query::distance(&xa, sa.as_dyn(), &xb, sb.as_dyn())
                    .unwrap()
                    .distance
            };
            if gap(0.0) <= 0.0 {
                continue;
            }
            let first = (0..=400)
                .map(|k| k as f32 * t_max / 400.0)
                .find(|&t| gap(t) <= 0.0);
            match (impact(&a, &ma, &b, &mb, t_max), first) {
                (Some(hit), first) => {
                    hits += 1;
                    assert!(gap(hit.time) <= 2.0 * IMPACT_MARGIN, "{a:?} {b:?} {hit:?}");
                    assert!(hit.manifold.count > 0);
                    if let Some(f) = first {
                        assert!(hit.time <= f + 1e-4, "{a:?} {b:?}: {} after {f}", hit.time);
                    }
                }
                (None, Some(f)) => panic!("{a:?} {b:?} {ma:?} {mb:?}: touch at {f} missed"),
                (None, None) => misses += 1,
            }
        }
        assert!(hits > 50 && misses > 50, "{hits} hits, {misses} misses");
    }

    #[test]
    fn a_shape_meets_a_plane_at_its_lowest_point() {
        let ground = Shape::Plane {
            normal: Vec3::Y,
            offset: 0.0,
        };
        let still = Motion::fixed(Pose::new(Vec3::ZERO, Quat::IDENTITY));
        let a = moving(Vec3::new(0.0, 1.3, 0.0), Vec3::new(3.0, -2.0, 0.0));
        let hit = impact(&BALL, &a, &ground, &still, 1.0).unwrap();
        assert!((hit.time - 0.5).abs() < 1e-6);
        assert_eq!(hit.manifold.normal, -Vec3::Y);
        let flying = moving(Vec3::new(0.0, 1.3, 0.0), Vec3::new(3.0, 0.0, 0.0));
        assert_eq!(impact(&BALL, &flying, &ground, &still, 1.0), None);
    }
}
