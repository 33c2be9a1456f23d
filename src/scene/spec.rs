//! Scene descriptions and their validation: the one path every scene takes to become a [`Scene`].
//!
//! A scene exists first as a *description*, [`SceneBuilder`]: the `[world]` settings, the
//! `[defaults]` and an ordered list of `[[body]]` and `[[grid]]` entries whose fields are all
//! optional ([`BodySpec`], [`GridSpec`]). TOML files deserialize into it (see `load.rs`),
//! library users fill it with the builder methods, and the built-in scenes generate it. Then
//! [`SceneBuilder::build`] checks and resolves it into the plain, valid [`Scene`] the engines
//! assume: so a file, a builder and a built-in are validated by the same code, and a built-in
//! written out as TOML loads back bit-identical.
//!
//! ## Rules
//!
//! - **Order.** Bodies take ids in the order their entries appear; a grid's bodies are filled
//!   x fastest, then z, then y (layer by layer, as the `cylinders` scene of DESIGN.md), at
//!   `origin + spacing * (i, j, k)` computed in f32.
//! - **Jitter.** A grid with `jitter = a` moves each body by a uniform offset in `[-a, a)` per
//!   axis, drawn x, y, z for each body in fill order from SplitMix64 seeded with `seed` (0 when
//!   absent).
//! - **Defaults.** A field missing from an entry comes from `[defaults]`, else from the built-in
//!   defaults: restitution [`DEFAULT_RESTITUTION`], friction [`DEFAULT_FRICTION`], rolling
//!   resistance [`DEFAULT_ROLLING_RESISTANCE`], density
//!   [`DEFAULT_DENSITY`], rotation identity, position, velocities zero, dynamic. `[defaults]`
//!   fields apply only where they make sense (a default `radius` does not reach boxes, a default
//!   `density` does not reach static bodies); a field written on an entry itself that does not
//!   apply to it is an error.
//! - **Mass.** `mass`, or `density` times the shape's volume; an entry gives at most one of the
//!   two and then ignores the defaults' pair. Static bodies get mass 0 and may not give either.
//! - **Values.** Every number finite (after conversion to f32); radius, half extents,
//!   half height, mass and density positive; restitution in [0, 1]; friction non-negative;
//!   rolling resistance in [0, [`MAX_ROLLING_RESISTANCE`]];
//!   rotations unit quaternions within [`QUAT_TOLERANCE`], then normalised. Numbers computed
//!   from finite ones must be finite too: a grid body's position (origin + spacing x index +
//!   jitter) and a plane's offset over its normal's length can overflow f32 and are errors then.
//! - **Shapes.** `sphere` needs `radius`; `box` needs `half_extents`; `cylinder` needs `radius`
//!   and `half_height` (along its local y axis); `plane` needs `normal` (non-zero; normalised,
//!   with `offset` divided by its length so the surface stays where it was written), takes
//!   `offset` (default 0), must be static, and is not placed by position or rotation (its
//!   stored position is the point `normal * offset`). Static bodies cannot move.
//! - **World.** `ticks_per_second`, `frame_ticks` and `window` are whole numbers of at least 1,
//!   `frame_ticks` divides `ticks_per_second` (a whole number of frames per second), `seconds`
//!   is finite and positive, gravity finite.
//! - **Limits.** Positions (and plane offsets) within [`MAX_COORDINATE`] per axis, speeds up
//!   to [`MAX_SPEED`] and [`MAX_ANGULAR_SPEED`], sizes up to [`MAX_SIZE`], gravity up to
//!   [`MAX_GRAVITY`] per axis, and a dynamic body's inverse mass and inverse inertia positive and
//!   finite (a subnormal mass or a tiny shape would make them infinite). Inside these ranges the
//!   engines' squares and products stay finite in f32; outside, the scene is refused with the
//!   limit named rather than run into an overflow and NaN.
//! - A scene needs at least one dynamic body and at most [`MAX_BODIES`] bodies.

use glam::{Quat, Vec3};
use serde::Deserialize;

use super::error::{Location, SceneError};
use super::model::{BodyDesc, Scene, Shape, World};
use super::rng::SplitMix64;
use super::validate::{MATERIALS, check_body_count};

/// Restitution of a body that names none (here or in `[defaults]`).
pub const DEFAULT_RESTITUTION: f32 = 0.0;
/// Friction of a body that names none (here or in `[defaults]`).
pub const DEFAULT_FRICTION: f32 = 0.5;
/// Rolling resistance of a body that names none (here or in `[defaults]`): none, as in Box2D
/// v3 (`b2DefaultShapeDef`) and rapier (which has none at all).
pub const DEFAULT_ROLLING_RESISTANCE: f32 = 0.0;
/// The largest rolling resistance accepted. The coefficient is the offset of the normal force
/// ahead of the point below the centre, over the lever (the resisting torque is at most
/// `rolling_resistance × lever × normal force`): a normal force cannot act outside the body,
/// so the offset is at most the lever. At 1 a sphere stays put on a 45° slope without rolling.
pub const MAX_ROLLING_RESISTANCE: f32 = 1.0;
/// Density (kg/m³) of a dynamic body that names neither mass nor density.
pub const DEFAULT_DENSITY: f32 = 1000.0;
/// How far a rotation's norm may be from 1 before it is an error rather than normalised.
pub const QUAT_TOLERANCE: f32 = 1e-3;
/// The largest scene accepted, in bodies (a guard against typing an extra zero).
pub const MAX_BODIES: usize = 10_000_000;

