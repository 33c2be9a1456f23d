//! Running the `timewarp` binary from a test (shared by `tests/glb.rs` and `tests/view.rs`).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `timewarp ARGS` in `dir`.
pub fn timewarp(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_timewarp"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the timewarp binary runs")
}

/// Runs `timewarp ARGS` in `dir`, asserts it succeeded and returns its stdout.
pub fn ok(args: &[&str], dir: &Path) -> String {
    let out = timewarp(args, dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `timewarp ARGS` in `dir` and asserts it failed as every error must: exit status 2,
/// one line `error: ...` on stderr; returns that line.
pub fn fails(args: &[&str], dir: &Path) -> String {
    let out = timewarp(args, dir);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    stderr.trim_end().to_string()
}
