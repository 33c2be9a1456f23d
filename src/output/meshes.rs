//! Triangle meshes of the shapes, for the glTF file: a sphere, a box, a cylinder along its
//! local y axis, and a square for a plane (a half-space has no finite mesh; the square lies in
//! the plane's surface, normal along local +y).
//!
//! Every mesh is in the body's local frame, at the shape's true size, with outward unit
//! normals per vertex and triangles wound counter-clockwise seen from outside (glTF's front
//! faces). Vertex counts stay under 65,536, so indices are u16. The sphere and the cylinder are
//! tessellated finely enough to look round at the sizes of the built-in scenes, coarsely enough
//! that the meshes cost nothing next to the animation data.

use std::f32::consts::{PI, TAU};

use glam::Vec3;

/// Positions, normals and triangle indices of one mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    pub positions: Vec<[f32; 3]>,
    pub normals: Vec<[f32; 3]>,
    pub indices: Vec<u16>,
}

impl Mesh {
    fn vertex(&mut self, p: Vec3, n: Vec3) -> u16 {
        self.positions.push(p.to_array());
        self.normals.push(n.to_array());
        (self.positions.len() - 1) as u16
    }

    fn quad(&mut self, a: u16, b: u16, c: u16, d: u16) {
        self.indices.extend([a, b, c, a, c, d]);
    }

