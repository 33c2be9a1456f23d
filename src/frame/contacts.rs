//! Contact pairs between steps (stages 3 and 4 of the frame pipeline): the sorted contact list,
//! rebuilt each step by merging the broad-phase pairs with the previous list (which carries the
//! manifolds, hence the warm-start impulses, and keeps frozen the contacts between resting
//! bodies), and the parallel narrow phase that recomputes the manifolds and records which pairs
//! began or stopped touching in bit words owned by chunks of 64 contacts (Box2D v3, seed 002,
//! "Making persistent islands fast").

use super::engine::{FrameEngine, NONE, SPECULATIVE_DISTANCE};
use crate::dynamics::BodyState;
use crate::geometry::{Manifold, Pose, collide};
use crate::islands::ContactId;
use crate::scene::{mix_friction, mix_restitution, mix_rolling_resistance};
use rayon::prelude::*;

/// A contact pair, kept sorted by `key = a << 32 | b` (`a < b`).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Contact {
    pub(super) key: u64,
    pub(super) manifold: Manifold,
    pub(super) friction: f32,
    pub(super) restitution: f32,
    pub(super) rolling_resistance: f32,
    /// The manifold has points (an island edge).
    pub(super) touching: bool,
    /// Recomputed this step (false: frozen between two resting bodies).
    pub(super) active: bool,
    /// Its edge in the island graph while touching, else `NONE`.
    pub(super) edge: u32,
}

impl Contact {
    #[inline]
    pub(super) fn a(&self) -> usize {
        (self.key >> 32) as usize
    }
    #[inline]
    pub(super) fn b(&self) -> usize {
        (self.key & 0xffff_ffff) as usize
    }
}

impl FrameEngine {
    /// Stage 3: the new contact list: broad-phase pairs (carrying last step's manifold) and the
    /// frozen contacts between resting bodies, in key order.
    pub(super) fn merge_contacts(&mut self) {
        // Temporal coherence: most steps have exactly last step's pairs; then there is nothing
        // to merge and the list stays in place.
        if self.contacts.len() == self.pairs.len()
            && self
                .contacts
                .iter()
                .zip(&self.pairs)
                .all(|(c, &k)| c.key == k)
        {
            self.contacts.iter_mut().for_each(|c| c.active = true);
            return;
        }
        let mut next = std::mem::take(&mut self.next_contacts);
        next.clear();
        let old = &self.contacts;
        let pairs = &self.pairs;
        let (mut i, mut j) = (0, 0);
        let mut ended = 0;
        while i < old.len() || j < pairs.len() {
            let ko = old.get(i).map_or(u64::MAX, |c| c.key);
            let kp = pairs.get(j).copied().unwrap_or(u64::MAX);
            if ko < kp {
                let c = old[i];
                if !self.awake[c.a()] && !self.awake[c.b()] {
                    next.push(Contact { active: false, ..c });
                } else if c.touching {
                    // The pair left the broad phase while touching: its island edge ends.
                    self.graph
                        .unlink(ContactId(c.edge))
                        .unwrap_or_else(|e| panic!("island graph: {e}"));
                    if !self.is_static[c.a()] && !self.is_static[c.b()] {
                        ended += 1;
                    }
                }
                i += 1;
            } else if ko == kp {
                next.push(Contact {
                    active: true,
                    ..old[i]
                });
                i += 1;
                j += 1;
            } else {
                let (a, b) = ((kp >> 32) as usize, (kp & 0xffff_ffff) as usize);
                next.push(Contact {
                    key: kp,
                    manifold: Manifold::default(),
                    friction: mix_friction(self.friction[a], self.friction[b]),
                    restitution: mix_restitution(self.restitution[a], self.restitution[b]),
                    rolling_resistance: mix_rolling_resistance(
                        self.rolling_resistance[a],
                        self.rolling_resistance[b],
                    ),
                    touching: false,
                    active: true,
                    edge: NONE,
                });
                j += 1;
            }
        }
        self.stats.island_unlinks += ended;
        self.next_contacts = std::mem::replace(&mut self.contacts, next);
    }

    pub(super) fn count_edge(&mut self, a: usize, b: usize, begin: bool) {
        if !self.is_static[a] && !self.is_static[b] {
            if begin {
                self.stats.island_links += 1;
            } else {
                self.stats.island_unlinks += 1;
            }
        }
    }

    /// Stage 4: manifolds of the active pairs, in parallel; begin/end bits per 64 contacts.
    pub(super) fn narrow_phase(&mut self) {
        let words = self.contacts.len().div_ceil(64);
        self.change_bits.clear();
        self.change_bits.resize(words, 0);
        let dt = self.params.dt;
        let (states, shapes, extents, is_static) =
            (&self.states, &self.shapes, &self.extents, &self.is_static);
        let contacts = &mut self.contacts;
        let bits = &mut self.change_bits;
        let narrow = |(chunk, word): (&mut [Contact], &mut u64)| {
            let mut w = 0u64;
            for (k, c) in chunk.iter_mut().enumerate() {
                if !c.active {
                    continue;
                }
                let (a, b) = (c.a(), c.b());
                let (sa, sb) = (&states[a], &states[b]);
                let spin = |i: usize, s: &BodyState| {
                    if is_static[i] {
                        0.0
                    } else {
                        s.angular_velocity.length() * extents[i]
                    }
                };
                let margin = SPECULATIVE_DISTANCE
                    + ((sb.velocity - sa.velocity).length() + spin(a, sa) + spin(b, sb)) * dt;
                let mut m = collide(
                    &shapes[a],
                    &Pose::new(sa.position, sa.rotation),
                    &shapes[b],
                    &Pose::new(sb.position, sb.rotation),
                    margin,
                );
                m.carry_impulses(&c.manifold);
                c.manifold = m;
                let touching = m.count > 0;
                if touching != c.touching {
                    w |= 1 << k;
                }
                c.touching = touching;
            }
            *word = w;
        };
        if self.config.threads == 1 {
            contacts
                .chunks_mut(64)
                .zip(bits.iter_mut())
                .for_each(narrow);
        } else {
            self.pool.install(|| {
                contacts
                    .par_chunks_mut(64)
                    .zip(bits.par_iter_mut())
                    .for_each(narrow)
            });
        }
        // Walk the flipped pairs in contact order (serial, deterministic).
        for wi in 0..self.change_bits.len() {
            let mut w = self.change_bits[wi];
            while w != 0 {
                let k = wi * 64 + w.trailing_zeros() as usize;
                w &= w - 1;
                let c = self.contacts[k];
                // Edge changes in ascending contact order: the graph is the same for any
                // thread count.
                if c.touching {
                    let id = self
                        .graph
                        .link(c.a(), c.b())
                        .unwrap_or_else(|e| panic!("island graph: {e}"));
                    self.contacts[k].edge = id.0;
                } else {
                    self.graph
                        .unlink(ContactId(c.edge))
                        .unwrap_or_else(|e| panic!("island graph: {e}"));
                    self.contacts[k].edge = NONE;
                }
                self.count_edge(c.a(), c.b(), c.touching);
            }
        }
    }
}
