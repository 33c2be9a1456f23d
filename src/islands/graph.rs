//! The persistent island graph: bodies are nodes, touching contacts are edges, islands are the
//! connected components, kept across steps and updated incrementally (seed 002, "Persistent
//! islands").
//!
//! # Data layout
//!
//! Everything is flat arrays indexed by ids, with `NONE = u32::MAX` for "no link":
//!
//! - per body: its island, the previous and next body of that island's body list (Box2D's
//!   doubly linked lists), the head of its own list of contact edges, its sleep timer;
//! - per contact slot: its two bodies, its island (`NONE` while the slot is free), the previous
//!   and next contact of the island's contact list, and for each of its two ends the previous and
//!   next edge of that body's edge list (an edge key is `contact * 2 + side`); free slots are
//!   kept on a LIFO free list;
//! - per island slot: head, tail and count of its body list and of its contact list, its
//!   constraint-remove count (Box2D's `constraintRemoveCount`; > 0 means "may split") and the
//!   minimum sleep timer of its bodies at the last sleep update; plus two bit sets over island
//!   slots: awake islands and islands flagged for splitting.
//!
//! # Island ids are derived from content
//!
//! There is one island slot per body, and a live island's id is the id of one of its bodies, its
//! *representative*: every dynamic body starts as island `body`; a merge keeps the id of the
//! island with more bodies (the lower id on a tie); a split gives the component holding the old
//! representative the old id and every other component the smallest body id it holds. Invariant
//! R: *island `i` is live exactly when body `i` is dynamic and `island_of(i) == i`*. It is kept
//! by merges (the kept id's body stays in the merged island) and by splits (a component's
//! smallest body was in the split island, whose slot is the only one R could tie it to). So ids
//! never come from a counter or a free list: they are a function of which bodies an island holds
//! and of the order of merges and splits, the same under any schedule (DESIGN.md, determinism).
//!
//! # Merging directly, not in a finalisation pass
//!
//! Box2D v3 links with union-find (a parent pointer per island, roots found by walking) and
//! collapses every island tree into its root in a serial pass after the narrow phase. This graph
//! merges at once inside [`IslandGraph::link`] instead, by union by size: the island with fewer
//! bodies is relabelled (its bodies and contacts get the other id) and its two lists are spliced
//! onto the larger island's lists in O(1). Why: the warp engine links entities inside STM
//! transactions and has no global step at which a finalisation pass could run, so every
//! operation must leave a fully valid graph that any other transaction may read; and with every
//! body pointing straight at its root (union-find with complete path compression kept eagerly),
//! `island_of` is O(1) and needs no mutation. Union by size bounds the relabelling: a body is
//! relabelled only when its island at least doubles, so any sequence of links costs
//! O(n log n) relabels in all, and one link costs O(smaller island).
//!
//! # Static bodies
//!
//! Static bodies never join an island and never connect two islands (Mirtich, seed 001 §4.4:
//! kinematic bodies "do not link groups together since their motion and the forces they exert
//! on other bodies are independent of the forces exerted on them"). A contact between a dynamic and a static body belongs to the
//! dynamic body's island (the solver needs it) and appears only in the dynamic body's edge list;
//! removing it cannot disconnect anything, so it does not flag the island for splitting.

use super::bitset::BitSet;
use super::error::IslandError;
use super::sleep::SleepConfig;

pub(super) const NONE: u32 = u32::MAX;

/// Id of a contact edge, returned by [`IslandGraph::link`]. Ids of unlinked contacts are reused
/// (LIFO), so an id is meaningful only until its contact is unlinked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContactId(pub u32);

impl ContactId {
    /// The id as an array index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Id of an island: the id of its representative body (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IslandId(pub u32);

impl IslandId {
    /// The id as an array index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One island slot. A slot is live when `body_count > 0`; a dead slot has every field at its
/// `EMPTY` value.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct Island {
    pub head_body: u32,
    pub tail_body: u32,
    pub body_count: u32,
    pub head_contact: u32,
    pub tail_contact: u32,
    pub contact_count: u32,
    /// Contacts between two dynamic bodies removed since the island was made (Box2D's
    /// `constraintRemoveCount`): the island may split when it is > 0.
    pub remove_count: u32,
    /// The minimum sleep timer of the island's bodies, as of the last sleep update (0 after a
    /// merge or a wake).
    pub min_sleep_time: f32,
}

impl Island {
    pub const EMPTY: Island = Island {
        head_body: NONE,
        tail_body: NONE,
        body_count: 0,
        head_contact: NONE,
        tail_contact: NONE,
        contact_count: 0,
        remove_count: 0,
        min_sleep_time: 0.0,
    };
}

/// The persistent island graph of seed 002. See the module documentation for the layout and the
/// invariants, and [`IslandGraph::validate`] for the full list checked.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IslandGraph {
    pub(super) is_static: Vec<bool>,
    pub(super) body_island: Vec<u32>,
    pub(super) body_prev: Vec<u32>,
    pub(super) body_next: Vec<u32>,
    pub(super) body_edge_head: Vec<u32>,
    pub(super) sleep_time: Vec<f32>,

