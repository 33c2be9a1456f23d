//! The built-in scenes of DESIGN.md ("Built-in scenes"), parameterised by their size N.
//!
//! They are exact so that figures can be compared with other engines on the same work: the
//! scenes of Koenig et al. (seed 000, section 6: Parallel, Cylinders, Bouncing), Box2D's pyramid
//! benchmark (seed 002) and Mirtich's avalanche (seed 001). Each is generated as a description
//! ([`SceneBuilder`]: `[[grid]]` blocks wherever the layout is a lattice, explicit bodies where it
//! is random) and validated like any file, so `scenes/<name>.toml` is literally
//! `builtin_toml(name, None)` and loads back bit-identical.
//!
//! Common to all: the `[world]` defaults of DESIGN.md (gravity (0, -9.81, 0) unless said),
//! friction 0.5, density 1000, restitution 0 unless said. Dynamic bodies come first, in the order
//! below, then the static ones, so body i of the CSV output is the i-th dynamic body.
//! Where DESIGN.md leaves a choice open, this is what we chose:
//!
//! - `parallel`: column A (ceil(N/2) spheres) at x = 1.5 i, y = 0, z = 0, velocity +2 x;
//!   column B (floor(N/2)) at x = 1.5 i, z = 3, velocity -2 x. No static bodies. A window of
//!   4096 ticks (`pyramids` 1024, the others DESIGN's 256): see `PARALLEL_WINDOW`.
//! - `cylinders`: sphere n at x = -5.4 + 1.2 (n mod 10), z = -5.4 + 1.2 ((n / 10) mod 10),
//!   y = 8 + 1.2 (n / 100); cylinders rotated +90 degrees about x (local y onto world z) in the
//!   order x = -6, -3, 0, 3, 6; then the ground plane.
//! - `bouncing`: box side L = (1.25 N)^(1/3), its six walls static planes (after the spheres),
//!   restitution 0.9 everywhere. The lattice has k = ceil(N^(1/3)) cells per side, spacing
//!   s = L / k, cell centres at -L/2 + s (i + 1/2), filled x, z, y like a grid, the first N used.
//!   Each sphere moves by a uniform offset in [-a, a) per axis, a = (s/2 - r)/2, and gets a
//!   velocity uniform in the ball of radius 5 m/s (rejection sampling), all drawn from
//!   SplitMix64 seeded with [`BOUNCING_SEED`]: per sphere, offset x, y, z, then velocity tries.
//! - `pyramids`: P = max(1, round(N / 55)) pyramids on a grid of `cols = ceil(sqrt(P))` columns
//!   (x) and `ceil(P / cols)` rows (z), 12 m apart, centred on the origin; pyramid p in column
//!   p mod cols, row p / cols. Row r (0..9) of a pyramid holds 10 - r boxes centred on the
//!   pyramid's x, at y = 0.5 + r, touching. Boxes are listed by column, then row r, then pyramid,
//!   then x. Then the ground plane. A window of 1024 ticks: see `PYRAMIDS_WINDOW`.
//! - `avalanche`: ceil(N/2) spheres (r 0.4) then floor(N/2) boxes (half-extents 0.4), each kind
//!   on a lattice of 5 (x, 2 m apart) x 15 (z, 1 m apart) per layer (y, 1 m apart), spheres at
//!   x = 24, 26, .., 32 and boxes at x = 25, 27, .., 33, z = -7..7, from y = 21 up. The ramp is
//!   a static box with half-extents (20, 0.5, 10) rotated 30 degrees about z, placed so that the
//!   lower edge of its top face lies on the z axis: its top face is the plane y = x tan 30
//!   for 0 <= x <= 40 cos 30 (34.6 m, 20 m high), continuing the ground plane y = 0 at x = 0.
//!   The bodies start 1.5 m or more above it and slide down towards -x. Then the ground plane.
//!   The spheres have rolling resistance [`AVALANCHE_ROCK_ROLLING`] (0.2), the boxes
//!   [`AVALANCHE_BOX_ROLLING`] (0.05), so that the pile comes to rest on the flat ground;
//!   every other built-in has none.

use std::f32::consts::{FRAC_PI_2, FRAC_PI_6};

use glam::{Quat, Vec3};

use super::error::{Location, SceneError};
use super::load::to_toml;
use super::model::{Scene, World};
use super::rng::SplitMix64;
use super::spec::{BodySpec, GridSpec, MAX_BODIES, SceneBuilder};

