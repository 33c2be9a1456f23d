//! # The island log: contact groups at checkpoint ticks
//!
//! A checkpoint of the warp engine needs more than the committed states at its tick: each
//! body flies from its anchor (rule 4 of [`super::rules`]), and with contact groups (issue
//! #5; seed 001, Section 4.4) a tick also carries the groups: which bodies each holds, and what its island carries
//! from tick to tick besides the states — the rest and split timers, the sleep flag, the
//! warm-start impulses ([`Island`]). A run resumed from the states alone would make other
//! groups and other frames, so the checkpoint must hold the islands too.
//!
//! The committed frames reach the output through the GVT buffer, long after the entities have
//! moved on and dropped their islands of that tick. So the islands are logged the way states
//! are recorded (seed 000, Section 3): an entity that **records** a tick the log wants puts its
//! island there, as it stands before the rules of that tick (what a group carries into it),
//! and an entity that **unrecords** it on rollback takes it back. When the tick is committed,
//! every body has recorded it and no rollback can reach it: the log then holds exactly the
//! final islands of the groups alive at that tick, one per group, and they partition the
//! bodies ([`IslandLog::take`] checks it). A run resumed from them starts those groups as they
//! were, so it makes the same changes at that tick and after as the run that was not cut.
//!
//! Without contact groups a tick carries each body's anchor (rule 4 of [`super::rules`]: the
//! state it flies from, which the states at the tick do not give back), so a single body logs
//! itself as a group of one whose island holds its anchor ([`Island::single`]).
//!
//! The log wants the ticks of periodic checkpoints and the last tick of the run; every other
//! tick costs nothing. One mutex guards it, taken for a moment by a record or a rollback
//! (never while holding another lock that someone takes after it: no cycle, no deadlock).

use super::group_rules::{Island, check_partition};
use super::{BodyId, Tick};
use crate::primitive::Mutex;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

/// Islands of the groups alive at the wanted ticks, as their entities recorded them.
pub struct IslandLog {
    /// Ticks that are multiples of this are wanted (0: none but `last`).
    every: u64,
    /// The last tick of the run, always wanted.
    last: Tick,
    at: Mutex<BTreeMap<Tick, BTreeMap<BodyId, Arc<Island>>>>,
}

impl IslandLog {
    /// A log of the ticks that are multiples of `every` ticks (0: none) and of `last`.
    pub fn new(every: u64, last: Tick) -> IslandLog {
        IslandLog {
            every,
            last,
            at: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether tick `t` is logged.
    pub fn wants(&self, t: Tick) -> bool {
        t == self.last || (self.every > 0 && t % self.every == 0)
    }

    /// The group of smallest body `rep` recorded the ticks given, with these islands.
    pub fn put(&self, rep: BodyId, islands: impl IntoIterator<Item = (Tick, Arc<Island>)>) {
        let mut at = self.at.lock().expect("island log poisoned");
        for (t, isl) in islands {
            debug_assert!(self.wants(t));
            at.entry(t).or_default().insert(rep, isl);
        }
    }

    /// The group of smallest body `rep` unrecorded the ticks `ticks` (a rollback).
    pub fn take_back(&self, rep: BodyId, ticks: Range<Tick>) {
        let mut at = self.at.lock().expect("island log poisoned");
        for (_, groups) in at.range_mut(ticks) {
            groups.remove(&rep);
        }
    }

    /// The islands at committed tick `t`, by smallest body, taken out of the log; `Err` if
    /// they do not partition the bodies `0..bodies` (a broken protocol: some group did not
    /// log, or logged twice).
    pub fn take(&self, t: Tick, bodies: usize) -> Result<Vec<Island>, String> {
        let groups = {
            let mut at = self.at.lock().expect("island log poisoned");
            // Older ticks can no longer be asked for: frames are taken in order.
            let mut rest = at.split_off(&t);
            let groups = rest.remove(&t).unwrap_or_default();
            *at = rest;
            groups
        };
        if let Some((rep, isl)) = groups.iter().find(|(r, i)| i.bodies.first() != Some(r)) {
            return Err(format!(
                "the island logged at tick {t} for body {rep} holds {:?}",
                isl.bodies
            ));
        }
        check_partition(groups.values().map(|i| &**i), bodies)
            .map_err(|e| format!("islands logged at tick {t}: {e}"))?;
        Ok(groups.into_values().map(Arc::unwrap_or_clone).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn island(bodies: &[BodyId]) -> Arc<Island> {
        let state = crate::dynamics::BodyState {
            position: glam::Vec3::ZERO,
            rotation: glam::Quat::IDENTITY,
            velocity: glam::Vec3::ZERO,
            angular_velocity: glam::Vec3::ZERO,
        };
        let mut isl = Island::single(bodies[0], crate::warp::rules::Anchor::at(0, state));
        isl.bodies = bodies.to_vec();
        Arc::new(isl)
    }

    #[test]
    fn a_rollback_takes_back_what_was_logged_and_take_checks_the_partition() {
        let log = IslandLog::new(16, 40);
        assert!(log.wants(0) && log.wants(32) && log.wants(40) && !log.wants(33));
        log.put(0, [(16, island(&[0, 2])), (32, island(&[0, 2]))]);
        log.put(1, [(16, island(&[1]))]);
        // Group 1 rolls back to tick 10: its record of 16 goes.
        log.take_back(1, 11..17);
        let err = log.take(16, 3).unwrap_err();
        assert!(err.contains("body 1 is in no island"), "{err}");
        // It steps again and records 16 and 32.
        log.put(1, [(16, island(&[1])), (32, island(&[1]))]);
        let at32 = log.take(32, 3).unwrap();
        assert_eq!(
            at32.iter().map(|i| i.bodies.clone()).collect::<Vec<_>>(),
            [vec![0, 2], vec![1]]
        );
        // Tick 16 is older than 32, taken: gone.
        assert!(log.take(16, 3).is_err());
        // A body in two islands is refused.
        log.put(0, [(40, island(&[0, 1]))]);
        log.put(1, [(40, island(&[1, 2]))]);
        let err = log.take(40, 3).unwrap_err();
        assert!(err.contains("two islands"), "{err}");
    }
}
