//! # Timewarp
//!
//! A parallel rigid-body physics engine. Every body (or island of bodies in persistent contact)
//! advances through simulated time on its own clock, speculatively, and rolls back only when a
//! collision proves it wrong (object-centric timewarp, Koenig, Karamouzas and Guy). The shared
//! structures are guarded by the TL2 STM of the `timewarp-stm` crate, or by ordered locks.
//!
//! Data flows one way through the modules:
//!
//! ```text
//! scene ──▶ geometry / dynamics / islands ──▶ frame | warp ──▶ output
//! ```
//!
//! - [`scene`]: the scene model, TOML loading and validation, the built-in scenes.
//! - [`geometry`]: shapes, AABBs, the narrow phase (contacts).
//! - [`dynamics`]: body state, exact free flight, collision impulses, the island contact solver.
//! - [`islands`]: the persistent island graph (Box2D v3): link, deferred split, sleep and wake.
//! - [`frame`]: the frame-centric baseline engine.
//! - [`output`]: committed-frame sinks: CSV trajectories, glTF files, checksum, progress, run
//!   summary.
//! - [`view`]: `timewarp view`, a self-contained HTML page that plays a recorded run (WebGL2).
//! - [`sync`]: the seam between the engine and its guard: STM transactions or ordered locks.
//! - [`warp`]: object-centric timewarp (seed 000): the TVHT, the GVT buffer, entities with
//!   step/resolve/rollback, the work-stealing scheduler and the sequential reference.
//! - [`checkpoint`]: a run's state at a committed frame saved to a file (atomically, versioned,
//!   hashed) and resumed bit for bit.
//! - [`run`]: the run loop (scene, engine, sinks, progress, summary) shared by the binary and tests.
//! - [`bench`](mod@bench): `timewarp bench`, sweeps of scenes x sizes x threads x backends x engines
//!   through the run loop: Markdown table, JSON, SVG plots, the parallelism estimate.

pub mod allocator;
pub mod bench;
pub mod checkpoint;
pub mod dynamics;
pub mod frame;
pub mod geometry;
pub mod islands;
pub mod output;
mod primitive;
pub mod run;
pub mod scene;
pub mod sync;
pub mod view;
pub mod warp;
