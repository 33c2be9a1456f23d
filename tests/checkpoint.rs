//! Checkpoints (`timewarp run --checkpoint`, `timewarp resume`): a run cut at any committed
//! frame and resumed gives, bit for bit, the checksum of the uninterrupted run, for both engines,
//! any thread count and backend; periodic checkpoints survive a run that fails later; damaged,
//! foreign and future files each get their one error line; a failed run leaves no partial file.

use glam::Quat;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use timewarp::checkpoint::{Checkpoint, Checkpointer, EngineState, FORMAT_VERSION, write_atomic};
use timewarp::dynamics::BodyState;
use timewarp::output::{Checksum, FrameSink, Tee};
use timewarp::run::{EngineKind, Resume, RunOptions, run_scene, run_scene_with};
use timewarp::scene::{Scene, Shape, builtin};

fn timewarp(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_timewarp"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the timewarp binary runs")
}

fn ok(args: &[&str], dir: &Path) -> String {
    let out = timewarp(args, dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// The `checksum:` line of a run's stdout.
fn checksum(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with("checksum: "))
        .unwrap_or_else(|| panic!("no checksum line in {stdout:?}"))
        .to_string()
}

/// Asserts exit status 2, nothing on stdout, one `error:` line with every needle.
fn fails(args: &[&str], dir: &Path, needles: &[&str]) -> String {
    let out = timewarp(args, dir);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr:?}");
    let line = stderr.trim_end().to_string();
    assert!(line.starts_with("error: "), "{line}");
    assert!(!line.contains("internal error"), "{line}");
    for n in needles {
        assert!(line.contains(n), "{args:?}: {line:?} lacks {n:?}");
    }
    line
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The backends this build has, as `--backend` values.
fn backends() -> Vec<&'static str> {
    let mut b = Vec::new();
    if cfg!(feature = "stm") {
        b.push("stm");
    }
    if cfg!(feature = "locks") {
        b.push("locks");
    }
    b
}

/// `--bodies N --threads 2 --backend B` (the first backend of this build) and the engine:
/// `frame`, `warp` (contact groups off) or `warp+groups`.
fn engine_args(bodies: &'static str, engine: &'static str) -> Vec<&'static str> {
    let mut a = vec![
        "--bodies",
        bodies,
        "--threads",
        "2",
        "--backend",
        backends()[0],
    ];
    a.extend(engine_flags(engine));
    a
}

/// The flags that pick `engine`: `frame`, `warp` (contact groups off: the run's default is on)
/// or `warp+groups`, each with `--sleep off` after it when its name ends in `, sleep off`.
fn engine_flags(engine: &str) -> Vec<&'static str> {
    if let Some(e) = engine.strip_suffix(", sleep off") {
        return [engine_flags(e), vec!["--sleep", "off"]].concat();
    }
    match engine {
        "frame" => vec!["--engine", "frame"],
        "warp" => vec!["--engine", "warp", "--groups", "off"],
        "warp+groups" => vec!["--engine", "warp", "--groups", "on"],
        e => panic!("no engine {e}"),
    }
}

/// For `engine` (`frame`, `warp`, or `warp+groups`: the warp engine with contact groups) on
/// `scene` with `bodies`: the uninterrupted run to `total` seconds (1 thread),
/// then for each cut, a run to the cut with a checkpoint (`threads_a`) resumed to `total` with
/// `threads_b`: every resumed checksum must equal the uninterrupted one.
#[allow(clippy::too_many_arguments)]
fn round_trip(
    engine: &str,
    scene: &str,
    bodies: &str,
    total: &str,
    cuts: &[&str],
    threads_a: &str,
    threads_b: &str,
    backend: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut common = vec!["--bodies", bodies, "--backend", backend];
    common.extend(engine_flags(engine));
    let mut full_args = vec!["run", scene, "--seconds", total, "--threads", "1"];
    full_args.extend(&common);
    full_args.extend(["--checksum", "-q"]);
    let want = checksum(&ok(&full_args, d));
    for cut in cuts {
        let mut a = vec!["run", scene, "--seconds", cut, "--threads", threads_a];
        a.extend(&common);
        a.extend(["--checkpoint", "c.ck", "-q"]);
        ok(&a, d);
        let resumed = ok(
            &[
                "resume",
                "c.ck",
                "--seconds",
                total,
                "--threads",
                threads_b,
                "--backend",
                backend,
                "--checksum",
                "-q",
            ],
            d,
        );
        assert_eq!(
            checksum(&resumed),
            want,
            "{engine} {scene} {bodies}: cut at {cut} s, resumed to {total} s"
        );
        eprintln!("{engine} {scene} N={bodies} {backend}: cut {cut} s -> {want}");
    }
    assert_eq!(files_in(d), vec!["c.ck".to_string()], "no temporaries left");
}

