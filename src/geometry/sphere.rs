//! Hand-written sphere contacts: sphere against sphere, plane, box and cylinder.
//!
//! A sphere touches a convex shape where the shape's point closest to the sphere's centre lies:
//! the normal runs from that point to the centre, the depth is the radius minus the distance. When
//! the centre is inside the other shape (deep penetration) the closest face decides the normal.
//! Each function writes one point midway between the two surfaces, feature id 0, and only when
//! the depth exceeds `-margin`. These are the hot paths of the sphere scenes, so they avoid the
//! general GJK machinery entirely.

use super::{Manifold, Pose};
use glam::Vec3;

#[inline]
fn push_mid(m: &mut Manifold, normal: Vec3, surface_a: Vec3, surface_b: Vec3, depth: f32) {
    m.normal = normal;
    m.push((surface_a + surface_b) * 0.5, depth, 0);
}

/// Sphere A (centre `ca`, radius `ra`) against sphere B.
#[inline]
pub fn sphere_sphere(ca: Vec3, ra: f32, cb: Vec3, rb: f32, margin: f32, m: &mut Manifold) {
    let d = cb - ca;
    let dist2 = d.length_squared();
    let reach = ra + rb + margin;
    if dist2 > reach * reach {
        return;
    }
    let dist = dist2.sqrt();
    let n = if dist > 1e-12 { d / dist } else { Vec3::Y };
    push_mid(m, n, ca + n * ra, cb - n * rb, ra + rb - dist);
}

/// Sphere A against the static half-space B: points p with `normal · p < offset`.
#[inline]
pub fn sphere_plane(c: Vec3, r: f32, normal: Vec3, offset: f32, margin: f32, m: &mut Manifold) {
    let height = normal.dot(c) - offset;
    let depth = r - height;
    if depth < -margin {
        return;
    }
    // The normal from the sphere (A) to the plane (B) points into the solid side.
    push_mid(m, -normal, c - normal * r, c - normal * height, depth);
}

/// Sphere A against box B (pose `pb`, half extents `e`).
pub fn sphere_box(c: Vec3, r: f32, pb: &Pose, e: Vec3, margin: f32, m: &mut Manifold) {
    let local = pb.rotation.inverse() * (c - pb.position);
    let clamped = local.clamp(-e, e);
    let d = local - clamped;
    let dist2 = d.length_squared();
    if dist2 > 1e-12 {
        let reach = r + margin;
        if dist2 > reach * reach {
            return;
        }
        let dist = dist2.sqrt();
        let n_local = d / dist; // box to sphere
        let n = pb.rotation * n_local;
        let on_box = pb.position + pb.rotation * clamped;
        push_mid(m, -n, c - n * r, on_box, r - dist);
    } else {
        // Centre inside the box: leave through the nearest face.
        let gap = e - local.abs();
        let (axis, g) = if gap.x <= gap.y && gap.x <= gap.z {
            (0, gap.x)
        } else if gap.y <= gap.z {
            (1, gap.y)
        } else {
            (2, gap.z)
        };
        let mut n_local = Vec3::ZERO;
        n_local[axis] = if local[axis] >= 0.0 { 1.0 } else { -1.0 };
        let n = pb.rotation * n_local;
        let on_box = c + n * g;
        push_mid(m, -n, c - n * r, on_box, r + g);
    }
}

