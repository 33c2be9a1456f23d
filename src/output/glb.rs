//! The glTF file (DESIGN.md, "Command line": `--out FILE.glb`): the committed frames as an
//! animated glTF 2.0 binary, for any glTF tool (the Khronos glTF validator finds no error or
//! warning in it; three.js's `GLTFLoader` plays it).
//!
//! The document (made with the `gltf` crate's `json` types, serialised by serde) holds:
//!
//! - a **mesh per shape**: bodies with the same shape and the same static flag share one
//!   (`meshes.rs`: a sphere, a box, a cylinder along local y, and for a static plane a
//!   large square in its surface, centred under the other bodies), with two materials, one for
//!   dynamic and one for static bodies;
//! - a **node per body**, in scene order, named `body I`, at its initial pose (a plane's square
//!   at the foot of the scene's centre on it), with `extras` that say what the body is:
//!   `{"body": I, "static": B, "shape": "sphere", "radius": R}` (`"box"` with `half_extents`,
//!   `"cylinder"` with `radius` and `half_height`, `"plane"` with `normal` and `offset`);
//! - one **animation** of the dynamic bodies: per body a translation and a rotation channel,
//!   both sampled at the committed frames (one shared accessor of frame times, in seconds as
//!   f32) with LINEAR interpolation (rotations are then slerped). The samples are the
//!   committed f32 values bit for bit: a body's samples equal its rows of the CSV file of the
//!   same run. Static bodies have no channel;
//! - the scene's name in the asset (`asset.extras.scene`, and as the glTF scene's name), the
//!   generator `timewarp VERSION`;
//! - under the root's `extras.timewarp`, two accessors that no glTF property uses, for
//!   `timewarp view`: `speeds`, the speed of each dynamic body at each frame (f32, frame-major),
//!   and, where the run recorded contact groups, `groups` (u32, frame-major; the values of
//!   [`super::Recording`]).
//!
//! The binary container is written here: the 12-byte header (`glTF`, version 2, total length),
//! the JSON chunk padded with spaces to a multiple of 4 bytes, the BIN chunk padded with zeros;
//! every buffer view starts at a multiple of 4 bytes. The sink keeps the run in memory (28
//! bytes per dynamic body and frame, plus 4 for the speed and 4 for the group: about 43 MB for
//! `cylinders` 2000 over 10 s) since glTF wants each body's samples together, and writes the
//! file at the end, atomically ([`super::AtomicFile`]), as the CSV sink does.
//!
//! [`decode`] reads such a file back (with the `gltf` crate) into a [`Recording`].

use std::collections::HashMap;
use std::io;

use glam::{Quat, Vec3};
use gltf::json;
use json::validation::Checked::Valid;
use json::validation::USize64;
use serde::{Deserialize, Serialize};

use super::atomic::AtomicFile;
use super::meshes::{self, Mesh};
use super::recording::{RecordedBody, Recording};
use super::sink::FrameSink;
use crate::dynamics::BodyState;
use crate::scene::{Scene, Shape};

/// What a node's `extras` say about its body.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct BodyExtras {
    body: u32,
    #[serde(rename = "static")]
    is_static: bool,
    #[serde(flatten)]
    shape: ShapeExtras,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "shape", rename_all = "lowercase")]
enum ShapeExtras {
    Sphere { radius: f32 },
    Box { half_extents: [f32; 3] },
    Cylinder { radius: f32, half_height: f32 },
    Plane { normal: [f32; 3], offset: f32 },
}

impl From<Shape> for ShapeExtras {
    fn from(s: Shape) -> Self {
        match s {
            Shape::Sphere { radius } => ShapeExtras::Sphere { radius },
            Shape::Cuboid { half_extents } => ShapeExtras::Box {
                half_extents: half_extents.to_array(),
            },
            Shape::Cylinder {
                radius,
                half_height,
            } => ShapeExtras::Cylinder {
                radius,
                half_height,
            },
            Shape::Plane { normal, offset } => ShapeExtras::Plane {
                normal: normal.to_array(),
                offset,
            },
        }
    }
}

impl From<ShapeExtras> for Shape {
    fn from(s: ShapeExtras) -> Self {
        match s {
            ShapeExtras::Sphere { radius } => Shape::Sphere { radius },
            ShapeExtras::Box { half_extents } => Shape::Cuboid {
                half_extents: Vec3::from(half_extents),
            },
            ShapeExtras::Cylinder {
                radius,
                half_height,
            } => Shape::Cylinder {
                radius,
                half_height,
            },
            ShapeExtras::Plane { normal, offset } => Shape::Plane {
                normal: Vec3::from(normal),
                offset,
            },
        }
    }
}

