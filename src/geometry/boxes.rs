//! Hand-written box contacts: box against plane and box against box.
//!
//! **Box-plane.** Every vertex of the box below `offset + margin` is a point; a box resting on a
//! face gives its four bottom vertices (feature id = vertex index).
//!
//! **Box-box** is the separating-axis test (SAT): two convex polyhedra are disjoint exactly when
//! some axis separates their projections, and for two boxes it is enough to try the three face
//! normals of each box and the nine cross products of their edge directions. The axis of least
//! penetration (largest separation) decides the contact. Face axes are preferred over edge axes,
//! and A's faces over B's, unless the other is better by a tolerance: this keeps the choice, and so
//! the feature ids used for warm starting, stable from step to step when a box rests on another.
//!
//! For a face axis, the box owning the face is the *reference*, the other the *incident* box; the
//! incident face is the face of the incident box most anti-parallel to the reference normal. Its
//! four corners are clipped against the four side planes of the reference face (Sutherland-Hodgman,
//! as in Box2D and Bullet), and the clipped points below the reference face (within the margin) are
//! the contact points. A point's feature id records the incident vertex or the (clip plane,
//! incident edge) pair it comes from. When clipping leaves more than four points, four are kept: the
//! deepest, the farthest from it, and the two that span the largest area. For an edge axis, the
//! contact is the single pair of closest points of the two supporting edges.

use super::{MAX_POINTS, Manifold, Pose};
use glam::{Mat3, Vec3};

/// A candidate point before reduction.
#[derive(Clone, Copy, Default)]
pub(super) struct Candidate {
    pub(super) position: Vec3,
    pub(super) depth: f32,
    pub(super) id: u32,
}

/// Keeps at most four of `cands` (deepest, farthest, largest area), writing them into `m`.
pub(super) fn reduce_into(cands: &[Candidate], m: &mut Manifold) {
    if cands.len() <= MAX_POINTS {
        for c in cands {
            m.push(c.position, c.depth, c.id);
        }
        return;
    }
    let mut chosen = [0usize; 4];
    // 1: the deepest (first on ties, so the choice is deterministic).
    let mut best = 0;
    for (i, c) in cands.iter().enumerate() {
        if c.depth > cands[best].depth {
            best = i;
        }
    }
    chosen[0] = best;
    // 2: the farthest from the first.
    let p0 = cands[chosen[0]].position;
    let mut best = usize::MAX;
    let mut best_v = -1.0;
    for (i, c) in cands.iter().enumerate() {
        let v = (c.position - p0).length_squared();
        if i != chosen[0] && v > best_v {
            best_v = v;
            best = i;
        }
    }
    chosen[1] = best;
    // 3: the largest triangle with the first two.
    let p1 = cands[chosen[1]].position;
    let mut best = usize::MAX;
    let mut best_v = -1.0;
    for (i, c) in cands.iter().enumerate() {
        let v = (p1 - p0).cross(c.position - p0).length_squared();
        if i != chosen[0] && i != chosen[1] && v > best_v {
            best_v = v;
            best = i;
        }
    }
    chosen[2] = best;
    // 4: the point farthest outside the triangle's edges.
    let p2 = cands[chosen[2]].position;
    let normal = (p1 - p0).cross(p2 - p0);
    let mut best = usize::MAX;
    let mut best_v = f32::MIN;
    for (i, c) in cands.iter().enumerate() {
        if chosen[..3].contains(&i) {
            continue;
        }
        let mut v = f32::MIN;
        for (a, b) in [(p0, p1), (p1, p2), (p2, p0)] {
            v = v.max(-normal.dot((b - a).cross(c.position - a)));
        }
        if v > best_v {
            best_v = v;
            best = i;
        }
    }
    chosen[3] = best;
    for &i in &chosen {
        let c = cands[i];
        m.push(c.position, c.depth, c.id);
    }
}

/// Box A (pose `pa`, half extents `e`) against the static half-space B: `normal · p < offset`.
pub fn box_plane(pa: &Pose, e: Vec3, normal: Vec3, offset: f32, margin: f32, m: &mut Manifold) {
    let r = Mat3::from_quat(pa.rotation);
    let mut cands = [Candidate::default(); 8];
    let mut n = 0;
    for v in 0..8u32 {
        let sx = if v & 1 == 0 { -1.0 } else { 1.0 };
        let sy = if v & 2 == 0 { -1.0 } else { 1.0 };
        let sz = if v & 4 == 0 { -1.0 } else { 1.0 };
        let p = pa.position + r * Vec3::new(sx * e.x, sy * e.y, sz * e.z);
        let depth = offset - normal.dot(p);
        if depth >= -margin {
            cands[n] = Candidate {
                position: p + normal * (depth * 0.5),
                depth,
                id: v,
            };
            n += 1;
        }
    }
    if n > 0 {
        m.normal = -normal;
        reduce_into(&cands[..n], m);
    }
}