/// The `[world]` table: every field optional, missing ones take [`World::default`].
/// Tick counts are signed so that a negative value gets a clear message rather than a type error.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldSpec {
    pub gravity: Option<[f32; 3]>,
    pub ticks_per_second: Option<i64>,
    pub frame_ticks: Option<i64>,
    pub window: Option<i64>,
    pub seconds: Option<f64>,
}

/// A `[[body]]` entry or the `[defaults]` table, unvalidated: every field optional.
///
/// The chainable methods (`BodySpec::sphere(0.5).position(p).velocity(v)`) are the builder
/// form; each sets the field of the same name.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodySpec {
    /// `sphere`, `box`, `cylinder` or `plane`.
    pub shape: Option<String>,
    pub radius: Option<f32>,
    pub half_extents: Option<[f32; 3]>,
    pub half_height: Option<f32>,
    pub normal: Option<[f32; 3]>,
    pub offset: Option<f32>,
    pub position: Option<[f32; 3]>,
    /// Quaternion x, y, z, w.
    pub rotation: Option<[f32; 4]>,
    pub velocity: Option<[f32; 3]>,
    pub angular_velocity: Option<[f32; 3]>,
    pub mass: Option<f32>,
    pub density: Option<f32>,
    pub restitution: Option<f32>,
    pub friction: Option<f32>,
    /// Rolling (and spinning) resistance, Box2D v3's `rollingResistance`: see
    /// [`BodyDesc::rolling_resistance`].
    pub rolling_resistance: Option<f32>,
    #[serde(rename = "static")]
    pub is_static: Option<bool>,
}

/// A `[[grid]]` entry: a block of identical bodies. `count` is along x, y, z.
#[derive(Clone, Debug, PartialEq)]
pub struct GridSpec {
    /// The template body; its `position` must be unset (the grid places its bodies).
    pub body: BodySpec,
    pub count: [i64; 3],
    pub spacing: [f32; 3],
    pub origin: [f32; 3],
    pub jitter: Option<f32>,
    pub seed: Option<i64>,
}

/// One entry of a scene description, in file order.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Body(BodySpec),
    Grid(GridSpec),
}

/// A scene description: world, defaults and entries; [`SceneBuilder::build`] validates it.
///
/// ```
/// use glam::Vec3;
/// use timewarp::scene::{BodySpec, SceneBuilder};
/// let scene = SceneBuilder::new()
///     .gravity(Vec3::new(0.0, -9.81, 0.0))
///     .plane(Vec3::Y, 0.0)
///     .sphere(0.5, Vec3::new(0.0, 2.0, 0.0))
///     .body(BodySpec::cuboid(Vec3::splat(0.5)).position(Vec3::new(2.0, 1.0, 0.0)).mass(3.0))
///     .build()
///     .unwrap();
/// assert_eq!(scene.bodies.len(), 3);
/// assert_eq!(scene.bodies[2].mass, 3.0);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SceneBuilder {
    pub world: WorldSpec,
    pub defaults: BodySpec,
    pub items: Vec<Item>,
    /// Source line of each item when it came from a file (for error messages).
    pub(crate) lines: Vec<Option<usize>>,
}

fn v3(v: Vec3) -> [f32; 3] {
    v.to_array()
}

impl BodySpec {
    fn with_shape(shape: &str) -> Self {
        BodySpec {
            shape: Some(shape.to_string()),
            ..BodySpec::default()
        }
    }

    /// A sphere of the given radius.
    pub fn sphere(radius: f32) -> Self {
        BodySpec {
            radius: Some(radius),
            ..Self::with_shape("sphere")
        }
    }

    /// A box with the given half extents (shape name `box`).
    pub fn cuboid(half_extents: Vec3) -> Self {
        BodySpec {
            half_extents: Some(v3(half_extents)),
            ..Self::with_shape("box")
        }
    }

    /// A cylinder along its local y axis.
    pub fn cylinder(radius: f32, half_height: f32) -> Self {
        BodySpec {
            radius: Some(radius),
            half_height: Some(half_height),
            ..Self::with_shape("cylinder")
        }
    }

    /// A static plane `normal · p = offset`, solid on the side `normal · p < offset`.
    pub fn plane(normal: Vec3, offset: f32) -> Self {
        BodySpec {
            normal: Some(v3(normal)),
            offset: Some(offset),
            is_static: Some(true),
            ..Self::with_shape("plane")
        }
    }

    pub fn position(mut self, p: Vec3) -> Self {
        self.position = Some(v3(p));
        self
    }

    pub fn rotation(mut self, q: Quat) -> Self {
        self.rotation = Some(q.to_array());
        self
    }

    pub fn velocity(mut self, v: Vec3) -> Self {
        self.velocity = Some(v3(v));
        self
    }

    pub fn angular_velocity(mut self, w: Vec3) -> Self {
        self.angular_velocity = Some(v3(w));
        self
    }

    pub fn mass(mut self, mass: f32) -> Self {
        self.mass = Some(mass);
        self
    }

    pub fn density(mut self, density: f32) -> Self {
        self.density = Some(density);
        self
    }

    pub fn restitution(mut self, e: f32) -> Self {
        self.restitution = Some(e);
        self
    }

    pub fn friction(mut self, mu: f32) -> Self {
        self.friction = Some(mu);
        self
    }

    pub fn rolling_resistance(mut self, c: f32) -> Self {
        self.rolling_resistance = Some(c);
        self
    }