/// The root's `extras.timewarp`.
#[derive(Debug, Serialize, Deserialize)]
struct RootExtras {
    /// Accessor of the speeds.
    speeds: u32,
    /// Accessor of the groups, if recorded.
    groups: Option<u32>,
}

#[derive(Debug, Serialize, Deserialize)]
struct RootExtrasWrapper {
    timewarp: RootExtras,
}

#[derive(Debug, Serialize, Deserialize)]
struct AssetExtras {
    scene: String,
}

fn raw(value: &impl Serialize) -> json::Extras {
    serde_json::value::to_raw_value(value).ok()
}

/// The BIN chunk and the JSON document that describes it.
struct Builder {
    root: json::Root,
    bin: Vec<u8>,
    buffer: json::Index<json::Buffer>,
}

impl Builder {
    fn new() -> Builder {
        let mut root = json::Root::default();
        let buffer = root.push(json::Buffer {
            byte_length: USize64(0),
            name: None,
            uri: None,
            extensions: None,
            extras: None,
        });
        Builder {
            root,
            bin: Vec::new(),
            buffer,
        }
    }

    /// A buffer view of `bytes`, starting at a multiple of 4.
    fn view(
        &mut self,
        bytes: &[u8],
        target: Option<json::buffer::Target>,
    ) -> json::Index<json::buffer::View> {
        while self.bin.len() % 4 != 0 {
            self.bin.push(0);
        }
        let offset = self.bin.len();
        self.bin.extend_from_slice(bytes);
        self.root.push(json::buffer::View {
            buffer: self.buffer,
            byte_length: USize64(bytes.len() as u64),
            byte_offset: Some(USize64(offset as u64)),
            byte_stride: None,
            name: None,
            target: target.map(Valid),
            extensions: None,
            extras: None,
        })
    }

    /// An accessor of `count` elements of `type_` over a fresh view of `bytes`.
    fn accessor(
        &mut self,
        bytes: &[u8],
        count: usize,
        component: json::accessor::ComponentType,
        type_: json::accessor::Type,
        bounds: Option<(Vec<f32>, Vec<f32>)>,
        target: Option<json::buffer::Target>,
    ) -> json::Index<json::Accessor> {
        let view = self.view(bytes, target);
        let (min, max) = match bounds {
            Some((lo, hi)) => (Some(json::Value::from(lo)), Some(json::Value::from(hi))),
            None => (None, None),
        };
        self.root.push(json::Accessor {
            buffer_view: Some(view),
            byte_offset: None,
            count: USize64(count as u64),
            component_type: Valid(json::accessor::GenericComponentType(component)),
            extensions: None,
            extras: None,
            type_: Valid(type_),
            min,
            max,
            name: None,
            normalized: false,
            sparse: None,
        })
    }

    fn floats(
        &mut self,
        values: &[f32],
        type_: json::accessor::Type,
        bounds: Option<(Vec<f32>, Vec<f32>)>,
        target: Option<json::buffer::Target>,
    ) -> json::Index<json::Accessor> {
        let width = type_.multiplicity();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.accessor(
            &bytes,
            values.len() / width,
            json::accessor::ComponentType::F32,
            type_,
            bounds,
            target,
        )
    }

    fn mesh(
        &mut self,
        m: &Mesh,
        material: json::Index<json::Material>,
        name: String,
    ) -> json::Index<json::Mesh> {
        use json::accessor::Type;
        use json::buffer::Target::{ArrayBuffer, ElementArrayBuffer};
        let (lo, hi) = m.bounds();
        let flat = |v: &[[f32; 3]]| v.iter().flatten().copied().collect::<Vec<f32>>();
        let positions = self.floats(
            &flat(&m.positions),
            Type::Vec3,
            Some((lo.to_vec(), hi.to_vec())),
            Some(ArrayBuffer),
        );
        let normals = self.floats(&flat(&m.normals), Type::Vec3, None, Some(ArrayBuffer));
        let bytes: Vec<u8> = m.indices.iter().flat_map(|i| i.to_le_bytes()).collect();
        let indices = self.accessor(
            &bytes,
            m.indices.len(),
            json::accessor::ComponentType::U16,
            Type::Scalar,
            None,
            Some(ElementArrayBuffer),
        );
        let mut attributes = std::collections::BTreeMap::new();
        attributes.insert(Valid(json::mesh::Semantic::Positions), positions);
        attributes.insert(Valid(json::mesh::Semantic::Normals), normals);
        self.root.push(json::Mesh {
            extensions: None,
            extras: None,
            name: Some(name),
            primitives: vec![json::mesh::Primitive {
                attributes,
                extensions: None,
                extras: None,
                indices: Some(indices),
                material: Some(material),
                mode: Valid(json::mesh::Mode::Triangles),
                targets: None,
            }],
            weights: None,
        })
    }