    pub(super) contact_bodies: Vec<[u32; 2]>,
    pub(super) contact_island: Vec<u32>,
    pub(super) contact_prev: Vec<u32>,
    pub(super) contact_next: Vec<u32>,
    pub(super) edge_prev: Vec<[u32; 2]>,
    pub(super) edge_next: Vec<[u32; 2]>,
    pub(super) free_contacts: Vec<u32>,

    pub(super) islands: Vec<Island>,
    pub(super) awake: BitSet,
    pub(super) split_flags: BitSet,
    pub(super) config: SleepConfig,
    /// Reused buffers of the sleep update; no part of the graph's state (nor of a checkpoint).
    #[serde(skip)]
    pub(super) scratch_time: Scratch<f32>,
    #[serde(skip)]
    pub(super) scratch_runs: Scratch<(u32, f32)>,
}

/// A reused buffer inside the graph. It holds no state between calls, so it is equal to every
/// other buffer: graphs compare by their state only.
#[derive(Clone, Debug, Default)]
pub(super) struct Scratch<T>(pub Vec<T>);

impl<T> PartialEq for Scratch<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl IslandGraph {
    /// A graph of `body_is_static.len()` bodies and no contacts: every dynamic body alone in its
    /// own awake island, whose id is the body's id.
    pub fn new(body_is_static: &[bool]) -> Result<Self, IslandError> {
        let n = body_is_static.len();
        if n >= NONE as usize - 2 {
            return Err(IslandError::TooMany("bodies"));
        }
        let mut islands = vec![Island::EMPTY; n];
        let mut awake = BitSet::new(n);
        let mut body_island = vec![NONE; n];
        for (b, &st) in body_is_static.iter().enumerate() {
            if !st {
                body_island[b] = b as u32;
                islands[b].head_body = b as u32;
                islands[b].tail_body = b as u32;
                islands[b].body_count = 1;
                awake.set(b);
            }
        }
        Ok(IslandGraph {
            is_static: body_is_static.to_vec(),
            body_island,
            body_prev: vec![NONE; n],
            body_next: vec![NONE; n],
            body_edge_head: vec![NONE; n],
            sleep_time: vec![0.0; n],
            contact_bodies: Vec::new(),
            contact_island: Vec::new(),
            contact_prev: Vec::new(),
            contact_next: Vec::new(),
            edge_prev: Vec::new(),
            edge_next: Vec::new(),
            free_contacts: Vec::new(),
            islands,
            awake,
            split_flags: BitSet::new(n),
            config: SleepConfig::default(),
            scratch_time: Scratch::default(),
            scratch_runs: Scratch::default(),
        })
    }

    /// The number of bodies (static ones included).
    pub fn body_count(&self) -> usize {
        self.is_static.len()
    }

    /// Whether `body` is static. Out-of-range ids are reported as an error.
    pub fn is_static(&self, body: usize) -> Result<bool, IslandError> {
        self.check_body(body)?;
        Ok(self.is_static[body])
    }

    /// The number of live contacts.
    pub fn contact_count(&self) -> usize {
        self.contact_island.len() - self.free_contacts.len()
    }

    /// Whether `contact` is a live contact.
    pub fn is_contact(&self, contact: ContactId) -> bool {
        self.contact_island
            .get(contact.index())
            .is_some_and(|&i| i != NONE)
    }

    /// The two bodies of a live contact, in the order given to [`IslandGraph::link`].
    pub fn contact_bodies(&self, contact: ContactId) -> Result<(usize, usize), IslandError> {
        self.check_contact(contact)?;
        let [a, b] = self.contact_bodies[contact.index()];
        Ok((a as usize, b as usize))
    }

