//! `timewarp view FILE [--out PAGE.html]` (issue #34): the page it writes, and the page at work
//! in a real browser.
//!
//! The browser test runs the page in headless Chromium (`--screenshot` with a virtual time
//! budget, software WebGL2) at two times and checks, against the CSV of the same run, that the
//! pixel at each moving body's centre — projected with the camera the URL hash pins, by the
//! math that `viewer.js` documents, done here with glam — differs from the background (a
//! screenshot of the same view with the moving bodies hidden), and that the picture changes
//! between the two times. Without a browser it says so and passes, unless
//! `TIMEWARP_REQUIRE_BROWSER=1` (set by `.ci/run`, which installs Debian's `chromium`): then a
//! missing browser fails it. `TIMEWARP_CHROMIUM=PATH` names the browser to use.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use glam::{Mat4, Vec3};

#[path = "support/cli.rs"]
mod cli;
use cli::{fails, ok};

/// Three shapes falling apart from each other onto the ground, one sliding sideways.
const SCENE: &str = r#"
[world]
seconds = 1.0

[[body]]
shape = "plane"
normal = [0.0, 1.0, 0.0]
static = true

[[body]]
shape = "sphere"
radius = 0.6
position = [-3.0, 3.0, 0.0]

[[body]]
shape = "box"
half_extents = [0.6, 0.5, 0.5]
position = [0.0, 4.0, 0.0]
angular_velocity = [0.0, 0.0, 2.0]

[[body]]
shape = "cylinder"
radius = 0.5
half_height = 0.7
position = [3.0, 3.5, 0.0]

[[body]]
shape = "sphere"
radius = 0.5
position = [-1.5, 0.5, 2.0]
velocity = [4.0, 0.0, 0.0]
"#;

/// Runs the scene to `run.glb` and `run.csv` in `dir` (the same run: equal checksums).
fn record(dir: &Path) {
    std::fs::write(dir.join("scene.toml"), SCENE).unwrap();
    let a = ok(
        &[
            "run",
            "scene.toml",
            "--quiet",
            "--checksum",
            "--out",
            "run.glb",
        ],
        dir,
    );
    let b = ok(
        &[
            "run",
            "scene.toml",
            "--quiet",
            "--checksum",
            "--out",
            "run.csv",
        ],
        dir,
    );
    assert_eq!(a, b);
}

/// Rows of the CSV: (time, body, position).
fn csv_positions(path: &Path) -> Vec<(f64, usize, Vec3)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let n = |i: usize| f[i].parse::<f32>().unwrap();
            (
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                Vec3::new(n(3), n(4), n(5)),
            )
        })
        .collect()
}

#[test]
fn view_writes_one_self_contained_page() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    record(d);
    let said = ok(&["view", "run.glb"], d);
    assert!(
        said.starts_with("wrote run.html (61 frames of 5 bodies"),
        "{said}"
    );
    let page = std::fs::read_to_string(d.join("run.html")).unwrap();
    assert!(page.starts_with("<!doctype html>"));
    assert!(page.contains("<title>scene.toml · timewarp</title>"));
    assert!(!page.contains("{{"), "every slot filled");
    // No network: nothing is loaded from anywhere.
    for needle in ["http:", "https:", "src=", "@import", "url("] {
        assert!(!page.contains(needle), "the page refers to {needle}");
    }
    // Uncompressed, the data is 61 frames x 4 bodies x (3 + 4 + 1) f32 and one u32 group
    // (the glTF file has them, the CSV does not); the CSV with its scene gives the same
    // positions, rotations and speeds.
    ok(&["view", "run.glb", "--raw", "--out", "raw.html", "-q"], d);
    ok(
        &[
            "view",
            "run.csv",
            "--scene",
            "scene.toml",
            "--out",
            "csv.html",
            "--raw",
            "-q",
        ],
        d,
    );
    let data = |name: &str| {
        let page = std::fs::read_to_string(d.join(name)).unwrap();
        let start = page.find("id=\"tw-data\">").unwrap();
        let text: String = page[start..]
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("</script>"))
            .collect();
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap()
    };
    let (from_glb, from_csv) = (data("raw.html"), data("csv.html"));
    let n = 61 * 4;
    assert_eq!(from_glb.len(), n * 9 * 4);
    assert_eq!(from_csv.len(), n * 8 * 4);
    assert!(
        from_glb[..n * 8 * 4] == from_csv[..],
        "the .glb and .csv pages hold other frames"
    );
    // Body-major positions: body 1's first position is its initial one.
    let f = |k: usize| f32::from_le_bytes(from_glb[4 * k..4 * k + 4].try_into().unwrap());
    assert_eq!((f(0), f(1), f(2)), (-3.0, 3.0, 0.0));
}

