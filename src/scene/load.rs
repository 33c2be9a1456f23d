//! Scene files: TOML in, TOML out (the "Scene file" contract of DESIGN.md).
//!
//! Reading is serde + toml into the description types of `spec.rs`, every table marked
//! `deny_unknown_fields`, so a misspelt key is an error with its line, not a silently ignored
//! value. TOML keeps `[[body]]` and `[[grid]]` in two separate arrays, which would lose how they
//! interleave; each entry is therefore read as a `toml::Spanned` value and the two arrays are
//! merged by their byte offset in the file, so bodies take ids in the order the entries appear.
//! The byte offsets also give the line numbers that error messages quote.
//!
//! Writing ([`to_toml`]) prints a description back in the same schema, fields in a fixed order,
//! numbers in shortest round-trip form (an f32 printed that way reads back as the same f32), so
//! the built-in scenes can be exported and the files in `scenes/` are exactly their export.

use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::error::SceneError;
use super::model::Scene;
use super::spec::{BodySpec, GridSpec, Item, SceneBuilder, WorldSpec};

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    world: Option<WorldSpec>,
    defaults: Option<BodySpec>,
    #[serde(default)]
    body: Vec<Spanned<BodySpec>>,
    #[serde(default)]
    grid: Vec<Spanned<GridFile>>,
}

/// A `[[grid]]` table: every body field except `position`, plus the grid's own fields.
/// (serde's `flatten` cannot be combined with `deny_unknown_fields`, hence the repetition.)
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GridFile {
    shape: Option<String>,
    radius: Option<f32>,
    half_extents: Option<[f32; 3]>,
    half_height: Option<f32>,
    normal: Option<[f32; 3]>,
    offset: Option<f32>,
    rotation: Option<[f32; 4]>,
    velocity: Option<[f32; 3]>,
    angular_velocity: Option<[f32; 3]>,
    mass: Option<f32>,
    density: Option<f32>,
    restitution: Option<f32>,
    friction: Option<f32>,
    rolling_resistance: Option<f32>,
    #[serde(rename = "static")]
    is_static: Option<bool>,
    count: [i64; 3],
    spacing: [f32; 3],
    origin: [f32; 3],
    jitter: Option<f32>,
    seed: Option<i64>,
}

impl From<GridFile> for GridSpec {
    fn from(g: GridFile) -> Self {
        GridSpec {
            body: BodySpec {
                shape: g.shape,
                radius: g.radius,
                half_extents: g.half_extents,
                half_height: g.half_height,
                normal: g.normal,
                offset: g.offset,
                position: None,
                rotation: g.rotation,
                velocity: g.velocity,
                angular_velocity: g.angular_velocity,
                mass: g.mass,
                density: g.density,
                restitution: g.restitution,
                friction: g.friction,
                rolling_resistance: g.rolling_resistance,
                is_static: g.is_static,
            },
            count: g.count,
            spacing: g.spacing,
            origin: g.origin,
            jitter: g.jitter,
            seed: g.seed,
        }
    }
}

/// 1-based line and column of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

/// The bare key of the `key = value` line whose value holds byte `offset`, if any: so that a
/// value of the wrong type is reported with its key (`rolling_resistance: invalid type: ...`),
/// not only its line and column.
fn key_before(text: &str, offset: usize) -> Option<&str> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let (key, _) = text[start..offset].split_once('=')?;
    let key = key.trim();
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    (!key.is_empty() && key.chars().all(bare)).then_some(key)
}

/// Parses a scene file's text into a description (not yet validated).
pub fn parse_toml(text: &str) -> Result<SceneBuilder, SceneError> {
    let file: FileSpec = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        let message = e.message().trim().replace('\n', " ");
        SceneError::Parse {
            path: None,
            line,
            column,
            message: match e.span().and_then(|s| key_before(text, s.start)) {
                Some(key) => format!("{key}: {message}"),
                None => message,
            },
        }
    })?;
    let mut entries: Vec<(usize, Item)> = Vec::with_capacity(file.body.len() + file.grid.len());
    entries.extend(
        file.body
            .into_iter()
            .map(|b| (b.span().start, Item::Body(b.into_inner()))),
    );
    entries.extend(
        file.grid
            .into_iter()
            .map(|g| (g.span().start, Item::Grid(g.into_inner().into()))),
    );
    entries.sort_by_key(|&(offset, _)| offset);

    let mut builder = SceneBuilder {
        world: file.world.unwrap_or_default(),
        defaults: file.defaults.unwrap_or_default(),
        ..SceneBuilder::default()
    };
    // The items' lines, counted on from the one before (they are in file order): counted
    // from the start for each item, they made loading quadratic in the file's length.
    let (mut at, mut line) = (0, 1);
    for (offset, item) in entries {
        line += text[at..offset].matches('\n').count();
        at = offset;
        builder.push(item, Some(line));
    }
    Ok(builder)
}

