//! Contact pairs between steps (stages 3 and 4 of the frame pipeline): the sorted contact list,
//! rebuilt each step by merging the broad-phase pairs with the previous list (which carries the
//! manifolds, hence the warm-start impulses, and keeps frozen the contacts between resting
//! bodies), and the parallel narrow phase that recomputes the manifolds and records which pairs
//! began or stopped touching in bit words owned by chunks of 64 contacts (Box2D v3, seed 002,
//! "Making persistent islands fast").
//!
//! The narrow phase keeps speculative points, down to a gap the pair can close within the step
//! (Box2D's speculative contacts): they hold a fast body back from stepping over a thin one.
//! But their normal is the one at the step's start, and a pair that passes by at speed
//! approaches along it: the solver would push apart a pair that never touches (a phantom
//! collision: 5.6 m/s given to a sphere passed 2 cm away at 15 m/s, issue #36), and push a
//! grazing pair along a normal too much in line with the motion. So a pair whose points are
//! all apart by more than [`CONTACT_TOLERANCE`] (and has no plane, whose normal never turns)
//! asks when it meets within the step ([`impact`]; the step as the solver sees it, one
//! substep past the frame, since its last substep's speculative points act on what the next
//! would close). If it meets, its manifold is the one of that moment, moved back to the step's
//! start ([`at_start`]), and if it meets faster than the restitution threshold it bounces
//! whatever the normal part of its approach (`impact`: a grazing blow's normal part is small).
//! If it does not, its manifold is the one of its nearest approach ([`closest_approach`]),
//! along whose normal its own motion does not close it: the point still holds the two apart
//! if other contacts push them together within the step (a sphere in a pile, pressed onto a
//! cylinder it is leaving: dropping the point sank one 5 cm into it), and gives nothing when
//! nothing does.

use super::engine::{FrameEngine, NONE, SPECULATIVE_DISTANCE};
use crate::dynamics::BodyState;
use crate::geometry::{Impact, Manifold, Pose, closest_approach, collide, impact};
use crate::islands::ContactId;
use crate::scene::Shape;
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
    /// The pair was apart at the start of the step and meets within it (its manifold is the
    /// one of the moment of impact, moved back to the step's start) at a relative speed of
    /// the restitution threshold or more: it bounces whatever its normal component.
    pub(super) impact: bool,
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
                    impact: false,
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
        let (dt, threshold) = (self.params.dt, self.params.restitution_threshold);
        // How far the solver looks: its last substep's speculative points act on what the next
        // substep would close.
        let horizon = dt * (1.0 + 1.0 / self.params.substeps as f32);
        // Gravity's pull within the step, which the time of impact (linear motion) leaves out.
        let tolerance = CONTACT_TOLERANCE + 0.5 * self.params.gravity.length() * dt * dt;
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
                c.impact = false;
                let closing =
                    -(sb.velocity - sa.velocity).dot(m.normal) + spin(a, sa) + spin(b, sb);
                if speculative(&m, &shapes[a], &shapes[b], tolerance, closing * horizon) {
                    let (ma, mb) = (sa.motion(), sb.motion());
                    match impact(&shapes[a], &ma, &shapes[b], &mb, horizon) {
                        Some(hit) => {
                            m = at_start(&hit, sa, sb, is_static[a] || is_static[b]);
                            c.impact = (sb.velocity - sa.velocity).length() >= threshold;
                        }
                        // Apart through the step: held apart along the normal of their
                        // nearest approach, which their own motion does not close.
                        None => {
                            match closest_approach(
                                &shapes[a], &ma, &shapes[b], &mb, horizon, margin,
                            ) {
                                Some(near) => {
                                    m = at_start(&near, sa, sb, is_static[a] || is_static[b])
                                }
                                None => m.count = 0,
                            }
                        }
                    }
                }
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

/// Gaps up to this (m), plus how far gravity pulls a body within the step (`g dt² / 2`, 1.4 mm
/// at 1/60 s, which the time of impact leaves out: it moves the bodies at their velocities),
/// at the start of a step are contact whatever the bodies do within it: a resting pair sits
/// within a fraction of a millimetre of touching, and must keep its island edge and its
/// solver point. (Without the pull, spheres resting on the curved top of `cylinders`' static
/// cylinders lost their contact every other step and sank 5 cm into them.) A grazing pass
/// further apart than this is no contact.
pub(super) const CONTACT_TOLERANCE: f32 = 5e-4;

/// Whether manifold `m` of a pair of these shapes holds only speculative points (every one more
/// than `tolerance` apart), whose normal is that of the step's start and may not be the normal
/// the pair meets at, if it meets at all, and the pair closes across them (`reach`: at most how
/// far along that normal within the solver's horizon, spin included) far enough for one to
/// act on its own: then the time of impact decides. A point that its own pair's motion cannot
/// close only holds the pair apart against other pushes, with no phantom to fear; a pair with a
/// plane keeps its points too: a plane's normal is the same at any time.
fn speculative(m: &Manifold, a: &Shape, b: &Shape, tolerance: f32, reach: f32) -> bool {
    let plane = |s: &Shape| matches!(s, Shape::Plane { .. });
    m.count > 0
        && !plane(a)
        && !plane(b)
        && m.points().iter().all(|p| p.depth < -tolerance)
        && m.points().iter().any(|p| -p.depth < reach)
}

/// The manifold of an impact `hit.time` seconds into the step, as the solver takes it at the
/// step's start: the normal of the impact; each point's depth less the normal closing of the
/// pair before the impact (a gap the solver's speculative constraint lets them close, and no
/// more), its position moved back by the bodies' mean motion before it, or by the one body's
/// against a static one (whose velocity is zero), so that the levers are the impact's within
/// half the pair's relative motion.
fn at_start(hit: &Impact, sa: &BodyState, sb: &BodyState, with_static: bool) -> Manifold {
    let t = hit.time;
    let mut m = hit.manifold;
    let closing = m.normal.dot(sb.velocity - sa.velocity) * t;
    let share = if with_static { 1.0 } else { 0.5 };
    let shift = (sa.velocity + sb.velocity) * (share * t);
    for p in m.points_mut() {
        p.depth += closing;
        p.position -= shift;
    }
    m
}
