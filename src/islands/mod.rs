//! # Persistent simulation islands (seed 002: Erin Catto, "Simulation Islands", Box2D v3)
//!
//! A rigid-body world is a graph: dynamic bodies are nodes, touching contacts are edges, and the
//! connected components are *islands*. Islands matter for three things. Sleep: an island whose
//! bodies all rest long enough is removed from the simulation as a whole (sleeping one body of a
//! pile alone would let the others sink into it). Wake: a touch wakes the whole island at once,
//! so waking propagates through every body in contact. Parallelism: islands are independent, so
//! they can be solved on different threads (the frame engine), or advanced as one timewarp
//! entity each (the warp engine, where islands are Mirtich's contact groups, seed 001 §4.4:
//! fusion is a link, fission a split).
//!
//! Box2D v2.4 rebuilt all islands every step by depth-first search. Seed 002 keeps them
//! *persistent* instead, exploiting temporal coherence: almost no contact begins or ends in a
//! step, so the graph is updated by its edge changes only. This module implements that design:
//!
//! - [`graph`]: the island graph as flat arrays with Box2D's doubly linked body and contact
//!   lists per island, per-body edge lists, and content-derived island ids.
//!   [`IslandGraph::link`] merges the two islands at once (union by size; the module explains
//!   why this replaces Box2D's union-find tree plus serial merge pass) and wakes them;
//!   [`IslandGraph::unlink`] removes the edge and only flags the island "may split";
//!   [`IslandGraph::validate`] checks every invariant.
//! - [`split`]: the deferred split of at most one flagged island per step, by DFS, chosen by a
//!   stated deterministic heuristic (the sleepiest, then largest).
//! - [`sleep`]: per-body sleep timers from velocity thresholds, sleep per island when the
//!   minimum timer reaches `time_to_sleep` and the island is not waiting for a split.
//! - [`changes`]: per-worker bit sets of pairs that began or stopped touching, merged by OR and
//!   applied in ascending pair order, so the graph is identical for any thread count.
//! - [`bitset`]: the bit set those use.
//!
//! Order of one step in an engine: narrow phase (fills [`TouchChanges`] per worker) →
//! [`merge_touch_changes`] → [`IslandGraph::apply_touch_changes`] (links wake and merge at
//! once) → solve [`IslandGraph::awake_islands`] → [`IslandGraph::update_sleep`] →
//! [`IslandGraph::split_one`].

pub mod bitset;
pub mod changes;
pub mod error;
pub mod graph;
pub mod sleep;
pub mod split;

pub use bitset::BitSet;
pub use changes::{AppliedChanges, TouchChanges, merge_touch_changes};
pub use error::IslandError;
pub use graph::{ContactId, IslandGraph, IslandId, ListIter};
pub use sleep::SleepConfig;
pub use split::Split;