    /// Makes the body static (`static = true`) or dynamic.
    pub fn fixed(mut self, is_static: bool) -> Self {
        self.is_static = Some(is_static);
        self
    }
}

impl GridSpec {
    /// `count[0] x count[1] x count[2]` copies of `body` at `origin + spacing * (i, j, k)`.
    pub fn new(body: BodySpec, count: [u32; 3], spacing: Vec3, origin: Vec3) -> Self {
        GridSpec {
            body,
            count: count.map(i64::from),
            spacing: v3(spacing),
            origin: v3(origin),
            jitter: None,
            seed: None,
        }
    }

    /// Random offsets of up to `jitter` per axis, seeded by `seed`.
    pub fn jitter(mut self, jitter: f32, seed: u64) -> Self {
        self.jitter = Some(jitter);
        // Seeds above i64::MAX wrap to negative i64: the bits (what SplitMix64 uses) are kept.
        self.seed = Some(seed as i64);
        self
    }

    /// The number of bodies the grid holds (0 when a count is not positive).
    pub fn len(&self) -> usize {
        self.count
            .iter()
            .map(|&c| usize::try_from(c).unwrap_or(0))
            .fold(1usize, |a, c| a.saturating_mul(c))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SceneBuilder {
    /// An empty description: the default world, no defaults, no bodies.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets every `[world]` field.
    pub fn world(mut self, world: &World) -> Self {
        self.world = WorldSpec {
            gravity: Some(v3(world.gravity)),
            ticks_per_second: Some(world.ticks_per_second.into()),
            frame_ticks: Some(world.frame_ticks.into()),
            window: Some(world.window.into()),
            seconds: Some(world.seconds),
        };
        self
    }

    pub fn gravity(mut self, g: Vec3) -> Self {
        self.world.gravity = Some(v3(g));
        self
    }

    pub fn ticks_per_second(mut self, tps: u32) -> Self {
        self.world.ticks_per_second = Some(tps.into());
        self
    }

    pub fn frame_ticks(mut self, ticks: u32) -> Self {
        self.world.frame_ticks = Some(ticks.into());
        self
    }

    pub fn window(mut self, ticks: u32) -> Self {
        self.world.window = Some(ticks.into());
        self
    }

    pub fn seconds(mut self, seconds: f64) -> Self {
        self.world.seconds = Some(seconds);
        self
    }

    /// Sets the `[defaults]` table.
    pub fn defaults(mut self, defaults: BodySpec) -> Self {
        self.defaults = defaults;
        self
    }

    /// Appends a `[[body]]` entry.
    pub fn body(mut self, body: BodySpec) -> Self {
        self.push(Item::Body(body), None);
        self
    }

    /// Appends a `[[grid]]` entry.
    pub fn grid(mut self, grid: GridSpec) -> Self {
        self.push(Item::Grid(grid), None);
        self
    }

    /// Appends a dynamic sphere (other fields from the defaults).
    pub fn sphere(self, radius: f32, position: Vec3) -> Self {
        self.body(BodySpec::sphere(radius).position(position))
    }

    /// Appends a dynamic box (other fields from the defaults).
    pub fn cuboid(self, half_extents: Vec3, position: Vec3) -> Self {
        self.body(BodySpec::cuboid(half_extents).position(position))
    }

    /// Appends a dynamic cylinder along its local y axis (other fields from the defaults).
    pub fn cylinder(self, radius: f32, half_height: f32, position: Vec3) -> Self {
        self.body(BodySpec::cylinder(radius, half_height).position(position))
    }

    /// Appends a static plane.
    pub fn plane(self, normal: Vec3, offset: f32) -> Self {
        self.body(BodySpec::plane(normal, offset))
    }

    pub(crate) fn push(&mut self, item: Item, line: Option<usize>) {
        self.items.push(item);
        self.lines.push(line);
    }

    /// Validates the description and resolves it into a [`Scene`] (rules in the module docs).
    pub fn build(&self) -> Result<Scene, SceneError> {
        let world =
            resolve_world(&self.world).map_err(|m| SceneError::invalid(Location::World, m))?;
        check_fields(&self.defaults).map_err(|m| SceneError::invalid(Location::Defaults, m))?;

        let total = self.items.iter().fold(0usize, |n, item| match item {
            Item::Body(_) => n.saturating_add(1),
            Item::Grid(g) => n.saturating_add(g.len()),
        });
        // Before a grid's bodies are made (they could be billions).
        check_body_count(total)?;

        let mut bodies = Vec::with_capacity(total);
        // Each item's first body and where the item is, to name it when a body is refused.
        let mut starts = Vec::with_capacity(self.items.len());
        let mut grid_index = 0;
        for (item, &line) in self.items.iter().zip(&self.lines) {
            let first = bodies.len();
            match item {
                Item::Body(spec) => {
                    let at = Location::Body { index: first, line };
                    let body = check_fields(spec)
                        .and_then(|()| resolve_body(spec, &self.defaults))
                        .map_err(|m| SceneError::invalid(at.clone(), m))?;
                    bodies.push(body);
                    starts.push((first, at));
                }
                Item::Grid(grid) => {
                    let at = Location::Grid {
                        index: grid_index,
                        line,
                    };
                    expand_grid(grid, &self.defaults, &mut bodies)
                        .map_err(|m| SceneError::invalid(at.clone(), m))?;
                    starts.push((first, at));
                    grid_index += 1;
                }
            }
        }
        let scene = Scene { world, bodies };
        scene.validate().map_err(|e| locate(e, &starts))?;
        Ok(scene)
    }
}

/// An error of [`Scene::validate`] about a body, with the body named as the description's item
/// that made it: its `[[body]]` entry (and line), or its `[[grid]]` and its place in the grid.
/// `starts` holds each item's first body and location, in order.
fn locate(e: SceneError, starts: &[(usize, Location)]) -> SceneError {
    let SceneError::Invalid {
        at: Location::Body { index, .. },
        message,
        ..
    } = e
    else {
        return e;
    };
    let (first, at) = &starts[starts.partition_point(|(first, _)| *first <= index) - 1];
    match at {
        Location::Grid { .. } => {
            SceneError::invalid(at.clone(), format!("its body {}: {message}", index - first))
        }
        _ => SceneError::invalid(at.clone(), message),
    }
}

/// The largest coordinate (m) of a body's position or a plane's offset: f32 positions are
/// 8 m apart there, and the warp engine's hash grid ends not far beyond.
pub const MAX_COORDINATE: f32 = 1e8;
/// The largest speed (m/s) a body may start with.
pub const MAX_SPEED: f32 = 1e6;
/// The largest angular speed (rad/s) a body may start with.
pub const MAX_ANGULAR_SPEED: f32 = 1e6;
/// The largest size (m) of a shape: radius, half extent or half height.
pub const MAX_SIZE: f32 = 1e6;
/// The largest gravity (m/s², per component).
pub const MAX_GRAVITY: f32 = 1e6;

/// `[x, y, z]` with each component in shortest form, for messages.
pub(super) fn fmt_vec(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

pub(super) fn finite(name: &str, x: f32) -> Result<f32, String> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(format!("{name} must be finite, got {x}"))
    }
}

pub(super) fn positive(name: &str, x: f32) -> Result<f32, String> {
    finite(name, x)?;
    if x > 0.0 {
        Ok(x)
    } else {
        Err(format!("{name} must be positive, got {x}"))
    }
}

pub(super) fn finite_vec(name: &str, v: &[f32]) -> Result<(), String> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(format!("{name} must be finite, got {}", fmt_vec(v)))
    }
}