    fn material(&mut self, name: &str, rgb: [f32; 3]) -> json::Index<json::Material> {
        self.root.push(json::Material {
            name: Some(name.to_string()),
            pbr_metallic_roughness: json::material::PbrMetallicRoughness {
                base_color_factor: json::material::PbrBaseColorFactor([
                    rgb[0], rgb[1], rgb[2], 1.0,
                ]),
                metallic_factor: json::material::StrengthFactor(0.0),
                roughness_factor: json::material::StrengthFactor(0.8),
                ..Default::default()
            },
            ..Default::default()
        })
    }
}

/// Where a plane's square goes, and how big it is: centred at the foot of the centre of the
/// other bodies' initial positions on the plane, wide enough to hold them all with a margin.
pub(crate) fn plane_square(rec: &Recording, normal: Vec3, offset: f32) -> (Vec3, f32) {
    let points: Vec<Vec3> = rec
        .bodies
        .iter()
        .filter(|b| !matches!(b.shape, Shape::Plane { .. }))
        .map(|b| b.position)
        .collect();
    let (lo, hi) = points.iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    let (centre, extent) = if points.is_empty() {
        (Vec3::ZERO, 0.0)
    } else {
        ((lo + hi) * 0.5, (hi - lo).length())
    };
    let foot = centre - normal * (normal.dot(centre) - offset);
    (foot, extent.max(10.0) * 1.5)
}

/// The pose of a body's node: a plane's square (see [`plane_square`]), else the body's pose.
pub(crate) fn node_pose(rec: &Recording, b: &RecordedBody) -> (Vec3, Quat) {
    match b.shape {
        Shape::Plane { normal, offset } => (
            plane_square(rec, normal, offset).0,
            Quat::from_rotation_arc(Vec3::Y, normal),
        ),
        _ => (b.position, b.rotation),
    }
}

fn mesh_of(rec: &Recording, shape: Shape) -> Mesh {
    match shape {
        Shape::Sphere { radius } => meshes::sphere(radius),
        Shape::Cuboid { half_extents } => meshes::cuboid(half_extents),
        Shape::Cylinder {
            radius,
            half_height,
        } => meshes::cylinder(radius, half_height),
        Shape::Plane { normal, offset } => meshes::square(plane_square(rec, normal, offset).1),
    }
}

/// The bits of a shape and a static flag: bodies with equal keys share a mesh.
fn shape_key(shape: &Shape, is_static: bool) -> (u8, [u32; 4], bool) {
    let b = |x: f32| x.to_bits();
    match *shape {
        Shape::Sphere { radius } => (0, [b(radius), 0, 0, 0], is_static),
        Shape::Cuboid { half_extents: h } => (1, [b(h.x), b(h.y), b(h.z), 0], is_static),
        Shape::Cylinder {
            radius,
            half_height,
        } => (2, [b(radius), b(half_height), 0, 0], is_static),
        // Planes' squares differ by pose and size: one mesh each.
        Shape::Plane { normal: n, offset } => (3, [b(n.x), b(n.y), b(n.z), b(offset)], is_static),
    }
}

fn shape_name(shape: &Shape) -> &'static str {
    match shape {
        Shape::Sphere { .. } => "sphere",
        Shape::Cuboid { .. } => "box",
        Shape::Cylinder { .. } => "cylinder",
        Shape::Plane { .. } => "plane",
    }
}