    /// The island of a live contact.
    pub fn contact_island(&self, contact: ContactId) -> Result<IslandId, IslandError> {
        self.check_contact(contact)?;
        Ok(IslandId(self.contact_island[contact.index()]))
    }

    /// The island of a body: `None` for a static body.
    pub fn island_of(&self, body: usize) -> Result<Option<IslandId>, IslandError> {
        self.check_body(body)?;
        let i = self.body_island[body];
        Ok((i != NONE).then_some(IslandId(i)))
    }

    /// Whether `island` is a live island.
    pub fn is_island(&self, island: IslandId) -> bool {
        self.islands
            .get(island.index())
            .is_some_and(|i| i.body_count > 0)
    }

    /// Whether a live island is awake.
    pub fn is_awake(&self, island: IslandId) -> Result<bool, IslandError> {
        self.check_island(island)?;
        Ok(self.awake.get(island.index()))
    }

    /// Whether a body is awake: its island is awake. Static bodies are never awake.
    pub fn is_body_awake(&self, body: usize) -> Result<bool, IslandError> {
        self.check_body(body)?;
        let i = self.body_island[body];
        Ok(i != NONE && self.awake.get(i as usize))
    }

    /// Whether a live island is flagged for splitting (a contact between two of its dynamic
    /// bodies was removed since it was made).
    pub fn may_split(&self, island: IslandId) -> Result<bool, IslandError> {
        self.check_island(island)?;
        Ok(self.islands[island.index()].remove_count > 0)
    }

    /// The number of bodies of a live island.
    pub fn island_body_count(&self, island: IslandId) -> Result<usize, IslandError> {
        self.check_island(island)?;
        Ok(self.islands[island.index()].body_count as usize)
    }

    /// The number of contacts of a live island.
    pub fn island_contact_count(&self, island: IslandId) -> Result<usize, IslandError> {
        self.check_island(island)?;
        Ok(self.islands[island.index()].contact_count as usize)
    }