/// Parses and validates a scene file's text.
pub fn from_toml_str(text: &str) -> Result<Scene, SceneError> {
    parse_toml(text)?.build()
}

/// Reads, parses and validates the scene file at `path`; errors name the file.
pub fn load(path: &Path) -> Result<Scene, SceneError> {
    let text = std::fs::read_to_string(path).map_err(|e| SceneError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    from_toml_str(&text).map_err(|e| e.in_file(path))
}

/// An f32 in shortest round-trip form, always a valid TOML float (`1.0`, `0.3`, `1e-7`).
fn num(x: f32) -> String {
    format!("{x:?}")
}

fn arr(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(|&x| num(x)).collect();
    format!("[{}]", parts.join(", "))
}

fn write_body_fields(out: &mut String, b: &BodySpec) {
    let mut line = |key: &str, value: String| {
        let _ = writeln!(out, "{key} = {value}");
    };
    if let Some(s) = &b.shape {
        line("shape", format!("{s:?}"));
    }
    if let Some(r) = b.radius {
        line("radius", num(r));
    }
    if let Some(h) = b.half_extents {
        line("half_extents", arr(&h));
    }
    if let Some(h) = b.half_height {
        line("half_height", num(h));
    }
    if let Some(n) = b.normal {
        line("normal", arr(&n));
    }
    if let Some(o) = b.offset {
        line("offset", num(o));
    }
    if let Some(p) = b.position {
        line("position", arr(&p));
    }
    if let Some(q) = b.rotation {
        line("rotation", arr(&q));
    }
    if let Some(v) = b.velocity {
        line("velocity", arr(&v));
    }
    if let Some(w) = b.angular_velocity {
        line("angular_velocity", arr(&w));
    }
    if let Some(m) = b.mass {
        line("mass", num(m));
    }
    if let Some(d) = b.density {
        line("density", num(d));
    }
    if let Some(e) = b.restitution {
        line("restitution", num(e));
    }
    if let Some(f) = b.friction {
        line("friction", num(f));
    }
    if let Some(c) = b.rolling_resistance {
        line("rolling_resistance", num(c));
    }
    if let Some(s) = b.is_static {
        line("static", s.to_string());
    }
}

/// Writes a description as a scene file (the inverse of [`parse_toml`]). Shape names are
/// written as TOML basic strings; an f64 `seconds` in shortest round-trip form.
pub fn to_toml(scene: &SceneBuilder) -> String {
    let mut out = String::new();
    let w = &scene.world;
    out.push_str("[world]\n");
    if let Some(g) = w.gravity {
        let _ = writeln!(out, "gravity = {}", arr(&g));
    }
    for (key, v) in [
        ("ticks_per_second", w.ticks_per_second),
        ("frame_ticks", w.frame_ticks),
        ("window", w.window),
    ] {
        if let Some(v) = v {
            let _ = writeln!(out, "{key} = {v}");
        }
    }
    if let Some(s) = w.seconds {
        let _ = writeln!(out, "seconds = {s:?}");
    }
    if scene.defaults != BodySpec::default() {
        out.push_str("\n[defaults]\n");
        write_body_fields(&mut out, &scene.defaults);
    }
    for item in &scene.items {
        match item {
            Item::Body(b) => {
                out.push_str("\n[[body]]\n");
                write_body_fields(&mut out, b);
            }
            Item::Grid(g) => {
                out.push_str("\n[[grid]]\n");
                write_body_fields(&mut out, &g.body);
                let [x, y, z] = g.count;
                let _ = writeln!(out, "count = [{x}, {y}, {z}]");
                let _ = writeln!(out, "spacing = {}", arr(&g.spacing));
                let _ = writeln!(out, "origin = {}", arr(&g.origin));
                if let Some(j) = g.jitter {
                    let _ = writeln!(out, "jitter = {}", num(j));
                }
                if let Some(s) = g.seed {
                    let _ = writeln!(out, "seed = {s}");
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{Shape, World};
    use glam::Vec3;

    const EXAMPLE: &str = r#"
[world]
gravity = [0.0, -9.81, 0.0]
ticks_per_second = 960
frame_ticks = 16
window = 256
seconds = 10.0

[defaults]
restitution = 0.5
friction = 0.5
density = 1000.0

[[body]]
shape = "plane"
normal = [0.0, 1.0, 0.0]
offset = 0.0
static = true

[[grid]]
shape = "sphere"
radius = 0.5
count = [2, 1, 2]
spacing = [1.1, 1.1, 1.1]
origin = [-5.0, 10.0, -5.0]
jitter = 0.05
seed = 7

[[body]]
shape = "box"
half_extents = [0.5, 0.5, 0.5]
position = [0.0, 5.0, 0.0]
rotation = [0.0, 0.0, 0.0, 1.0]
velocity = [1, 0, 0]
angular_velocity = [0.0, 0.0, 0.0]
mass = 1.0
"#;

    #[test]
    fn reads_the_design_example_in_file_order() {
        let s = from_toml_str(EXAMPLE).unwrap();
        assert_eq!(s.world, World::default());
        assert_eq!(s.bodies.len(), 6);
        assert!(matches!(s.bodies[0].shape, Shape::Plane { .. }));
        assert!(s.bodies[0].is_static);
        for b in &s.bodies[1..5] {
            assert_eq!(b.shape, Shape::Sphere { radius: 0.5 });
            assert_eq!(b.restitution, 0.5);
        }
        let p = s.bodies[2].position;
        assert!((p - Vec3::new(-3.9, 10.0, -5.0)).abs().max_element() <= 0.05 + 1e-6);
        assert_eq!(s.bodies[5].mass, 1.0);
        assert_eq!(s.bodies[5].velocity, Vec3::X);
    }

    #[test]
    fn unknown_keys_and_bad_syntax_give_the_line() {
        let e = from_toml_str("[[body]]\nshape = \"sphere\"\nradiuss = 1.0\n").unwrap_err();
        let m = e.to_string();
        assert!(m.starts_with("3:1: unknown field `radiuss`"), "{m}");
        let e = from_toml_str("[world]\ngravity = [0, 0\n").unwrap_err();
        assert!(matches!(e, SceneError::Parse { line: 2, .. }), "{e}");
        assert!(!e.to_string().contains('\n'));
        let e = from_toml_str("[wrold]\n").unwrap_err();
        assert!(e.to_string().contains("unknown field `wrold`"), "{e}");
        let e = from_toml_str("[[grid]]\nshape = \"sphere\"\nradius = 1.0\nposition = [0, 0, 0]\n")
            .unwrap_err();
        assert!(e.to_string().contains("unknown field `position`"), "{e}");
    }

    #[test]
    fn invalid_values_name_body_line_and_field() {
        let text = "[[body]]\nshape = \"sphere\"\nradius = 1.0\n\n[[body]]\nshape = \"sphere\"\nradius = -1\n";
        let e = from_toml_str(text).unwrap_err();
        assert_eq!(
            e.to_string(),
            "body 1 (line 5): radius must be positive, got -1"
        );
        let e =
            from_toml_str("[[body]]\nshape = \"sphere\"\nradius = 1.0\nposition = [nan, 0, 0]\n")
                .unwrap_err();
        assert_eq!(
            e.to_string(),
            "body 0 (line 1): position must be finite, got [NaN, 0, 0]"
        );
        let e = from_toml_str(
            "[world]\nticks_per_second = -5\n[[body]]\nshape = \"sphere\"\nradius = 1.0\n",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("world: ticks_per_second"), "{e}");
    }

    #[test]
    fn each_item_has_the_line_of_its_header() {
        // Bodies and grids interleaved, with comments and blank lines between: the lines
        // counted on from item to item equal each header's line counted from the start.
        let text = "# a scene\n[world]\nseconds = 1.0\n\n[[body]]\nshape = \"sphere\"\nradius = 1.0\n\n\
                    [[grid]]\nshape = \"sphere\"\nradius = 0.5\ncount = [2, 1, 1]\n\
                    spacing = [1.5, 0, 0]\norigin = [0, 5, 0]\n# between\n\n[[body]]\n\
                    shape = \"sphere\"\nradius = 2.0\nposition = [0, 9, 0]\n[[body]]\n\
                    shape = \"sphere\"\nradius = 3.0\n";
        let headers: Vec<usize> = text
            .match_indices("[[")
            .map(|(i, _)| line_col(text, i).0)
            .collect();
        assert_eq!(headers, [5, 9, 17, 21]);
        let b = parse_toml(text).unwrap();
        let lines: Vec<usize> = b.lines.iter().map(|l| l.expect("a file's item")).collect();
        assert_eq!(lines, headers);
        // The last body's error names its line.
        let bad = text.replace("radius = 3.0", "radius = -3.0");
        let e = from_toml_str(&bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            "body 4 (line 21): radius must be positive, got -3"
        );
    }

    #[test]
    fn missing_file_is_a_read_error() {
        let e = load(Path::new("/nonexistent/dir/x.toml")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot read scene file /nonexistent/dir/x.toml")
        );
    }

    #[test]
    fn written_descriptions_read_back_identically() {
        let b = parse_toml(EXAMPLE).unwrap();
        let text = to_toml(&b);
        let again = parse_toml(&text).unwrap();
        assert_eq!(again.world, b.world);
        assert_eq!(again.defaults, b.defaults);
        assert_eq!(again.items, b.items);
        assert_eq!(again.build().unwrap(), b.build().unwrap());
    }
}
