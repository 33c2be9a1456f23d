//! Determinism is a contract: the committed frames are bit-identical for any thread count.
//! These tests run the `timewarp` binary, as a user would, and compare the `--checksum` lines.

use std::process::Command;

fn checksum(args: &[&str], threads: usize) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_timewarp"))
        .args(args)
        .args(["--threads", &threads.to_string(), "--checksum", "--quiet"])
        .output()
        .expect("the timewarp binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "timewarp {args:?} --threads {threads} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("checksum: "))
        .unwrap_or_else(|| panic!("no checksum line in {stdout:?}"));
    let hex = &line["checksum: ".len()..];
    assert_eq!(hex.len(), 16, "checksum is 16 hex digits: {line:?}");
    assert!(hex.chars().all(|c| c.is_ascii_hexdigit()));
    line.to_string()
}

fn same_for_all_thread_counts(args: &[&str]) {
    let reference = checksum(args, 1);
    for threads in [2, 3, 8] {
        assert_eq!(
            checksum(args, threads),
            reference,
            "{args:?}: --threads {threads} differs from --threads 1"
        );
    }
}

#[test]
fn frame_engine_cylinders_is_deterministic() {
    same_for_all_thread_counts(&[
        "run",
        "cylinders",
        "--engine",
        "frame",
        "--bodies",
        "300",
        "--seconds",
        "4",
    ]);
}

#[test]
fn frame_engine_bouncing_is_deterministic() {
    same_for_all_thread_counts(&[
        "run",
        "bouncing",
        "--engine",
        "frame",
        "--bodies",
        "300",
        "--seconds",
        "4",
    ]);
}

#[test]
fn frame_engine_pyramids_is_deterministic() {
    same_for_all_thread_counts(&[
        "run",
        "pyramids",
        "--engine",
        "frame",
        "--bodies",
        "550",
        "--seconds",
        "3",
    ]);
}

#[test]
fn checksum_depends_on_the_simulation() {
    // A checksum that ignored the frames would make the tests above vacuous.
    let a = checksum(
        &[
            "run",
            "bouncing",
            "--engine",
            "frame",
            "--bodies",
            "100",
            "--seconds",
            "1",
        ],
        1,
    );
    let b = checksum(
        &[
            "run",
            "bouncing",
            "--engine",
            "frame",
            "--bodies",
            "100",
            "--seconds",
            "1.5",
        ],
        1,
    );
    let c = checksum(
        &[
            "run",
            "bouncing",
            "--engine",
            "frame",
            "--bodies",
            "101",
            "--seconds",
            "1",
        ],
        1,
    );
    assert_ne!(a, b);
    assert_ne!(a, c);
}
