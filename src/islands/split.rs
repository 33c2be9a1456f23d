//! The deferred split (seed 002, "Island splitting" and "What about splitting?").
//!
//! Removing a contact does not split its island at once: the island is only flagged (its
//! constraint-remove count is > 0), because other contacts may still hold it together and
//! finding out costs as much as splitting. At most one flagged island is split per step, chosen
//! by this deterministic heuristic:
//!
//! 1. a *sleepy* flagged island (its bodies' minimum sleep timer reached `time_to_sleep`) before
//!    any other — the flag is the only thing keeping it awake, as in Box2D, which splits the
//!    sleepiest flagged island so that the pieces can sleep;
//! 2. then the one with the most bodies (Box2D's "largest island", the one whose pieces free
//!    the most work);
//! 3. then the lowest id.
//!
//! Non-sleepy flagged islands are split too (after the sleepy ones): the warp engine integrates
//! an island as one entity, so fission of a broken contact group is worth doing even when it
//! does not lead to sleep (Mirtich, seed 001 §4.4).
//!
//! The split itself is Box2D's `SplitIsland`: a depth-first search seeded by each of the
//! island's bodies in list order, following the bodies' edge lists. The island is known not to
//! touch any other island, so the search stays inside it. Each component becomes a new island
//! that inherits the old one's awake state; its bodies keep their timers, its minimum timer is
//! recomputed. The component holding the old island's representative keeps its id; every other
//! component takes its smallest body id (see the graph module, invariant R).

use super::graph::{Island, IslandGraph, IslandId, ListIter, NONE, link, set_owner};

const PENDING: u32 = NONE - 1;
const VISITED: u32 = NONE - 2;

/// What [`IslandGraph::split_one`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The island that was split (its id may be reused by one of the new islands).
    pub parent: IslandId,
    /// The islands made from it, ascending by id; one island when it was still connected.
    pub islands: Vec<IslandId>,
}

impl IslandGraph {
    /// The island [`IslandGraph::split_one`] would split now, if any.
    pub fn split_candidate(&self) -> Option<IslandId> {
        let tts = self.config.time_to_sleep;
        self.split_flags
            .iter_ones()
            .map(|i| {
                let isl = &self.islands[i];
                (
                    isl.min_sleep_time >= tts,
                    isl.body_count,
                    std::cmp::Reverse(i),
                )
            })
            .max()
            .map(|(_, _, std::cmp::Reverse(i))| IslandId(i as u32))
    }

    /// Splits at most one flagged island (see the module documentation for which) into its
    /// connected components and returns what was made, or `None` when no island is flagged.
    pub fn split_one(&mut self) -> Option<Split> {
        let parent = self.split_candidate()?;
        let islands = self.split_island(parent.0);
        Some(Split { parent, islands })
    }

    fn split_island(&mut self, p: u32) -> Vec<IslandId> {
        let old = self.islands[p as usize];
        let was_awake = self.awake.get(p as usize);
        let seeds: Vec<u32> = ListIter::new(&self.body_next, old.head_body)
            .map(|b| b as u32)
            .collect();
        set_owner(
            &self.body_next,
            &mut self.body_island,
            old.head_body,
            PENDING,
        );
        set_owner(
            &self.contact_next,
            &mut self.contact_island,
            old.head_contact,
            PENDING,
        );
        self.islands[p as usize] = Island::EMPTY;
        self.awake.unset(p as usize);
        self.split_flags.unset(p as usize);

        let mut made = Vec::new();
        let mut stack = Vec::new();
        let mut comp_bodies = Vec::new();
        let mut comp_contacts = Vec::new();
        for &seed in &seeds {
            if self.body_island[seed as usize] != PENDING {
                continue;
            }
            comp_bodies.clear();
            comp_contacts.clear();
            self.body_island[seed as usize] = VISITED;
            stack.push(seed);
            while let Some(b) = stack.pop() {
                comp_bodies.push(b);
                let mut key = self.body_edge_head[b as usize];
                while key != NONE {
                    let (c, side) = ((key >> 1) as usize, (key & 1) as usize);
                    key = self.edge_next[c][side];
                    if self.contact_island[c] != PENDING {
                        continue;
                    }
                    self.contact_island[c] = VISITED;
                    comp_contacts.push(c as u32);
                    let other = self.contact_bodies[c][1 - side] as usize;
                    if !self.is_static[other] && self.body_island[other] == PENDING {
                        self.body_island[other] = VISITED;
                        stack.push(other as u32);
                    }
                }
            }
            let id = if comp_bodies.contains(&p) {
                p
            } else {
                *comp_bodies
                    .iter()
                    .min()
                    .expect("a component holds its seed")
            };
            let mut isl = Island::EMPTY;
            isl.min_sleep_time = comp_bodies
                .iter()
                .map(|&b| self.sleep_time[b as usize])
                .fold(f32::INFINITY, f32::min);
            (isl.head_body, isl.tail_body) = link(
                &comp_bodies,
                id,
                (
                    &mut self.body_island,
                    &mut self.body_prev,
                    &mut self.body_next,
                ),
            );
            isl.body_count = comp_bodies.len() as u32;
            (isl.head_contact, isl.tail_contact) = link(
                &comp_contacts,
                id,
                (
                    &mut self.contact_island,
                    &mut self.contact_prev,
                    &mut self.contact_next,
                ),
            );
            isl.contact_count = comp_contacts.len() as u32;
            self.islands[id as usize] = isl;
            if was_awake {
                self.awake.set(id as usize);
            }
            made.push(IslandId(id));
        }
        made.sort_unstable();
        made
    }
}
