//! `timewarp view`: one self-contained HTML page that plays a recorded run in a browser.
//!
//! The page needs no network and no server: it is one file holding the viewer (`viewer.html`,
//! `viewer.css` and `viewer.js` beside this file, built in with `include_str!`) and the run
//! itself. The run comes from the `.glb` file of `timewarp run --out` ([`glb::decode`]), which
//! carries its shapes, or from its `.csv` file with the scene it ran ([`Recording::from_csv`]).
//!
//! What the page holds:
//!
//! - `<script type="application/json" id="tw-meta">`: the title, the frame times, every body
//!   (its kind, its size as the scale of a unit shape, its pose at the start: for a plane the
//!   square the glTF file draws), the ids of the dynamic bodies, whether groups were recorded,
//!   the speed that the colour scale tops out at (the 99th percentile of the run's speeds), and
//!   where each array lies in the data;
//! - `<script type="text/plain" id="tw-data">`: the frames, base64 of little-endian arrays laid
//!   out body by body (all frames of dynamic body 0, then of body 1, ...): positions (3 f32),
//!   rotations (4 f32), speeds (f32) and, if recorded, groups (u32). Body-major keeps a
//!   resting body's repeated values together, which gzip (`"encoding": "gzip"`, undone in the
//!   page by the browser's `DecompressionStream`) then shrinks;
//! - the viewer: a small WebGL2 renderer that draws each kind of shape with one instanced call
//!   per frame, and the player: play and pause, a time slider, speed, an orbit camera, colours
//!   by speed, by contact group (where recorded) or by shape. Its camera and its URL hash
//!   (which pins the time, the camera and the colours for tests) are documented in
//!   `viewer.js`.
//!
//! The page is written atomically ([`AtomicFile`]), like every output.

use std::io::Write;
use std::path::Path;

use base64::Engine;
use glam::Vec3;
use serde::Serialize;

use crate::output::glb::{self, node_pose};
use crate::output::{AtomicFile, Recording};
use crate::scene::{Scene, Shape};

const HTML: &str = include_str!("viewer.html");
const CSS: &str = include_str!("viewer.css");
const JS: &str = include_str!("viewer.js");

/// One body as the page draws it: a unit shape scaled by `size`, at a pose.
#[derive(Serialize)]
struct BodyMeta {
    /// `sphere` (unit radius), `box` (unit half extents), `cylinder` (unit radius and half
    /// height, along y) or `plane` (a square of unit half side in x-z, facing +y).
    kind: &'static str,
    size: [f32; 3],
    position: [f32; 3],
    rotation: [f32; 4],
    #[serde(rename = "static")]
    is_static: bool,
}

/// Byte offset and element count of an array in the data.
#[derive(Serialize, Clone, Copy)]
struct Span {
    offset: usize,
    count: usize,
}

#[derive(Serialize)]
struct Layout {
    positions: Span,
    rotations: Span,
    speeds: Span,
    groups: Option<Span>,
}

#[derive(Serialize)]
struct Meta<'a> {
    title: &'a str,
    source: &'a str,
    generator: String,
    times: &'a [f64],
    bodies: Vec<BodyMeta>,
    dynamic: &'a [u32],
    speed_scale: f32,
    encoding: &'static str,
    /// Bytes of the data once decoded.
    bytes: usize,
    layout: Layout,
}

/// How the data is stored in the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// base64 of the arrays.
    Raw,
    /// base64 of their gzip.
    Gzip,
}

/// What [`write_page`] wrote.
#[derive(Clone, Copy, Debug)]
pub struct PageStats {
    pub frames: usize,
    pub bodies: usize,
    /// Bytes of the page.
    pub bytes: u64,
}

/// Reads the recording in `path`: a `.glb` written by `timewarp run`, or a `.csv` of a run
/// of `scene` (named `title`).
pub fn read_recording(path: &Path, scene: Option<(&Scene, &str)>) -> Result<Recording, String> {
    let name = path.display().to_string();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("glb") => {
            if scene.is_some() {
                return Err(format!(
                    "{name}: a .glb file carries its own shapes; --scene and --bodies are for .csv files"
                ));
            }
            let bytes = std::fs::read(path).map_err(|e| format!("cannot read {name}: {e}"))?;
            glb::decode(&bytes, &name)
        }
        Some("csv") => {
            let (scene, title) = scene.ok_or_else(|| {
                format!("{name}: a .csv file has no shapes; name the scene it ran with --scene")
            })?;
            let file = std::fs::File::open(path).map_err(|e| format!("cannot read {name}: {e}"))?;
            Recording::from_csv(
                std::io::BufReader::with_capacity(1 << 16, file),
                &name,
                title,
                scene,
            )
        }
        _ => Err(format!(
            "{name}: unsupported input; view plays the .glb or .csv file of `timewarp run --out`"
        )),
    }
}