/// The seed of the `bouncing` scene's jitter and velocities.
pub const BOUNCING_SEED: u64 = 7;

/// A built-in scene: its name, default size and a one-line description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    pub name: &'static str,
    /// N when `--bodies` is not given (for `pyramids`, boxes: 20 pyramids).
    pub default_bodies: usize,
    pub description: &'static str,
}

pub(crate) const BUILTINS: [Builtin; 5] = [
    Builtin {
        name: "parallel",
        default_bodies: 200,
        description: "N spheres in two columns passing each other, no gravity, nothing ever touches (best case)",
    },
    Builtin {
        name: "cylinders",
        default_bodies: 200,
        description: "N spheres fall onto five static cylinders above the ground (Koenig et al., Figure 1)",
    },
    Builtin {
        name: "bouncing",
        default_bodies: 200,
        description: "N spheres bounce (restitution 0.9) with random velocities in a closed box, no gravity",
    },
    Builtin {
        name: "pyramids",
        default_bodies: 1100,
        description: "pyramids of 55 boxes (rows of 10..1) that must stand still and sleep; N counts boxes",
    },
    Builtin {
        name: "avalanche",
        default_bodies: 300,
        description: "N spheres and boxes tumble down a 30-degree ramp and pile up (Mirtich's avalanche)",
    },
];

/// The built-in scenes, in the order `timewarp scenes` lists them.
pub fn builtin_names() -> &'static [Builtin] {
    &BUILTINS
}

/// The built-in scene `name` with `n` bodies (its default when `None`), validated.
pub fn builtin(name: &str, n: Option<usize>) -> Result<Scene, SceneError> {
    builtin_spec(name, n)?.build()
}

/// The built-in scene `name` as a scene file (what `scenes/<name>.toml` holds for `None`).
pub fn builtin_toml(name: &str, n: Option<usize>) -> Result<String, SceneError> {
    let spec = builtin_spec(name, n)?;
    let n = n.unwrap_or_else(|| find(name).map_or(0, |b| b.default_bodies));
    let note = if name == "avalanche" {
        "# Its rocks have rolling resistance (spheres 0.2, boxes 0.05) so that they come to rest on\n\
         # the flat ground: a rolling sphere slows at (5/7) c g, 1.4 m/s^2 at c = 0.2.\n"
    } else {
        ""
    };
    Ok(format!(
        "# Built-in scene `{name}` with N = {n}, as written by `timewarp scenes --export {name}`.\n\
         # See src/scene/builtin.rs for how it is laid out.\n{note}\n{}",
        to_toml(&spec)
    ))
}

fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// The description of the built-in scene `name` with `n` bodies (its default when `None`).
pub fn builtin_spec(name: &str, n: Option<usize>) -> Result<SceneBuilder, SceneError> {
    let info = find(name).ok_or_else(|| SceneError::UnknownBuiltin {
        name: name.to_string(),
    })?;
    let n = n.unwrap_or(info.default_bodies);
    if n == 0 || n > MAX_BODIES {
        return Err(SceneError::invalid(
            Location::Scene,
            format!("{name} takes from 1 to {MAX_BODIES} bodies, got {n}"),
        ));
    }
    let base = SceneBuilder::new().world(&World::default());
    Ok(match name {
        "parallel" => parallel(base, n),
        "cylinders" => cylinders(base, n),
        "bouncing" => bouncing(base, n),
        "pyramids" => pyramids(base, n),
        _ => avalanche(base, n),
    })
}

fn materials(restitution: Option<f32>) -> BodySpec {
    BodySpec {
        restitution,
        ..BodySpec::default().friction(0.5).density(1000.0)
    }
}

