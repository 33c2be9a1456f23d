//! The two-body collision impulse.
//!
//! [`resolve`] turns one contact between two bodies into new velocities for both, from their
//! pre-event states only (the timewarp engines apply it at an event's tick, Koenig et al., seed
//! 000, "resolve"; Mirtich, seed 001, impulse-based collision). With `r` the contact point relative
//! to a body's centre, `I⁻¹` its world inverse inertia and `n` the normal from A to B, the
//! effective mass along a direction `d` is `1 / (m_A⁻¹ + m_B⁻¹ + Σ d·((I⁻¹ (r×d)) × r))`. The normal
//! impulse `j_n = -(1 + e) v_n k_n` reverses the approach speed `v_n < 0` scaled by the restitution
//! `e`; the friction impulse stops the sliding velocity `v_t` but is capped by Coulomb's law at
//! `μ j_n`. Both impulses act at the contact point, so they change the angular velocities too:
//! that is what makes a sphere start to roll or spin.
//!
//! **Symmetry.** The formula is written so that swapping A and B (and negating the normal) gives
//! bit-identical results: relative velocities are differences negated exactly, sums of per-body
//! terms are commutative, and each body's update is `v ± m⁻¹ P` with `P` negated exactly. Two
//! entities that detect the same contact from opposite sides therefore agree to the bit.

use super::{BodyState, MassProps};
use glam::Vec3;

/// The result of a collision: the impulse applied to B (A receives its opposite) and both new
/// states.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Resolution {
    pub impulse: Vec3,
    pub a: BodyState,
    pub b: BodyState,
}