#[test]
fn view_refuses_bad_input_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    record(d);
    std::fs::write(d.join("notes.txt"), "hello").unwrap();
    std::fs::write(d.join("fake.glb"), "glTF but not really").unwrap();
    let cases: [(&[&str], &str); 8] = [
        (&["view", "missing.glb"], "cannot read missing.glb"),
        (&["view", "notes.txt"], "notes.txt: unsupported input"),
        (&["view", "fake.glb"], "fake.glb: not a valid glTF binary"),
        (
            &["view", "run.glb", "--scene", "parallel"],
            "--scene and --bodies are for .csv",
        ),
        (
            &["view", "run.csv"],
            "run.csv, line 2: body 1 where the scene's dynamic body 0",
        ),
        (
            &["view", "run.csv", "--scene", "parallel", "--bodies", "4"],
            "(is this the scene the run used? see --scene and --bodies)",
        ),
        (
            &["view", "run.glb", "--out", "no/dir/p.html"],
            "cannot create no/dir/p.html",
        ),
        (
            &["view", "run.glb", "--out", "run.glb"],
            "would replace the run",
        ),
    ];
    for (args, want) in cases {
        let line = fails(args, d);
        assert!(line.contains(want), "{args:?}: {line:?} lacks {want:?}");
    }
    assert!(!d.join("run.html").exists(), "no page from a failed view");
}

/// The browser to test with, if any.
fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("TIMEWARP_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
    .find(|p| p.is_file())
}

const W: u32 = 640;
const H: u32 = 400;

/// Runs the headless browser on `page#hash` with `action` (`--screenshot=...` or
/// `--dump-dom`) after 10 s of virtual time; returns its stdout.
fn browse(browser: &Path, page: &Path, hash: &str, action: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-unsafe-swiftshader",
            "--use-angle=swiftshader",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--no-first-run",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--window-size={W},{H}"))
        .arg(action)
        .arg(format!("file://{}#{hash}", page.display()))
        .output()
        .expect("the browser runs");
    assert!(
        out.status.success(),
        "{}: {}",
        browser.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `<body ...>` tag of the page after 10 s of virtual time.
fn body_tag(browser: &Path, page: &Path, hash: &str) -> String {
    let dom = browse(browser, page, hash, "--dump-dom");
    let start = dom.find("<body").expect("a body in the DOM");
    dom[start..start + dom[start..].find('>').unwrap() + 1].to_string()
}

/// The value of `data-NAME` in a tag.
fn data(tag: &str, name: &str) -> Option<String> {
    let key = format!("data-{name}=\"");
    let from = tag.find(&key)? + key.len();
    Some(tag[from..from + tag[from..].find('"')?].to_string())
}

/// Asserts that the page whose `<body>` tag this is, opened at its start (0 s) and playing at
/// `speed`, drew its first picture without error and then played on: after the browser's 10 s
/// of virtual time, less the page's loading, its time is well past the start.
fn plays(tag: &str, speed: f64) {
    assert_eq!(data(tag, "ready").as_deref(), Some("1"), "{tag}");
    assert_eq!(data(tag, "error"), None, "{tag}");
    let t: f64 = data(tag, "time").expect("data-time").parse().unwrap();
    assert!(t > 2.0 * speed, "the page did not play: {tag}");
}

/// A screenshot of `page#hash` as RGB rows.
fn screenshot(browser: &Path, page: &Path, hash: &str, out: &Path) -> Vec<[u8; 3]> {
    browse(
        browser,
        page,
        hash,
        &format!("--screenshot={}", out.display()),
    );
    assert!(out.is_file(), "no screenshot");
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(out).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (W, H), "the screenshot's size");
    let channels = info.color_type.samples();
    assert!(info.bit_depth == png::BitDepth::Eight && channels >= 3);
    buf[..info.buffer_size()]
        .chunks(channels)
        .map(|c| [c[0], c[1], c[2]])
        .collect()
}

fn differ(a: [u8; 3], b: [u8; 3]) -> u32 {
    a.iter().zip(b).map(|(x, y)| x.abs_diff(y) as u32).sum()
}

/// The pinned camera: yaw, pitch, distance, target (see `viewer.js`).
const CAM: (f32, f32, f32, [f32; 3]) = (0.0, 0.35, 13.0, [0.0, 1.5, 0.0]);

/// Where the page draws world point `p`, in pixels: the camera math `viewer.js` documents.
fn project(p: Vec3) -> (f32, f32) {
    let (yaw, pitch, dist, target) = CAM;
    let target = Vec3::from(target);
    let eye = target
        + dist
            * Vec3::new(
                pitch.cos() * yaw.sin(),
                pitch.sin(),
                pitch.cos() * yaw.cos(),
            );
    let m: Mat4 = glam::camera::rh::proj::opengl::perspective(
        std::f32::consts::FRAC_PI_4,
        W as f32 / H as f32,
        0.1,
        1000.0,
    ) * glam::camera::rh::view::look_at_mat4(eye, target, Vec3::Y);
    let c = m.project_point3(p);
    ((c.x + 1.0) / 2.0 * W as f32, (1.0 - c.y) / 2.0 * H as f32)
}