#[test]
fn frame_engine_round_trips_bit_for_bit() {
    // Cuts before, during and after the spheres land (contacts, warm starts, sleep, splits),
    // at the first frame, and at the end (a resume with nothing left to run).
    for scene in ["cylinders", "bouncing"] {
        round_trip(
            "frame",
            scene,
            "40",
            "2.5",
            &["0.0167", "0.5", "1.3", "2.2", "2.5"],
            "2",
            "5",
            "stm",
        );
    }
    // Piles that fall asleep and wake: the island graph and sleep timers cross the cut.
    round_trip(
        "frame",
        "pyramids",
        "110",
        "1.5",
        &["0.7", "1.1"],
        "1",
        "3",
        "stm",
    );
}

#[test]
fn warp_engine_round_trips_bit_for_bit_under_both_backends() {
    for backend in backends() {
        // More threads after the resume than before. Cylinders: the spheres reach the
        // cylinders at about 0.96 s, so the cut at 1.1 s falls among contacts with statics and
        // a few collision events; bouncing exchanges events, antievents and rollbacks all along
        // (about 250 events and 65 rollbacks in 1.4 s).
        round_trip(
            "warp",
            "cylinders",
            "30",
            "1.4",
            &["0.0167", "0.5", "1.1"],
            "1",
            "8",
            backend,
        );
        round_trip(
            "warp",
            "bouncing",
            "16",
            "1.2",
            &["0.0167", "0.4", "0.9"],
            "1",
            "8",
            backend,
        );
    }
}

#[test]
fn warp_engine_with_contact_groups_round_trips_bit_for_bit() {
    // The checkpoint carries the islands (bodies, rest and split timers, sleep, warm starts).
    // Pyramids 110: the boxes fuse into two pyramids during the first tenth of a second and
    // fall asleep at about 0.5 s; the cuts fall among the fusions, while they rest awake, and
    // while they nap. Avalanche 40: bodies tumble down the ramp, fusing and splitting all
    // along (about 200 changes in 2 s); a group may change at the very tick of the cut.
    for backend in backends() {
        round_trip(
            "warp+groups",
            "pyramids",
            "110",
            "1.2",
            &["0.0167", "0.05", "0.3", "0.8"],
            "1",
            "8",
            backend,
        );
        round_trip(
            "warp+groups",
            "avalanche",
            "40",
            "2",
            &["0.5", "1.0", "1.3", "1.7"],
            "2",
            "8",
            backend,
        );
    }
}

/// A resumed group may change at the checkpoint's own tick, as the groups of the run that was
/// cut did there (a group never changes at its birth tick, so resumed groups count as born
/// the tick before). Found from the grouped reference: a cut at a frame tick where a fusion or
/// fission happens.
#[test]
fn a_group_change_at_the_checkpoint_tick_is_made_after_the_resume() {
    let scene = builtin("avalanche", Some(40)).unwrap();
    let rules = timewarp::warp::rules::Rules::new(&scene).unwrap();
    let frame_ticks = u64::from(scene.world.frame_ticks);
    let end = 3 * u64::from(scene.world.ticks_per_second);
    let run = timewarp::warp::reference::grouped_reference(&rules, frame_ticks, end).unwrap();
    let at = run
        .changes
        .iter()
        .map(|c| c.tick)
        .find(|&t| t > 0 && t % frame_ticks == 0)
        .expect("avalanche 40 changes a group at some frame tick in 3 s");
    let cut = format!("{}", (at / frame_ticks) as f64 / 60.0);
    for backend in backends() {
        round_trip(
            "warp+groups",
            "avalanche",
            "40",
            "3",
            &[&cut],
            "2",
            "3",
            backend,
        );
    }
}

