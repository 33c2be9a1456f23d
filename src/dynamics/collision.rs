//! The two-body collision impulse.
//!
//! [`resolve`] turns one contact between two bodies into new velocities for both, from their
//! pre-event states only (the timewarp engines apply it at an event's tick, Koenig et al., seed
//! 000, "resolve"; Mirtich, seed 001, impulse-based collision). With `r` the contact point relative
//! to a body's centre, `I⁻¹` its world inverse inertia and `n` the normal from A to B, the
//! impulse `P` changes the relative velocity at the contact by `K P`, where `K` is the collision
//! matrix built from both bodies' inverse masses and inertias and their lever arms. The impulse
//! reverses the approach speed `v_n < 0` scaled by the restitution `e`, and friction stops the
//! sliding unless that needs more than Coulomb's cone `|P_t| ≤ μ P_n` allows, in which case the
//! contact slides with `|P_t| = μ P_n` against the sliding direction. The impulse acts at the
//! contact point, so it changes the angular velocities too: that is what makes a sphere start to
//! roll or spin.
//!
//! **Symmetry.** The formula is written so that swapping A and B (and negating the normal) gives
//! bit-identical results: relative velocities are differences negated exactly, sums of per-body
//! terms are commutative, and each body's update is `v ± m⁻¹ P` with `P` negated exactly. Two
//! entities that detect the same contact from opposite sides therefore agree to the bit.

use super::{BodyState, MassProps};
use glam::{Mat3, Vec3};

/// The result of a collision: the impulse applied to B (A receives its opposite) and both new
/// states.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Resolution {
    pub impulse: Vec3,
    pub a: BodyState,
    pub b: BodyState,
}

/// The cross-product matrix `[r]×` (`[r]× v = r × v`).
#[inline]
fn skew(r: Vec3) -> Mat3 {
    Mat3::from_cols(
        Vec3::new(0.0, r.z, -r.y),
        Vec3::new(-r.z, 0.0, r.x),
        Vec3::new(r.y, -r.x, 0.0),
    )
}

