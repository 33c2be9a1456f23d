//! The `timewarp` command line against its contract (DESIGN.md, "Command line"): every bad
//! input gives exactly one `error:` line on stderr naming the problem and exit status 2; the
//! CSV file and the checksum line have the contract's form, and agree with each other.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn timewarp(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_timewarp"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the timewarp binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

/// Asserts the run failed with status 2, nothing on stdout and one `error:` line on stderr
/// containing every one of `needles`; returns that line.
fn fails(args: &[&str], dir: &Path, needles: &[&str]) -> String {
    let out = timewarp(args, dir);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{args:?}: stderr {stderr:?}");
    assert_eq!(stdout, "", "{args:?}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "{args:?}: one line, got {stderr:?}"
    );
    assert!(stderr.ends_with('\n'));
    let line = stderr.trim_end().to_string();
    assert!(line.starts_with("error: "), "{line}");
    for n in needles {
        assert!(line.contains(n), "{args:?}: {line:?} lacks {n:?}");
    }
    assert!(!line.contains("panicked"), "{line}");
    line
}

fn scene_file(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

const SPHERE: &str = "[[body]]\nshape = \"sphere\"\nradius = 0.5\nposition = [0, 1, 0]\n";

#[test]
fn malformed_toml() {
    let dir = tempfile::tempdir().unwrap();
    scene_file(dir.path(), "bad.toml", "[world\ngravity = [0, 0, 0]\n");
    fails(&["run", "bad.toml"], dir.path(), &["bad.toml:1:"]);
}

#[test]
fn unknown_key() {
    let dir = tempfile::tempdir().unwrap();
    scene_file(
        dir.path(),
        "s.toml",
        &format!("{SPHERE}\n[[body]]\nshape = \"sphere\"\nradiuss = 1.0\n"),
    );
    fails(
        &["run", "s.toml"],
        dir.path(),
        &["s.toml:8:", "unknown field `radiuss`"],
    );
}

#[test]
fn unknown_shape() {
    let dir = tempfile::tempdir().unwrap();
    scene_file(
        dir.path(),
        "s.toml",
        "[[body]]\nshape = \"blob\"\nradius = 1.0\n",
    );
    fails(
        &["run", "s.toml"],
        dir.path(),
        &["body 0 (line 1)", "unknown shape \"blob\""],
    );
}

#[test]
fn negative_radius() {
    let dir = tempfile::tempdir().unwrap();
    scene_file(
        dir.path(),
        "s.toml",
        &format!("{SPHERE}\n[[body]]\nshape = \"sphere\"\nradius = -1\n"),
    );
    let line = fails(&["run", "s.toml"], dir.path(), &[]);
    assert_eq!(
        line,
        "error: s.toml: body 1 (line 6): radius must be positive, got -1"
    );
}

/// Rolling resistance is a material like friction: checked on a body, in `[defaults]` and in
/// a grid, with the entry and the key named; a misspelt key is an unknown field.
#[test]
fn bad_rolling_resistance() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str]); 6] = [
        (
            "rolling_resistance = -0.1\n",
            &[
                "body 1 (line 6)",
                "rolling_resistance must be between 0 and 1, got -0.1",
            ],
        ),
        (
            "rolling_resistance = 1.5\n",
            &[
                "body 1 (line 6)",
                "rolling_resistance must be between 0 and 1, got 1.5",
            ],
        ),
        (
            "rolling_resistance = nan\n",
            &[
                "body 1 (line 6)",
                "rolling_resistance must be finite, got NaN",
            ],
        ),
        (
            "rolling_resistance = \"high\"\n",
            &[
                "s.toml:10:",
                "rolling_resistance: invalid type: string \"high\", expected f32",
            ],
        ),
        (
            "rolling_resistence = 0.1\n",
            &["s.toml:10:", "unknown field `rolling_resistence`"],
        ),
        ("", &[]),
    ];
    for (line, needles) in cases {
        scene_file(
            dir.path(),
            "s.toml",
            &format!(
                "{SPHERE}\n[[body]]\nshape = \"sphere\"\nradius = 1.0\nposition = [5, 1, 0]\n{line}"
            ),
        );
        if line.is_empty() {
            let out = timewarp(
                &["run", "s.toml", "--seconds", "0.1", "--quiet"],
                dir.path(),
            );
            assert!(out.status.success(), "{}", text(&out.stderr));
        } else {
            fails(&["run", "s.toml"], dir.path(), needles);
        }
    }
    scene_file(
        dir.path(),
        "s.toml",
        &format!("[defaults]\nrolling_resistance = -2\n\n{SPHERE}"),
    );
    fails(
        &["run", "s.toml"],
        dir.path(),
        &[
            "defaults",
            "rolling_resistance must be between 0 and 1, got -2",
        ],
    );
    scene_file(
        dir.path(),
        "s.toml",
        "[[grid]]\nshape = \"sphere\"\nradius = 0.5\nrolling_resistance = 2\ncount = [2, 1, 1]\nspacing = [2, 2, 2]\norigin = [0, 1, 0]\n",
    );
    fails(
        &["run", "s.toml"],
        dir.path(),
        &[
            "grid 0",
            "rolling_resistance must be between 0 and 1, got 2",
        ],
    );
}

