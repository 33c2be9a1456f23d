//! Edge begin/end reporting from a parallel narrow phase (seed 002, "Making persistent islands
//! fast").
//!
//! The narrow phase keeps a persistent array of contact pairs, indexed `0..pairs`. Each worker
//! (a rayon task, or a rayon `fold` accumulator) owns a [`TouchChanges`]: when a pair goes from
//! not touching to touching it sets the pair's bit in `began`, from touching to not touching in
//! `ended`. After the narrow phase, [`merge_touch_changes`] ORs the workers' sets together — OR
//! is associative, commutative and idempotent, so the result does not depend on how the pairs
//! were divided among workers or in which order the sets are merged — and
//! [`IslandGraph::apply_touch_changes`] walks the set bits in ascending pair order on one
//! thread, unlinking ended pairs and linking begun ones. The graph therefore ends up identical
//! for every thread count: same islands, same ids, same list orders.

use super::bitset::BitSet;
use super::error::IslandError;
use super::graph::{ContactId, IslandGraph};

/// One worker's record of which contact pairs began or stopped touching this step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TouchChanges {
    /// Pairs that began touching.
    pub began: BitSet,
    /// Pairs that stopped touching.
    pub ended: BitSet,
}

impl TouchChanges {
    /// Empty sets with room for `pairs` pair indices.
    pub fn new(pairs: usize) -> Self {
        TouchChanges {
            began: BitSet::new(pairs),
            ended: BitSet::new(pairs),
        }
    }

    /// Clears both sets, keeping the allocations.
    pub fn clear(&mut self) {
        self.began.clear();
        self.ended.clear();
    }

    /// `self |= other` for both sets (the merge of two workers' records).
    pub fn union_with(&mut self, other: &TouchChanges) {
        self.began.union_with(&other.began);
        self.ended.union_with(&other.ended);
    }
}

/// ORs the workers' records together. The result is the same for any partition of the pairs
/// among the workers and any order of `per_worker`.
pub fn merge_touch_changes(per_worker: &[TouchChanges]) -> TouchChanges {
    let mut merged = TouchChanges::default();
    for t in per_worker {
        merged.union_with(t);
    }
    merged
}

/// What [`IslandGraph::apply_touch_changes`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppliedChanges {
    pub linked: usize,
    pub unlinked: usize,
}

impl IslandGraph {
    /// Applies merged touch changes in ascending pair order: for each set pair index `p`, unlinks
    /// `pair_contact[p]` when `p` ended, and links `pair_bodies[p]` when it began, storing the
    /// new contact id in `pair_contact[p]` (and `None` after an unlink). `pair_contact` is the
    /// caller's map from pair index to graph contact, kept across steps.
    ///
    /// Every change is checked before any is applied: a pair index beyond `pair_bodies`, a
    /// pair both begun and ended, a begun pair that already has a contact, an ended pair without
    /// one, or a pair of bad bodies is an error and leaves graph and map unchanged.
    pub fn apply_touch_changes(
        &mut self,
        changes: &TouchChanges,
        pair_bodies: &[(u32, u32)],
        pair_contact: &mut [Option<ContactId>],
    ) -> Result<AppliedChanges, IslandError> {
        let pairs = pair_bodies.len();
        if pair_contact.len() != pairs {
            return Err(IslandError::BadLength {
                what: "pair_contact",
                expected: pairs,
                got: pair_contact.len(),
            });
        }
        for p in changes.ended.iter_ones() {
            if p >= pairs {
                return Err(IslandError::PairOutOfRange { pair: p, pairs });
            }
            if changes.began.get(p) {
                return Err(IslandError::InconsistentChange {
                    pair: p,
                    why: "began and ended touching in the same step",
                });
            }
            match pair_contact[p] {
                Some(c) if self.is_contact(c) => {}
                _ => {
                    return Err(IslandError::InconsistentChange {
                        pair: p,
                        why: "ended touching but has no live contact",
                    });
                }
            }
        }
        for p in changes.began.iter_ones() {
            if p >= pairs {
                return Err(IslandError::PairOutOfRange { pair: p, pairs });
            }
            if pair_contact[p].is_some() {
                return Err(IslandError::InconsistentChange {
                    pair: p,
                    why: "began touching but already has a contact",
                });
            }
            let (a, b) = pair_bodies[p];
            self.check_pair(a as usize, b as usize)?;
        }
        let mut applied = AppliedChanges::default();
        let mut ended = changes.ended.iter_ones().peekable();
        let mut began = changes.began.iter_ones().peekable();
        // Walk both sets as one ascending sequence (a pair is in at most one of them).
        loop {
            let take_end = match (ended.peek(), began.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(e), Some(b)) => e < b,
            };
            if take_end {
                let p = ended.next().expect("peeked");
                let c = pair_contact[p].take().expect("checked above");
                self.unlink(c)?;
                applied.unlinked += 1;
            } else {
                let p = began.next().expect("peeked");
                let (a, b) = pair_bodies[p];
                pair_contact[p] = Some(self.link(a as usize, b as usize)?);
                applied.linked += 1;
            }
        }
        Ok(applied)
    }
}
