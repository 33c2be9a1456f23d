//! Output: what happens to committed frames (DESIGN.md, "Command line" and "Determinism").
//!
//! An engine hands every committed frame — frame 0 is the initial state — to a [`FrameSink`],
//! with the states of *all* bodies in scene order; sinks skip the static ones. Frames arrive in
//! order, each exactly once, and are final: in the warp engine a frame is committed only when
//! the GVT has passed it (Koenig et al., seed 000, the GVT frame buffer), so nothing a sink sees
//! is ever rolled back. The sinks:
//!
//! - [`CsvSink`]: the trajectory file of the contract, streamed to a temporary file beside the
//!   target and renamed onto it only when the run completes ([`AtomicFile`]);
//! - [`GlbSink`]: the same frames as an animated glTF 2.0 binary ([`glb`]), kept in memory as a
//!   [`Recording`] and written atomically at the end; [`glb::decode`] and
//!   [`Recording::from_csv`] read the two files back, for `timewarp view`;
//! - [`Checksum`]: a 64-bit word-wise FNV-1a hash of every frame's bits, the fingerprint the
//!   determinism tests compare across thread counts and backends;
//! - [`Tee`]: hands each frame to several sinks;
//! - [`Progress`]: the progress bar on stderr, and [`RunSummary`]: the end-of-run report.

mod atomic;
mod checksum;
mod csv;
pub mod glb;
mod meshes;
mod progress;
mod recording;
mod sink;
mod summary;

pub use atomic::AtomicFile;
pub use checksum::{Checksum, FNV_OFFSET, FNV_PRIME};
pub use csv::{CSV_HEADER, CsvSink};
pub use glb::GlbSink;
pub use progress::Progress;
pub use recording::{GROUP_ASLEEP, RecordedBody, Recording};
pub use sink::{FrameSink, Tee, dynamic_bodies};
pub use summary::RunSummary;

static TEMP_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The directory of `path` and a fresh temporary file name in it (`.NAME.PID-N.tmp`): outputs
/// are written there and renamed onto `path` when complete, so that a reader never sees a
/// partial file (the CSV sink, checkpoints).
pub(crate) fn temp_beside(
    path: &std::path::Path,
) -> std::io::Result<(std::path::PathBuf, std::path::PathBuf)> {
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: not a file name", path.display()),
        )
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let n = TEMP_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!(
        ".{}.{}-{n}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    Ok((dir, temp))
}

/// The scene of the sinks' tests: a ground plane, a sphere, a static box, a sphere (bodies 1
/// and 3 dynamic).
#[cfg(test)]
pub(crate) fn test_scene() -> crate::scene::Scene {
    use crate::scene::{BodySpec, SceneBuilder};
    use glam::Vec3;
    SceneBuilder::new()
        .plane(Vec3::Y, 0.0)
        .sphere(0.5, Vec3::new(0.1, 2.0, -3.0))
        .body(BodySpec::cuboid(Vec3::ONE).fixed(true))
        .sphere(0.5, Vec3::ZERO)
        .build()
        .unwrap()
}