fn body_meta(rec: &Recording) -> Vec<BodyMeta> {
    rec.bodies
        .iter()
        .map(|b| {
            let (position, rotation) = node_pose(rec, b);
            let (kind, size) = match b.shape {
                Shape::Sphere { radius } => ("sphere", Vec3::splat(radius)),
                Shape::Cuboid { half_extents } => ("box", half_extents),
                Shape::Cylinder {
                    radius,
                    half_height,
                } => ("cylinder", Vec3::new(radius, half_height, radius)),
                Shape::Plane { normal, offset } => {
                    let half = glb::plane_square(rec, normal, offset).1;
                    ("plane", Vec3::new(half, 1.0, half))
                }
            };
            BodyMeta {
                kind,
                size: size.to_array(),
                position: position.to_array(),
                rotation: rotation.to_array(),
                is_static: b.is_static,
            }
        })
        .collect()
}

/// The speed the colour scale tops out at: the 99th percentile of the run's speeds (so that
/// one fast body does not leave the rest dark), at least 1 mm/s.
fn speed_scale(speeds: &[f32]) -> f32 {
    if speeds.is_empty() {
        return 1.0;
    }
    let mut v: Vec<f32> = speeds.iter().copied().filter(|s| s.is_finite()).collect();
    if v.is_empty() {
        return 1.0;
    }
    let k = ((v.len() - 1) as f64 * 0.99).round() as usize;
    let (_, x, _) = v.select_nth_unstable_by(k, f32::total_cmp);
    x.max(1e-3)
}