/// `n` copies of `body` on a lattice of `nx` x `nz` per layer, filled x, z, y, as at most three
/// grids (full layers, full rows of the last layer, the rest of the last row). Positions are
/// exactly those of one grid of `origin + spacing * (i, j, k)`.
fn lattice(
    mut b: SceneBuilder,
    body: &BodySpec,
    n: usize,
    nx: usize,
    nz: usize,
    origin: Vec3,
    spacing: Vec3,
) -> SceneBuilder {
    let per_layer = nx * nz;
    let (layers, rest) = (n / per_layer, n % per_layer);
    let (rows, last) = (rest / nx, rest % nx);
    let c = |v: usize| v as u32;
    if layers > 0 {
        b = b.grid(GridSpec::new(
            body.clone(),
            [c(nx), c(layers), c(nz)],
            spacing,
            origin,
        ));
    }
    let layer_origin = Vec3::new(origin.x, origin.y + spacing.y * layers as f32, origin.z);
    if rows > 0 {
        b = b.grid(GridSpec::new(
            body.clone(),
            [c(nx), 1, c(rows)],
            spacing,
            layer_origin,
        ));
    }
    if last > 0 {
        let row_origin = Vec3::new(
            layer_origin.x,
            layer_origin.y,
            origin.z + spacing.z * rows as f32,
        );
        b = b.grid(GridSpec::new(
            body.clone(),
            [c(last), 1, 1],
            spacing,
            row_origin,
        ));
    }
    b
}

fn ground(b: SceneBuilder) -> SceneBuilder {
    b.plane(Vec3::Y, 0.0)
}

/// `parallel`'s window: nothing in it ever collides, so each body flies the whole window in one
/// span, and a longer window means fewer spans, while the output's frame states cost the same
/// per second. The GVT buffer keeps a few anchor cells per body whatever the window (its
/// "Reuse"); what grows with it is the frames one commit copies out at once. Chosen by
/// measurement (`docs/results.md`: "the GVT buffer by intervals", 1024 against 256; "2026-11-30,
/// afternoon", 4096 against 2048: 13.6% fewer instructions at 2000 bodies, faster in every
/// alternating bench pair at 500 and 2000, 0.86 GB more memory at 100,000 bodies and about 5%
/// slower there). `bouncing` gained nothing from longer windows, so the others keep 256.
const PARALLEL_WINDOW: u32 = 4096;

/// `pyramids`' window: its piles fall asleep within a few seconds and then cost what their naps
/// cost, and a sleeping group naps as far as the window (`warp::entity`, "Naps"), each nap its
/// sleep records, however long. With 1024 ticks instead of 256, `pyramids` 1100's asleep
/// seconds cost 56% fewer instructions (`docs/results.md`, 2026-11-29, late morning); its awake
/// seconds, with sleep on or off, the same. `cylinders` and `avalanche` keep 256: 1024 cost
/// `cylinders` 500 1.4% more over 4 s, and moved `avalanche` 300 by less than its noise in wall
/// time (0.3% more instructions over 3 s, 1.0% fewer over 10 s).
const PYRAMIDS_WINDOW: u32 = 1024;

fn parallel(b: SceneBuilder, n: usize) -> SceneBuilder {
    let (a, rest) = (n.div_ceil(2), n / 2);
    let mut b = b
        .gravity(Vec3::ZERO)
        .window(PARALLEL_WINDOW)
        .defaults(materials(None));
    let sphere = BodySpec::sphere(0.5);
    let spacing = Vec3::new(1.5, 0.0, 0.0);
    b = b.grid(GridSpec::new(
        sphere.clone().velocity(Vec3::new(2.0, 0.0, 0.0)),
        [a as u32, 1, 1],
        spacing,
        Vec3::ZERO,
    ));
    if rest > 0 {
        let col = GridSpec::new(
            sphere.velocity(Vec3::new(-2.0, 0.0, 0.0)),
            [rest as u32, 1, 1],
            spacing,
            Vec3::new(0.0, 0.0, 3.0),
        );
        b = b.grid(col);
    }
    b
}

fn cylinders(b: SceneBuilder, n: usize) -> SceneBuilder {
    let b = b.defaults(materials(Some(0.5)));
    let mut b = lattice(
        b,
        &BodySpec::sphere(0.5),
        n,
        10,
        10,
        Vec3::new(-5.4, 8.0, -5.4),
        Vec3::splat(1.2),
    );
    let along_z = Quat::from_rotation_x(FRAC_PI_2);
    for x in [-6.0, -3.0, 0.0, 3.0, 6.0] {
        let cyl = BodySpec::cylinder(1.0, 5.0)
            .position(Vec3::new(x, 2.0, 0.0))
            .rotation(along_z)
            .fixed(true);
        b = b.body(cyl);
    }
    ground(b)
}

/// Side of the `bouncing` box for `n` spheres: 250 m³ per 200 spheres.
pub fn bouncing_side(n: usize) -> f32 {
    (1.25 * n as f64).cbrt() as f32
}