    /// The bodies of a live island, in list order (deterministic: it follows from the order of
    /// links, merges and splits).
    pub fn bodies(&self, island: IslandId) -> Result<ListIter<'_>, IslandError> {
        self.check_island(island)?;
        Ok(ListIter {
            next: &self.body_next,
            at: self.islands[island.index()].head_body,
        })
    }

    /// The contacts of a live island, in list order (new contacts are appended; a merge appends
    /// the smaller island's list to the larger's): the constraint order a Gauss-Seidel solver
    /// should use.
    pub fn contacts(
        &self,
        island: IslandId,
    ) -> Result<impl Iterator<Item = ContactId> + '_, IslandError> {
        self.check_island(island)?;
        Ok(ListIter {
            next: &self.contact_next,
            at: self.islands[island.index()].head_contact,
        }
        .map(|c| ContactId(c as u32)))
    }

    /// The live contacts touching a dynamic body (empty for a static body), most recent first.
    pub fn body_contacts(
        &self,
        body: usize,
    ) -> Result<impl Iterator<Item = ContactId> + '_, IslandError> {
        self.check_body(body)?;
        let mut key = self.body_edge_head[body];
        Ok(std::iter::from_fn(move || {
            if key == NONE {
                return None;
            }
            let (c, side) = ((key >> 1) as usize, (key & 1) as usize);
            key = self.edge_next[c][side];
            Some(ContactId(c as u32))
        }))
    }

    /// The awake islands, ascending by id: the deterministic order in which an engine should
    /// hand them to its solver.
    pub fn awake_islands(&self) -> impl Iterator<Item = IslandId> + '_ {
        self.awake.iter_ones().map(|i| IslandId(i as u32))
    }

    /// Every live island, ascending by id.
    pub fn islands(&self) -> impl Iterator<Item = IslandId> + '_ {
        (0..self.islands.len())
            .filter(|&i| self.islands[i].body_count > 0)
            .map(|i| IslandId(i as u32))
    }

    /// The islands flagged for splitting, ascending by id.
    pub fn split_flagged(&self) -> impl Iterator<Item = IslandId> + '_ {
        self.split_flags.iter_ones().map(|i| IslandId(i as u32))
    }

    /// A body's sleep timer: seconds it has been below the sleep thresholds.
    pub fn sleep_time(&self, body: usize) -> Result<f32, IslandError> {
        self.check_body(body)?;
        Ok(self.sleep_time[body])
    }

    /// Records that two bodies began touching and returns the new contact's id. The islands of
    /// both bodies are woken (waking reaches every body of an island at once, so it propagates
    /// through all bodies in touch) and, if both bodies are dynamic and in different islands,
    /// merged at once (union by size; see the module documentation). The contact is appended to
    /// the contact list of the resulting island. Several contacts between the same two bodies are
    /// allowed (one per shape pair).
    pub fn link(&mut self, a: usize, b: usize) -> Result<ContactId, IslandError> {
        self.check_pair(a, b)?;
        let id = match self.free_contacts.pop() {
            Some(id) => id,
            None => {
                let id = self.contact_island.len();
                if id >= NONE as usize / 2 - 1 {
                    return Err(IslandError::TooMany("contacts"));
                }
                self.contact_bodies.push([NONE; 2]);
                self.contact_island.push(NONE);
                self.contact_prev.push(NONE);
                self.contact_next.push(NONE);
                self.edge_prev.push([NONE; 2]);
                self.edge_next.push([NONE; 2]);
                id as u32
            }
        };
        let c = id as usize;
        self.contact_bodies[c] = [a as u32, b as u32];
        for (side, body) in [a, b].into_iter().enumerate() {
            if !self.is_static[body] {
                let key = id * 2 + side as u32;
                let head = self.body_edge_head[body];
                self.edge_prev[c][side] = NONE;
                self.edge_next[c][side] = head;
                if head != NONE {
                    self.edge_prev[(head >> 1) as usize][(head & 1) as usize] = key;
                }
                self.body_edge_head[body] = key;
            }
        }
        let ia = self.body_island[a];
        let ib = self.body_island[b];
        for i in [ia, ib] {
            if i != NONE && !self.awake.get(i as usize) {
                self.wake_slot(i);
            }
        }
        let root = if ia == NONE {
            ib
        } else if ib == NONE || ia == ib {
            ia
        } else {
            self.merge(ia, ib)
        };
        self.push_contact(root, id);
        Ok(ContactId(id))
    }

    /// Reserves room for `additional` more contact slots, so that the next links do not
    /// reallocate (an engine that knows its pair count can pre-size the graph once).
    pub fn reserve_contacts(&mut self, additional: usize) {
        let extra = additional.saturating_sub(self.free_contacts.len());
        self.contact_bodies.reserve(extra);
        self.contact_island.reserve(extra);
        self.contact_prev.reserve(extra);
        self.contact_next.reserve(extra);
        self.edge_prev.reserve(extra);
        self.edge_next.reserve(extra);
    }

    /// Records that a contact stopped touching: removes the edge from its island's contact list
    /// and from its bodies' edge lists, frees its id, and — if both its bodies are dynamic —
    /// counts a removal on the island, flagging it for a deferred split
    /// ([`IslandGraph::split_one`]). The island's awake state is left as it is.
    pub fn unlink(&mut self, contact: ContactId) -> Result<(), IslandError> {
        self.check_contact(contact)?;
        let c = contact.index();
        let island = self.contact_island[c];
        let (prev, next) = (self.contact_prev[c], self.contact_next[c]);
        let isl = &mut self.islands[island as usize];
        if prev == NONE {
            isl.head_contact = next;
        } else {
            self.contact_next[prev as usize] = next;
        }
        if next == NONE {
            isl.tail_contact = prev;
        } else {
            self.contact_prev[next as usize] = prev;
        }
        isl.contact_count -= 1;
        let bodies = self.contact_bodies[c];
        for (side, &body) in bodies.iter().enumerate() {
            if !self.is_static[body as usize] {
                let (p, n) = (self.edge_prev[c][side], self.edge_next[c][side]);
                if p == NONE {
                    self.body_edge_head[body as usize] = n;
                } else {
                    self.edge_next[(p >> 1) as usize][(p & 1) as usize] = n;
                }
                if n != NONE {
                    self.edge_prev[(n >> 1) as usize][(n & 1) as usize] = p;
                }
            }
        }
        if !self.is_static[bodies[0] as usize] && !self.is_static[bodies[1] as usize] {
            self.islands[island as usize].remove_count += 1;
            self.split_flags.set(island as usize);
        }
        self.contact_bodies[c] = [NONE; 2];
        self.contact_island[c] = NONE;
        self.contact_prev[c] = NONE;
        self.contact_next[c] = NONE;
        self.edge_prev[c] = [NONE; 2];
        self.edge_next[c] = [NONE; 2];
        self.free_contacts.push(contact.0);
        Ok(())
    }

    /// Wakes a live island: flags it awake and resets the sleep timers of all its bodies (as
    /// Box2D does), so that it stays awake at least `time_to_sleep`. Waking an awake island
    /// does nothing.
    pub fn wake(&mut self, island: IslandId) -> Result<(), IslandError> {
        self.check_island(island)?;
        if !self.awake.get(island.index()) {
            self.wake_slot(island.0);
        }
        Ok(())
    }

    /// Wakes the island of a body (nothing for a static body).
    pub fn wake_body(&mut self, body: usize) -> Result<(), IslandError> {
        self.check_body(body)?;
        let i = self.body_island[body];
        if i != NONE && !self.awake.get(i as usize) {
            self.wake_slot(i);
        }
        Ok(())
    }

    pub(super) fn wake_slot(&mut self, island: u32) {
        self.awake.set(island as usize);
        let mut b = self.islands[island as usize].head_body;
        while b != NONE {
            self.sleep_time[b as usize] = 0.0;
            b = self.body_next[b as usize];
        }
        self.islands[island as usize].min_sleep_time = 0.0;
    }

    /// Merges two live, awake, distinct islands; returns the surviving id.
    fn merge(&mut self, x: u32, y: u32) -> u32 {
        let (ix, iy) = (self.islands[x as usize], self.islands[y as usize]);
        let x_keeps = ix.body_count > iy.body_count || (ix.body_count == iy.body_count && x < y);
        let (big, small) = if x_keeps { (x, y) } else { (y, x) };
        let s = self.islands[small as usize];
        set_owner(&self.body_next, &mut self.body_island, s.head_body, big);
        set_owner(
            &self.contact_next,
            &mut self.contact_island,
            s.head_contact,
            big,
        );
        let g = &mut self.islands[big as usize];
        (g.head_body, g.tail_body) = splice(
            &mut self.body_prev,
            &mut self.body_next,
            (g.head_body, g.tail_body),
            (s.head_body, s.tail_body),
        );
        g.body_count += s.body_count;
        (g.head_contact, g.tail_contact) = splice(
            &mut self.contact_prev,
            &mut self.contact_next,
            (g.head_contact, g.tail_contact),
            (s.head_contact, s.tail_contact),
        );
        g.contact_count += s.contact_count;
        g.remove_count += s.remove_count;
        g.min_sleep_time = g.min_sleep_time.min(s.min_sleep_time);
        if g.remove_count > 0 {
            self.split_flags.set(big as usize);
        }
        self.islands[small as usize] = Island::EMPTY;
        self.awake.unset(small as usize);
        self.split_flags.unset(small as usize);
        big
    }

    fn push_contact(&mut self, island: u32, c: u32) {
        let isl = &mut self.islands[island as usize];
        self.contact_island[c as usize] = island;
        self.contact_prev[c as usize] = isl.tail_contact;
        self.contact_next[c as usize] = NONE;
        if isl.tail_contact == NONE {
            isl.head_contact = c;
        } else {
            self.contact_next[isl.tail_contact as usize] = c;
        }
        isl.tail_contact = c;
        isl.contact_count += 1;
    }

    pub(super) fn check_body(&self, body: usize) -> Result<(), IslandError> {
        if body < self.is_static.len() {
            Ok(())
        } else {
            Err(IslandError::BodyOutOfRange {
                body,
                bodies: self.is_static.len(),
            })
        }
    }

    /// Checks that `link(a, b)` would succeed.
    pub(super) fn check_pair(&self, a: usize, b: usize) -> Result<(), IslandError> {
        self.check_body(a)?;
        self.check_body(b)?;
        if a == b {
            return Err(IslandError::SelfContact { body: a });
        }
        if self.is_static[a] && self.is_static[b] {
            return Err(IslandError::StaticPair { a, b });
        }
        Ok(())
    }

    fn check_contact(&self, contact: ContactId) -> Result<(), IslandError> {
        if self.is_contact(contact) {
            Ok(())
        } else {
            Err(IslandError::UnknownContact(contact))
        }
    }

    pub(super) fn check_island(&self, island: IslandId) -> Result<(), IslandError> {
        if self.is_island(island) {
            Ok(())
        } else {
            Err(IslandError::UnknownIsland(island))
        }
    }

    /// Checks every invariant of the graph; the error names the first one broken.
    ///
    /// 1. Array lengths agree (bodies, contact slots, island slots).
    /// 2. A static body has no island, no list links, no edges, and its island slot is empty.
    /// 3. Every live island `i` holds body `i` (invariant R: ids are representatives, and every
    ///    body points straight at its root — the union-find roots are consistent); its body list
    ///    is a well-formed doubly linked list of exactly `body_count` bodies, all pointing back
    ///    at `i`; its contact list likewise holds `contact_count` live contacts whose dynamic
    ///    bodies are all in `i`; it is flagged for splitting exactly when `remove_count > 0`.
    /// 4. A dead island slot is empty, not awake and not flagged.
    /// 5. Each dynamic body is in exactly one island (the lists' counts sum to the number of
    ///    dynamic bodies, and each listed body points back at its list's island).
    /// 6. Contacts: the free list holds distinct in-range free slots; every other slot is a live
    ///    contact of two distinct in-range bodies, not both static, in the island of its dynamic
    ///    bodies; the island contact counts sum to the live count; every dynamic body's edge
    ///    list is well formed and holds exactly its live contacts (a static end has no edge).
    /// 7. Awake and split flags are set on live slots only; sleep timers are finite and
    ///    non-negative; a body's awake state is its island's (it is derived, so membership and
    ///    sleep flags cannot disagree once 3 and 5 hold).
    pub fn validate(&self) -> Result<(), String> {
        let n = self.is_static.len();
        let m = self.contact_island.len();
        for (name, len) in [
            ("body_island", self.body_island.len()),
            ("body_prev", self.body_prev.len()),
            ("body_next", self.body_next.len()),
            ("body_edge_head", self.body_edge_head.len()),
            ("sleep_time", self.sleep_time.len()),
            ("islands", self.islands.len()),
        ] {
            if len != n {
                return Err(format!("{name} has length {len}, expected {n} bodies"));
            }
        }
        for (name, len) in [
            ("contact_bodies", self.contact_bodies.len()),
            ("contact_prev", self.contact_prev.len()),
            ("contact_next", self.contact_next.len()),
            ("edge_prev", self.edge_prev.len()),
            ("edge_next", self.edge_next.len()),
        ] {
            if len != m {
                return Err(format!(
                    "{name} has length {len}, expected {m} contact slots"
                ));
            }
        }
        let edge_ok = |key: u32| -> bool { key == NONE || ((key >> 1) as usize) < m };
        // 2, and sleep timers.
        for b in 0..n {
            let t = self.sleep_time[b];
            if !(t.is_finite() && t >= 0.0) {
                return Err(format!("body {b} has sleep time {t}"));
            }
            if self.is_static[b] {
                if self.body_island[b] != NONE
                    || self.body_prev[b] != NONE
                    || self.body_next[b] != NONE
                    || self.body_edge_head[b] != NONE
                {
                    return Err(format!(
                        "static body {b} is linked into an island or has edges"
                    ));
                }
                if self.islands[b] != Island::EMPTY {
                    return Err(format!("island slot {b} of static body {b} is not empty"));
                }
            } else if self.body_island[b] as usize >= n {
                return Err(format!(
                    "dynamic body {b} has island {}",
                    self.body_island[b]
                ));
            }
        }
        // 3, 4, 5.
        let mut listed_bodies = 0usize;
        let mut listed_contacts = 0usize;
        for i in 0..n {
            let isl = &self.islands[i];
            let flagged = self.split_flags.get(i);
            if isl.body_count == 0 {
                if *isl != Island::EMPTY || self.awake.get(i) || flagged {
                    return Err(format!("dead island slot {i} is not empty"));
                }
                continue;
            }
            if self.is_static[i] || self.body_island[i] != i as u32 {
                return Err(format!(
                    "live island {i} does not hold body {i} (invariant R)"
                ));
            }
            if flagged != (isl.remove_count > 0) {
                return Err(format!(
                    "island {i}: split flag {flagged} but remove count {}",
                    isl.remove_count
                ));
            }
            if isl.min_sleep_time.is_nan() || isl.min_sleep_time < 0.0 {
                return Err(format!("island {i}: min sleep time {}", isl.min_sleep_time));
            }
            check_list(
                "body",
                i as u32,
                (isl.head_body, isl.tail_body, isl.body_count),
                (&self.body_island, &self.body_prev, &self.body_next),
            )
            .map_err(|e| format!("island {i}: {e}"))?;
            listed_bodies += isl.body_count as usize;
            check_list(
                "contact",
                i as u32,
                (isl.head_contact, isl.tail_contact, isl.contact_count),
                (&self.contact_island, &self.contact_prev, &self.contact_next),
            )
            .map_err(|e| format!("island {i}: {e}"))?;
            listed_contacts += isl.contact_count as usize;
        }
        let dynamic = self.is_static.iter().filter(|&&s| !s).count();
        if listed_bodies != dynamic {
            return Err(format!(
                "islands list {listed_bodies} bodies, there are {dynamic} dynamic bodies"
            ));
        }
        // 6.
        let mut free = vec![false; m];
        for &c in &self.free_contacts {
            let c = c as usize;
            if c >= m || free[c] {
                return Err(format!("free list entry {c} out of range or repeated"));
            }
            free[c] = true;
            if self.contact_island[c] != NONE {
                return Err(format!(
                    "free contact {c} is in island {}",
                    self.contact_island[c]
                ));
            }
        }
        let mut expected_edges = 0usize;
        for (c, &is_free) in free.iter().enumerate() {
            if is_free {
                continue;
            }
            let island = self.contact_island[c];
            if island == NONE {
                return Err(format!("contact slot {c} is neither live nor free"));
            }
            let [a, b] = self.contact_bodies[c];
            if a as usize >= n || b as usize >= n || a == b {
                return Err(format!("contact {c} has bodies {a}, {b}"));
            }
            if self.is_static[a as usize] && self.is_static[b as usize] {
                return Err(format!("contact {c} joins two static bodies"));
            }
            for (side, body) in [a, b].into_iter().enumerate() {
                let body = body as usize;
                if self.is_static[body] {
                    if self.edge_prev[c][side] != NONE || self.edge_next[c][side] != NONE {
                        return Err(format!("contact {c}: static end has edge links"));
                    }
                } else {
                    expected_edges += 1;
                    if self.body_island[body] != island {
                        return Err(format!(
                            "contact {c} is in island {island} but its body {body} is in {}",
                            self.body_island[body]
                        ));
                    }
                    if !edge_ok(self.edge_prev[c][side]) || !edge_ok(self.edge_next[c][side]) {
                        return Err(format!("contact {c}: edge link out of range"));
                    }
                }
            }
        }
        if listed_contacts != m - self.free_contacts.len() {
            return Err(format!(
                "islands list {listed_contacts} contacts, {} are live",
                m - self.free_contacts.len()
            ));
        }
        let mut walked_edges = 0usize;
        for b in 0..n {
            let (mut prev, mut key) = (NONE, self.body_edge_head[b]);
            while key != NONE {
                let (c, side) = ((key >> 1) as usize, (key & 1) as usize);
                if c >= m || free[c] || walked_edges >= expected_edges {
                    return Err(format!(
                        "body {b}: edge list reaches a dead contact or loops"
                    ));
                }
                if self.contact_bodies[c][side] != b as u32 || self.edge_prev[c][side] != prev {
                    return Err(format!("body {b}: edge of contact {c} is misplaced"));
                }
                walked_edges += 1;
                prev = key;
                key = self.edge_next[c][side];
            }
        }
        if walked_edges != expected_edges {
            return Err(format!(
                "edge lists hold {walked_edges} edges, live contacts have {expected_edges}"
            ));
        }
        // 7.
        if let Some(i) = self
            .awake
            .iter_ones()
            .find(|&i| i >= n || self.islands[i].body_count == 0)
        {
            return Err(format!("awake flag on dead island slot {i}"));
        }
        if let Some(i) = self.split_flags.iter_ones().find(|&i| i >= n) {
            return Err(format!("split flag on slot {i} beyond the bodies"));
        }
        Ok(())
    }
}

