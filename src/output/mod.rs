//! Output: what happens to committed frames (DESIGN.md, "Command line" and "Determinism").
//!
//! An engine hands every committed frame — frame 0 is the initial state — to a [`FrameSink`],
//! with the states of *all* bodies in scene order; sinks skip the static ones. Frames arrive in
//! order, each exactly once, and are final: in the warp engine a frame is committed only when
//! the GVT has passed it (Koenig et al., seed 000, the GVT frame buffer), so nothing a sink sees
//! is ever rolled back. The sinks:
//!
//! - [`CsvSink`]: the trajectory file of the contract, streamed to a temporary file beside the
//!   target and renamed onto it only when the run completes;
//! - [`Checksum`]: a 64-bit word-wise FNV-1a hash of every frame's bits, the fingerprint the
//!   determinism tests compare across thread counts and backends;
//! - [`Tee`]: hands each frame to several sinks;
//! - [`Progress`]: the progress bar on stderr, and [`RunSummary`]: the end-of-run report.

mod checksum;
mod csv;
mod progress;
mod sink;
mod summary;

pub use checksum::{Checksum, FNV_OFFSET, FNV_PRIME};
pub use csv::{CSV_HEADER, CsvSink};
pub use progress::Progress;
pub use sink::{FrameSink, Tee, dynamic_bodies};
pub use summary::RunSummary;