/// The glTF binary of `rec` (which must satisfy [`Recording::check`]).
pub fn encode(rec: &Recording) -> Result<Vec<u8>, String> {
    use json::accessor::Type;
    rec.check()?;
    let mut b = Builder::new();
    b.root.asset = json::Asset {
        generator: Some(format!("timewarp {}", env!("CARGO_PKG_VERSION"))),
        extras: raw(&AssetExtras {
            scene: rec.title.clone(),
        }),
        ..Default::default()
    };
    let dynamic_material = b.material("dynamic", [0.85, 0.55, 0.25]);
    let static_material = b.material("static", [0.62, 0.63, 0.66]);
    let mut meshes: HashMap<(u8, [u32; 4], bool), json::Index<json::Mesh>> = HashMap::new();
    let mut nodes = Vec::with_capacity(rec.bodies.len());
    for (i, body) in rec.bodies.iter().enumerate() {
        let key = shape_key(&body.shape, body.is_static);
        let mesh = match meshes.get(&key) {
            Some(&m) => m,
            None => {
                let material = if body.is_static {
                    static_material
                } else {
                    dynamic_material
                };
                let name = format!("{} {}", shape_name(&body.shape), meshes.len());
                let m = b.mesh(&mesh_of(rec, body.shape), material, name);
                meshes.insert(key, m);
                m
            }
        };
        let (t, q) = node_pose(rec, body);
        nodes.push(b.root.push(json::Node {
            mesh: Some(mesh),
            name: Some(format!("body {i}")),
            translation: Some(t.to_array()),
            rotation: Some(json::scene::UnitQuaternion(q.to_array())),
            extras: raw(&BodyExtras {
                body: i as u32,
                is_static: body.is_static,
                shape: body.shape.into(),
            }),
            ..Default::default()
        }));
    }
    b.root.push(json::Scene {
        extensions: None,
        extras: None,
        name: Some(rec.title.clone()),
        nodes: nodes.clone(),
    });
    b.root.scene = Some(json::Index::new(0));

    let frames = rec.frames();
    let d = rec.dynamic.len();
    if frames > 0 && d > 0 {
        let times: Vec<f32> = rec.times.iter().map(|&t| t as f32).collect();
        let input = b.floats(
            &times,
            Type::Scalar,
            Some((vec![times[0]], vec![times[frames - 1]])),
            None,
        );
        let mut samplers = Vec::with_capacity(2 * d);
        let mut channels = Vec::with_capacity(2 * d);
        let mut values: Vec<f32> = Vec::with_capacity(4 * frames);
        for (j, &id) in rec.dynamic.iter().enumerate() {
            for path in [
                json::animation::Property::Translation,
                json::animation::Property::Rotation,
            ] {
                values.clear();
                let type_ = if path == json::animation::Property::Translation {
                    for f in 0..frames {
                        values.extend(rec.positions[f * d + j].to_array());
                    }
                    Type::Vec3
                } else {
                    for f in 0..frames {
                        values.extend(rec.rotations[f * d + j].to_array());
                    }
                    Type::Vec4
                };
                let output = b.floats(&values, type_, None, None);
                let sampler = json::Index::new(samplers.len() as u32);
                samplers.push(json::animation::Sampler {
                    extensions: None,
                    extras: None,
                    input,
                    interpolation: Valid(json::animation::Interpolation::Linear),
                    output,
                });
                channels.push(json::animation::Channel {
                    sampler,
                    target: json::animation::Target {
                        extensions: None,
                        extras: None,
                        node: nodes[id as usize],
                        path: Valid(path),
                    },
                    extensions: None,
                    extras: None,
                });
            }
        }
        b.root.push(json::Animation {
            extensions: None,
            extras: None,
            channels,
            name: Some("committed frames".into()),
            samplers,
        });
    }
    // Empty arrays get no view (glTF wants byteLength >= 1): accessors of nothing are left out.
    let count = frames * d;
    let speeds = if count > 0 {
        b.floats(&rec.speeds, Type::Scalar, None, None).value() as u32
    } else {
        u32::MAX
    };
    let groups = match &rec.groups {
        Some(g) if count > 0 => {
            let bytes: Vec<u8> = g.iter().flat_map(|v| v.to_le_bytes()).collect();
            Some(
                b.accessor(
                    &bytes,
                    count,
                    json::accessor::ComponentType::U32,
                    Type::Scalar,
                    None,
                    None,
                )
                .value() as u32,
            )
        }
        _ => None,
    };
    if count > 0 {
        b.root.extras = raw(&RootExtrasWrapper {
            timewarp: RootExtras { speeds, groups },
        });
    }
    while b.bin.len() % 4 != 0 {
        b.bin.push(0);
    }
    b.root.buffers[0].byte_length = USize64(b.bin.len() as u64);
    if b.bin.is_empty() {
        b.root.buffers.clear(); // no meshes, no frames: nothing to put in a buffer
    }
    let mut text = json::serialize::to_vec(&b.root).map_err(|e| e.to_string())?;
    while text.len() % 4 != 0 {
        text.push(b' ');
    }
    let bin_chunk = if b.bin.is_empty() { 0 } else { 8 + b.bin.len() };
    let total = 12 + 8 + text.len() + bin_chunk;
    let total = u32::try_from(total)
        .map_err(|_| format!("{total} bytes is too large for a glTF binary (at most 4 GiB)"))?;
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(&text);
    if bin_chunk > 0 {
        out.extend_from_slice(&(b.bin.len() as u32).to_le_bytes());
        out.extend_from_slice(b"BIN\0");
        out.extend_from_slice(&b.bin);
    }
    Ok(out)
}