/// Resolves a collision at world `point` with unit `normal` from A to B, from pre-event states.
/// Separating or resting contacts (`v_n >= 0`) get no impulse.
#[allow(clippy::too_many_arguments)]
pub fn resolve(
    a: &BodyState,
    ma: &MassProps,
    b: &BodyState,
    mb: &MassProps,
    point: Vec3,
    normal: Vec3,
    restitution: f32,
    friction: f32,
) -> Resolution {
    let ia = ma.world_inv_inertia(a.rotation);
    let ib = mb.world_inv_inertia(b.rotation);
    let ra = point - a.position;
    let rb = point - b.position;
    let vrel = b.point_velocity(point) - a.point_velocity(point);
    let vn = vrel.dot(normal);
    if vn >= 0.0 {
        return Resolution {
            impulse: Vec3::ZERO,
            a: *a,
            b: *b,
        };
    }
    let angular = |i: glam::Mat3, r: Vec3, d: Vec3| d.dot((i * r.cross(d)).cross(r));
    let k = |d: Vec3| (ma.inv_mass + mb.inv_mass) + (angular(ia, ra, d) + angular(ib, rb, d));
    let kn = k(normal);
    if kn <= 0.0 {
        return Resolution {
            impulse: Vec3::ZERO,
            a: *a,
            b: *b,
        };
    }
    let jn = -(1.0 + restitution) * vn / kn;
    let vt = vrel - normal * vn;
    let vt_len = vt.length();
    let mut p = normal * jn;
    if vt_len > 1e-9 {
        let t = vt / vt_len;
        let kt = k(t);
        if kt > 0.0 {
            let jt = (vt_len / kt).min(friction * jn);
            p -= t * jt;
        }
    }
    let mut na = *a;
    let mut nb = *b;
    na.velocity = a.velocity - p * ma.inv_mass;
    na.angular_velocity = a.angular_velocity - ia * ra.cross(p);
    nb.velocity = b.velocity + p * mb.inv_mass;
    nb.angular_velocity = b.angular_velocity + ib * rb.cross(p);
    Resolution {
        impulse: p,
        a: na,
        b: nb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::Shape;
    use glam::Quat;

    fn ball(p: Vec3, v: Vec3, w: Vec3) -> BodyState {
        BodyState {
            position: p,
            rotation: Quat::IDENTITY,
            velocity: v,
            angular_velocity: w,
        }
    }

    #[test]
    fn elastic_head_on_swaps_velocities() {
        let m = MassProps::from_shape(&Shape::Sphere { radius: 0.5 }, 2.0);
        let a = ball(Vec3::ZERO, Vec3::new(3.0, 0.0, 0.0), Vec3::ZERO);
        let b = ball(
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(-1.0, 0.0, 0.0),
            Vec3::ZERO,
        );
        let r = resolve(&a, &m, &b, &m, Vec3::new(0.5, 0.0, 0.0), Vec3::X, 1.0, 0.5);
        assert!((r.a.velocity - b.velocity).length() < 1e-6);
        assert!((r.b.velocity - a.velocity).length() < 1e-6);
        assert!(r.a.angular_velocity.length() < 1e-6);
    }

    #[test]
    fn ball_on_ground_with_friction_starts_rolling() {
        // A sliding ball hits the static ground; with enough friction the contact point stops.
        let m = MassProps::from_shape(&Shape::Sphere { radius: 0.5 }, 1.0);
        let ground = ball(Vec3::new(0.0, -1.0, 0.0), Vec3::ZERO, Vec3::ZERO);
        let a = ball(Vec3::ZERO, Vec3::new(2.0, -3.0, 0.0), Vec3::ZERO);
        let p = Vec3::new(0.0, -0.5, 0.0);
        let r = resolve(&a, &m, &ground, &MassProps::STATIC, p, -Vec3::Y, 0.5, 10.0);
        assert!((r.a.velocity.y - 1.5).abs() < 1e-5);
        // Rolling: v_x = ω_z r... the contact point velocity is zero: v_x + (ω × r)_x = 0.
        let vp = r.a.point_velocity(p);
        assert!(vp.x.abs() < 1e-5, "{vp:?}");
        // Linear momentum plus angular momentum about the contact point is conserved: v_x = 5/7 v0.
        assert!((r.a.velocity.x - 2.0 * 5.0 / 7.0).abs() < 1e-5);
        assert_eq!(r.b, ground);
    }

    #[test]
    fn coulomb_limit_and_exact_symmetry() {
        let ma = MassProps::from_shape(
            &Shape::Cuboid {
                half_extents: Vec3::new(0.5, 0.3, 0.2),
            },
            3.0,
        );
        let mb = MassProps::from_shape(&Shape::Sphere { radius: 0.4 }, 1.5);
        let a = BodyState {
            position: Vec3::new(0.1, 0.2, -0.3),
            rotation: Quat::from_euler(glam::EulerRot::XYZ, 0.3, -0.7, 1.1),
            velocity: Vec3::new(1.0, 2.0, 0.5),
            angular_velocity: Vec3::new(0.3, -1.0, 2.0),
        };
        let b = ball(
            Vec3::new(0.7, 0.9, 0.1),
            Vec3::new(-2.0, -1.0, 0.3),
            Vec3::new(1.0, 0.0, -0.5),
        );
        let n = (b.position - a.position).normalize();
        let point = a.position + n * 0.45;
        let r1 = resolve(&a, &ma, &b, &mb, point, n, 0.3, 0.2);
        let r2 = resolve(&b, &mb, &a, &ma, point, -n, 0.3, 0.2);
        assert_eq!(r1.a, r2.b);
        assert_eq!(r1.b, r2.a);
        assert_eq!(r1.impulse, -r2.impulse);
        // Momentum conserved.
        let p0 = a.velocity / ma.inv_mass + b.velocity / mb.inv_mass;
        let p1 = r1.a.velocity / ma.inv_mass + r1.b.velocity / mb.inv_mass;
        assert!((p0 - p1).length() < 1e-4);
        // Coulomb: tangential impulse within μ times the normal impulse.
        let jn = r1.impulse.dot(n);
        let jt = (r1.impulse - n * jn).length();
        assert!(jn > 0.0 && jt <= 0.2 * jn * (1.0 + 1e-5));
    }
}