// An island's bodies and its contacts are each an intrusive doubly linked list over three
// arrays indexed by body or contact id: the island it is in, and the previous and next id in
// the list (`NONE` at the ends). The functions below walk, build, join and check one such
// list, for either kind.

/// Sets `owner` of every id in the list that starts at `head` (following `next`) to `island`.
pub(super) fn set_owner(next: &[u32], owner: &mut [u32], head: u32, island: u32) {
    let mut at = head;
    while at != NONE {
        owner[at as usize] = island;
        at = next[at as usize];
    }
}

/// Links `ids`, in their order, into one list owned by `island`; returns its head and tail
/// (`NONE` for none).
pub(super) fn link(
    ids: &[u32],
    island: u32,
    (owner, prev, next): (&mut [u32], &mut [u32], &mut [u32]),
) -> (u32, u32) {
    let (mut head, mut tail) = (NONE, NONE);
    for &id in ids {
        owner[id as usize] = island;
        prev[id as usize] = tail;
        next[id as usize] = NONE;
        if tail == NONE {
            head = id;
        } else {
            next[tail as usize] = id;
        }
        tail = id;
    }
    (head, tail)
}

/// Appends the list `(head, tail)` of `b` to that of `a` (either may be empty); returns the
/// head and tail of the whole.
fn splice(prev: &mut [u32], next: &mut [u32], a: (u32, u32), b: (u32, u32)) -> (u32, u32) {
    if b.0 == NONE {
        return a;
    }
    if a.0 == NONE {
        return b;
    }
    next[a.1 as usize] = b.0;
    prev[b.0 as usize] = a.1;
    (a.0, b.1)
}

