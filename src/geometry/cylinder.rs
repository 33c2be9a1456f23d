//! Hand-written cylinder contact: cylinder against plane.
//!
//! A cylinder (radius `r`, half height `h` along its local y axis) is the hull of its two cap
//! circles, so its deepest point under a plane lies on a cap's rim: on the cap that faces the
//! plane, at the rim point whose radial direction points most into the plane (the support
//! point along the plane's inward normal). The manifold takes, on each cap, that rim point and
//! the rim points a quarter turn to either side and half a turn round, eight candidates in all
//! (feature id `4 * cap + k`), keeps those within the margin and reduces them to four as
//! box-plane does. A cylinder standing on a cap thus rests on four rim points, one lying on its
//! side on the two ends of its lowest line, and a tilted one on its lowest rim point; the
//! normal is always the plane's, whatever the depth.
//!
//! (Before this function the pair went to parry3d's general `contact` query, which for a
//! cylinder sunk deep into a half-space returned a normal far from the plane's and a depth that
//! grew as the body sank: the static-contact correction of the warp engine then pushed the body
//! further in, faster every tick, to 10^9 m in 0.19 s. Found by `tests/fuzz_sim.rs`.)

use super::boxes::{Candidate, reduce_into};
use super::{Manifold, Pose};
use glam::Vec3;

/// Cylinder A (pose `pa`, radius `r`, half height `h` along its local y axis) against the
/// static half-space B: points p with `normal · p < offset`. The normal points from A into B.
pub fn cylinder_plane(
    pa: &Pose,
    r: f32,
    h: f32,
    normal: Vec3,
    offset: f32,
    margin: f32,
    m: &mut Manifold,
) {
    let axis = pa.rotation * Vec3::Y;
    // The radial direction on the caps that points most into the plane, and its quarter turn.
    let radial = axis * normal.dot(axis) - normal;
    let u = if radial.length_squared() > 1e-12 {
        radial.normalize()
    } else {
        // Standing upright: any radial direction is as deep, so take the body's own x axis.
        pa.rotation * Vec3::X
    };
    let w = axis.cross(u);
    let rims = [u * r, w * r, -w * r, -u * r];
    let mut cands = [Candidate::default(); 8];
    let mut n = 0;
    for (cap, side) in [-h, h].into_iter().enumerate() {
        let centre = pa.position + axis * side;
        for (k, &rim) in rims.iter().enumerate() {
            let p = centre + rim;
            let depth = offset - normal.dot(p);
            if depth >= -margin {
                cands[n] = Candidate {
                    position: p + normal * (depth * 0.5),
                    depth,
                    id: (4 * cap + k) as u32,
                };
                n += 1;
            }
        }
    }
    if n > 0 {
        m.normal = -normal;
        reduce_into(&cands[..n], m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::collide;
    use crate::scene::Shape;
    use glam::Quat;

    fn plane(normal: Vec3, offset: f32) -> Shape {
        Shape::Plane { normal, offset }
    }

    /// The depth of the cylinder's deepest point under the plane, from its support point.
    fn deepest(pa: &Pose, r: f32, h: f32, normal: Vec3, offset: f32) -> f32 {
        let axis = pa.rotation * Vec3::Y;
        let c = normal.dot(axis);
        let lowest = normal.dot(pa.position) - h * c.abs() - r * (1.0 - c * c).max(0.0).sqrt();
        offset - lowest
    }

    #[test]
    fn a_cylinder_sunk_deep_into_a_plane_gets_the_planes_normal() {
        // The scene `tests/fuzz_sim.rs` found: a coin, tilted and spinning, its centre below a
        // tilted plane's surface.
        let normal = Vec3::new(0.0, 0.958_802_6, 0.237_440_96).normalize();
        let offset = 0.811_938_2;
        let q = Quat::from_xyzw(-0.254_324_35, 0.0, 0.337_387_62, -0.906_360_15).normalize();
        let (r, h) = (0.535_486_7, 0.05);
        for depth_below in [0.0, 1.0, 10.0, 1000.0] {
            let pa = Pose::new(
                Vec3::new(1.782_651_1, 0.0, 1.919_672_1) - normal * depth_below,
                q,
            );
            let cyl = Shape::Cylinder {
                radius: r,
                half_height: h,
            };
            let m = collide(
                &cyl,
                &pa,
                &plane(normal, offset),
                &Pose::new(Vec3::ZERO, Quat::IDENTITY),
                0.01,
            );
            assert!(m.count >= 1);
            assert!((m.normal + normal).length() < 1e-6, "normal {}", m.normal);
            let want = deepest(&pa, r, h, normal, offset);
            let got = m.points().iter().map(|p| p.depth).fold(f32::MIN, f32::max);
            assert!(
                (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                "depth {got}, expected {want}"
            );
            // Swapped, the normal flips.
            let m2 = collide(
                &plane(normal, offset),
                &Pose::new(Vec3::ZERO, Quat::IDENTITY),
                &cyl,
                &pa,
                0.01,
            );
            assert!((m2.normal - normal).length() < 1e-6);
        }
    }

    #[test]
    fn standing_on_a_cap_rests_on_four_rim_points_and_lying_on_two() {
        let (r, h) = (0.5, 1.0);
        let mut m = Manifold::default();
        // Upright, its lower cap 1 mm into the ground.
        let up = Pose::new(Vec3::new(0.0, h - 0.001, 0.0), Quat::IDENTITY);
        cylinder_plane(&up, r, h, Vec3::Y, 0.0, 0.01, &mut m);
        assert_eq!(m.count, 4);
        for p in m.points() {
            assert!((p.depth - 0.001).abs() < 1e-6);
            assert!((p.position.x.hypot(p.position.z) - r).abs() < 1e-5);
        }
        // On its side (axis along x), its lowest line 1 mm into the ground: the line's two ends.
        let mut m = Manifold::default();
        let side = Pose::new(
            Vec3::new(0.0, r - 0.001, 0.0),
            Quat::from_rotation_z(std::f32::consts::FRAC_PI_2),
        );
        cylinder_plane(&side, r, h, Vec3::Y, 0.0, 0.01, &mut m);
        assert_eq!(m.count, 2);
        let mut xs: Vec<f32> = m.points().iter().map(|p| p.position.x).collect();
        xs.sort_by(f32::total_cmp);
        assert!(
            (xs[0] + h).abs() < 1e-5 && (xs[1] - h).abs() < 1e-5,
            "{xs:?}"
        );
        // Above the margin: nothing.
        let mut m = Manifold::default();
        let high = Pose::new(Vec3::new(0.0, h + 0.02, 0.0), Quat::IDENTITY);
        cylinder_plane(&high, r, h, Vec3::Y, 0.0, 0.01, &mut m);
        assert_eq!(m.count, 0);
    }
}