const SHAPES: [&str; 4] = ["sphere", "box", "cylinder", "plane"];

/// Checks every field present in `s` on its own (ranges, finiteness, known shape names).
fn check_fields(s: &BodySpec) -> Result<(), String> {
    if let Some(shape) = &s.shape
        && !SHAPES.contains(&shape.as_str())
    {
        // Quoted as Rust quotes it, so that a name with a newline or a quote in it (TOML
        // escapes allow both) stays on the error's one line (found by `tests/fuzz_scene.rs`).
        return Err(format!(
            "unknown shape {shape:?} (expected sphere, box, cylinder or plane)"
        ));
    }
    if let Some(r) = s.radius {
        positive("radius", r)?;
    }
    if let Some(h) = s.half_extents {
        finite_vec("half_extents", &h)?;
        if h.iter().any(|&x| x <= 0.0) {
            return Err(format!(
                "half_extents must be positive, got {}",
                fmt_vec(&h)
            ));
        }
    }
    if let Some(h) = s.half_height {
        positive("half_height", h)?;
    }
    if let Some(n) = s.normal {
        finite_vec("normal", &n)?;
        if Vec3::from_array(n).length() < 1e-6 {
            return Err(format!("normal must be non-zero, got {}", fmt_vec(&n)));
        }
    }
    if let Some(o) = s.offset {
        finite("offset", o)?;
    }
    for (name, v) in [
        ("position", s.position),
        ("velocity", s.velocity),
        ("angular_velocity", s.angular_velocity),
    ] {
        if let Some(v) = v {
            finite_vec(name, &v)?;
        }
    }
    if let Some(q) = s.rotation {
        finite_vec("rotation", &q)?;
        let norm = Quat::from_array(q).length();
        if (norm - 1.0).abs() > QUAT_TOLERANCE {
            return Err(format!(
                "rotation must be a unit quaternion [x, y, z, w], got {} (norm {norm})",
                fmt_vec(&q)
            ));
        }
    }
    if let Some(m) = s.mass {
        positive("mass", m)?;
    }
    if let Some(d) = s.density {
        positive("density", d)?;
    }
    if s.mass.is_some() && s.density.is_some() {
        return Err("give mass or density, not both".to_string());
    }
    for m in &MATERIALS {
        if let Some(x) = (m.of_spec)(s) {
            m.check(x)?;
        }
    }
    Ok(())
}

/// The world of `w` (its defaults filled in), checked by [`World::validate`] at once, so that
/// its errors come before the bodies'.
fn resolve_world(w: &WorldSpec) -> Result<World, String> {
    let d = World::default();
    let ticks = |name: &str, v: Option<i64>, default: u32| -> Result<u32, String> {
        match v {
            None => Ok(default),
            Some(v) => u32::try_from(v)
                .map_err(|_| format!("{name} must be a whole number of at least 1, got {v}")),
        }
    };
    let world = World {
        gravity: w.gravity.map_or(d.gravity, Vec3::from_array),
        ticks_per_second: ticks("ticks_per_second", w.ticks_per_second, d.ticks_per_second)?,
        frame_ticks: ticks("frame_ticks", w.frame_ticks, d.frame_ticks)?,
        window: ticks("window", w.window, d.window)?,
        seconds: w.seconds.unwrap_or(d.seconds),
    };
    world.validate()?;
    Ok(world)
}