#[inline]
fn axes(r: &Mat3) -> [Vec3; 3] {
    [r.x_axis, r.y_axis, r.z_axis]
}

/// Projection half-length of a box (axes `ax`, half extents `e`) on unit axis `l`.
#[inline]
fn project(ax: &[Vec3; 3], e: Vec3, l: Vec3) -> f32 {
    e.x * ax[0].dot(l).abs() + e.y * ax[1].dot(l).abs() + e.z * ax[2].dot(l).abs()
}

/// Prefer B's face over A's only when better by this much (m).
const FACE_TOLERANCE: f32 = 0.005;
/// Prefer an edge axis over a face axis only when better by this much (m).
const EDGE_TOLERANCE: f32 = 0.01;

/// Box A against box B.
pub fn box_box(pa: &Pose, ea: Vec3, pb: &Pose, eb: Vec3, margin: f32, m: &mut Manifold) {
    let ra = Mat3::from_quat(pa.rotation);
    let rb = Mat3::from_quat(pb.rotation);
    let aa = axes(&ra);
    let ab = axes(&rb);
    let d = pb.position - pa.position;

    // Face axes of A.
    let mut face_a = (f32::MIN, 0usize);
    for (i, &ax) in aa.iter().enumerate() {
        let s = d.dot(ax).abs() - (ea[i] + project(&ab, eb, ax));
        if s > margin {
            return;
        }
        if s > face_a.0 {
            face_a = (s, i);
        }
    }
    // Face axes of B.
    let mut face_b = (f32::MIN, 0usize);
    for (j, &bx) in ab.iter().enumerate() {
        let s = d.dot(bx).abs() - (eb[j] + project(&aa, ea, bx));
        if s > margin {
            return;
        }
        if s > face_b.0 {
            face_b = (s, j);
        }
    }
    // Edge axes.
    let mut edge = (f32::MIN, 0usize, 0usize, Vec3::ZERO);
    for (i, &ax) in aa.iter().enumerate() {
        for (j, &bx) in ab.iter().enumerate() {
            let l = ax.cross(bx);
            let len = l.length();
            if len < 1e-4 {
                continue; // parallel edges: covered by the face axes
            }
            let mut l = l / len;
            if l.dot(d) < 0.0 {
                l = -l;
            }
            let s = l.dot(d) - (project(&aa, ea, l) + project(&ab, eb, l));
            if s > margin {
                return;
            }
            if s > edge.0 {
                edge = (s, i, j, l);
            }
        }
    }

    let use_b = face_b.0 > face_a.0 + FACE_TOLERANCE;
    let face_sep = if use_b { face_b.0 } else { face_a.0 };
    if edge.0 > face_sep + EDGE_TOLERANCE {
        edge_contact(pa, &aa, ea, pb, &ab, eb, edge.1, edge.2, edge.3, edge.0, m);
    } else if use_b {
        face_contact(pb, &ab, eb, face_b.1, pa, &aa, ea, -d, margin, true, m);
    } else {
        face_contact(pa, &aa, ea, face_a.1, pb, &ab, eb, d, margin, false, m);
    }
}

/// A clipping polygon vertex: position, feature id, tag of the polygon edge ending here.
#[derive(Clone, Copy, Default)]
struct PolyVertex {
    p: Vec3,
    id: u32,
    in_tag: u32,
}

