//! `timewarp run --out FILE.glb` against its contract (DESIGN.md, "Command line"; issue #34):
//! the glTF file, read back with the `gltf` crate, holds a node per body, a mesh per shape,
//! translation and rotation channels of every dynamic body sampled at the committed frames
//! (LINEAR), none for static bodies, and the scene's name in the asset; and each body's samples
//! equal, bit for bit, its rows of the CSV file of the same run (parsed here on their own).

use std::collections::{BTreeSet, HashMap};

#[path = "support/cli.rs"]
mod cli;
use cli::{fails, ok};

use gltf::animation::Property;
use gltf::animation::util::ReadOutputs;

/// Every shape: a ground plane and a static cylinder, two spheres (sharing a mesh), a box
/// and a cylinder falling and tumbling onto them; the last sphere rests on the ground.
const SCENE: &str = r#"
[world]
seconds = 0.5

[[body]]
shape = "plane"
normal = [0.0, 1.0, 0.0]
static = true

[[body]]
shape = "cylinder"
radius = 1.0
half_height = 3.0
position = [0.0, 1.0, 0.0]
rotation = [0.70710677, 0.0, 0.0, 0.70710677]
static = true

[[body]]
shape = "sphere"
radius = 0.5
position = [-0.4, 3.0, 0.0]
velocity = [1.0, 0.0, 0.0]

[[body]]
shape = "box"
half_extents = [0.4, 0.3, 0.2]
position = [1.2, 2.6, 0.5]
angular_velocity = [1.0, 2.0, 3.0]

[[body]]
shape = "cylinder"
radius = 0.3
half_height = 0.5
position = [3.0, 2.0, -1.0]
angular_velocity = [0.0, 0.0, 4.0]

[[body]]
shape = "sphere"
radius = 0.5
position = [-4.0, 0.5, 0.0]
"#;

const STATIC: [usize; 2] = [0, 1];
const DYNAMIC: [usize; 4] = [2, 3, 4, 5];

/// The CSV rows of a run: per body, its (time, 7 numbers: position then rotation) per frame.
fn csv_samples(text: &str) -> HashMap<usize, Vec<(f64, [f32; 7])>> {
    let mut rows: HashMap<usize, Vec<(f64, [f32; 7])>> = HashMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let mut v = [0f32; 7];
        for (k, x) in f[3..10].iter().enumerate() {
            v[k] = x.parse().unwrap();
        }
        rows.entry(f[2].parse().unwrap())
            .or_default()
            .push((f[1].parse().unwrap(), v));
    }
    rows
}

fn extras(e: &gltf::json::Extras) -> serde_json::Value {
    serde_json::from_str(e.as_ref().expect("extras").get()).unwrap()
}