/// Reads a glTF binary written by [`encode`] (`source` names it in errors).
pub fn decode(bytes: &[u8], source: &str) -> Result<Recording, String> {
    let fail = |m: String| format!("{source}: {m}");
    let g = gltf::Gltf::from_slice(bytes)
        .map_err(|e| fail(format!("not a valid glTF binary ({e})")))?;
    let blob = g.blob.as_deref().unwrap_or(&[]);
    let root = g.document.as_json();
    let extras_of = |e: &json::Extras| e.as_ref().map(|r| r.get().to_string());
    let timewarp: Option<RootExtrasWrapper> = extras_of(&root.extras)
        .map(|t| serde_json::from_str(&t))
        .transpose()
        .map_err(|e| fail(format!("bad timewarp data in the root's extras ({e})")))?;
    let title = extras_of(&root.asset.extras)
        .and_then(|t| serde_json::from_str::<AssetExtras>(&t).ok())
        .map(|a| a.scene)
        .ok_or_else(|| {
            fail("not written by `timewarp run` (no scene name in the asset's extras)".into())
        })?;
    let mut bodies: Vec<Option<RecordedBody>> = Vec::new();
    let mut node_body: HashMap<usize, u32> = HashMap::new();
    for node in g.document.nodes() {
        let Some(text) = extras_of(node.extras()) else {
            continue;
        };
        let e: BodyExtras = serde_json::from_str(&text)
            .map_err(|err| fail(format!("node {}: bad body extras ({err})", node.index())))?;
        let (t, r, _) = node.transform().decomposed();
        let i = e.body as usize;
        if i >= bodies.len() {
            bodies.resize(i + 1, None);
        }
        if bodies[i].is_some() {
            return Err(fail(format!("body {i} has two nodes")));
        }
        let shape: Shape = e.shape.into();
        let plane = matches!(shape, Shape::Plane { .. });
        bodies[i] = Some(RecordedBody {
            shape,
            is_static: e.is_static,
            position: if plane { Vec3::ZERO } else { Vec3::from(t) },
            rotation: if plane {
                Quat::IDENTITY
            } else {
                Quat::from_array(r)
            },
        });
        node_body.insert(node.index(), e.body);
    }
    let bodies: Vec<RecordedBody> = bodies
        .into_iter()
        .enumerate()
        .map(|(i, b)| b.ok_or_else(|| fail(format!("no node for body {i}"))))
        .collect::<Result<_, _>>()?;
    let mut rec = Recording {
        title,
        dynamic: (0..bodies.len() as u32)
            .filter(|&i| !bodies[i as usize].is_static)
            .collect(),
        bodies,
        ..Recording::default()
    };
    let d = rec.dynamic.len();
    let column: HashMap<u32, usize> = rec
        .dynamic
        .iter()
        .enumerate()
        .map(|(j, &id)| (id, j))
        .collect();
    let get = |buffer: gltf::Buffer<'_>| (buffer.index() == 0).then_some(blob);
    let mut translations: Vec<Option<Vec<[f32; 3]>>> = vec![None; d];
    let mut rotations: Vec<Option<Vec<[f32; 4]>>> = vec![None; d];
    if let Some(animation) = g.document.animations().next() {
        for channel in animation.channels() {
            let node = channel.target().node().index();
            let &j = node_body
                .get(&node)
                .and_then(|id| column.get(id))
                .ok_or_else(|| {
                    fail(format!(
                        "an animation channel moves node {node}, not a dynamic body"
                    ))
                })?;
            let reader = channel.reader(get);
            let times: Vec<f64> = reader
                .read_inputs()
                .ok_or_else(|| fail("an animation channel without times".into()))?
                .map(f64::from)
                .collect();
            if rec.times.is_empty() {
                rec.times = times;
            } else if times != rec.times {
                return Err(fail("animation channels with different frame times".into()));
            }
            match reader.read_outputs() {
                Some(gltf::animation::util::ReadOutputs::Translations(t)) => {
                    translations[j] = Some(t.collect());
                }
                Some(gltf::animation::util::ReadOutputs::Rotations(r)) => {
                    rotations[j] = Some(r.into_f32().collect());
                }
                _ => {
                    return Err(fail(format!(
                        "node {node}: an animation channel that is not a translation or rotation"
                    )));
                }
            }
        }
    }
    let frames = rec.times.len();
    if frames > 0 {
        for j in 0..d {
            let (Some(t), Some(r)) = (&translations[j], &rotations[j]) else {
                return Err(fail(format!(
                    "body {} has no translation or rotation channel",
                    rec.dynamic[j]
                )));
            };
            if t.len() != frames || r.len() != frames {
                return Err(fail(format!(
                    "body {}: samples for {} and {} frames, expected {frames}",
                    rec.dynamic[j],
                    t.len(),
                    r.len()
                )));
            }
        }
        rec.positions = Vec::with_capacity(frames * d);
        rec.rotations = Vec::with_capacity(frames * d);
        for f in 0..frames {
            for j in 0..d {
                rec.positions
                    .push(Vec3::from(translations[j].as_ref().expect("checked")[f]));
                rec.rotations
                    .push(Quat::from_array(rotations[j].as_ref().expect("checked")[f]));
            }
        }
        let extras =
            timewarp.ok_or_else(|| fail("no timewarp data in the root's extras".into()))?;
        let read = |index: u32| -> Result<gltf::Accessor<'_>, String> {
            g.document
                .accessors()
                .nth(index as usize)
                .ok_or_else(|| fail(format!("no accessor {index}")))
        };
        rec.speeds = gltf::accessor::Iter::<f32>::new(read(extras.timewarp.speeds)?, get)
            .ok_or_else(|| fail("the speeds cannot be read".into()))?
            .collect();
        if let Some(groups) = extras.timewarp.groups {
            rec.groups = Some(
                gltf::accessor::Iter::<u32>::new(read(groups)?, get)
                    .ok_or_else(|| fail("the groups cannot be read".into()))?
                    .collect(),
            );
        }
    }
    rec.check().map_err(fail)?;
    Ok(rec)
}