/// Reference box `r` (face axis `k`), incident box `i`; `d` runs from the reference centre to the
/// incident centre; `flipped` when the reference box is B.
#[allow(clippy::too_many_arguments)]
fn face_contact(
    pr: &Pose,
    ar: &[Vec3; 3],
    er: Vec3,
    k: usize,
    pi: &Pose,
    ai: &[Vec3; 3],
    ei: Vec3,
    d: Vec3,
    margin: f32,
    flipped: bool,
    m: &mut Manifold,
) {
    let sign_r = if d.dot(ar[k]) >= 0.0 { 1.0 } else { -1.0 };
    let n = ar[k] * sign_r; // reference to incident
    let ref_center = pr.position + n * er[k];
    let (u, v) = (ar[(k + 1) % 3], ar[(k + 2) % 3]);
    let (eu, ev) = (er[(k + 1) % 3], er[(k + 2) % 3]);

    // Incident face: most anti-parallel to n.
    let mut j = 0;
    let mut best = -1.0;
    for (c, ax) in ai.iter().enumerate() {
        let a = ax.dot(n).abs();
        if a > best {
            best = a;
            j = c;
        }
    }
    let sign_i = if ai[j].dot(n) > 0.0 { -1.0 } else { 1.0 };
    let inc_center = pi.position + ai[j] * (sign_i * ei[j]);
    let (p, q) = (ai[(j + 1) % 3], ai[(j + 2) % 3]);
    let (ep, eq) = (ei[(j + 1) % 3], ei[(j + 2) % 3]);
    let mut poly = [PolyVertex::default(); 8];
    let mut tmp = [PolyVertex::default(); 8];
    let corners = [(1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0)];
    for (c, (sp, sq)) in corners.iter().enumerate() {
        poly[c] = PolyVertex {
            p: inc_center + p * (sp * ep) + q * (sq * eq),
            id: c as u32,
            in_tag: c as u32,
        };
    }
    let mut len = 4;
    // Side planes of the reference face: dir · (x - ref_center) <= ext.
    let planes = [(u, eu), (-u, eu), (v, ev), (-v, ev)];
    for (pl, &(dir, ext)) in planes.iter().enumerate() {
        let mut out = 0;
        for c in 0..len {
            let prev = poly[(c + len - 1) % len];
            let cur = poly[c];
            let dp = dir.dot(prev.p - ref_center) - ext;
            let dc = dir.dot(cur.p - ref_center) - ext;
            let prev_in = dp <= 0.0;
            let cur_in = dc <= 0.0;
            if prev_in != cur_in {
                let t = dp / (dp - dc);
                tmp[out] = PolyVertex {
                    p: prev.p + (cur.p - prev.p) * t,
                    id: 4 + pl as u32 * 12 + cur.in_tag,
                    in_tag: if cur_in { 4 + pl as u32 } else { cur.in_tag },
                };
                out += 1;
            }
            if cur_in {
                tmp[out] = cur;
                out += 1;
            }
        }
        len = out;
        poly[..len].copy_from_slice(&tmp[..len]);
        if len == 0 {
            return;
        }
    }
    let face_bits = ((flipped as u32) << 6)
        | ((k as u32) << 7)
        | (((sign_r > 0.0) as u32) << 9)
        | ((j as u32) << 10)
        | (((sign_i > 0.0) as u32) << 12);
    let mut cands = [Candidate::default(); 8];
    let mut nc = 0;
    for pv in &poly[..len] {
        let sep = n.dot(pv.p - ref_center);
        if sep <= margin {
            cands[nc] = Candidate {
                position: pv.p - n * (sep * 0.5),
                depth: -sep,
                id: pv.id | face_bits,
            };
            nc += 1;
        }
    }
    if nc > 0 {
        m.normal = if flipped { -n } else { n };
        reduce_into(&cands[..nc], m);
    }
}