#[test]
fn nan_position() {
    let dir = tempfile::tempdir().unwrap();
    scene_file(
        dir.path(),
        "s.toml",
        "[[body]]\nshape = \"sphere\"\nradius = 1\nposition = [0, nan, 0]\n",
    );
    fails(
        &["run", "s.toml"],
        dir.path(),
        &["body 0", "position must be finite", "NaN"],
    );
}

#[test]
fn no_dynamic_bodies() {
    let dir = tempfile::tempdir().unwrap();
    scene_file(
        dir.path(),
        "s.toml",
        "[[body]]\nshape = \"plane\"\nnormal = [0, 1, 0]\nstatic = true\n",
    );
    fails(&["run", "s.toml"], dir.path(), &["no dynamic bodies"]);
}

#[test]
fn unknown_scene_name() {
    let dir = tempfile::tempdir().unwrap();
    fails(
        &["run", "nope"],
        dir.path(),
        &["unknown scene 'nope'", "cylinders"],
    );
}

#[test]
fn zero_threads() {
    let dir = tempfile::tempdir().unwrap();
    fails(
        &["run", "--threads", "0"],
        dir.path(),
        &["--threads", "got 0"],
    );
}

#[test]
fn negative_bodies() {
    let dir = tempfile::tempdir().unwrap();
    fails(
        &["run", "parallel", "--bodies", "-3"],
        dir.path(),
        &["--bodies", "got -3"],
    );
}

#[test]
fn other_bad_flags_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    scene_file(d, "ok.toml", SPHERE);
    fails(
        &[
            "run",
            "--engine",
            "warp",
            "--seconds",
            "-1",
            "--out",
            "w.csv",
        ],
        d,
        &["--seconds", "-1"],
    );
    assert!(!d.join("w.csv").exists(), "a refused run creates no output");
    // The warp engine runs, and its checksum does not depend on the thread count.
    let sum = |threads: &str| {
        let out = timewarp(
            &[
                "run",
                "parallel",
                "--bodies",
                "6",
                "--seconds",
                "0.2",
                "--engine",
                "warp",
                "--threads",
                threads,
                "--checksum",
                "--quiet",
            ],
            d,
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let one = sum("1");
    assert!(one.starts_with("checksum: "), "{one}");
    assert_eq!(one, sum("3"));
    fails(
        &["run", "--engine", "fast"],
        d,
        &["'fast'", "--engine", "possible values"],
    );
    fails(&["run", "--backend", "mutex"], d, &["'mutex'", "--backend"]);
    fails(&["run", "--out", "x.txt"], d, &["x.txt", ".csv or .glb"]);
    fails(&["run", "--seconds", "nan"], d, &["--seconds", "nan"]);
    fails(
        &["run", "ok.toml", "--bodies", "5"],
        d,
        &["--bodies applies to built-in scenes only"],
    );
    fails(
        &["run", "missing.toml"],
        d,
        &["cannot read scene file missing.toml"],
    );
    fails(
        &["run", "parallel", "--out", "no/such/dir/x.csv"],
        d,
        &["no/such/dir/x.csv"],
    );
    fails(&["run", "--frobnicate"], d, &["--frobnicate"]);
    fails(&[], d, &["no command given"]);
    fails(
        &["scenes", "--export", "nope"],
        d,
        &["unknown scene 'nope'"],
    );
}

#[test]
fn scenes_lists_all_five() {
    let dir = tempfile::tempdir().unwrap();
    let out = timewarp(&["scenes"], dir.path());
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    let names: Vec<&str> = stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        ["parallel", "cylinders", "bouncing", "pyramids", "avalanche"]
    );
    assert!(stdout.contains("default N = 200"));
}