fn bouncing(b: SceneBuilder, n: usize) -> SceneBuilder {
    let r = 0.3f32;
    let side = bouncing_side(n);
    let half = side / 2.0;
    let mut k = 1usize;
    while k * k * k < n {
        k += 1;
    }
    let s = side / k as f32;
    let amp = ((s / 2.0 - r) / 2.0).max(0.0);
    let mut rng = SplitMix64::new(BOUNCING_SEED);
    let defaults = BodySpec {
        shape: Some("sphere".into()),
        radius: Some(r),
        ..materials(Some(0.9))
    };
    let mut b = b.gravity(Vec3::ZERO).defaults(defaults);
    for idx in 0..n {
        let (i, kz, j) = (idx % k, (idx / k) % k, idx / (k * k));
        let cell = Vec3::new(i as f32, j as f32, kz as f32);
        let centre = Vec3::splat(-half) + (cell + 0.5) * s;
        let (jx, jy, jz) = (rng.next_signed(), rng.next_signed(), rng.next_signed());
        let position = centre + Vec3::new(jx, jy, jz) * amp;
        let velocity = loop {
            let v = Vec3::new(rng.next_signed(), rng.next_signed(), rng.next_signed());
            if v.length_squared() <= 1.0 {
                break v * 5.0;
            }
        };
        b = b.body(BodySpec {
            position: Some(position.to_array()),
            velocity: Some(velocity.to_array()),
            ..BodySpec::default()
        });
    }
    for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
        b = b.plane(axis, -half).plane(-axis, -half);
    }
    b
}

/// Number of pyramids for `n` boxes.
pub fn pyramid_count(n: usize) -> usize {
    ((n + 27) / 55).max(1)
}

fn pyramids(b: SceneBuilder, n: usize) -> SceneBuilder {
    let p = pyramid_count(n);
    let mut cols = 1;
    while cols * cols < p {
        cols += 1;
    }
    let rows = p.div_ceil(cols);
    let defaults = BodySpec {
        shape: Some("box".into()),
        half_extents: Some([0.5; 3]),
        ..materials(None)
    };
    let mut b = b.defaults(defaults).window(PYRAMIDS_WINDOW);
    let centre = |i: usize, count: usize| (i as f32 - (count - 1) as f32 / 2.0) * 12.0;
    for ix in 0..cols {
        let in_column = (0..p).filter(|q| q % cols == ix).count();
        if in_column == 0 {
            continue;
        }
        for r in 0..10u32 {
            let origin = Vec3::new(
                centre(ix, cols) - (9 - r) as f32 * 0.5,
                0.5 + r as f32,
                centre(0, rows),
            );
            let row = GridSpec::new(
                BodySpec::default(),
                [10 - r, 1, in_column as u32],
                Vec3::new(1.0, 0.0, 12.0),
                origin,
            );
            b = b.grid(row);
        }
    }
    ground(b)
}

/// Rolling resistance of `avalanche`'s spheres. They leave the 30° ramp at up to about 14 m/s
/// onto the endless flat ground, and must come to rest there (Mirtich's rocks pile up): a
/// rolling sphere slows at `(5/7) c g`, 1.4 m/s² at 0.2, so it stops within about 10 s and
/// 70 m; at 0.05 (0.35 m/s²) many still rolled at 20 s. A sphere still rolls down slopes
/// steeper than `atan 0.2 ≈ 11°`, so the ramp (30°) is unaffected in kind.
pub const AVALANCHE_ROCK_ROLLING: f32 = 0.2;
/// Rolling resistance of `avalanche`'s boxes, which do not roll: it damps the spin left on a
/// box at rest. Kept low: at 0.2 a box contact resists tipping, and a box knocked to the edge
/// of a pile stays on it.
pub const AVALANCHE_BOX_ROLLING: f32 = 0.05;