/// Edge-edge contact along axis `l` (from A to B) with separation `sep`.
#[allow(clippy::too_many_arguments)]
fn edge_contact(
    pa: &Pose,
    aa: &[Vec3; 3],
    ea: Vec3,
    pb: &Pose,
    ab: &[Vec3; 3],
    eb: Vec3,
    i: usize,
    j: usize,
    l: Vec3,
    sep: f32,
    m: &mut Manifold,
) {
    let mut ca = pa.position;
    let mut bits = 0u32;
    for k in 0..3 {
        if k != i {
            let s = if aa[k].dot(l) >= 0.0 { 1.0 } else { -1.0 };
            bits |= ((s > 0.0) as u32) << k;
            ca += aa[k] * (s * ea[k]);
        }
    }
    let mut cb = pb.position;
    for k in 0..3 {
        if k != j {
            let s = if ab[k].dot(l) <= 0.0 { 1.0 } else { -1.0 };
            bits |= ((s > 0.0) as u32) << (3 + k);
            cb += ab[k] * (s * eb[k]);
        }
    }
    let (da, db) = (aa[i], ab[j]);
    let (ha, hb) = (ea[i], eb[j]);
    let r = ca - cb;
    let b = da.dot(db);
    let c = da.dot(r);
    let f = db.dot(r);
    let denom = 1.0 - b * b;
    let mut s = if denom > 1e-6 {
        ((b * f - c) / denom).clamp(-ha, ha)
    } else {
        0.0
    };
    let t = (b * s + f).clamp(-hb, hb);
    s = (b * t - c).clamp(-ha, ha);
    let qa = ca + da * s;
    let qb = cb + db * t;
    m.normal = l;
    m.push(
        (qa + qb) * 0.5,
        -sep,
        (1 << 16) | ((i * 3 + j) as u32) << 8 | bits,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    fn pose(p: Vec3, q: Quat) -> Pose {
        Pose::new(p, q)
    }

    #[test]
    fn box_resting_on_plane_gives_four_bottom_corners() {
        let mut m = Manifold::default();
        let pa = pose(Vec3::new(1.0, 0.49, 0.0), Quat::IDENTITY);
        box_plane(&pa, Vec3::splat(0.5), Vec3::Y, 0.0, 0.02, &mut m);
        m.validate().unwrap();
        assert_eq!(m.count, 4);
        assert!((m.normal + Vec3::Y).length() < 1e-6);
        for p in m.points() {
            assert!((p.depth - 0.01).abs() < 1e-6);
            assert!((p.position.y + 0.005).abs() < 1e-6);
            assert!(((p.position.x - 1.0).abs() - 0.5).abs() < 1e-6);
        }
    }

    #[test]
    fn tilted_box_on_plane_touches_with_one_edge() {
        // Rotated 45 degrees about z, lowest edge 1 cm below the plane: two points (the edge).
        let q = Quat::from_rotation_z(std::f32::consts::FRAC_PI_4);
        let h = 0.5 * std::f32::consts::SQRT_2;
        let mut m = Manifold::default();
        box_plane(
            &pose(Vec3::new(0.0, h - 0.01, 0.0), q),
            Vec3::splat(0.5),
            Vec3::Y,
            0.0,
            0.02,
            &mut m,
        );
        assert_eq!(m.count, 2);
        for p in m.points() {
            assert!((p.depth - 0.01).abs() < 1e-5);
            assert!(p.position.x.abs() < 1e-5);
        }
    }

    #[test]
    fn stacked_boxes_give_four_face_points() {
        let mut m = Manifold::default();
        let pa = pose(Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY);
        let pb = pose(Vec3::new(0.2, 1.49, 0.1), Quat::IDENTITY);
        box_box(&pa, Vec3::splat(0.5), &pb, Vec3::splat(0.5), 0.02, &mut m);
        m.validate().unwrap();
        assert_eq!(m.count, 4);
        assert!((m.normal - Vec3::Y).length() < 1e-6);
        // The overlap region is x in [-0.3, 0.5], z in [-0.4, 0.5].
        let mut xs: Vec<f32> = m.points().iter().map(|p| p.position.x).collect();
        xs.sort_by(f32::total_cmp);
        assert!((xs[0] + 0.3).abs() < 1e-5 && (xs[3] - 0.5).abs() < 1e-5);
        for p in m.points() {
            assert!((p.depth - 0.01).abs() < 1e-5);
            assert!((p.position.y - 0.995).abs() < 1e-5);
        }
        // Swapping A and B flips the normal and keeps depths.
        let mut m2 = Manifold::default();
        box_box(&pb, Vec3::splat(0.5), &pa, Vec3::splat(0.5), 0.02, &mut m2);
        assert_eq!(m2.count, 4);
        assert!((m2.normal + Vec3::Y).length() < 1e-6);
    }

    #[test]
    fn rotated_box_on_box_is_clipped_to_at_most_four() {
        // B rotated 45 degrees about y on top of A: the octagonal overlap is reduced to 4 points.
        let mut m = Manifold::default();
        let pa = pose(Vec3::ZERO, Quat::IDENTITY);
        let pb = pose(Vec3::new(0.0, 0.99, 0.0), Quat::from_rotation_y(0.785));
        box_box(&pa, Vec3::splat(0.5), &pb, Vec3::splat(0.5), 0.02, &mut m);
        m.validate().unwrap();
        assert_eq!(m.count, 4);
        for p in m.points() {
            assert!(p.position.x.abs() <= 0.5 + 1e-5 && p.position.z.abs() <= 0.5 + 1e-5);
            assert!((p.depth - 0.01).abs() < 1e-5);
        }
    }

    #[test]
    fn separated_boxes_have_no_points_and_edge_edge_case() {
        let mut m = Manifold::default();
        let pa = pose(Vec3::ZERO, Quat::IDENTITY);
        box_box(
            &pa,
            Vec3::splat(0.5),
            &pose(Vec3::new(1.1, 0.0, 0.0), Quat::IDENTITY),
            Vec3::splat(0.5),
            0.02,
            &mut m,
        );
        assert_eq!(m.count, 0);
        // Edge on edge: A rotated 45 deg about z (edge along z on top), B rotated 45 deg about x
        // (edge along x at the bottom), B's lowest edge 2 cm below A's highest edge.
        let h = 0.5 * std::f32::consts::SQRT_2;
        let qa = Quat::from_rotation_z(std::f32::consts::FRAC_PI_4);
        let qb = Quat::from_rotation_x(std::f32::consts::FRAC_PI_4);
        let pa = pose(Vec3::ZERO, qa);
        let pb = pose(Vec3::new(0.0, 2.0 * h - 0.02, 0.0), qb);
        let mut m = Manifold::default();
        box_box(&pa, Vec3::splat(0.5), &pb, Vec3::splat(0.5), 0.02, &mut m);
        assert_eq!(m.count, 1);
        assert!((m.normal - Vec3::Y).length() < 1e-4, "{:?}", m.normal);
        assert!((m.points[0].depth - 0.02).abs() < 1e-4);
        assert!((m.points[0].position - Vec3::new(0.0, h - 0.01, 0.0)).length() < 1e-4);
    }
}
