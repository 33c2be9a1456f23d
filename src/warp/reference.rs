//! # The sequential reference of the warp engine
//!
//! What the object-centric timewarp of seed 000 must compute, written the obvious way: every
//! dynamic body advanced tick by tick in lock-step, all pairs tested at every tick by brute
//! force, with the per-tick rules of [`super::rules`] (contacts from pre-event states, kicks
//! summed in the canonical order, each body flying from its anchor between them). No messages, no rollback, no hash table. The warp engine's
//! committed frames must equal these bit for bit, for any thread count, backend and window
//! (`tests/warp.rs`); it is quadratic in the number of bodies, so it is for small scenes.
//!
//! [`grouped_reference`] is the same with contact groups (seed 001, Mirtich, Section 4.4): the
//! rules of [`super::group_rules`] — fission, fusion on slow contacts, islands solved together,
//! sleep (none with [`Rules::sleep`] off, `--sleep off`) — in lock-step. It is what the warp
//! engine with contact groups must equal, with the same `sleep`.

use super::group_rules::{
    Change, Island, contact_candidates, initial_islands, regroup, step_island,
};
use super::rules::{Anchor, Kick, Rules};
use super::{BodyId, Tick};
use crate::dynamics::BodyState;

/// The states of the dynamic bodies at every frame tick `0, frame_ticks, ..., end_tick`.
pub fn reference_frames(rules: &Rules, frame_ticks: u64, end_tick: Tick) -> Vec<Vec<BodyState>> {
    let n = rules.bodies();
    let mut states = rules.initial.clone();
    let mut anchors: Vec<Anchor> = states.iter().map(|&s| Anchor::at(0, s)).collect();
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
        for ((s, a), k) in states
            .iter_mut()
            .zip(anchors.iter_mut())
            .zip(kicks.iter_mut())
        {
            (*a, *s) = rules.advance(a, s, tick, k);
        }
        if (tick + 1) % frame_ticks == 0 {
            frames.push(states.clone());
        }
    }
    frames
}

/// What the grouped reference computed ([`grouped_reference`]).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupedRun {
    /// The states of the dynamic bodies at every frame tick, as [`reference_frames`].
    pub frames: Vec<Vec<BodyState>>,
    /// The groups at tick 0 ([`initial_islands`]), each ascending, by smallest body.
    pub initial: Vec<Vec<BodyId>>,
    /// Every fusion and fission after it, in tick order.
    pub changes: Vec<Change>,
    /// Groups that fell asleep (the tick whose state they keep) and groups woken by a kick.
    pub sleeps: Vec<(Tick, Vec<BodyId>)>,
    pub wakes: Vec<(Tick, Vec<BodyId>)>,
    /// The groups after the last tick.
    pub islands: Vec<Island>,
}

/// The sequential reference with contact groups: the rules of [`super::group_rules`] applied
/// in lock-step to every body from its initial state (all overlapping pairs, for small
/// scenes; the pairs come from a sort-and-sweep on x, once per tick for both). At each tick:
/// regroup (not at tick 0, whose groups are [`initial_islands`]), kicks
/// between groups from the pre-event states (waking a kicked sleeping group), then each group
/// steps.
pub fn grouped_reference(
    rules: &Rules,
    frame_ticks: u64,
    end_tick: Tick,
) -> Result<GroupedRun, String> {
    let n = rules.bodies();
    let mut states = rules.initial.clone();
    let mut pairs = contact_candidates(rules, &states);
    let islands = initial_islands(rules, &states, &pairs);
    let mut run = GroupedRun {
        frames: vec![states.clone()],
        initial: islands.iter().map(|i| i.bodies.clone()).collect(),
        changes: Vec::new(),
        sleeps: Vec::new(),
        wakes: Vec::new(),
        islands,
    };
    let mut kicks: Vec<Vec<Kick>> = vec![Vec::new(); n];
    let mut island_of = vec![0usize; n];
    let mut slept = vec![false; n];
    for tick in 0..end_tick {
        // Whether each body was asleep at this tick before regrouping: the flag written with
        // its state (what the warp engine's TVHT entries carry).
        for isl in &run.islands {
            for &b in &isl.bodies {
                slept[b as usize] = isl.asleep;
            }
        }
        if tick > 0 {
            pairs = contact_candidates(rules, &states);
            let changes = regroup(rules, &mut run.islands, &states, tick, &pairs);
            run.changes.extend(changes);
        }
        for (i, isl) in run.islands.iter().enumerate() {
            for &b in &isl.bodies {
                island_of[b as usize] = i;
            }
        }
        for k in kicks.iter_mut() {
            k.clear();
        }
        for &(a, b) in &pairs {
            if island_of[a] == island_of[b] || (slept[a] && slept[b]) {
                continue;
            }
            if let Some(k) = rules.pair_kick(a, &states[a], b, &states[b]) {
                kicks[a].push(k);
            }
            if let Some(k) = rules.pair_kick(b, &states[b], a, &states[a]) {
                kicks[b].push(k);
            }
        }
        for isl in run.islands.iter_mut() {
            let mut own: Vec<Vec<Kick>> = isl
                .bodies
                .iter()
                .map(|&b| std::mem::take(&mut kicks[b as usize]))
                .collect();
            if isl.asleep && own.iter().any(|k| !k.is_empty()) {
                isl.asleep = false;
                isl.rest_ticks = 0;
                run.wakes.push((tick, isl.bodies.clone()));
            }
            let mut own_states: Vec<BodyState> =
                isl.bodies.iter().map(|&b| states[b as usize]).collect();
            let fell_asleep = step_island(rules, isl, tick, &mut own_states, &mut own)?;
            for (&b, s) in isl.bodies.iter().zip(own_states) {
                states[b as usize] = s;
            }
            if fell_asleep {
                run.sleeps.push((tick + 1, isl.bodies.clone()));
            }
        }
        if (tick + 1) % frame_ticks == 0 {
            run.frames.push(states.clone());
        }
    }
    Ok(run)
}
