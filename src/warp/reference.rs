//! # The sequential reference of the warp engine
//!
//! What the object-centric timewarp of seed 000 must compute, written the obvious way: every
//! dynamic body advanced tick by tick in lock-step, all pairs tested at every tick by brute
//! force, with the per-tick rules of [`super::rules`] (contacts from pre-event states, kicks
//! summed in the canonical order). No messages, no rollback, no hash table. The warp engine's
//! committed frames must equal these bit for bit, for any thread count, backend and window
//! (`tests/warp.rs`); it is quadratic in the number of bodies, so it is for small scenes.

use super::Tick;
use super::rules::{Kick, Rules};
use crate::dynamics::BodyState;

/// The states of the dynamic bodies at every frame tick `0, frame_ticks, ..., end_tick`.
pub fn reference_frames(rules: &Rules, frame_ticks: u64, end_tick: Tick) -> Vec<Vec<BodyState>> {
    let n = rules.bodies();
    let mut states = rules.initial.clone();
    let mut frames = vec![states.clone()];
    let mut kicks: Vec<Vec<Kick>> = vec![Vec::new(); n];
    for tick in 0..end_tick {
        for (i, k) in kicks.iter_mut().enumerate() {
            k.clear();
            rules.static_kicks(i, &states[i], k);
        }
        for a in 0..n {
            for b in a + 1..n {
                if let Some(k) = rules.pair_kick(a, &states[a], b, &states[b]) {
                    kicks[a].push(k);
                }
                if let Some(k) = rules.pair_kick(b, &states[b], a, &states[a]) {
                    kicks[b].push(k);
                }
            }
        }
        for (s, k) in states.iter_mut().zip(kicks.iter_mut()) {
            *s = rules.advance(s, k);
        }
        if (tick + 1) % frame_ticks == 0 {
            frames.push(states.clone());
        }
    }
    frames
}