/// Runs the scene with `engine_args` to a .glb and to a .csv and checks the one against the
/// other; returns whether the file recorded contact groups.
fn check_engine(engine_args: &[&str]) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("scene.toml"), SCENE).unwrap();
    let run = |out: &str| {
        let mut args = vec!["run", "scene.toml", "--quiet", "--checksum", "--out", out];
        args.extend_from_slice(engine_args);
        ok(&args, d)
    };
    let sums = (run("run.glb"), run("run.csv"));
    assert_eq!(sums.0, sums.1, "two runs of the same scene");
    let bytes = std::fs::read(d.join("run.glb")).unwrap();
    let csv = csv_samples(&std::fs::read_to_string(d.join("run.csv")).unwrap());
    let frames = csv[&DYNAMIC[0]].len();
    assert_eq!(frames, 31, "frame 0 and 30 frames of 1/60 s");

    // The gltf crate parses and validates the document (indices, types, counts).
    let g = gltf::Gltf::from_slice(&bytes).expect("a valid glTF binary");
    assert_eq!(&bytes[..4], b"glTF");
    assert_eq!(
        u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
        bytes.len()
    );
    let blob = g.blob.as_deref().expect("a BIN chunk");
    let get = |b: gltf::Buffer<'_>| (b.index() == 0).then_some(blob);
    let root = g.document.as_json();
    assert_eq!(extras(&root.asset.extras)["scene"], "scene.toml");
    assert!(
        root.asset
            .generator
            .as_deref()
            .unwrap()
            .starts_with("timewarp ")
    );
    let scene = g.document.default_scene().expect("a default scene");
    assert_eq!(scene.name(), Some("scene.toml"));
    assert_eq!(scene.nodes().count(), 6);

    // A node per body, named by its id, saying its shape; a mesh per shape.
    let mut node_of = HashMap::new();
    let mut mesh_of = HashMap::new();
    for node in g.document.nodes() {
        let id: usize = node
            .name()
            .unwrap()
            .strip_prefix("body ")
            .unwrap()
            .parse()
            .unwrap();
        let e = extras(node.extras());
        assert_eq!(e["body"], id);
        assert_eq!(e["static"], STATIC.contains(&id));
        node_of.insert(node.index(), id);
        mesh_of.insert(id, node.mesh().expect("a mesh").index());
    }
    assert_eq!(node_of.len(), 6);
    let shapes = ["plane", "cylinder", "sphere", "box", "cylinder", "sphere"];
    for (id, shape) in shapes.iter().enumerate() {
        let node = g
            .document
            .nodes()
            .find(|n| node_of[&n.index()] == id)
            .unwrap();
        assert_eq!(extras(node.extras())["shape"], *shape, "body {id}");
    }
    assert_eq!(mesh_of[&2], mesh_of[&5], "the two spheres share their mesh");
    assert_ne!(
        mesh_of[&1], mesh_of[&4],
        "a static and a dynamic cylinder do not"
    );
    assert_eq!(mesh_of.values().collect::<BTreeSet<_>>().len(), 5);
    assert_eq!(g.document.meshes().count(), 5);
    // The sphere's mesh has its radius; the static cylinder sits at its pose.
    let sphere = g.document.meshes().nth(mesh_of[&2]).unwrap();
    let bounds = sphere.primitives().next().unwrap().bounding_box();
    assert_eq!((bounds.min, bounds.max), ([-0.5; 3], [0.5; 3]));
    let cyl = g
        .document
        .nodes()
        .find(|n| node_of[&n.index()] == 1)
        .unwrap();
    let (t, r, _) = cyl.transform().decomposed();
    let loaded = timewarp::scene::load(&d.join("scene.toml")).unwrap();
    assert_eq!(t, [0.0, 1.0, 0.0]);
    assert_eq!(
        r,
        loaded.bodies[1].rotation.to_array(),
        "as loaded (normalised)"
    );

    // One animation: a translation and a rotation channel per dynamic body, LINEAR, at the
    // CSV's times; its samples are the CSV's numbers, bit for bit.
    assert_eq!(g.document.animations().count(), 1);
    let animation = g.document.animations().next().unwrap();
    let mut seen = BTreeSet::new();
    for channel in animation.channels() {
        let id = node_of[&channel.target().node().index()];
        assert!(DYNAMIC.contains(&id), "static body {id} is animated");
        let property = channel.target().property();
        assert!(seen.insert((id, property == Property::Translation)));
        assert_eq!(
            channel.sampler().interpolation(),
            gltf::animation::Interpolation::Linear
        );
        let reader = channel.reader(get);
        let times: Vec<f32> = reader.read_inputs().unwrap().collect();
        let rows = &csv[&id];
        let want_times: Vec<u32> = rows.iter().map(|r| (r.0 as f32).to_bits()).collect();
        assert_eq!(
            times.iter().map(|t| t.to_bits()).collect::<Vec<_>>(),
            want_times
        );
        let got: Vec<Vec<u32>> = match reader.read_outputs().unwrap() {
            ReadOutputs::Translations(t) => t.map(|v| v.map(f32::to_bits).to_vec()).collect(),
            ReadOutputs::Rotations(r) => {
                r.into_f32().map(|v| v.map(f32::to_bits).to_vec()).collect()
            }
            _ => panic!("body {id}: a channel of {property:?}"),
        };
        let span = if property == Property::Translation {
            0..3
        } else {
            3..7
        };
        let want: Vec<Vec<u32>> = rows
            .iter()
            .map(|r| r.1[span.clone()].iter().map(|x| x.to_bits()).collect())
            .collect();
        assert_eq!(got, want, "body {id}, {property:?}");
    }
    assert_eq!(seen.len(), 2 * DYNAMIC.len());
    // The bodies moved (a test of equal but constant samples would prove little).
    for id in [2, 3, 4] {
        assert_ne!(csv[&id][0].1, csv[&id][frames - 1].1, "body {id}");
    }

    // The library reads the file back into what the CSV holds.
    let rec = timewarp::output::glb::decode(&bytes, "run.glb").unwrap();
    let scene = loaded;
    let text = std::fs::read_to_string(d.join("run.csv")).unwrap();
    let from_csv =
        timewarp::output::Recording::from_csv(text.as_bytes(), "run.csv", "scene.toml", &scene)
            .unwrap();
    assert_eq!(rec.positions, from_csv.positions);
    assert_eq!(rec.rotations, from_csv.rotations);
    assert_eq!(rec.speeds, from_csv.speeds);
    assert_eq!(rec.bodies, from_csv.bodies);
    rec.groups.is_some()
}