/// Resolves a collision at world `point` with unit `normal` from A to B, from pre-event states.
/// Separating or resting contacts (`v_n >= 0`) get no impulse.
///
/// The impulse `P` (on B; `-P` on A) changes the relative velocity at the point by `K P`, with
/// the collision matrix `K = (m_A⁻¹ + m_B⁻¹) 1 - [r_A]× I_A⁻¹ [r_A]× - [r_B]× I_B⁻¹ [r_B]×`. First
/// the sticking impulse is tried: the one that makes the normal velocity `-e v_n` and stops the
/// sliding (`P = K⁻¹ Δv`). If it lies outside the friction cone (`|P_t| > μ P_n`) the contact
/// slides instead: `P = j (n - μ t)`, `t` the initial sliding direction, with `j` chosen so that
/// the normal velocity still becomes `-e v_n`. Either way the bodies never leave approaching.
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
    let none = Resolution {
        impulse: Vec3::ZERO,
        a: *a,
        b: *b,
    };
    let ia = ma.world_inv_inertia(a.rotation);
    let ib = mb.world_inv_inertia(b.rotation);
    let ra = point - a.position;
    let rb = point - b.position;
    let vrel = b.point_velocity(point) - a.point_velocity(point);
    let vn = vrel.dot(normal);
    if vn >= 0.0 {
        return none;
    }
    // Per-body terms summed commutatively, so that swapping A and B gives the same K.
    let (sa, sb) = (skew(ra), skew(rb));
    let k =
        Mat3::from_diagonal(Vec3::splat(ma.inv_mass + mb.inv_mass)) - (sa * ia * sa + sb * ib * sb);
    let vt = vrel - normal * vn;
    // Sticking: reach v' = -e v_n n exactly.
    let target = normal * (-restitution * vn);
    let det = k.determinant();
    let mut p = if det.abs() > 1e-12 && det.is_finite() {
        k.inverse() * (target - vrel)
    } else {
        Vec3::NAN
    };
    let pn = p.dot(normal);
    let pt = p - normal * pn;
    if !(p.is_finite() && pn >= 0.0 && pt.length() <= friction * pn) {
        // Sliding (or a degenerate K): impulse along n - μ t.
        let vt_len = vt.length();
        let dir = if vt_len > 1e-9 {
            normal - (vt / vt_len) * friction
        } else {
            normal
        };
        let kn = normal.dot(k * dir);
        let mut j = if kn > 0.0 {
            -(1.0 + restitution) * vn / kn
        } else {
            0.0
        };
        let mut d = dir;
        if !(j > 0.0 && j.is_finite()) {
            // Frictionless fallback.
            let k0 = normal.dot(k * normal);
            if k0.is_nan() || k0 <= 0.0 {
                return none;
            }
            j = -(1.0 + restitution) * vn / k0;
            d = normal;
        }
        p = d * j;
    }
    // Energy guard. An impulse changes the kinetic energy by `P · (u + u') / 2`, with `u` and
    // `u' = u + K P` the relative velocity at the point before and after. The sticking impulse
    // and the frictionless one never add energy (restitution <= 1), but the sliding impulse
    // with a fixed direction can, when friction is high and K couples normal and tangent
    // strongly (Kane's paradox: a thin, spinning body, friction 1.7, gained 10^5 times its
    // energy in one impulse; found by `tests/fuzz_sim.rs`). Then the frictionless impulse is
    // taken instead. Swapping A and B negates `P`, `u` and `u'` exactly, so the decision is the
    // same bits from both sides.
    let gain = p.dot(vrel + (vrel + k * p));
    if gain.is_nan() || gain > 1e-3 * p.dot(vrel).abs() {
        let k0 = normal.dot(k * normal);
        if !(k0 > 0.0 && k0.is_finite()) {
            return none;
        }
        p = normal * (-(1.0 + restitution) * vn / k0);
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

/// Rolling and spinning resistance of one contact after its impulse (Box2D v3's
/// `rollingResistance`, taken to 3D, as the island solver applies it per contact): the angular
/// impulse on B (A receives its opposite) that stops the bodies' relative rotation
/// `w_B - w_A`, clamped to `resistance × lever × normal_impulse`. `ia` and `ib` are the world
/// inverse inertias, `wa` and `wb` the angular velocities after the contact's impulse. Zero when
/// `resistance` is 0 or the contact pushed nothing. Swapping A and B negates the result exactly.
pub fn rolling_impulse(
    ia: Mat3,
    wa: Vec3,
    ib: Mat3,
    wb: Vec3,
    resistance: f32,
    lever: f32,
    normal_impulse: f32,
) -> Vec3 {
    let limit = resistance * lever * normal_impulse;
    if limit.is_nan() || limit <= 0.0 {
        return Vec3::ZERO;
    }
    let k = ia + ib;
    let det = k.determinant();
    if !(det.abs() > f32::EPSILON && det.is_finite()) {
        return Vec3::ZERO;
    }
    let mut l = -(k.inverse() * (wb - wa));
    let len = l.length();
    if len > limit {
        l *= limit / len;
    }
    if l.is_finite() { l } else { Vec3::ZERO }
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
    fn rolling_impulse_stops_relative_spin_within_its_limit_and_is_symmetric() {
        let ma = MassProps::from_shape(&Shape::Sphere { radius: 0.5 }, 1.0);
        let mb = MassProps::from_shape(
            &Shape::Cuboid {
                half_extents: Vec3::new(0.5, 0.2, 0.3),
            },
            2.0,
        );
        let q = Quat::from_rotation_y(0.4);
        let (ia, ib) = (
            ma.world_inv_inertia(Quat::IDENTITY),
            mb.world_inv_inertia(q),
        );
        let (wa, wb) = (Vec3::new(0.0, 0.0, -4.0), Vec3::new(1.0, 0.5, 0.0));
        // A large limit stops the relative rotation exactly (to rounding).
        let l = rolling_impulse(ia, wa, ib, wb, 1.0, 0.5, 100.0);
        let rel = (wb + ib * l) - (wa - ia * l);
        assert!(rel.length() < 1e-4, "{rel}");
        // A small one clamps the impulse to resistance x lever x normal impulse.
        let l = rolling_impulse(ia, wa, ib, wb, 0.2, 0.5, 0.01);
        assert!((l.length() - 0.2 * 0.5 * 0.01).abs() < 1e-7, "{l}");
        // Swapping the bodies negates it bit for bit; nothing without resistance or push.
        assert_eq!(rolling_impulse(ib, wb, ia, wa, 0.2, 0.5, 0.01), -l);
        assert_eq!(rolling_impulse(ia, wa, ib, wb, 0.0, 0.5, 0.01), Vec3::ZERO);
        assert_eq!(rolling_impulse(ia, wa, ib, wb, 0.2, 0.5, 0.0), Vec3::ZERO);
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

#[cfg(test)]
mod symmetry_fuzz {
    use super::*;
    use crate::scene::Shape;
    use glam::Quat;

    fn lcg(s: &mut u64) -> f32 {
        *s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*s >> 40) as f32) / (1u64 << 24) as f32 - 0.5
    }

    fn v(s: &mut u64, scale: f32) -> Vec3 {
        Vec3::new(lcg(s), lcg(s), lcg(s)) * scale
    }

    #[test]
    fn swapping_the_bodies_changes_no_bit() {
        let mut s = 99;
        let shapes = [
            Shape::Sphere { radius: 0.4 },
            Shape::Cuboid {
                half_extents: Vec3::new(0.5, 0.2, 0.3),
            },
            Shape::Cylinder {
                radius: 0.3,
                half_height: 0.6,
            },
        ];
        for case in 0..500 {
            let state = |s: &mut u64| BodyState {
                position: v(s, 4.0),
                rotation: Quat::from_scaled_axis(v(s, 6.0)).normalize(),
                velocity: v(s, 10.0),
                angular_velocity: v(s, 10.0),
            };
            let (a, b) = (state(&mut s), state(&mut s));
            let ma = MassProps::from_shape(&shapes[case % 3], 1.0 + lcg(&mut s).abs() * 5.0);
            let mb = if case % 7 == 0 {
                MassProps::STATIC
            } else {
                MassProps::from_shape(&shapes[(case / 3) % 3], 0.5 + lcg(&mut s).abs())
            };
            let n = v(&mut s, 1.0).normalize_or(Vec3::Y);
            let point = (a.position + b.position) * 0.5 + v(&mut s, 0.2);
            let (e, mu) = (lcg(&mut s) + 0.5, lcg(&mut s) + 0.5);
            let r1 = resolve(&a, &ma, &b, &mb, point, n, e, mu);
            let r2 = resolve(&b, &mb, &a, &ma, point, -n, e, mu);
            assert_eq!(r1.a, r2.b, "case {case}");
            assert_eq!(r1.b, r2.a, "case {case}");
            assert_eq!(r1.impulse, -r2.impulse, "case {case}");
            // An approaching contact never ends approaching (restitution >= 0).
            let vn_after = (r1.b.point_velocity(point) - r1.a.point_velocity(point)).dot(n);
            let vn_before = (b.point_velocity(point) - a.point_velocity(point)).dot(n);
            if vn_before < 0.0 {
                assert!(
                    vn_after >= -1e-3 * vn_before.abs(),
                    "case {case}: {vn_before} -> {vn_after}"
                );
            }
        }
    }

    fn kinetic(s: &BodyState, m: &MassProps) -> f64 {
        if m.is_static() {
            return 0.0;
        }
        let w = s.angular_velocity;
        let iw = m.world_inv_inertia(s.rotation).inverse() * w;
        0.5 * f64::from(s.velocity.length_squared() / m.inv_mass) + 0.5 * f64::from(w.dot(iw))
    }

    /// Found by `tests/fuzz_sim.rs`: the sliding impulse added energy (Kane's paradox) to a
    /// thin, spinning cylinder with high friction, which then left at 1000 m/s. No impulse may
    /// add kinetic energy: thin and flat bodies, spinning, against static and dynamic ones, at
    /// any friction and restitution.
    #[test]
    fn no_impulse_adds_energy() {
        let mut rng = crate::scene::SplitMix64::new(8);
        let mut v3 =
            |scale: f32| Vec3::new(rng.next_signed(), rng.next_signed(), rng.next_signed()) * scale;
        let shapes = [
            Shape::Cylinder {
                radius: 0.001,
                half_height: 0.05,
            },
            Shape::Cuboid {
                half_extents: Vec3::new(0.5, 0.02, 0.3),
            },
            Shape::Sphere { radius: 0.3 },
        ];
        let at = |position, velocity, angular_velocity| BodyState {
            position,
            rotation: Quat::IDENTITY,
            velocity,
            angular_velocity,
        };
        let mut worst = 0.0f64;
        for case in 0..6000 {
            let shape = shapes[case % 3];
            let ma = MassProps::from_shape(&shape, 1.0 + 3000.0 * (case % 7) as f32 / 7.0);
            let axis = v3(1.0);
            let a = BodyState {
                position: Vec3::ZERO,
                rotation: glam::Quat::from_scaled_axis(axis * 3.0),
                velocity: v3(5.0),
                angular_velocity: v3(40.0),
            };
            let (b, mb) = if case % 2 == 0 {
                (at(v3(1.0), Vec3::ZERO, Vec3::ZERO), MassProps::STATIC)
            } else {
                let m = MassProps::from_shape(&Shape::Sphere { radius: 0.2 }, 2.0);
                (at(v3(1.0), v3(5.0), v3(10.0)), m)
            };
            let point = v3(0.06);
            let normal = v3(1.0).normalize_or(Vec3::Y);
            let e = [0.0, 0.5, 1.0][case % 3];
            let mu = [0.0, 0.5, 1.74, 5.0][case % 4];
            let r = resolve(&a, &ma, &b, &mb, point, normal, e, mu);
            let before = kinetic(&a, &ma) + kinetic(&b, &mb);
            let after = kinetic(&r.a, &ma) + kinetic(&r.b, &mb);
            worst = worst.max((after - before) / before.max(1e-9));
            assert!(
                after <= before * (1.0 + 1e-3) + 1e-6,
                "case {case}: energy {before} -> {after} (e {e}, friction {mu})"
            );
        }
        eprintln!("largest relative energy change: {worst:e}");
    }
}
