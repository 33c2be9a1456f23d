//! The frame engine's state between two steps, for checkpoints (`timewarp run --checkpoint`,
//! `timewarp resume`).
//!
//! A resumed run must commit the same bits as the uninterrupted one, so a snapshot holds every
//! part of the engine that one step hands to the next, and nothing that a step rebuilds before
//! reading it:
//!
//! - the body states and the awake flags;
//! - the bounding boxes (a resting body's box is refreshed only when the resting set changes)
//!   and the broad phase's sorted moving and resting sets;
//! - the contact list with its manifolds, whose points carry the solver's impulses for the
//!   warm start of the next step (Box2D v3's persistent contacts, seed 002), its touching flags
//!   and island edge ids;
//! - the persistent island graph (seed 002): island lists, edge lists, the free list of edge
//!   ids (their reuse order decides future ids), per-body sleep timers, the awake and
//!   may-split sets;
//! - the frame index, the run's counters and the solver settings (substeps, sleep).
//!
//! Left out, because every step rebuilds them before use: the broad-phase pair list, the island
//! layout (numbering, batches, slots), the constraint and solver arrays, the bit words of edge
//! changes and the sleep update's scratch buffers. Shapes, masses, materials and the thread
//! pool come from the scene and the new run's settings. The thread count is not part of the
//! state: the frame engine is bit-identical for any thread count (module docs of `frame`).
//!
//! `tests/checkpoint.rs` checks the claim end to end: checkpoints at several frames, resumed with
//! other thread counts, give the uninterrupted run's checksum bit for bit.

use super::broad::BroadPhase;
use super::contacts::Contact;
use super::engine::{EngineStats, FrameConfig, FrameEngine};
use crate::dynamics::BodyState;
use crate::geometry::Aabb;
use crate::islands::{ContactId, IslandGraph};
use crate::scene::Scene;
use serde::{Deserialize, Serialize};

/// Everything the next step of a [`FrameEngine`] reads from the previous one.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FrameSnapshot {
    substeps: u32,
    sleep: bool,
    frame: u64,
    states: Vec<BodyState>,
    awake: Vec<bool>,
    aabbs: Vec<Aabb>,
    broad: BroadPhase,
    resting_dirty: bool,
    contacts: Vec<Contact>,
    graph: IslandGraph,
    stats: EngineStats,
}

impl FrameSnapshot {
    /// The frame the snapshot was taken at.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// All bodies' states at that frame, in scene order.
    pub fn states(&self) -> &[BodyState] {
        &self.states
    }

    /// Whether the engine's islands may fall asleep ([`FrameConfig::sleep`]).
    pub fn sleep(&self) -> bool {
        self.sleep
    }
}

impl FrameEngine {
    /// The engine's state after its last step (see the module docs for what it holds).
    pub fn snapshot(&self) -> FrameSnapshot {
        FrameSnapshot {
            substeps: self.config.substeps,
            sleep: self.config.sleep,
            frame: self.frame,
            states: self.states.clone(),
            awake: self.awake.clone(),
            aabbs: self.aabbs.clone(),
            broad: self.broad.clone(),
            resting_dirty: self.resting_dirty,
            contacts: self.contacts.clone(),
            graph: self.graph.clone(),
            stats: self.stats,
        }
    }

    /// An engine for `scene` continuing from `snap` on `threads` worker threads, or why the
    /// snapshot does not fit the scene (the body counts differ, a contact names a body the scene
    /// lacks, or the restored state breaks an invariant of [`FrameEngine::validate`]).
    pub fn from_snapshot(
        scene: &Scene,
        threads: usize,
        snap: &FrameSnapshot,
    ) -> Result<Self, String> {
        let config = FrameConfig {
            threads,
            substeps: snap.substeps,
            sleep: snap.sleep,
        };
        let mut e = FrameEngine::try_new(scene, config)?;
        let n = scene.bodies.len();
        let lengths = [
            snap.states.len(),
            snap.awake.len(),
            snap.aabbs.len(),
            snap.graph.body_count(),
        ];
        if lengths.iter().any(|&l| l != n) {
            return Err(format!(
                "the saved frame engine state holds {lengths:?} bodies (states, flags, boxes, \
                 island graph), the scene {n}"
            ));
        }
        if let Some(c) = snap.contacts.iter().find(|c| c.a() >= c.b() || c.b() >= n) {
            return Err(format!(
                "the saved contact {}-{} names no pair of the scene's {n} bodies",
                c.a(),
                c.b()
            ));
        }
        if (0..n).any(|i| snap.graph.is_static(i) != Ok(e.is_static[i])) {
            return Err("the saved island graph's static bodies differ from the scene's".into());
        }
        if let Some(c) = snap.contacts.iter().find(|c| {
            c.touching != (c.edge != super::engine::NONE)
                || (c.touching
                    && snap.graph.contact_bodies(ContactId(c.edge)) != Ok((c.a(), c.b())))
        }) {
            return Err(format!(
                "the saved contact {}-{} does not match its island graph edge",
                c.a(),
                c.b()
            ));
        }
        if !snap.broad.fits(n) {
            return Err(format!(
                "the saved broad phase names bodies outside the scene's {n}"
            ));
        }
        e.frame = snap.frame;
        e.states.clone_from(&snap.states);
        e.awake.clone_from(&snap.awake);
        e.aabbs.clone_from(&snap.aabbs);
        e.broad = snap.broad.clone();
        e.resting_dirty = snap.resting_dirty;
        e.contacts.clone_from(&snap.contacts);
        e.graph = snap.graph.clone();
        e.stats = snap.stats;
        e.validate()
            .map_err(|m| format!("the saved frame engine state is inconsistent: {m}"))?;
        Ok(e)
    }
}