/// The fields each shape takes (besides the common ones).
fn shape_fields(shape: &str) -> &'static [&'static str] {
    match shape {
        "sphere" => &["radius"],
        "box" => &["half_extents"],
        "cylinder" => &["radius", "half_height"],
        _ => &["normal", "offset"],
    }
}

/// Resolves one entry against the defaults; `s` has passed [`check_fields`].
fn resolve_body(s: &BodySpec, d: &BodySpec) -> Result<BodyDesc, String> {
    let shape_name = s
        .shape
        .as_deref()
        .or(d.shape.as_deref())
        .ok_or("shape is missing (sphere, box, cylinder or plane)".to_string())?;
    let is_static = s.is_static.or(d.is_static).unwrap_or(false);
    let is_plane = shape_name == "plane";
    let a_shape = match shape_name {
        "sphere" => "a sphere",
        "box" => "a box",
        "cylinder" => "a cylinder",
        _ => "a plane",
    };

    // Fields written on the entry itself must apply to it.
    let takes = shape_fields(shape_name);
    let explicit = [
        ("radius", s.radius.is_some()),
        ("half_extents", s.half_extents.is_some()),
        ("half_height", s.half_height.is_some()),
        ("normal", s.normal.is_some()),
        ("offset", s.offset.is_some()),
    ];
    for (field, present) in explicit {
        if present && !takes.contains(&field) {
            return Err(format!("{field} does not apply to {a_shape}"));
        }
    }
    if is_plane {
        if !is_static {
            return Err("a plane must be static (set static = true)".to_string());
        }
        for (field, present) in [
            ("position", s.position.is_some()),
            ("rotation", s.rotation.is_some()),
        ] {
            if present {
                return Err(format!(
                    "{field} does not apply to a plane (a plane is placed by normal and offset)"
                ));
            }
        }
    }
    if is_static {
        for (field, v) in [
            ("velocity", s.velocity),
            ("angular_velocity", s.angular_velocity),
        ] {
            if let Some(v) = v
                && v != [0.0; 3]
            {
                return Err(format!(
                    "a static body cannot move: {field} must be zero, got {}",
                    fmt_vec(&v)
                ));
            }
        }
        if s.mass.is_some() || s.density.is_some() {
            return Err("mass and density do not apply to a static body".to_string());
        }
    }

    let need = |field: &str, v: Option<f32>, dv: Option<f32>| {
        v.or(dv).ok_or_else(|| format!("{a_shape} needs {field}"))
    };
    let shape = match shape_name {
        "sphere" => Shape::Sphere {
            radius: need("radius", s.radius, d.radius)?,
        },
        "box" => Shape::Cuboid {
            half_extents: Vec3::from_array(
                s.half_extents
                    .or(d.half_extents)
                    .ok_or_else(|| format!("{a_shape} needs half_extents"))?,
            ),
        },
        "cylinder" => Shape::Cylinder {
            radius: need("radius", s.radius, d.radius)?,
            half_height: need("half_height", s.half_height, d.half_height)?,
        },
        _ => {
            let n = Vec3::from_array(
                s.normal
                    .or(d.normal)
                    .ok_or_else(|| format!("{a_shape} needs normal"))?,
            );
            // In f64, so that no f32 normal overflows its length (|[3e38, 3e38, 0]| is
            // beyond f32) and the unit normal keeps its direction.
            let len = n.as_dvec3().length();
            let offset = s.offset.or(d.offset).unwrap_or(0.0);
            let unit_offset = (f64::from(offset) / len) as f32;
            if !unit_offset.is_finite() {
                return Err(format!(
                    "offset / |normal| = {offset} / {} is not finite (scale the normal up)",
                    len as f32
                ));
            }
            Shape::Plane {
                normal: (n.as_dvec3() / len).as_vec3(),
                offset: unit_offset,
            }
        }
    };

    let (position, rotation) = match shape {
        Shape::Plane { normal, offset } => (normal * offset, Quat::IDENTITY),
        _ => (
            Vec3::from_array(s.position.or(d.position).unwrap_or([0.0; 3])),
            Quat::from_array(s.rotation.or(d.rotation).unwrap_or([0.0, 0.0, 0.0, 1.0])).normalize(),
        ),
    };
    let (velocity, angular_velocity) = if is_static {
        (Vec3::ZERO, Vec3::ZERO)
    } else {
        (
            Vec3::from_array(s.velocity.or(d.velocity).unwrap_or([0.0; 3])),
            Vec3::from_array(
                s.angular_velocity
                    .or(d.angular_velocity)
                    .unwrap_or([0.0; 3]),
            ),
        )
    };

    let mass = if is_static {
        0.0
    } else {
        let (mass, density) = if s.mass.is_some() || s.density.is_some() {
            (s.mass, s.density)
        } else {
            (d.mass, d.density)
        };
        match mass {
            Some(m) => m,
            None => {
                let density = density.unwrap_or(DEFAULT_DENSITY);
                let volume = shape_volume(&shape);
                let m = density * volume;
                if !(m.is_finite() && m > 0.0) {
                    return Err(format!(
                        "mass from density {density} x volume {volume} is {m}, not a positive finite number"
                    ));
                }
                m
            }
        }
    };

    Ok(BodyDesc {
        shape,
        position,
        rotation,
        velocity,
        angular_velocity,
        mass,
        restitution: s
            .restitution
            .or(d.restitution)
            .unwrap_or(DEFAULT_RESTITUTION),
        friction: s.friction.or(d.friction).unwrap_or(DEFAULT_FRICTION),
        rolling_resistance: s
            .rolling_resistance
            .or(d.rolling_resistance)
            .unwrap_or(DEFAULT_ROLLING_RESISTANCE),
        is_static,
    })
}