/// Checks the `kind` list of `island` (`head`, `tail` and the `count` it should hold): its ids
/// in range, each owned by the island with its `prev` link pointing back, as many as
/// counted, ending at `tail`.
fn check_list(
    kind: &str,
    island: u32,
    (head, tail, count): (u32, u32, u32),
    (owner, prev, next): (&[u32], &[u32], &[u32]),
) -> Result<(), String> {
    let (mut last, mut at, mut held) = (NONE, head, 0u32);
    while at != NONE {
        let x = at as usize;
        if x >= owner.len() || held >= count {
            return Err(format!("{kind} list too long or out of range"));
        }
        if owner[x] != island || prev[x] != last {
            return Err(format!("{kind} {x} has wrong island or prev link"));
        }
        held += 1;
        last = at;
        at = next[x];
    }
    if held != count || tail != last {
        return Err(format!("{kind} list holds {held}, count says {count}"));
    }
    Ok(())
}

/// Iterator over a linked list of ids (an island's bodies).
pub struct ListIter<'a> {
    next: &'a [u32],
    at: u32,
}

impl<'a> ListIter<'a> {
    /// The list that starts at `head` and follows `next`.
    pub(super) fn new(next: &'a [u32], head: u32) -> Self {
        ListIter { next, at: head }
    }
}