/// Collects committed frames (and contact groups, where the run hands them out) and writes
/// the glTF binary when the run completes.
pub struct GlbSink {
    file: AtomicFile,
    rec: Recording,
    groups: Vec<u32>,
    /// Every frame so far came with its groups.
    grouped: bool,
}

impl GlbSink {
    /// Opens the temporary file beside `path`; `title` is the scene's name or path.
    pub fn create(path: &std::path::Path, scene: &Scene, title: &str) -> io::Result<GlbSink> {
        Ok(GlbSink {
            file: AtomicFile::create(path)?,
            rec: Recording::new(title, scene),
            groups: Vec::new(),
            grouped: true,
        })
    }
}

impl FrameSink for GlbSink {
    fn frame(&mut self, frame: u64, time: f64, states: &[BodyState]) -> io::Result<()> {
        self.rec
            .push_frame(frame, time, states)
            .map_err(|e| super::atomic::context(self.file.path(), e))?;
        self.grouped &= self.groups.len() == self.rec.positions.len();
        Ok(())
    }

    fn wants_groups(&self) -> bool {
        true
    }

    fn groups(&mut self, _frame: u64, groups: &[u32]) -> io::Result<()> {
        if groups.len() == self.rec.dynamic.len() && self.groups.len() == self.rec.positions.len() {
            self.groups.extend_from_slice(groups);
        } else {
            self.grouped = false;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.grouped && self.rec.frames() > 0 {
            self.rec.groups = Some(std::mem::take(&mut self.groups));
        }
        let bytes = encode(&self.rec)
            .map_err(|e| super::atomic::context(self.file.path(), io::Error::other(e)))?;
        self.file.write_all(&bytes)?;
        self.file.commit()
    }
}