#[test]
fn resuming_with_groups_against_the_checkpoint_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A checkpoint without groups read by a run that has them is caught by the library; the
    // command line takes the groups from the checkpoint, so it cannot ask for the other.
    let scene = builtin("bouncing", Some(6)).unwrap();
    let path = d.join("plain.ck");
    let mut ck = Checkpointer::new(&path, &scene, "bouncing", 0.1, None, None).unwrap();
    let mut sink = Checksum::new(&scene);
    run_scene_with(
        &scene,
        &options(EngineKind::Warp, 0.1, 1),
        None,
        &mut sink,
        Some(&mut ck),
    )
    .unwrap();
    let saved = Checkpoint::read(&path).unwrap();
    assert!(!saved.state.groups());
    let grouped = RunOptions {
        groups: true,
        ..options(EngineKind::Warp, 0.2, 1)
    };
    let err = run_scene_with(
        &scene,
        &grouped,
        Some(Resume {
            frame: saved.frame,
            state: &saved.state,
        }),
        &mut Checksum::new(&scene),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("contact groups off"), "{err}");
}

/// `--sleep off` is saved with the engine's state, and `resume` keeps it: `pyramids` 110, cut
/// at 0.3 s while it rests awake, resumed to 1.2 s (past the 0.5 s at which it would fall
/// asleep with sleep on), gives the uninterrupted sleep-off run's checksum, not the sleep-on
/// one, in both engines, and says `sleep off`. The library refuses to resume such a state with
/// sleep on, in one line.
#[test]
fn sleep_off_is_kept_across_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for engine in ["frame", "warp+groups"] {
        let off = format!("{engine}, sleep off");
        round_trip(
            &off,
            "pyramids",
            "110",
            "1.2",
            &["0.3"],
            "1",
            "2",
            backends()[0],
        );
        let full = |engine: &str| {
            let mut args = vec!["run", "pyramids", "--bodies", "110", "--seconds", "1.2"];
            args.extend(engine_flags(engine));
            args.extend(["--checksum", "-q"]);
            checksum(&ok(&args, d))
        };
        assert_ne!(
            full(engine),
            full(&off),
            "{engine}: sleep off changes nothing"
        );
        let mut args = vec!["run", "pyramids", "--bodies", "110", "--seconds", "0.3"];
        args.extend(engine_flags(&off));
        args.extend(["--checkpoint", "s.ck", "-q"]);
        ok(&args, d);
        let resumed = ok(&["resume", "s.ck", "--seconds", "0.4"], d);
        assert!(
            resumed.lines().next().unwrap().ends_with(", sleep off"),
            "{resumed}"
        );
        let saved = Checkpoint::read(&d.join("s.ck")).unwrap();
        assert!(!saved.state.sleep());
        let on = RunOptions {
            groups: saved.state.groups(),
            ..options(saved.state.engine(), 1.2, 1)
        };
        let err = run_scene_with(
            &saved.scene,
            &on,
            Some(Resume {
                frame: saved.frame,
                state: &saved.state,
            }),
            &mut Checksum::new(&saved.scene),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("with sleep off, this run has sleep on"),
            "{err}"
        );
    }
}