impl Iterator for ListIter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.at == NONE {
            return None;
        }
        let cur = self.at as usize;
        self.at = self.next[cur];
        Some(cur)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> IslandGraph {
        let mut g = IslandGraph::new(&[false, false, true, false, false]).unwrap();
        g.link(0, 1).unwrap();
        g.link(1, 2).unwrap();
        let c = g.link(3, 4).unwrap();
        g.link(0, 3).unwrap();
        g.unlink(c).unwrap();
        g.validate().unwrap();
        g
    }

    #[test]
    fn validate_catches_each_kind_of_corruption() {
        type Corrupt = Box<dyn Fn(&mut IslandGraph)>;
        let corruptions: Vec<(&str, Corrupt)> = vec![
            ("body in wrong island", Box::new(|g| g.body_island[4] = 1)),
            ("static body in island", Box::new(|g| g.body_island[2] = 0)),
            ("count mismatch", Box::new(|g| g.islands[0].body_count += 1)),
            ("awake dead slot", Box::new(|g| g.awake.set(1))),
            ("split flag cleared", Box::new(|g| g.split_flags.unset(0))),
            (
                "free list repeats",
                Box::new(|g| {
                    let f = g.free_contacts[0];
                    g.free_contacts.push(f);
                }),
            ),
            (
                "contact in wrong island",
                Box::new(|g| g.contact_island[0] = 4),
            ),
            ("edge dropped", Box::new(|g| g.body_edge_head[0] = NONE)),
            ("negative timer", Box::new(|g| g.sleep_time[3] = -1.0)),
            (
                "representative moved",
                Box::new(|g| {
                    // Rename island 0 to slot 1 without moving anything else.
                    g.islands[1] = g.islands[0];
                    g.islands[0] = Island::EMPTY;
                }),
            ),
        ];
        for (what, corrupt) in corruptions {
            let mut g = sample();
            corrupt(&mut g);
            assert!(g.validate().is_err(), "validate missed: {what}");
        }
    }
}