fn avalanche(b: SceneBuilder, n: usize) -> SceneBuilder {
    let b = b.defaults(materials(None));
    let spacing = Vec3::new(2.0, 1.0, 1.0);
    let b = lattice(
        b,
        &BodySpec::sphere(0.4).rolling_resistance(AVALANCHE_ROCK_ROLLING),
        n.div_ceil(2),
        5,
        15,
        Vec3::new(24.0, 21.0, -7.0),
        spacing,
    );
    let b = lattice(
        b,
        &BodySpec::cuboid(Vec3::splat(0.4)).rolling_resistance(AVALANCHE_BOX_ROLLING),
        n / 2,
        5,
        15,
        Vec3::new(25.0, 21.0, -7.0),
        spacing,
    );
    let (sin, cos) = FRAC_PI_6.sin_cos();
    let along = Vec3::new(cos, sin, 0.0);
    let up = Vec3::new(-sin, cos, 0.0);
    let ramp = BodySpec::cuboid(Vec3::new(20.0, 0.5, 10.0))
        .position(along * 20.0 - up * 0.5)
        .rotation(Quat::from_rotation_z(FRAC_PI_6))
        .fixed(true);
    ground(b.body(ramp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{BodyDesc, Shape};

    fn dynamic(s: &Scene) -> Vec<&BodyDesc> {
        s.bodies.iter().filter(|b| !b.is_static).collect()
    }

    fn close(a: Vec3, b: Vec3) -> bool {
        (a - b).abs().max_element() < 1e-5
    }

    #[test]
    fn every_builtin_builds_at_default_and_odd_sizes() {
        for info in builtin_names() {
            let s = builtin(info.name, None).unwrap();
            let expected = if info.name == "pyramids" {
                1100
            } else {
                info.default_bodies
            };
            assert_eq!(dynamic(&s).len(), expected, "{}", info.name);
            for n in [1, 2, 7, 101, 333] {
                let s = builtin(info.name, Some(n)).unwrap();
                let want = if info.name == "pyramids" {
                    55 * pyramid_count(n)
                } else {
                    n
                };
                assert_eq!(dynamic(&s).len(), want, "{} n={n}", info.name);
            }
        }
        assert!(matches!(
            builtin("nope", None),
            Err(SceneError::UnknownBuiltin { .. })
        ));
        let e = builtin("parallel", Some(0)).unwrap_err().to_string();
        assert!(e.contains("got 0"), "{e}");
    }

    #[test]
    fn cylinders_layout_is_exactly_the_design() {
        let s = builtin("cylinders", Some(250)).unwrap();
        let d = dynamic(&s);
        for (n, b) in d.iter().enumerate() {
            let (i, k, j) = (n % 10, (n / 10) % 10, n / 100);
            let want = Vec3::new(
                -5.4 + 1.2 * i as f32,
                8.0 + 1.2 * j as f32,
                -5.4 + 1.2 * k as f32,
            );
            assert!(
                close(b.position, want),
                "sphere {n}: {} vs {want}",
                b.position
            );
            assert_eq!(b.shape, Shape::Sphere { radius: 0.5 });
            assert_eq!(b.restitution, 0.5);
            assert_eq!(b.friction, 0.5);
            let m = 1000.0 * 4.0 / 3.0 * std::f32::consts::PI * 0.125;
            assert!((b.mass - m).abs() < 1e-3);
        }
        assert!(close(d[0].position, Vec3::new(-5.4, 8.0, -5.4)));
        assert!(close(d[1].position, Vec3::new(-4.2, 8.0, -5.4)));
        let statics: Vec<_> = s.bodies.iter().filter(|b| b.is_static).collect();
        assert_eq!(statics.len(), 6);
        for (c, x) in statics[..5].iter().zip([-6.0, -3.0, 0.0, 3.0, 6.0]) {
            assert_eq!(
                c.shape,
                Shape::Cylinder {
                    radius: 1.0,
                    half_height: 5.0
                }
            );
            assert_eq!(c.position, Vec3::new(x, 2.0, 0.0));
            assert!(
                close(c.rotation * Vec3::Y, Vec3::Z),
                "cylinder axis along z"
            );
        }
        assert_eq!(
            statics[5].shape,
            Shape::Plane {
                normal: Vec3::Y,
                offset: 0.0
            }
        );
        assert_eq!(s.world, World::default());
    }

    #[test]
    fn parallel_columns_never_meet() {
        let s = builtin("parallel", Some(9)).unwrap();
        assert_eq!(s.world.gravity, Vec3::ZERO);
        assert_eq!(s.bodies.len(), 9);
        for (n, b) in s.bodies.iter().enumerate() {
            let (col, i) = if n < 5 { (0, n) } else { (1, n - 5) };
            assert_eq!(b.position, Vec3::new(1.5 * i as f32, 0.0, 3.0 * col as f32));
            assert_eq!(
                b.velocity,
                Vec3::new(if col == 0 { 2.0 } else { -2.0 }, 0.0, 0.0)
            );
            assert_eq!(b.shape, Shape::Sphere { radius: 0.5 });
        }
    }

    #[test]
    fn bouncing_box_and_spheres() {
        let s = builtin("bouncing", Some(200)).unwrap();
        let side = 250f64.cbrt() as f32;
        assert_eq!(bouncing_side(200), side);
        let half = side / 2.0;
        let planes: Vec<_> = s.bodies.iter().filter(|b| b.is_static).collect();
        assert_eq!(planes.len(), 6);
        for p in &planes {
            let Shape::Plane { normal, offset } = p.shape else {
                panic!("walls are planes")
            };
            assert_eq!(offset, -half);
            assert_eq!(normal.abs().max_element(), 1.0);
        }
        let d = dynamic(&s);
        assert_eq!(d.len(), 200);
        let mut fastest = 0.0f32;
        for (i, a) in d.iter().enumerate() {
            assert_eq!(a.restitution, 0.9);
            assert!(
                a.position.abs().max_element() + 0.3 <= half,
                "sphere {i} inside the box"
            );
            assert!(a.velocity.length() <= 5.0 + 1e-5);
            fastest = fastest.max(a.velocity.length());
            for b in &d[..i] {
                assert!(a.position.distance(b.position) > 0.6, "spheres {i} overlap");
            }
        }
        assert!(fastest > 4.0, "velocities use the whole range");
        assert_eq!(s, builtin("bouncing", Some(200)).unwrap(), "deterministic");
    }

    #[test]
    fn pyramids_rows_touch_and_stand_apart() {
        assert_eq!(pyramid_count(1100), 20);
        assert_eq!(pyramid_count(1), 1);
        assert_eq!(pyramid_count(82), 1);
        assert_eq!(pyramid_count(83), 2);
        let s = builtin("pyramids", Some(55)).unwrap();
        let d = dynamic(&s);
        assert_eq!(d.len(), 55);
        for r in 0..10 {
            let row: Vec<_> = d
                .iter()
                .filter(|b| b.position.y == 0.5 + r as f32)
                .collect();
            assert_eq!(row.len(), 10 - r);
            let sum: f32 = row.iter().map(|b| b.position.x).sum();
            assert!(sum.abs() < 1e-4, "row {r} centred");
            for w in row.windows(2) {
                assert_eq!(w[1].position.x - w[0].position.x, 1.0, "touching boxes");
            }
        }
        let s = builtin("pyramids", None).unwrap();
        let mut centres: Vec<(i32, i32)> = dynamic(&s)
            .iter()
            .filter(|b| b.position.y == 9.5)
            .map(|b| (b.position.x as i32, b.position.z as i32))
            .collect();
        centres.sort();
        assert_eq!(centres.len(), 20);
        assert_eq!(centres[0], (-24, -18));
        assert!(centres.contains(&(24, 18)));
    }

    #[test]
    fn avalanche_ramp_meets_the_ground_below_the_bodies() {
        let s = builtin("avalanche", Some(300)).unwrap();
        let d = dynamic(&s);
        assert_eq!(
            d.iter()
                .filter(|b| b.shape == Shape::Sphere { radius: 0.4 })
                .count(),
            150
        );
        assert_eq!(
            d.iter()
                .filter(|b| b.shape
                    == Shape::Cuboid {
                        half_extents: Vec3::splat(0.4)
                    })
                .count(),
            150
        );
        let ramp = s
            .bodies
            .iter()
            .find(|b| b.is_static && matches!(b.shape, Shape::Cuboid { .. }))
            .unwrap();
        // The lower edge of the top face is on the z axis; the upper one 20 m high.
        let top = |x: f32| ramp.position + ramp.rotation * Vec3::new(x, 0.5, 0.0);
        assert!(close(top(-20.0), Vec3::ZERO));
        assert!((top(20.0).y - 20.0).abs() < 1e-4);
        for b in &d {
            let surface = b.position.x * FRAC_PI_6.tan();
            assert!(b.position.x < top(20.0).x && b.position.y - 0.4 > surface + 1.0);
            assert!(b.position.z.abs() < 10.0);
        }
    }
}