#[test]
fn chained_resumes_and_the_resumed_csv_continue_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for engine in ["frame", "warp", "warp+groups"] {
        let base = engine_args("12", engine);
        let mut full = vec!["run", "cylinders", "--seconds", "1", "--out", "full.csv"];
        full.extend(&base);
        full.extend(["--checksum", "-q"]);
        let want = checksum(&ok(&full, d));
        let mut first = vec!["run", "cylinders", "--seconds", "0.3", "--out", "a.csv"];
        first.extend(&base);
        first.extend(["--checkpoint", "1.ck", "-q"]);
        ok(&first, d);
        // Resume to 0.7 s writing a new checkpoint, then from that one to 1 s.
        let mid = ok(
            &[
                "resume",
                "1.ck",
                "--backend",
                backends()[0],
                "--seconds",
                "0.7",
                "--out",
                "b.csv",
                "--checkpoint",
                "2.ck",
            ],
            d,
        );
        assert!(mid.contains("(resumed at frame 18)"), "{mid}");
        assert!(mid.contains("(24 frames)"), "{mid}");
        assert!(
            mid.contains("checkpoint: 2.ck at frame 42 (1 written)"),
            "{mid}"
        );
        let last = ok(
            &[
                "resume",
                "2.ck",
                "--backend",
                backends()[0],
                "--out",
                "c.csv",
                "--threads",
                "7",
                "--checksum",
            ],
            d,
        );
        // Without --seconds, resume goes to the length of the run that wrote the checkpoint:
        // here 0.7 s, nothing left to run.
        assert!(last.contains("(0 frames)"), "{last}");
        let last = ok(
            &[
                "resume",
                "2.ck",
                "--backend",
                backends()[0],
                "--seconds",
                "1",
                "--out",
                "c.csv",
                "--checksum",
                "-q",
            ],
            d,
        );
        assert_eq!(checksum(&last), want, "{engine}");
        // The three CSV files, headers aside, are the uninterrupted run's rows.
        let rows = |name: &str| -> Vec<String> {
            std::fs::read_to_string(d.join(name))
                .unwrap()
                .lines()
                .skip(1)
                .map(str::to_string)
                .collect()
        };
        let pieces = [rows("a.csv"), rows("b.csv"), rows("c.csv")].concat();
        assert_eq!(pieces, rows("full.csv"), "{engine}");
        assert_eq!(rows("c.csv").len(), 18 * 12, "{engine}: frames 43..=60");
    }
}

/// Fails at one frame, as a full disk or a killed process would.
struct FailAt(u64);

impl FrameSink for FailAt {
    fn frame(&mut self, frame: u64, _: f64, _: &[BodyState]) -> io::Result<()> {
        if frame == self.0 {
            Err(io::Error::other("disk full"))
        } else {
            Ok(())
        }
    }
}

fn options(engine: EngineKind, seconds: f64, threads: usize) -> RunOptions {
    RunOptions {
        engine,
        groups: false,
        threads,
        seconds: Some(seconds),
        label: "test".into(),
        ..RunOptions::default()
    }
}

#[test]
fn periodic_checkpoints_survive_a_failed_run_and_resume_exactly() {
    // The warp engine with contact groups too: its periodic checkpoints carry the islands
    // the entities logged as they recorded those frames (`warp::island_log`).
    for (engine, groups) in [
        (EngineKind::Frame, false),
        (EngineKind::Warp, false),
        (EngineKind::Warp, true),
    ] {
        let options = |engine, seconds, threads| RunOptions {
            groups,
            ..options(engine, seconds, threads)
        };
        let scene = builtin("bouncing", Some(12)).unwrap();
        let mut full = Checksum::new(&scene);
        run_scene(&scene, &options(engine, 1.0, 1), &mut full).unwrap();

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.ck");
        // Every 0.25 s = 15 frames; the run fails at frame 40, after checkpoints at 15 and 30.
        let mut ck = Checkpointer::new(&path, &scene, "bouncing", 1.0, Some(15), None).unwrap();
        let err = run_scene_with(
            &scene,
            &options(engine, 1.0, 2),
            None,
            &mut FailAt(40),
            Some(&mut ck),
        )
        .unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
        assert_eq!((ck.saved(), ck.last_saved()), (2, Some(30)));
        assert_eq!(files_in(dir.path()), vec!["run.ck".to_string()]);

        let saved = Checkpoint::read(&path).unwrap();
        assert_eq!((saved.frame, saved.checksum_frames), (30, 31));
        assert_eq!(saved.state.engine(), engine);
        assert_eq!(saved.state.groups(), groups);
        assert_eq!(saved.scene, scene, "the scene is embedded whole");
        let mut rest = Checksum::resume(&scene, saved.checksum, saved.checksum_frames);
        let resume = Resume {
            frame: saved.frame,
            state: &saved.state,
        };
        let summary = run_scene_with(
            &saved.scene,
            &options(engine, 1.0, 3),
            Some(resume),
            &mut rest,
            None,
        )
        .unwrap();
        assert_eq!(summary.frames, 30);
        assert_eq!(summary.resumed_from, Some(30));
        assert_eq!(
            (rest.value(), rest.frames()),
            (full.value(), full.frames()),
            "{engine:?}"
        );
    }
}