#[test]
fn the_glb_file_of_the_warp_engine_equals_its_csv_and_records_groups() {
    assert!(check_engine(&["--engine", "warp", "--threads", "2"]));
    assert!(!check_engine(&[
        "--engine",
        "warp",
        "--threads",
        "2",
        "--groups",
        "off"
    ]));
}

#[test]
fn the_glb_file_of_the_frame_engine_equals_its_csv() {
    assert!(!check_engine(&["--engine", "frame", "--threads", "2"]));
}

#[test]
fn the_groups_name_each_bodys_smallest_partner() {
    // Two boxes stacked on the ground fuse into one group that falls asleep; a sphere far
    // away is a group of its own, awake while it flies.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("stack.toml"),
        r#"
[world]
seconds = 2.0
[[body]]
shape = "plane"
normal = [0.0, 1.0, 0.0]
static = true
[[body]]
shape = "box"
half_extents = [0.5, 0.5, 0.5]
position = [0.0, 0.5, 0.0]
[[body]]
shape = "box"
half_extents = [0.5, 0.5, 0.5]
position = [0.0, 1.5, 0.0]
[[body]]
shape = "sphere"
radius = 0.5
position = [10.0, 5.0, 0.0]
velocity = [0.0, 20.0, 0.0]
"#,
    )
    .unwrap();
    ok(&["run", "stack.toml", "--quiet", "--out", "s.glb"], d);
    let rec =
        timewarp::output::glb::decode(&std::fs::read(d.join("s.glb")).unwrap(), "s.glb").unwrap();
    let groups = rec.groups.as_ref().expect("groups recorded");
    let asleep = timewarp::output::GROUP_ASLEEP;
    let last = rec.at(groups, rec.frames() - 1);
    assert_eq!(last[0], last[1], "the stack is one group");
    assert_eq!(last[0] & !asleep, 1, "named by its smallest body");
    assert_ne!(last[0] & asleep, 0, "asleep by 2 s");
    assert_eq!(last[2], 3, "the sphere alone and awake");
}

#[test]
fn an_unwritable_glb_is_one_error_line_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let line = fails(
        &[
            "run",
            "parallel",
            "--bodies",
            "4",
            "--seconds",
            "0.1",
            "--out",
            "no/such/dir/x.glb",
        ],
        dir.path(),
    );
    assert!(
        line.starts_with("error: cannot create no/such/dir/x.glb: "),
        "{line}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