#[test]
fn help_goes_to_stdout_with_success() {
    let dir = tempfile::tempdir().unwrap();
    let out = timewarp(&["run", "--help"], dir.path());
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    for flag in [
        "--bodies",
        "--seconds",
        "--engine",
        "--threads",
        "--backend",
        "--out",
        "--checksum",
        "--quiet",
    ] {
        assert!(stdout.contains(flag), "{flag}");
    }
}

/// One CSV row: frame, time, body, the 13 floats.
type Row = (u64, f64, usize, Vec<f32>);

/// Parses the CSV written by `run`: the header and the rows.
fn read_csv(path: &Path) -> (String, Vec<Row>) {
    let content = std::fs::read_to_string(path).unwrap();
    let mut lines = content.lines();
    let header = lines.next().unwrap().to_string();
    let rows = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 16, "{l}");
            let floats = f[3..].iter().map(|x| x.parse::<f32>().unwrap()).collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                floats,
            )
        })
        .collect();
    (header, rows)
}

#[test]
fn run_writes_the_csv_of_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let out = timewarp(
        &[
            "run",
            "parallel",
            "--bodies",
            "10",
            "--seconds",
            "0.1",
            "--out",
            "x.csv",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (header, rows) = read_csv(&dir.path().join("x.csv"));
    assert_eq!(
        header,
        "frame,time,body,x,y,z,qx,qy,qz,qw,vx,vy,vz,wx,wy,wz"
    );
    // 0.1 s at 60 frames per second: frames 0..=6, ten bodies each.
    assert_eq!(rows.len(), 7 * 10);
    for (i, (frame, time, body, _)) in rows.iter().enumerate() {
        assert_eq!(*frame, (i / 10) as u64);
        assert_eq!(*body, i % 10);
        assert!((time - *frame as f64 / 60.0).abs() < 1e-12);
    }
    // Frame 0 is the initial state: column A at x = 1.5 i moving +2 m/s, column B at z = 3.
    let first = &rows[0].3;
    assert_eq!(
        &first[..],
        &[
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0
        ]
    );
    assert_eq!(rows[6].3[0..3], [1.5, 0.0, 3.0]);
    assert_eq!(rows[6].3[7], -2.0);
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["x.csv"]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("simulated 0.100 s (6 frames)"), "{stdout}");
    assert!(stdout.contains("real time") && stdout.contains("rollbacks 0"));
}

/// The documented checksum (word-wise FNV-1a), recomputed from the CSV rows.
fn checksum_of(rows: &[Row]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |w: u32| h = (h ^ w as u64).wrapping_mul(0x100_0000_01b3);
    let mut last = None;
    for (frame, _, _, floats) in rows {
        if last != Some(*frame) {
            mix(*frame as u32);
            mix((*frame >> 32) as u32);
            last = Some(*frame);
        }
        for x in floats {
            mix(x.to_bits());
        }
    }
    h
}