    /// The smallest and largest coordinates of the positions (glTF requires them).
    pub fn bounds(&self) -> ([f32; 3], [f32; 3]) {
        let mut lo = [f32::MAX; 3];
        let mut hi = [f32::MIN; 3];
        for p in &self.positions {
            for k in 0..3 {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
        (lo, hi)
    }
}

const SPHERE_STACKS: usize = 12;
const SPHERE_SLICES: usize = 24;
const CYLINDER_SEGMENTS: usize = 32;

/// A UV sphere of radius `r` (poles on y).
pub fn sphere(r: f32) -> Mesh {
    let mut m = Mesh::default();
    for i in 0..=SPHERE_STACKS {
        let theta = PI * i as f32 / SPHERE_STACKS as f32;
        for j in 0..=SPHERE_SLICES {
            let phi = TAU * j as f32 / SPHERE_SLICES as f32;
            let n = Vec3::new(
                theta.sin() * phi.cos(),
                theta.cos(),
                -theta.sin() * phi.sin(),
            );
            m.vertex(n * r, n);
        }
    }
    let row = (SPHERE_SLICES + 1) as u16;
    for i in 0..SPHERE_STACKS as u16 {
        for j in 0..SPHERE_SLICES as u16 {
            let (a, b) = (i * row + j, (i + 1) * row + j);
            // The rows at the poles are points: one triangle per slice there.
            if i > 0 {
                m.indices.extend([a, b + 1, a + 1]);
            }
            if i + 1 < SPHERE_STACKS as u16 {
                m.indices.extend([a, b, b + 1]);
            }
        }
    }
    m
}

/// A box with half extents `h`.
pub fn cuboid(h: Vec3) -> Mesh {
    let mut m = Mesh::default();
    for axis in 0..3 {
        for sign in [1.0f32, -1.0] {
            let n = Vec3::AXES[axis] * sign;
            // Two tangents with u x v = n, so the corners below run counter-clockwise.
            let u = Vec3::AXES[(axis + 1) % 3] * sign;
            let v = n.cross(u);
            let corner = |a: f32, b: f32| (n + u * a + v * b) * h;
            let a = m.vertex(corner(-1.0, -1.0), n);
            let b = m.vertex(corner(1.0, -1.0), n);
            let c = m.vertex(corner(1.0, 1.0), n);
            let d = m.vertex(corner(-1.0, 1.0), n);
            m.quad(a, b, c, d);
        }
    }
    m
}

/// A cylinder of radius `r` from `y = -hh` to `y = hh`, with its two caps.
pub fn cylinder(r: f32, hh: f32) -> Mesh {
    let mut m = Mesh::default();
    let ring = |j: usize| {
        let phi = TAU * j as f32 / CYLINDER_SEGMENTS as f32;
        Vec3::new(phi.cos(), 0.0, -phi.sin())
    };
    let side = m.positions.len() as u16;
    for j in 0..=CYLINDER_SEGMENTS {
        let n = ring(j);
        m.vertex(n * r - Vec3::Y * hh, n);
        m.vertex(n * r + Vec3::Y * hh, n);
    }
    for j in 0..CYLINDER_SEGMENTS as u16 {
        let (a, b) = (side + 2 * j, side + 2 * j + 2);
        m.quad(a, b, b + 1, a + 1);
    }
    for sign in [1.0f32, -1.0] {
        let n = Vec3::Y * sign;
        let centre = m.vertex(n * hh, n);
        let first = m.positions.len() as u16;
        for j in 0..CYLINDER_SEGMENTS {
            m.vertex(ring(j) * r + n * hh, n);
        }
        for j in 0..CYLINDER_SEGMENTS as u16 {
            let (a, b) = (first + j, first + (j + 1) % CYLINDER_SEGMENTS as u16);
            // The ring runs counter-clockwise seen from +y.
            m.indices.extend(if sign > 0.0 {
                [centre, a, b]
            } else {
                [centre, b, a]
            });
        }
    }
    m
}

/// A square of half side `half` in the x-z plane, facing +y.
pub fn square(half: f32) -> Mesh {
    let mut m = Mesh::default();
    let corners = [(-1.0, 1.0), (1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)];
    let v: Vec<u16> = corners
        .iter()
        .map(|&(x, z)| m.vertex(Vec3::new(x * half, 0.0, z * half), Vec3::Y))
        .collect();
    m.quad(v[0], v[1], v[2], v[3]);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every triangle faces outward: its normal (by winding) points along the vertices'
    /// normals, and away from the centre for closed shapes.
    fn check(m: &Mesh, closed: bool) {
        assert!(m.positions.len() < 65_536);
        assert_eq!(m.indices.len() % 3, 0);
        for t in m.indices.chunks(3) {
            let p: Vec<Vec3> = t
                .iter()
                .map(|&i| Vec3::from(m.positions[i as usize]))
                .collect();
            let n: Vec3 = t.iter().map(|&i| Vec3::from(m.normals[i as usize])).sum();
            let face = (p[1] - p[0]).cross(p[2] - p[0]);
            assert!(face.length() > 0.0, "degenerate triangle {t:?}");
            assert!(
                face.dot(n) > 0.0,
                "triangle {t:?} wound against its normals"
            );
            if closed {
                let c = (p[0] + p[1] + p[2]) / 3.0;
                assert!(face.dot(c) > 0.0, "triangle {t:?} faces inward");
            }
        }
        for n in &m.normals {
            assert!((Vec3::from(*n).length() - 1.0).abs() < 1e-5);
        }
    }

    #[test]
    fn meshes_are_outward_and_sized() {
        let s = sphere(0.5);
        check(&s, true);
        assert_eq!(s.bounds(), ([-0.5, -0.5, -0.5], [0.5, 0.5, 0.5]));
        let b = cuboid(Vec3::new(1.0, 2.0, 3.0));
        check(&b, true);
        assert_eq!(b.bounds(), ([-1.0, -2.0, -3.0], [1.0, 2.0, 3.0]));
        assert_eq!((b.positions.len(), b.indices.len()), (24, 36));
        let c = cylinder(1.0, 5.0);
        check(&c, true);
        let (lo, hi) = c.bounds();
        assert_eq!((lo[1], hi[1]), (-5.0, 5.0));
        assert!((hi[0] - 1.0).abs() < 1e-6 && (lo[2] + 1.0).abs() < 1e-6);
        let q = square(20.0);
        check(&q, false);
        assert_eq!(q.bounds(), ([-20.0, 0.0, -20.0], [20.0, 0.0, 20.0]));
    }
}