#[test]
fn checkpoint_every_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for engine in ["frame", "warp", "warp+groups"] {
        let args = engine_args("10", engine);
        let mut full = vec!["run", "bouncing", "--seconds", "1"];
        full.extend(&args);
        full.extend(["--checksum", "-q"]);
        let want = checksum(&ok(&full, d));
        let mut every = vec!["run", "bouncing", "--seconds", "0.5"];
        every.extend(args);
        every.extend(["--checkpoint", "e.ck", "--checkpoint-every", "0.1"]);
        let out = ok(&every, d);
        // 0.1 s = 6 frames: checkpoints at 6, 12, 18, 24 and the last frame, 30.
        assert!(
            out.contains("checkpoint: e.ck at frame 30 (5 written)"),
            "{out}"
        );
        let r = ok(
            &[
                "resume",
                "e.ck",
                "--seconds",
                "1",
                "--backend",
                backends()[0],
                "--checksum",
                "-q",
            ],
            d,
        );
        assert_eq!(checksum(&r), want, "{engine}");
    }
}

#[test]
fn a_failed_run_leaves_no_checkpoint_and_keeps_an_old_one() {
    let scene = builtin("parallel", Some(4)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.ck");
    for engine in [EngineKind::Frame, EngineKind::Warp] {
        let mut ck = Checkpointer::new(&path, &scene, "p", 0.2, None, None).unwrap();
        let r = run_scene_with(
            &scene,
            &options(engine, 0.2, 2),
            None,
            &mut FailAt(5),
            Some(&mut ck),
        );
        assert!(r.is_err());
        assert_eq!(ck.saved(), 0);
        assert!(
            files_in(dir.path()).is_empty(),
            "{engine:?}: nothing written"
        );
    }
    // A checkpoint from before stays as it was when a later run fails.
    std::fs::write(&path, b"old").unwrap();
    let mut ck = Checkpointer::new(&path, &scene, "p", 0.2, None, None).unwrap();
    let mut tee = Tee::new();
    let mut fail = FailAt(12);
    tee.push(&mut fail);
    assert!(
        run_scene_with(
            &scene,
            &options(EngineKind::Frame, 0.2, 1),
            None,
            &mut tee,
            Some(&mut ck)
        )
        .is_err()
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(files_in(dir.path()), vec!["x.ck".to_string()]);

    // From the command line: an unwritable checkpoint is refused before the run starts.
    let d = dir.path();
    fails(
        &[
            "run",
            "parallel",
            "--seconds",
            "0.1",
            "--checkpoint",
            "no/such/dir/x.ck",
        ],
        d,
        &["no/such/dir/x.ck"],
    );
    std::fs::create_dir(d.join("sub")).unwrap();
    fails(
        &["run", "parallel", "--seconds", "0.1", "--checkpoint", "sub"],
        d,
        &["sub", "directory"],
    );
    fails(
        &["run", "parallel", "--checkpoint-every", "0.1"],
        d,
        &["--checkpoint"],
    );
    assert_eq!(files_in(d), vec!["sub".to_string(), "x.ck".to_string()]);
}

#[test]
fn an_atomic_write_that_fails_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    // Renaming a file onto a non-empty directory fails.
    let target = dir.path().join("full");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("inside"), b"x").unwrap();
    let e = write_atomic(&target, b"data").unwrap_err();
    assert!(e.to_string().contains("full"), "{e}");
    assert_eq!(files_in(dir.path()), vec!["full".to_string()]);
    // And one that succeeds replaces the target whole.
    let file = dir.path().join("f.ck");
    write_atomic(&file, b"one").unwrap();
    write_atomic(&file, b"two").unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), b"two");
    assert_eq!(files_in(dir.path()).len(), 2);
}

