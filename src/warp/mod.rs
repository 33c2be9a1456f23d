//! # warp: object-centric timewarp (seed 000, Koenig, Karamouzas and Guy)
//!
//! Every entity — a free body, or an island of bodies in persistent contact — runs on its own
//! local virtual time (LVT), in integer ticks, up to `LVT_ub = GVT + window` (in this engine
//! `GVT + lead`, an adaptive bound under the window: [`lead`]). Two shared structures tie the
//! entities together, both guarded through the [`sync`](crate::sync) seam (STM transactions
//! or ordered bucket locks):
//!
//! - [`tvht`]: the temporal volumetric hash table (Section 4). Each substep's state is written
//!   into the buckets of the cells its AABB overlaps; a write that meets another entity's entry
//!   at the same tick reports a candidate contact, exactly once; a delete (rollback) returns
//!   the contacts it invalidates, exactly once.
//! - [`gvt`]: the GVT buffer (Section 3). Entities record each finished tick; when every body
//!   has recorded tick `t`, `t` is committed, final, in order, and its frame goes to the output.
//!
//! The entity protocol and its scheduler build on these two:
//!
//! - [`groups`]: the island graph over time (seeds 001 and 002): which contact group holds
//!   which bodies and contacts, from which tick, made from which parents; fusion, deferred
//!   fission, and rollback across both, each one section.
//! - [`group_rules`]: the per-tick rules of contact groups (fission, fusion on slow contacts,
//!   an island's step with the island solver, sleep), which the grouped reference applies.
//! - [`rules`]: the per-tick rules (contacts from pre-event states, kicks in canonical order,
//!   free flight) that make a committed state a function of the previous one.
//! - [`message`]: events, antievents and their acks, naming contact instances.
//! - [`entity`]: one body, or one contact group, on its own clock: step, resolve, rollback
//!   (Figure 5, Algorithms 2-7); a group's change of groups, speculative or at a committed
//!   tick, and the undo of a speculative one.
//! - [`announcements`]: the hand-off of group changes announced by turns to the worker that
//!   makes them once their tick is committed.
//! - [`lead`]: how far past the GVT entities step, adapted under the window: longer when
//!   workers starve, shorter when they do not.
//! - [`engine`]: entities as soft-threads on a work-stealing pool; messages routed to the
//!   entity holding each body; group changes made speculatively or once their tick is
//!   committed, and undone; committed frames out.
//! - [`profile`]: the parallelism estimate: each task's time and what it waited for; work,
//!   span and the speedup bounds they give.
//! - [`island_log`]: the contact groups at checkpoint ticks, logged as entities record them
//!   and taken back as they unrecord, for a checkpoint of a run with contact groups.
//! - [`reference`](mod@reference): the sequential, lock-step reference the engine must equal
//!   bit for bit.

pub mod announcements;
pub mod engine;
pub mod entity;
pub mod group_rules;
pub mod groups;
pub mod gvt;
pub mod island_log;
pub mod lead;
pub mod message;
pub mod profile;
pub mod reference;
pub mod rules;
pub mod timeline;
pub mod tvht;

/// Simulated time in ticks (the substep and rollback granularity).
pub type Tick = u64;
/// An entity (a free body or an island), as numbered by the engine.
pub type EntityId = u32;
/// A dynamic body, numbered in scene order among the dynamic bodies.
pub type BodyId = u32;

pub use announcements::Announcements;
pub use engine::{
    GroupedFrameOut, WarpConfig, WarpControl, WarpStart, WarpStats, run_warp, run_warp_from_with,
};
pub use groups::{Group, GroupError, GroupGraph, GroupId, NewGroup, Undo};
pub use gvt::{GvtBuffer, GvtConfig, GvtError, MAX_POSITIONS, Piece};
pub use profile::Parallelism;
pub use tvht::{BodyEntry, Contact, ContactKey, Step, Tvht, TvhtConfig, TvhtEntry, TvhtError};