/// The frames as the page's data: body-major arrays, and where each lies.
fn data(rec: &Recording) -> (Vec<u8>, Layout) {
    let (f, d) = (rec.frames(), rec.dynamic.len());
    let groups = rec.groups.as_deref();
    let per = 4 * (3 + 4 + 1 + usize::from(groups.is_some()));
    let mut out = Vec::with_capacity(f * d * per);
    let span = |out: &Vec<u8>, width: usize| Span {
        offset: out.len(),
        count: f * d * width,
    };
    let positions = span(&out, 3);
    for j in 0..d {
        for k in 0..f {
            for x in rec.positions[k * d + j].to_array() {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
    let rotations = span(&out, 4);
    for j in 0..d {
        for k in 0..f {
            for x in rec.rotations[k * d + j].to_array() {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
    let speeds = span(&out, 1);
    for j in 0..d {
        for k in 0..f {
            out.extend_from_slice(&rec.speeds[k * d + j].to_le_bytes());
        }
    }
    let groups = groups.map(|g| {
        let s = span(&out, 1);
        for j in 0..d {
            for k in 0..f {
                out.extend_from_slice(&g[k * d + j].to_le_bytes());
            }
        }
        s
    });
    (
        out,
        Layout {
            positions,
            rotations,
            speeds,
            groups,
        },
    )
}

/// `text` safe inside an HTML element and attribute.
fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `template` with every `{{NAME}}` replaced by its value in `slots`, in one pass (a value
/// that holds `{{...}}` stays as it is).
fn fill(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find("}}").and_then(|j| {
            let name = &after[..j];
            slots.iter().find(|s| s.0 == name).map(|s| (s.1, j))
        }) {
            Some((value, j)) => {
                out.push_str(value);
                rest = &after[j + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Writes the page of `rec` to `out` (`source` names the file it came from, on the page).
pub fn write_page(
    rec: &Recording,
    source: &str,
    out: &Path,
    encoding: Encoding,
) -> Result<PageStats, String> {
    rec.check().map_err(|e| format!("{source}: {e}"))?;
    if rec.frames() == 0 {
        return Err(format!("{source}: no frames to play"));
    }
    let (bytes, layout) = data(rec);
    let payload: std::borrow::Cow<[u8]> = match encoding {
        Encoding::Raw => std::borrow::Cow::Borrowed(&bytes),
        Encoding::Gzip => {
            let mut z = flate2::write::GzEncoder::new(
                Vec::with_capacity(bytes.len() / 2),
                flate2::Compression::fast(),
            );
            std::borrow::Cow::Owned(
                z.write_all(&bytes)
                    .and_then(|()| z.finish())
                    .map_err(|e| e.to_string())?,
            )
        }
    };
    let meta = Meta {
        title: &rec.title,
        source,
        generator: format!("timewarp {}", env!("CARGO_PKG_VERSION")),
        times: &rec.times,
        bodies: body_meta(rec),
        dynamic: &rec.dynamic,
        speed_scale: speed_scale(&rec.speeds),
        encoding: match encoding {
            Encoding::Raw => "raw",
            Encoding::Gzip => "gzip",
        },
        bytes: bytes.len(),
        layout,
    };
    // JSON never needs a raw '<' outside strings, and inside them "\u003c" means the same:
    // no "</script>" can end the element early.
    let meta = serde_json::to_string(&meta)
        .map_err(|e| e.to_string())?
        .replace('<', "\\u003c");
    let (head, tail) = HTML
        .split_once("{{DATA}}")
        .expect("viewer.html has a {{DATA}} slot");
    let title = escape_html(&rec.title);
    let slots = [
        ("TITLE", title.as_str()),
        ("CSS", CSS),
        ("META", meta.as_str()),
        ("JS", JS),
    ];
    let (head, tail) = (fill(head, &slots), fill(tail, &slots));
    let mut file = AtomicFile::create(out).map_err(|e| format!("cannot create {e}"))?;
    let write = |file: &mut AtomicFile| -> std::io::Result<()> {
        file.write_all(head.as_bytes())?;
        // base64 in lines of 76 characters (57 bytes), streamed.
        let mut line = String::with_capacity(80);
        for chunk in payload.chunks(57 * 1024) {
            for piece in chunk.chunks(57) {
                line.clear();
                base64::engine::general_purpose::STANDARD.encode_string(piece, &mut line);
                line.push('\n');
                file.write_all(line.as_bytes())?;
            }
        }
        file.write_all(tail.as_bytes())?;
        file.commit()
    };
    write(&mut file).map_err(|e| format!("cannot write {e}"))?;
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    Ok(PageStats {
        frames: rec.frames(),
        bodies: rec.bodies.len(),
        bytes,
    })
}

/// The page's path for an input `file` when `--out` is not given: the same name with `.html`.
pub fn default_page(file: &Path) -> std::path::PathBuf {
    file.with_extension("html")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_filled_in_one_pass() {
        let slots = [("A", "{{B}}"), ("B", "b")];
        assert_eq!(fill("x{{A}}y{{B}}z{{C}}", &slots), "x{{B}}ybz{{C}}");
        assert_eq!(fill("{{", &slots), "{{");
        assert_eq!(
            escape_html("<a href=\"&\">"),
            "&lt;a href=&quot;&amp;&quot;&gt;"
        );
    }

    #[test]
    fn the_colour_scale_tops_out_at_the_99th_percentile() {
        let mut speeds: Vec<f32> = (0..=1000).map(|i| i as f32 / 100.0).collect();
        speeds.push(f32::NAN);
        speeds.reverse();
        assert_eq!(speed_scale(&speeds), 9.9);
        assert_eq!(speed_scale(&[0.0, 0.0]), 1e-3);
        assert_eq!(speed_scale(&[]), 1.0);
    }

    #[test]
    fn the_data_is_laid_out_body_by_body() {
        let scene = crate::output::test_scene();
        let mut rec = Recording::new("t", &scene);
        for f in 0..3u64 {
            let states: Vec<_> = scene
                .bodies
                .iter()
                .enumerate()
                .map(|(i, b)| crate::dynamics::BodyState {
                    position: Vec3::new(i as f32, f as f32, 0.0),
                    ..crate::dynamics::BodyState::from_desc(b)
                })
                .collect();
            rec.push_frame(f, f as f64, &states).unwrap();
        }
        rec.groups = Some((0..6).collect());
        let (bytes, layout) = data(&rec);
        let f32_at = |k: usize| f32::from_le_bytes(bytes[4 * k..4 * k + 4].try_into().unwrap());
        // Body 1's three positions, then body 3's.
        let xs: Vec<f32> = (0..18).map(f32_at).collect();
        assert_eq!(xs[..9], [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 2.0, 0.0]);
        assert_eq!(xs[9..], [3.0, 0.0, 0.0, 3.0, 1.0, 0.0, 3.0, 2.0, 0.0]);
        assert_eq!((layout.rotations.offset, layout.rotations.count), (72, 24));
        let g = layout.groups.unwrap();
        let group =
            |k: usize| u32::from_le_bytes(bytes[g.offset + 4 * k..][..4].try_into().unwrap());
        // Frame-major groups 0..6 (frame f, body j at 2f + j) come out body-major.
        assert_eq!((0..6).map(group).collect::<Vec<_>>(), [0, 2, 4, 1, 3, 5]);
        assert_eq!(bytes.len(), 6 * 9 * 4);
    }
}