/// Writes a valid checkpoint of a short warp run without contact groups into `dir` and
/// returns its path and bytes.
fn valid_checkpoint(dir: &Path) -> (PathBuf, Vec<u8>) {
    warp_checkpoint(dir, "good.ck", "off")
}

/// Writes a checkpoint `name` of a short warp run (`bouncing` 6, 0.1 s) into `dir`, with
/// contact groups `on` or `off`, and returns its path and bytes.
fn warp_checkpoint(dir: &Path, name: &str, groups: &str) -> (PathBuf, Vec<u8>) {
    let mut args = vec![
        "run",
        "bouncing",
        "--seconds",
        "0.1",
        "--checkpoint",
        name,
        "-q",
    ];
    args.extend(["--bodies", "6", "--engine", "warp", "--groups", groups]);
    args.extend(["--backend", backends()[0]]);
    ok(&args, dir);
    let path = dir.join(name);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

#[test]
fn damaged_foreign_and_future_files_get_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, good) = valid_checkpoint(d);
    assert_eq!(&good[..8], b"TWARPCKP");
    let put = |name: &str, bytes: &[u8]| std::fs::write(d.join(name), bytes).unwrap();

    let mut flipped = good.clone();
    let mid = 28 + (good.len() - 28) / 2;
    flipped[mid] ^= 0x10;
    put("flipped.ck", &flipped);
    fails(
        &["resume", "flipped.ck"],
        d,
        &["flipped.ck", "corrupt", "checksum"],
    );

    put("short.ck", &good[..good.len() - 7]);
    fails(&["resume", "short.ck"], d, &["short.ck", "truncated"]);
    put("header.ck", &good[..15]);
    fails(&["resume", "header.ck"], d, &["header.ck", "truncated"]);

    let mut long = good.clone();
    long.extend_from_slice(b"xyz");
    put("long.ck", &long);
    fails(&["resume", "long.ck"], d, &["long.ck", "corrupt"]);

    put("scene.toml", b"[[body]]\nshape = \"sphere\"\nradius = 1\n");
    fails(
        &["resume", "scene.toml"],
        d,
        &["scene.toml", "not a timewarp checkpoint"],
    );
    put("empty.ck", b"");
    fails(&["resume", "empty.ck"], d, &["not a timewarp checkpoint"]);

    let newer = FORMAT_VERSION + 1;
    let mut future = good.clone();
    future[8..12].copy_from_slice(&newer.to_le_bytes());
    put("future.ck", &future);
    fails(
        &["resume", "future.ck"],
        d,
        &["future.ck", &format!("version {newer}"), "newer"],
    );
    // Version 4 added the run's `--sleep` to the warp engine's state: an older file is
    // refused by its version.
    let mut v3 = good.clone();
    v3[8..12].copy_from_slice(&3u32.to_le_bytes());
    put("v3.ck", &v3);
    fails(
        &["resume", "v3.ck"],
        d,
        &["v3.ck", "version 3 is not supported", "older timewarp"],
    );

    fails(&["resume", "missing.ck"], d, &["missing.ck"]);

    // Whole and hashed, but its state does not fit its scene (as a buggy writer would make).
    let mut c = Checkpoint::read(&d.join("good.ck")).unwrap();
    if let EngineState::Warp { states, .. } = &mut c.state {
        states.pop();
    }
    put("unfit.ck", &c.encode().unwrap());
    fails(
        &["resume", "unfit.ck"],
        d,
        &["unfit.ck", "5 warp states for 6 dynamic bodies"],
    );
    // With contact groups: islands that do not partition the bodies.
    warp_checkpoint(d, "groups.ck", "on");
    let mut c = Checkpoint::read(&d.join("groups.ck")).unwrap();
    let EngineState::WarpGroups { islands, .. } = &mut c.state else {
        panic!("a run with contact groups saves its islands");
    };
    let last = islands.last_mut().unwrap();
    let lost = if last.bodies.len() > 1 {
        last.bodies.pop().unwrap()
    } else {
        islands.pop().unwrap().bodies[0]
    };
    put("islands.ck", &c.encode().unwrap());
    fails(
        &["resume", "islands.ck"],
        d,
        &["islands.ck", &format!("body {lost} is in no island")],
    );
    // A group asleep in a run with sleep off, where none ever sleeps.
    let mut c = Checkpoint::read(&d.join("groups.ck")).unwrap();
    let EngineState::WarpGroups { islands, sleep, .. } = &mut c.state else {
        panic!("a run with contact groups saves its islands");
    };
    *sleep = false;
    islands[0].asleep = true;
    put("asleep.ck", &c.encode().unwrap());
    fails(
        &["resume", "asleep.ck"],
        d,
        &["asleep.ck", "is asleep in a run with sleep off"],
    );

    // Resuming to a time before the checkpoint.
    fails(
        &["resume", "good.ck", "--seconds", "0.05"],
        d,
        &["already at frame 6"],
    );
}