#[test]
fn the_page_plays_the_run_in_a_real_browser() {
    let Some(browser) = chromium() else {
        if std::env::var("TIMEWARP_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
            panic!(
                "TIMEWARP_REQUIRE_BROWSER=1 but no chromium was found on PATH (or in \
                 TIMEWARP_CHROMIUM): install Debian's chromium"
            );
        }
        eprintln!(
            "SKIPPED the_page_plays_the_run_in_a_real_browser: no chromium on PATH \
             (apt-get install chromium; TIMEWARP_REQUIRE_BROWSER=1 makes this a failure)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    record(d);
    ok(&["view", "run.glb", "-q"], d);
    ok(
        &[
            "view",
            "run.csv",
            "--scene",
            "scene.toml",
            "--out",
            "csv.html",
            "-q",
        ],
        d,
    );
    let page = d.join("run.html");
    let (yaw, pitch, dist, t) = CAM;
    let cam = format!("cam={yaw},{pitch},{dist},{},{},{}", t[0], t[1], t[2]);
    let shot = |hash: String, name: &str| screenshot(&browser, &page, &hash, &d.join(name));
    let background = shot(format!("t=0.1&paused&ui=0&hide=dynamic&{cam}"), "bg.png");
    // Playing (not paused) at a twentieth of real time (the run is 1 s long and loops), the
    // page has drawn picture after picture, and moved on.
    let playing = body_tag(&browser, &page, &format!("speed=0.05&ui=0&{cam}"));
    plays(&playing, 0.05);
    let rows = csv_positions(&d.join("run.csv"));
    let mut pictures = Vec::new();
    for t in [0.1, 0.8] {
        let picture = shot(format!("t={t}&paused&ui=0&{cam}"), &format!("t{t}.png"));
        // The frame at t: the rows whose time is nearest.
        let frame_time = rows
            .iter()
            .map(|r| r.0)
            .min_by(|a, b| (a - t).abs().total_cmp(&(b - t).abs()))
            .unwrap();
        let bodies: Vec<(usize, Vec3)> = rows
            .iter()
            .filter(|r| r.0 == frame_time)
            .map(|r| (r.1, r.2))
            .collect();
        assert_eq!(bodies.len(), 4);
        for (id, p) in bodies {
            let (x, y) = project(p);
            assert!(
                (0.0..W as f32).contains(&x) && (0.0..H as f32).contains(&y),
                "body {id} at {p} is drawn off the picture, at ({x}, {y})"
            );
            let i = y as usize * W as usize + x as usize;
            assert!(
                differ(picture[i], background[i]) > 60,
                "t = {t}: body {id} at {p}, pixel ({x:.0}, {y:.0}) is {:?}, the background {:?}",
                picture[i],
                background[i]
            );
        }
        pictures.push(picture);
    }
    let changed = pictures[0]
        .iter()
        .zip(&pictures[1])
        .filter(|(a, b)| differ(**a, **b) > 30)
        .count();
    assert!(
        changed > 2000,
        "only {changed} pixels changed from t = 0.1 to t = 0.8"
    );
    // The page of the CSV draws the same picture.
    let from_csv = screenshot(
        &browser,
        &d.join("csv.html"),
        &format!("t=0.8&paused&ui=0&{cam}"),
        &d.join("csv.png"),
    );
    let unlike = from_csv
        .iter()
        .zip(&pictures[1])
        .filter(|(a, b)| differ(**a, **b) > 30)
        .count();
    assert!(
        unlike < 50,
        "{unlike} pixels differ between the pages of the .glb and the .csv"
    );
}

#[test]
fn the_readme_commands_give_a_page_that_plays() {
    // README, "Watch a run": `timewarp run cylinders --out run.glb`, `timewarp view run.glb`.
    let Some(browser) = chromium() else {
        assert!(
            !std::env::var("TIMEWARP_REQUIRE_BROWSER").is_ok_and(|v| v == "1"),
            "TIMEWARP_REQUIRE_BROWSER=1 but no chromium was found"
        );
        eprintln!("SKIPPED the_readme_commands_give_a_page_that_plays: no chromium on PATH");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["run", "cylinders", "--out", "run.glb", "--quiet"], d);
    let said = ok(&["view", "run.glb"], d);
    assert!(
        said.starts_with("wrote run.html (601 frames of 206 bodies"),
        "{said}"
    );
    let page = d.join("run.html");
    plays(&body_tag(&browser, &page, "speed=0.5"), 0.5);
    // The run recorded contact groups: coloured by group, the resting pile at 8 s (slow, so
    // one colour by speed) is another picture.
    let by_speed = screenshot(&browser, &page, "t=8&paused&ui=0", &d.join("s.png"));
    let by_group = screenshot(
        &browser,
        &page,
        "t=8&paused&ui=0&color=group",
        &d.join("g.png"),
    );
    let changed = by_speed
        .iter()
        .zip(&by_group)
        .filter(|(a, b)| differ(**a, **b) > 30)
        .count();
    assert!(
        changed > 2000,
        "only {changed} pixels differ by group and by speed"
    );
}