/// The volume of a solid shape in m³ (f32; planes have none and return infinity).
pub fn shape_volume(shape: &Shape) -> f32 {
    use std::f32::consts::PI;
    match *shape {
        Shape::Sphere { radius } => 4.0 / 3.0 * PI * radius * radius * radius,
        Shape::Cuboid { half_extents: h } => 8.0 * h.x * h.y * h.z,
        Shape::Cylinder {
            radius,
            half_height,
        } => PI * radius * radius * 2.0 * half_height,
        Shape::Plane { .. } => f32::INFINITY,
    }
}

/// Appends the bodies of `grid` to `out` (x fastest, then z, then y).
fn expand_grid(
    grid: &GridSpec,
    defaults: &BodySpec,
    out: &mut Vec<BodyDesc>,
) -> Result<(), String> {
    if grid.count.iter().any(|&c| c < 1 || c > MAX_BODIES as i64) {
        return Err(format!(
            "count must be at least 1 along each axis, got [{}, {}, {}]",
            grid.count[0], grid.count[1], grid.count[2]
        ));
    }
    finite_vec("spacing", &grid.spacing)?;
    finite_vec("origin", &grid.origin)?;
    let jitter = grid.jitter.unwrap_or(0.0);
    finite("jitter", jitter)?;
    if jitter < 0.0 {
        return Err(format!("jitter must not be negative, got {jitter}"));
    }
    // Any integer seeds the generator with its 64 bits.
    let seed = grid.seed.unwrap_or(0);
    if grid.body.position.is_some() {
        return Err("position does not apply to a grid (use origin)".to_string());
    }
    check_fields(&grid.body)?;
    let template = BodySpec {
        position: Some(grid.origin),
        ..grid.body.clone()
    };
    let template = resolve_body(&template, defaults)?;
    if matches!(template.shape, Shape::Plane { .. }) {
        return Err("a grid cannot hold planes".to_string());
    }

    let origin = Vec3::from_array(grid.origin);
    let spacing = Vec3::from_array(grid.spacing);
    let mut rng = SplitMix64::new(seed as u64);
    let [nx, ny, nz] = grid.count;
    for j in 0..ny {
        for k in 0..nz {
            for i in 0..nx {
                let mut p = origin + spacing * Vec3::new(i as f32, j as f32, k as f32);
                if jitter > 0.0 {
                    let x = rng.next_signed();
                    let y = rng.next_signed();
                    let z = rng.next_signed();
                    p += Vec3::new(x, y, z) * jitter;
                }
                if !p.is_finite() {
                    return Err(format!(
                        "the position of body [{i}, {j}, {k}] (origin + spacing x index + \
                         jitter) is not finite: {}",
                        fmt_vec(&p.to_array())
                    ));
                }
                out.push(BodyDesc {
                    position: p,
                    ..template.clone()
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(body: BodySpec) -> Result<Scene, SceneError> {
        SceneBuilder::new().body(body).build()
    }

    fn err(body: BodySpec) -> String {
        one(body).unwrap_err().to_string()
    }

    #[test]
    fn sphere_mass_comes_from_default_density() {
        let s = one(BodySpec::sphere(0.5)).unwrap();
        let b = &s.bodies[0];
        let expected = 1000.0 * 4.0 / 3.0 * std::f32::consts::PI * 0.125;
        assert!((b.mass - expected).abs() < 1e-3 * expected);
        assert_eq!(b.restitution, DEFAULT_RESTITUTION);
        assert_eq!(b.friction, DEFAULT_FRICTION);
        assert_eq!(b.rotation, Quat::IDENTITY);
        assert_eq!(s.world, World::default());
    }

    #[test]
    fn mass_density_and_defaults_pair() {
        let d = BodySpec::default().density(2.0);
        let s = SceneBuilder::new()
            .defaults(d)
            .body(BodySpec::cuboid(Vec3::new(1.0, 2.0, 0.5)))
            .body(BodySpec::cuboid(Vec3::ONE).mass(7.0))
            .build()
            .unwrap();
        assert_eq!(s.bodies[0].mass, 2.0 * 8.0); // density 2 x volume 8
        assert_eq!(s.bodies[1].mass, 7.0); // the entry's mass replaces the defaults' density
        let cyl = one(BodySpec::cylinder(1.0, 2.0).density(1.0)).unwrap();
        assert!((cyl.bodies[0].mass - std::f32::consts::PI * 4.0).abs() < 1e-5);
        assert!(err(BodySpec::sphere(1.0).mass(1.0).density(1.0)).contains("not both"));
    }

    #[test]
    fn bad_values_name_the_body_and_field() {
        let e = SceneBuilder::new()
            .sphere(1.0, Vec3::ZERO)
            .sphere(1.0, Vec3::ZERO)
            .body(BodySpec::sphere(-1.0))
            .build()
            .unwrap_err();
        assert_eq!(e.to_string(), "body 2: radius must be positive, got -1");
        assert_eq!(
            err(BodySpec::sphere(1.0).position(Vec3::new(f32::NAN, 0.0, 0.0))),
            "body 0: position must be finite, got [NaN, 0, 0]"
        );
        assert!(
            err(BodySpec::cuboid(Vec3::new(1.0, 0.0, 1.0)))
                .contains("half_extents must be positive")
        );
        assert!(
            err(BodySpec::sphere(1.0).restitution(1.5))
                .contains("restitution must be between 0 and 1, got 1.5")
        );
        assert!(
            err(BodySpec::sphere(1.0).friction(-0.1)).contains("friction must not be negative")
        );
        assert!(err(BodySpec::sphere(1.0).mass(0.0)).contains("mass must be positive, got 0"));
        assert!(
            err(BodySpec::sphere(1.0).density(f32::INFINITY)).contains("density must be finite")
        );
        assert!(
            err(BodySpec::cylinder(1.0, -2.0)).contains("half_height must be positive, got -2")
        );
    }

    #[test]
    fn shapes_must_be_known_complete_and_fields_must_apply() {
        let mut blob = BodySpec::sphere(1.0);
        blob.shape = Some("blob".into());
        assert!(err(blob).contains("unknown shape \"blob\""));
        // A name with a newline (a TOML escape) stays on one line, escaped.
        let mut odd = BodySpec::sphere(1.0);
        odd.shape = Some("pla\ne".into());
        let e = err(odd);
        assert!(
            !e.contains('\n') && e.contains(r#"unknown shape "pla\ne""#),
            "{e}"
        );
        assert!(err(BodySpec::default()).contains("shape is missing"));
        let mut no_radius = BodySpec::sphere(1.0);
        no_radius.radius = None;
        assert!(err(no_radius).contains("a sphere needs radius"));
        let mut box_with_radius = BodySpec::cuboid(Vec3::ONE);
        box_with_radius.radius = Some(1.0);
        assert!(err(box_with_radius).contains("radius does not apply to a box"));
        // ...but a default radius does not reach boxes.
        let defaults = BodySpec {
            radius: Some(0.3),
            ..BodySpec::default().mass(1.0)
        };
        let mut sphere = BodySpec::sphere(1.0);
        sphere.radius = None;
        let s = SceneBuilder::new()
            .defaults(defaults)
            .body(BodySpec::cuboid(Vec3::ONE))
            .body(sphere)
            .build()
            .unwrap();
        assert_eq!(s.bodies[1].shape, Shape::Sphere { radius: 0.3 });
    }

    #[test]
    fn rotations_are_checked_then_normalised() {
        let q = [0.0, 0.0, 0.0, 1.0005];
        let mut b = BodySpec::sphere(1.0);
        b.rotation = Some(q);
        let s = one(b.clone()).unwrap();
        assert!((s.bodies[0].rotation.length() - 1.0).abs() < 1e-6);
        b.rotation = Some([0.0, 0.0, 0.0, 1.01]);
        assert!(err(b).contains("rotation must be a unit quaternion"));
    }

    #[test]
    fn planes_are_static_normalised_and_unplaced() {
        let s = SceneBuilder::new()
            .plane(Vec3::new(0.0, 2.0, 0.0), 1.0)
            .sphere(0.5, Vec3::Y)
            .build()
            .unwrap();
        let p = &s.bodies[0];
        assert!(p.is_static);
        assert_eq!(p.mass, 0.0);
        assert_eq!(
            p.shape,
            Shape::Plane {
                normal: Vec3::Y,
                offset: 0.5
            }
        );
        assert_eq!(p.position, Vec3::new(0.0, 0.5, 0.0));
        let dynamic_plane = BodySpec::plane(Vec3::Y, 0.0).fixed(false);
        assert!(err(dynamic_plane).contains("a plane must be static"));
        assert!(err(BodySpec::plane(Vec3::ZERO, 0.0)).contains("normal must be non-zero"));
        let placed = BodySpec::plane(Vec3::Y, 0.0).position(Vec3::ONE);
        assert!(err(placed).contains("position does not apply to a plane"));
    }

    #[test]
    fn static_bodies_cannot_move_and_scenes_need_a_dynamic_body() {
        let moving = BodySpec::cuboid(Vec3::ONE).fixed(true).velocity(Vec3::X);
        assert!(err(moving).contains("a static body cannot move: velocity must be zero"));
        let e = SceneBuilder::new().plane(Vec3::Y, 0.0).build().unwrap_err();
        assert_eq!(
            e.to_string(),
            "scene: the scene has no dynamic bodies (every body is static or there are none)"
        );
        assert!(SceneBuilder::new().build().is_err());
    }

    #[test]
    fn world_is_validated() {
        let base = SceneBuilder::new().sphere(1.0, Vec3::ZERO);
        let e = base.clone().ticks_per_second(0).build().unwrap_err();
        assert_eq!(
            e.to_string(),
            "world: ticks_per_second must be a whole number of at least 1, got 0"
        );
        let e = base.clone().frame_ticks(7).build().unwrap_err();
        assert!(
            e.to_string()
                .contains("frame_ticks (7) must divide ticks_per_second (960)")
        );
        assert!(base.clone().window(0).build().is_err());
        assert!(base.clone().seconds(f64::NAN).build().is_err());
        assert!(base.clone().seconds(-1.0).build().is_err());
        assert!(
            base.clone()
                .gravity(Vec3::new(0.0, f32::INFINITY, 0.0))
                .build()
                .is_err()
        );
        let s = base.seconds(2.5).gravity(Vec3::ZERO).build().unwrap();
        assert_eq!(s.world.seconds, 2.5);
        assert_eq!(s.world.gravity, Vec3::ZERO);
    }

    #[test]
    fn grids_fill_x_then_z_then_y_and_jitter_deterministically() {
        let g = GridSpec::new(
            BodySpec::sphere(0.25),
            [2, 2, 3],
            Vec3::new(1.0, 10.0, 100.0),
            Vec3::new(0.5, 0.0, -1.0),
        );
        let s = SceneBuilder::new().grid(g.clone()).build().unwrap();
        assert_eq!(s.bodies.len(), 12);
        let p: Vec<Vec3> = s.bodies.iter().map(|b| b.position).collect();
        assert_eq!(p[0], Vec3::new(0.5, 0.0, -1.0));
        assert_eq!(p[1], Vec3::new(1.5, 0.0, -1.0)); // x fastest
        assert_eq!(p[2], Vec3::new(0.5, 0.0, 99.0)); // then z
        assert_eq!(p[6], Vec3::new(0.5, 10.0, -1.0)); // then y
        let j1 = SceneBuilder::new()
            .grid(g.clone().jitter(0.1, 3))
            .build()
            .unwrap();
        let j2 = SceneBuilder::new()
            .grid(g.clone().jitter(0.1, 3))
            .build()
            .unwrap();
        let j3 = SceneBuilder::new().grid(g.jitter(0.1, 4)).build().unwrap();
        assert_eq!(j1, j2);
        assert_ne!(j1, j3);
        for (a, b) in j1.bodies.iter().zip(&s.bodies) {
            let d = a.position - b.position;
            assert!(d.abs().max_element() <= 0.1 && d != Vec3::ZERO);
        }
    }

    #[test]
    fn grid_errors_name_the_grid() {
        let mut g = GridSpec::new(BodySpec::sphere(0.5), [1, 1, 1], Vec3::ONE, Vec3::ZERO);
        g.count = [2, 0, 1];
        let e = SceneBuilder::new()
            .sphere(1.0, Vec3::ZERO)
            .grid(g.clone())
            .build()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "grid 0: count must be at least 1 along each axis, got [2, 0, 1]"
        );
        g.count = [1, 1, 1];
        g.jitter = Some(-1.0);
        assert!(
            SceneBuilder::new()
                .grid(g.clone())
                .build()
                .unwrap_err()
                .to_string()
                .contains("jitter")
        );
        g.jitter = None;
        g.body.radius = Some(-2.0);
        let e = SceneBuilder::new().grid(g).build().unwrap_err();
        assert_eq!(e.to_string(), "grid 0: radius must be positive, got -2");
        let huge = GridSpec::new(
            BodySpec::sphere(0.5),
            [10_000, 10_000, 10_000],
            Vec3::ONE,
            Vec3::ZERO,
        );
        assert!(
            SceneBuilder::new()
                .grid(huge)
                .build()
                .unwrap_err()
                .to_string()
                .contains("limit")
        );
    }

    /// Found by `tests/fuzz_scene.rs`: finite origin, spacing and jitter can still place a
    /// body at infinity (f32 overflow), a finite offset over a tiny normal's length can be
    /// infinite, and a huge normal's f32 length is infinite (the plane got a zero normal); all
    /// three loaded as valid scenes.
    #[test]
    fn overflowing_positions_and_plane_offsets_are_errors() {
        let g = GridSpec::new(
            BodySpec::sphere(0.5),
            [3, 1, 1],
            Vec3::new(3.0e38, 0.0, 0.0),
            Vec3::new(1.0e38, 0.0, 0.0),
        );
        let e = SceneBuilder::new().grid(g).build().unwrap_err().to_string();
        assert_eq!(
            e,
            "grid 0: the position of body [1, 0, 0] (origin + spacing x index + jitter) is \
             not finite: [inf, 0, 0]"
        );
        let g = GridSpec::new(
            BodySpec::sphere(0.5),
            [1, 1, 1],
            Vec3::ONE,
            Vec3::splat(3e38),
        )
        .jitter(3e38, 1);
        let e = SceneBuilder::new().grid(g).build().unwrap_err().to_string();
        assert!(e.contains("is not finite"), "{e}");
        let e = SceneBuilder::new()
            .sphere(1.0, Vec3::ZERO)
            .plane(Vec3::new(0.0, 1e-5, 0.0), 1e38)
            .build()
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "body 1: offset / |normal| = 100000000000000000000000000000000000000 / 0.00001 is \
             not finite (scale the normal up)"
        );
        // A normal too long for f32 to take its length still gives its direction.
        let s = SceneBuilder::new()
            .sphere(1.0, Vec3::ZERO)
            .plane(Vec3::new(3.4e38, 2.0, 0.0), -1.0)
            .build()
            .unwrap();
        assert_eq!(
            s.bodies[1].shape,
            Shape::Plane {
                normal: Vec3::new(1.0, 2.0 / 3.4e38, 0.0),
                offset: -1.0 / 3.4e38
            }
        );
        // The same plane with a modest offset is fine, and stays where it was written.
        let s = SceneBuilder::new()
            .sphere(1.0, Vec3::ZERO)
            .plane(Vec3::new(0.0, 1e-5, 0.0), 1e-5)
            .build()
            .unwrap();
        assert_eq!(
            s.bodies[1].shape,
            Shape::Plane {
                normal: Vec3::Y,
                offset: 1.0
            }
        );
    }
}