#[test]
fn checksum_line_matches_the_csv_and_the_thread_count_does_not_matter() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    scene_file(
        d,
        "drop.toml",
        "[world]\nseconds = 0.25\n\n[[body]]\nshape = \"plane\"\nnormal = [0, 1, 0]\nstatic = true\n\n\
         [[grid]]\nshape = \"box\"\nhalf_extents = [0.2, 0.2, 0.2]\nangular_velocity = [0, 1, 0]\n\
         count = [3, 2, 2]\nspacing = [1, 1, 1]\norigin = [0, 2, 0]\njitter = 0.1\nseed = 3\n",
    );
    let mut lines = Vec::new();
    for threads in ["1", "4"] {
        let out = timewarp(
            &[
                "run",
                "drop.toml",
                "--threads",
                threads,
                "--out",
                "t.csv",
                "--checksum",
            ],
            d,
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let line = stdout.lines().last().unwrap().to_string();
        let hex = line.strip_prefix("checksum: ").expect("checksum line");
        assert_eq!(hex.len(), 16);
        assert!(
            hex.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        let (_, rows) = read_csv(&d.join("t.csv"));
        assert_eq!(rows.len(), 16 * 12); // frames 0..=15 (0.25 s) x 12 boxes; the plane has no rows
        assert!(rows.iter().all(|r| r.2 >= 1), "static body 0 has no rows");
        assert_eq!(format!("{:016x}", checksum_of(&rows)), hex);
        lines.push(line);
    }
    assert_eq!(lines[0], lines[1]);
    // --quiet --checksum prints exactly the checksum line.
    let out = timewarp(&["run", "drop.toml", "--quiet", "--checksum"], d);
    assert_eq!(text(&out.stdout), format!("{}\n", lines[0]));
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_timewarp"))
        .args(["run", "parallel", "--bodies", "50", "--seconds", "0.5"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before the summary is written
    let out = child.wait_with_output().unwrap();
    assert_eq!(text(&out.stderr), "");
    assert!(out.status.success());
}

#[test]
fn the_default_run_is_cylinders_with_200_spheres_in_the_warp_engine_with_groups() {
    let dir = tempfile::tempdir().unwrap();
    let out = timewarp(&["run", "--seconds", "0.05"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("run: cylinders, 206 bodies (200 dynamic), warp engine"),
        "{stdout}"
    );
    assert!(stdout.contains("contact groups: "), "{stdout}");
    // `--groups off`: the warp engine without them (no groups line); the frame engine takes
    // no groups by default, and refuses them when asked.
    let off = text(&timewarp(&["run", "--seconds", "0.05", "--groups", "off"], dir.path()).stdout);
    assert!(
        off.contains("warp engine") && !off.contains("contact groups"),
        "{off}"
    );
    let frame = timewarp(
        &["run", "--seconds", "0.05", "--engine", "frame"],
        dir.path(),
    );
    assert!(frame.status.success(), "{}", text(&frame.stderr));
    assert!(text(&frame.stdout).contains("frame engine"));
    let both = timewarp(
        &[
            "run",
            "--seconds",
            "0.05",
            "--engine",
            "frame",
            "--groups",
            "on",
        ],
        dir.path(),
    );
    assert_eq!(both.status.code(), Some(2));
    assert!(text(&both.stderr).contains("warp engine option"));
}

/// `--sleep on|off` (on by default) for either engine: with `off` nothing sleeps, and the
/// summary's first line says so. `pyramids` 110 is asleep at 1.5 s with sleep on (both
/// pyramids, as islands of the frame engine or contact groups of the warp engine); with sleep
/// off none is, no group-tick is stepped asleep, no nap is written, and the frames differ. A
/// value other than `on` or `off` is one clear error.
#[test]
fn sleep_off_keeps_both_engines_awake() {
    let dir = tempfile::tempdir().unwrap();
    let run = |engine: &str, extra: &[&str]| {
        let mut args = vec!["run", "pyramids", "--bodies", "110", "--seconds", "1.5"];
        args.extend(["--engine", engine, "--threads", "2", "--checksum"]);
        args.extend_from_slice(extra);
        let out = timewarp(&args, dir.path());
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let first = stdout.lines().next().unwrap_or_default().to_string();
        assert_eq!(
            first.ends_with(", sleep off"),
            extra == ["--sleep", "off"],
            "{stdout}"
        );
        stdout
    };
    for (engine, asleep, awake) in [
        (
            "frame",
            "islands in the last frame 0 awake and 2 asleep",
            "islands in the last frame 2 awake and 0 asleep",
        ),
        (
            "warp",
            "2 groups asleep at the end",
            "0 groups asleep at the end, 0 group-ticks stepped asleep in 0 naps",
        ),
    ] {
        let default = run(engine, &[]);
        let on = run(engine, &["--sleep", "on"]);
        let off = run(engine, &["--sleep", "off"]);
        assert!(default.contains(asleep) && on.contains(asleep), "{on}");
        assert!(off.contains(awake), "{off}");
        assert_eq!(checksum_line(&default), checksum_line(&on), "{engine}");
        assert_ne!(checksum_line(&on), checksum_line(&off), "{engine}");
    }
    for bad in [&["--sleep", "maybe"][..], &["--sleep"]] {
        let mut args = vec!["run", "--seconds", "0.05"];
        args.extend_from_slice(bad);
        fails(
            &args,
            dir.path(),
            &["--sleep <on|off>", "possible values: on, off"],
        );
    }
}

/// Runs `bouncing` with 20 bodies over 0.2 s with `--checksum` and `extra`, which must
/// succeed; returns its stdout.
fn bouncing_20(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "run",
        "bouncing",
        "--bodies",
        "20",
        "--seconds",
        "0.2",
        "--checksum",
    ];
    args.extend_from_slice(extra);
    let out = timewarp(&args, dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// The frame engine refuses `option`, a warp engine option, naming it.
fn frame_engine_refuses(dir: &Path, option: &[&str]) {
    let mut args = vec!["run", "--seconds", "0.05", "--engine", "frame"];
    args.extend_from_slice(option);
    fails(&args, dir, &[option[0], "warp engine option"]);
}

/// The `checksum: ...` line of a run's stdout.
fn checksum_line(stdout: &str) -> Option<String> {
    stdout
        .lines()
        .find(|l| l.starts_with("checksum: "))
        .map(String::from)
}

/// `--full-window`: the warp engine speculates as far as the window, with the same frames as
/// under the adaptive lead; the frame engine refuses it.
#[test]
fn full_window_keeps_the_frames_and_is_a_warp_engine_option() {
    let dir = tempfile::tempdir().unwrap();
    let lead = bouncing_20(dir.path(), &[]);
    let full = bouncing_20(dir.path(), &["--full-window"]);
    assert!(lead.contains(" of window 256 at the end"), "{lead}");
    assert!(
        full.contains("(lead 256 of window 256 at the end; raised 0, lowered 0 times, floor tightened 0 times)"),
        "{full}"
    );
    assert_eq!(checksum_line(&lead), checksum_line(&full));
    assert!(checksum_line(&lead).is_some(), "{lead}");
    frame_engine_refuses(dir.path(), &["--full-window"]);
}

/// `--tvht-span`: the TVHT's time slice changes no frame; it must be a power of two up to
/// 1024, and the frame engine (which has no TVHT) refuses it.
#[test]
fn tvht_span_keeps_the_frames_and_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let checksum = |extra: &[&str]| {
        let mut args = vec!["--groups", "off"];
        args.extend_from_slice(extra);
        checksum_line(&bouncing_20(dir.path(), &args))
    };
    let default = checksum(&[]);
    assert!(default.is_some());
    for span in ["1", "16", "1024"] {
        assert_eq!(checksum(&["--tvht-span", span]), default, "span {span}");
    }
    for bad in ["0", "3", "2048"] {
        fails(
            &["run", "--seconds", "0.05", "--tvht-span", bad],
            dir.path(),
            &["--tvht-span must be a power of two from 1 to 1024", bad],
        );
    }
    frame_engine_refuses(dir.path(), &["--tvht-span", "16"]);
}

/// `--max-span`: how far a body flies as one TVHT record changes no frame, with contact groups
/// and without (0: tick by tick); the summary counts the spans (none at 0); the frame engine
/// (which has no spans) refuses it, and a value that is not a number is refused.
#[test]
fn max_span_keeps_the_frames_and_is_a_warp_engine_option() {
    let dir = tempfile::tempdir().unwrap();
    for groups in ["on", "off"] {
        let run = |extra: &[&str]| {
            let mut args = vec!["--groups", groups];
            args.extend_from_slice(extra);
            bouncing_20(dir.path(), &args)
        };
        let default = run(&[]);
        let spans = |out: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix("spans "))
                .and_then(|l| l.split_whitespace().next())
                .and_then(|n| n.parse::<u64>().ok())
        };
        assert!(spans(&default).is_some_and(|n| n > 0), "{default}");
        for span in ["0", "4", "37"] {
            let out = run(&["--max-span", span]);
            assert_eq!(
                checksum_line(&out),
                checksum_line(&default),
                "groups {groups}, span {span}"
            );
            assert_eq!(spans(&out) == Some(0), span == "0", "{out}");
        }
    }
    fails(
        &["run", "--seconds", "0.05", "--max-span", "far"],
        dir.path(),
        &["--max-span", "far"],
    );
    frame_engine_refuses(dir.path(), &["--max-span", "16"]);
}

#[test]
fn bench_prints_a_table_and_writes_json_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let out = timewarp(
        &[
            "bench",
            "--scenes",
            "parallel=6,parallel=12",
            "--threads",
            "1,2",
            "--seconds",
            "0.1",
            "--warp-seconds",
            "0.05",
            "--repeats",
            "2",
            "--out-dir",
            "figs",
            "--quiet",
        ],
        dir.path(),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "", "--quiet: no progress lines");
    assert!(stdout.starts_with("machine: "), "{stdout}");
    assert!(
        stdout.contains("| scene | N | engine | backend | T |"),
        "{stdout}"
    );
    assert!(stdout.contains("| parallel | 12 | warp | "), "{stdout}");
    assert!(
        stdout.contains("| parallel | 6 | frame | - | 1 |"),
        "{stdout}"
    );
    assert!(stdout.contains("bound(2) = "), "{stdout}");
    let figs = dir.path().join("figs");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(figs.join("bench.json")).unwrap()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert!(rows.len() >= 8, "{json}");
    assert!(
        rows.iter()
            .all(|r| r["samples"].as_array().unwrap().len() == 2)
    );
    for svg in ["speedup.svg", "time_per_n.svg"] {
        let s = std::fs::read_to_string(figs.join(svg)).unwrap();
        assert!(s.starts_with("<svg"), "{svg}");
    }
}

#[test]
fn bench_refuses_bad_lists() {
    let dir = tempfile::tempdir().unwrap();
    fails(&["bench", "--scenes", "nosuch"], dir.path(), &["nosuch"]);
    fails(&["bench", "--threads", "0"], dir.path(), &["threads"]);
    fails(
        &["bench", "--scenes", "parallel=0"],
        dir.path(),
        &["bodies"],
    );
    fails(&["bench", "--repeats", "0"], dir.path(), &["--repeats"]);
}

/// The front door: every command line of the `sh` blocks of README.md and docs/usage.md that
/// runs this binary (`cargo run --release -- ...`, `target/release/timewarp ...` or `timewarp
/// ...`; synopsis lines with `[` are not commands) and whose command is `run`, `resume`,
/// `view` or `scenes`, runs, in order, in one directory (so `view` finds the file `run` wrote),
/// with `run` and `resume` shortened to 0.1 simulated s and quiet. Found: the default-run line
/// was once a bare `cargo run --release`, which is `timewarp` with no command, an error.
#[test]
fn the_documented_commands_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut ran = Vec::new();
    for doc in ["README.md", "docs/usage.md"] {
        let text_of =
            std::fs::read_to_string(format!("{}/{doc}", env!("CARGO_MANIFEST_DIR"))).expect(doc);
        let blocks = text_of
            .split("```sh")
            .skip(1)
            .filter_map(|b| b.split("```").next());
        for line in blocks.flat_map(str::lines) {
            let cmd = line.split('#').next().unwrap().trim();
            let Some(rest) = [
                "cargo run --release --",
                "target/release/timewarp",
                "timewarp",
            ]
            .iter()
            .find_map(|p| cmd.strip_prefix(p).filter(|r| r.starts_with(' '))) else {
                continue;
            };
            let mut args: Vec<String> = rest.split_whitespace().map(String::from).collect();
            let command = args.first().cloned().unwrap_or_default();
            if cmd.contains('[') || !["run", "resume", "view", "scenes"].contains(&command.as_str())
            {
                continue;
            }
            if command == "run" || command == "resume" {
                match args.iter().position(|a| a == "--seconds") {
                    Some(i) => args[i + 1] = "0.1".into(),
                    None => args.extend(["--seconds".into(), "0.1".into()]),
                }
                args.push("--quiet".into());
            }
            for a in args.iter_mut().filter(|a| a.starts_with("scenes/")) {
                // Scene files are relative to the repository.
                *a = format!("{}/{a}", env!("CARGO_MANIFEST_DIR"));
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = timewarp(&args, dir.path());
            assert!(
                out.status.success(),
                "{doc}: {cmd:?}: {}",
                text(&out.stderr)
            );
            ran.push(command);
        }
    }
    for command in ["run", "resume", "view", "scenes"] {
        assert!(
            ran.iter().any(|c| c == command),
            "no documented {command} ran: {ran:?}"
        );
    }
}