/// Sphere A against cylinder B (pose `pb`, axis the local y axis).
pub fn sphere_cylinder(
    c: Vec3,
    r: f32,
    pb: &Pose,
    radius: f32,
    half_height: f32,
    margin: f32,
    m: &mut Manifold,
) {
    let local = pb.rotation.inverse() * (c - pb.position);
    let radial = Vec3::new(local.x, 0.0, local.z);
    let rlen = radial.length();
    let outside_side = rlen > radius;
    let outside_cap = local.y.abs() > half_height;
    if outside_side || outside_cap {
        let closest_radial = if outside_side {
            radial * (radius / rlen)
        } else {
            radial
        };
        let closest = Vec3::new(
            closest_radial.x,
            local.y.clamp(-half_height, half_height),
            closest_radial.z,
        );
        let d = local - closest;
        let dist2 = d.length_squared();
        let reach = r + margin;
        if dist2 > reach * reach {
            return;
        }
        let dist = dist2.sqrt();
        let n_local = if dist > 1e-12 { d / dist } else { Vec3::Y };
        let n = pb.rotation * n_local;
        let on_cyl = pb.position + pb.rotation * closest;
        push_mid(m, -n, c - n * r, on_cyl, r - dist);
    } else {
        let side_gap = radius - rlen;
        let cap_gap = half_height - local.y.abs();
        let (n_local, g) = if side_gap < cap_gap && rlen > 1e-12 {
            (radial / rlen, side_gap)
        } else {
            (Vec3::new(0.0, local.y.signum(), 0.0), cap_gap)
        };
        let n = pb.rotation * n_local;
        push_mid(m, -n, c - n * r, c + n * g, r + g);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    fn close(a: Vec3, b: Vec3, tol: f32) -> bool {
        (a - b).abs().max_element() <= tol
    }

    #[test]
    fn sphere_sphere_depth_normal_point() {
        let mut m = Manifold::default();
        sphere_sphere(Vec3::ZERO, 1.0, Vec3::new(1.5, 0.0, 0.0), 1.0, 0.0, &mut m);
        assert_eq!(m.count, 1);
        assert!(close(m.normal, Vec3::X, 1e-6));
        assert!((m.points[0].depth - 0.5).abs() < 1e-6);
        assert!(close(m.points[0].position, Vec3::new(0.75, 0.0, 0.0), 1e-6));
        // Apart by 0.1: only within a margin of at least 0.1.
        let mut m = Manifold::default();
        sphere_sphere(Vec3::ZERO, 1.0, Vec3::new(2.1, 0.0, 0.0), 1.0, 0.05, &mut m);
        assert_eq!(m.count, 0);
        sphere_sphere(Vec3::ZERO, 1.0, Vec3::new(2.1, 0.0, 0.0), 1.0, 0.2, &mut m);
        assert_eq!(m.count, 1);
        assert!((m.points[0].depth + 0.1).abs() < 1e-6);
    }

    #[test]
    fn sphere_plane_tilted() {
        let n = Vec3::new(1.0, 1.0, 0.0).normalize();
        let c = n * 2.3; // plane offset 2 along n, radius 0.5: depth 0.2
        let mut m = Manifold::default();
        sphere_plane(c, 0.5, n, 2.0, 0.0, &mut m);
        assert_eq!(m.count, 1);
        assert!(close(m.normal, -n, 1e-6));
        assert!((m.points[0].depth - 0.2).abs() < 1e-5);
        assert!(close(m.points[0].position, n * 1.9, 1e-5));
    }

    #[test]
    fn sphere_box_face_edge_inside() {
        let pb = Pose::new(Vec3::new(0.0, 0.0, 0.0), Quat::from_rotation_y(0.3));
        let e = Vec3::new(1.0, 0.5, 2.0);
        // Above the top face.
        let mut m = Manifold::default();
        sphere_box(Vec3::new(0.2, 0.9, 0.1), 0.5, &pb, e, 0.0, &mut m);
        assert_eq!(m.count, 1);
        assert!(close(m.normal, -Vec3::Y, 1e-6));
        assert!((m.points[0].depth - 0.1).abs() < 1e-5);
        // Near an edge of an axis-aligned box, on the diagonal.
        let pa = Pose::new(Vec3::ZERO, Quat::IDENTITY);
        let mut m = Manifold::default();
        sphere_box(Vec3::new(1.3, 0.8, 0.0), 0.5, &pa, e, 0.0, &mut m);
        let d = Vec3::new(0.3, 0.3, 0.0);
        assert!(close(m.normal, -d.normalize(), 1e-6));
        assert!((m.points[0].depth - (0.5 - d.length())).abs() < 1e-5);
        // Centre inside: out through the nearest face (+y, gap 0.1).
        let mut m = Manifold::default();
        sphere_box(Vec3::new(0.0, 0.4, 0.0), 0.5, &pa, e, 0.0, &mut m);
        assert!(close(m.normal, -Vec3::Y, 1e-6));
        assert!((m.points[0].depth - 0.6).abs() < 1e-5);
    }

    #[test]
    fn sphere_cylinder_side_cap_rim() {
        // Cylinder along z (as in the `cylinders` scene), radius 1, half height 5, centre y = 2.
        let pb = Pose::new(
            Vec3::new(0.0, 2.0, 0.0),
            Quat::from_rotation_x(std::f32::consts::FRAC_PI_2),
        );
        let mut m = Manifold::default();
        sphere_cylinder(Vec3::new(0.0, 3.4, 1.0), 0.5, &pb, 1.0, 5.0, 0.0, &mut m);
        assert_eq!(m.count, 1);
        assert!(close(m.normal, -Vec3::Y, 1e-5), "{:?}", m.normal);
        assert!((m.points[0].depth - 0.1).abs() < 1e-5);
        // Beyond the cap (z > 5), on the axis.
        let mut m = Manifold::default();
        sphere_cylinder(Vec3::new(0.0, 2.0, 5.3), 0.5, &pb, 1.0, 5.0, 0.0, &mut m);
        assert!(close(m.normal, -Vec3::Z, 1e-5), "{:?}", m.normal);
        assert!((m.points[0].depth - 0.2).abs() < 1e-5);
        // At the rim, diagonally.
        let mut m = Manifold::default();
        let c = Vec3::new(0.0, 2.0 + 1.0 + 0.3, 5.0 + 0.3);
        sphere_cylinder(c, 0.5, &pb, 1.0, 5.0, 0.0, &mut m);
        let d = Vec3::new(0.0, 0.3, 0.3);
        assert!(close(m.normal, -d.normalize(), 1e-5));
        assert!((m.points[0].depth - (0.5 - d.length())).abs() < 1e-5);
        // Centre inside, nearer the side.
        let mut m = Manifold::default();
        sphere_cylinder(Vec3::new(0.8, 2.0, 0.0), 0.5, &pb, 1.0, 5.0, 0.0, &mut m);
        assert!(close(m.normal, -Vec3::X, 1e-5));
        assert!((m.points[0].depth - 0.7).abs() < 1e-5);
    }
}