/// The hash only says that a checkpoint is as it was written: one edited by hand, its hash made
/// again, carries whatever scene it was given. `resume` refuses a scene out of the loader's
/// ranges as the loader does (`Scene::validate`), with one error line and exit status 2.
#[test]
fn a_checkpoint_whose_scene_was_edited_out_of_range_gets_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (good, _) = valid_checkpoint(d);
    let scene = Checkpoint::read(&good).unwrap().scene;
    let i = scene.bodies.iter().position(|b| !b.is_static).unwrap();
    let body = format!("body {i}: ");
    type Edit = fn(&mut Scene, usize);
    let edits: [(&str, Edit, &str); 8] = [
        ("fast.ck", |s, i| s.bodies[i].velocity.x = 2e6, "velocity"),
        (
            "far.ck",
            |s, i| s.bodies[i].position.y = 1e9,
            "too far from the origin",
        ),
        (
            "big.ck",
            |s, i| s.bodies[i].shape = Shape::Sphere { radius: 2e6 },
            "too large",
        ),
        (
            "negative.ck",
            |s, i| s.bodies[i].shape = Shape::Sphere { radius: -1.0 },
            "radius must be positive",
        ),
        (
            "bouncy.ck",
            |s, i| s.bodies[i].restitution = 2.0,
            "restitution must be between 0 and 1",
        ),
        (
            "turned.ck",
            |s, i| s.bodies[i].rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 2.0),
            "unit quaternion",
        ),
        (
            "gravity.ck",
            |s, _| s.world.gravity.y = -2e6,
            "world: gravity",
        ),
        (
            "frames.ck",
            |s, _| s.world.frame_ticks = 7,
            "world: frame_ticks (7) must divide",
        ),
    ];
    for (name, edit, needle) in edits {
        let mut c = Checkpoint::read(&good).unwrap();
        edit(&mut c.scene, i);
        std::fs::write(d.join(name), c.encode().unwrap()).unwrap();
        let line = fails(
            &["resume", name],
            d,
            &[name, "the checkpoint's scene is not valid", needle],
        );
        assert!(
            needle.starts_with("world") || line.contains(&body),
            "{line:?} does not name {body:?}"
        );
    }
}

#[test]
fn a_checkpoint_round_trips_through_its_bytes() {
    let scene = builtin("cylinders", Some(30)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.ck");
    let mut ck = Checkpointer::new(&path, &scene, "cylinders", 1.0, None, None).unwrap();
    let mut none = Tee::new();
    run_scene_with(
        &scene,
        &options(EngineKind::Frame, 1.0, 2),
        None,
        &mut none,
        Some(&mut ck),
    )
    .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let c = Checkpoint::decode(&path, &bytes).unwrap();
    assert_eq!(
        c.encode().unwrap(),
        bytes,
        "decode then encode gives the same bytes"
    );
    assert_eq!(c.checksum, ck.checksum().value());
    let EngineState::Frame(snap) = &c.state else {
        panic!("a frame engine checkpoint")
    };
    assert_eq!(snap.frame(), 60);
    assert_eq!(snap.states().len(), scene.bodies.len());
}
