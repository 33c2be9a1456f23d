//! # The warp engine's island graph: contact groups over time, shared by all workers
//!
//! Seed 001 (Mirtich), Section 4.4: bodies that stay in contact form a *contact group*, simulated
//! as one unit, so that a resting pile exchanges no event at all; a collision between two groups
//! *fuses* them, a group whose contacts break *splits*, and since everything happens
//! speculatively, a rollback past a fusion or a fission must undo it. Seed 002 (Box2D v3) gives
//! the cheap bookkeeping: persistent islands, merged at once when a contact begins and split
//! later, lazily, once a removed contact has flagged them ("may split"). DESIGN.md, "Contact
//! groups are islands", joins the two; this file is the shared record they need.
//!
//! The frame engine's graph ([`crate::islands::IslandGraph`]) lives in one step at a time and
//! belongs to one thread. This one spans time and is changed by many workers at once: it records
//! **which group holds which bodies and contacts, from which tick, made from which parents**.
//!
//! ## Records
//!
//! A [`Group`] is one island entity's lifetime: its bodies (sorted), its contact edges, the tick
//! it was born at, the tick it ended at (when it fused into, or split into, its children), its
//! parents and its children. A group *owns* its bodies' states at ticks `birth ..= end`: its
//! state at `birth` is its parents' states at that tick, put together, and it computes every
//! later tick up to `end` (or up to its LVT while it is live). Every body starts in a group of
//! its own, with no parents, at the run's first tick.
//!
//! * **Fusion** at tick `k` ([`GroupGraph::fuse`]): two live groups end at `k`; one child holds
//!   the bodies of both, the contact edges of both and the contact that fused them.
//! * **Fission** at tick `k` ([`GroupGraph::split`]): a live group whose edges no longer connect
//!   its bodies ends at `k`; each connected component becomes a child. Fission is deferred, as
//!   in Box2D: [`GroupGraph::set_contacts`] replaces a group's edges and flags it *may split*
//!   when an edge disappeared; the group splits when it chooses to (a tick of its own).
//! * **Rollback** to tick `r` ([`GroupGraph::rollback`]): a group that throws away its states
//!   after `r` takes the lineage with it. If it was born after `r`, it did not exist at `r`: it
//!   is deleted, and its parents (recursively, up to the groups alive at `r`) roll back to `r`
//!   instead. Every descendant of a group that rolls back to `r` was born after `r`, so it is
//!   deleted, recursively. A group that is not rolled back but lost a child this way (the other
//!   parent of a deleted fusion) is revived: live again from its end tick, whose state it still
//!   holds. [`Undo`] says which groups roll back, which resume and which are gone, so that the
//!   engine can act on it.
//!
//! ## Ids are content
//!
//! A group's id is `(birth tick, smallest body)` ([`GroupId`]): never a counter, so the same
//! history gives the same ids under any schedule (DESIGN.md, "Determinism is a contract"). Ids
//! are unique because a group can fuse or split only at a tick after its birth: two groups
//! born at the same tick with the same smallest body would need one to end at its own birth
//! tick. (A group deleted by a rollback and made again gets its old id back: that is the point.)
//!
//! ## Sharing: one section per operation
//!
//! The records live in a [`Table`] (the sync seam: an STM transaction or ordered bucket locks,
//! [`crate::sync`]) with one slot per body. Slot `b` holds body `b`'s *history* — the groups that
//! held it, with the tick from which each did — and the records of the groups whose smallest
//! body is `b`. An operation names the slots of every body of every group it reads or changes,
//! so two operations conflict exactly when they share a body, and each is atomic: no one ever
//! sees a fusion with one parent ended and the other not, or a body in two live groups.
//!
//! The keys must be named before the section starts, but which bodies a group holds is in the
//! graph itself. So an operation looks first ([`Table::read`], possibly stale), names the
//! bodies it saw, and checks inside the section that it named everything it now finds; if the
//! graph changed in between, the section changes nothing and returns the keys it lacked, and the
//! operation runs again with them. Under locks a section reads everything it needs before its
//! first write (a section that stops halfway must leave no trace).
//!
//! ## Reclamation
//!
//! Rollbacks never reach a committed tick, so a group that ended at or before the GVT can never
//! be revived nor read again: [`GroupGraph::prune`] drops those records and the history entries
//! they superseded. [`GroupGraph::validate`] checks every invariant of the graph (used by the
//! tests and the loom model `engine_groups`).

use super::{BodyId, Tick};
use crate::sync::{Backend, Class, Table, View};
use std::collections::BTreeSet;
use std::fmt;

/// A group's id: its birth tick and its smallest body (see "Ids are content").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupId {
    pub birth: Tick,
    pub rep: BodyId,
}

impl fmt::Display for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "group {}@{}", self.rep, self.birth)
    }
}

/// One group's lifetime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub id: GroupId,
    /// Its bodies, ascending; `bodies[0] == id.rep`.
    pub bodies: Vec<BodyId>,
    /// Its contact edges `(a, b)`, `a < b`, both its bodies; ascending, no duplicates.
    pub contacts: Vec<(BodyId, BodyId)>,
    /// The groups it was made from at `id.birth`, ascending (none for a body's first group).
    pub parents: Vec<GroupId>,
    /// The tick it fused or split at; `None` while it is live.
    pub end: Option<Tick>,
    /// The groups it became at `end`, ascending (none while it is live).
    pub children: Vec<GroupId>,
    /// An edge was removed since its last split check (Box2D's deferred split). An ended
    /// group keeps its flag, so that a rollback that revives it gets it back.
    pub may_split: bool,
}

impl Group {
    fn has(&self, body: BodyId) -> bool {
        self.bodies.binary_search(&body).is_ok()
    }
}

/// One body's slot: its history, and the records of the groups it represents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    /// `(from, group)`: `group` holds this body from tick `from` on; ascending by `from`.
    history: Vec<(Tick, GroupId)>,
    /// The groups whose smallest body is this one.
    groups: Vec<Group>,
    /// Records that ended at or before this tick have been dropped ([`GroupGraph::prune`]).
    pruned: Tick,
}

/// A group to make in a [`GroupGraph::regroup`]: its bodies and its contact edges.
pub type NewGroup = (Vec<BodyId>, Vec<(BodyId, BodyId)>);

/// What an operation refused (nothing was changed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupError {
    /// A body id outside the graph.
    UnknownBody(BodyId),
    /// No such group (never made, deleted by a rollback, or pruned).
    UnknownGroup(GroupId),
    /// The group already fused or split, at this tick.
    Ended(GroupId, Tick),
    /// Fusion and fission happen after a group's birth tick, never at it.
    NotAfterBirth(GroupId, Tick),
    /// A group cannot fuse with itself.
    SameGroup(GroupId),
    /// A contact edge that is not between bodies of the group(s) named.
    ContactOutside(GroupId, (BodyId, BodyId)),
    /// A rollback to before the run's first tick.
    BeforeStart(GroupId, Tick),
    /// The children of a regroup at this tick do not hold exactly the parents' bodies.
    NotAPartition(Tick),
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::UnknownBody(b) => write!(f, "no dynamic body {b} in the island graph"),
            GroupError::UnknownGroup(g) => write!(f, "no {g} in the island graph"),
            GroupError::Ended(g, t) => write!(f, "{g} already ended at tick {t}"),
            GroupError::NotAfterBirth(g, t) => {
                write!(f, "{g} cannot change at tick {t}: not after its birth")
            }
            GroupError::SameGroup(g) => write!(f, "{g} cannot fuse with itself"),
            GroupError::ContactOutside(g, (a, b)) => {
                write!(f, "contact ({a}, {b}) is not between the bodies of {g}")
            }
            GroupError::BeforeStart(g, t) => {
                write!(f, "{g} cannot roll back to tick {t}, before the run began")
            }
            GroupError::NotAPartition(t) => write!(
                f,
                "the groups made at tick {t} do not hold exactly the bodies of their parents"
            ),
        }
    }
}

impl std::error::Error for GroupError {}

/// What a rollback did to the lineage (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Undo {
    /// The groups alive at the rollback tick: live again, they roll back to it.
    pub rolled_back: Vec<GroupId>,
    /// Groups that lost their children without rolling back: live again from this tick (their
    /// end), whose state they still hold.
    pub resumed: Vec<(GroupId, Tick)>,
    /// Groups born after the rollback tick in the lineage: gone.
    pub deleted: Vec<GroupId>,
}

/// How a section's plan ended: done, or it lacked keys (and changed nothing).
enum Plan<R> {
    Done(R),
    Lacks(Vec<usize>),
}

/// The shared island graph of a warp run (see the module documentation).
pub struct GroupGraph {
    table: Table<Slot>,
    start: Tick,
}

/// Reads a group record inside a section: `Ok(None)` when its slot was not named (the slot is
/// noted in `lacks`, for the section's next run), the error naming it when it is not there.
fn lookup<'v>(
    v: &'v View<'_, Slot>,
    id: GroupId,
    lacks: &mut Vec<usize>,
) -> Result<Option<&'v Group>, GroupError> {
    let k = id.rep as usize;
    if !v.contains(k) {
        lacks.push(k);
        return Ok(None);
    }
    match v.get(k).groups.iter().find(|g| g.id == id) {
        Some(g) => Ok(Some(g)),
        None => Err(GroupError::UnknownGroup(id)),
    }
}

/// A group record this section has already read.
fn known<'v>(v: &'v View<'_, Slot>, id: GroupId) -> &'v Group {
    v.get(id.rep as usize)
        .groups
        .iter()
        .find(|g| g.id == id)
        .expect("a group read earlier in its own section")
}

fn lookup_mut<'v>(v: &'v mut View<'_, Slot>, id: GroupId) -> &'v mut Group {
    v.get_mut(id.rep as usize)
        .groups
        .iter_mut()
        .find(|g| g.id == id)
        .expect("planned group vanished inside its own section")
}

/// Notes every body of `bodies` whose slot the section did not name.
fn note_lacking(v: &View<'_, Slot>, bodies: &[BodyId], lacks: &mut Vec<usize>) {
    lacks.extend(
        bodies
            .iter()
            .map(|&b| b as usize)
            .filter(|&k| !v.contains(k)),
    );
}

/// The root of `i` in a union-find forest (with path halving).
pub(crate) fn root(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// Joins the sets of `a` and `b`; the smaller root stays the root, so a set's root is its
/// smallest member.
pub(crate) fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (root(parent, a), root(parent, b));
    parent[ra.max(rb)] = ra.min(rb);
}

/// The connected components of `bodies` (ascending) under `edges`, each ascending, ordered by
/// smallest body.
pub fn components(bodies: &[BodyId], edges: &[(BodyId, BodyId)]) -> Vec<Vec<BodyId>> {
    let index = |b: BodyId| bodies.binary_search(&b).expect("an edge outside its group");
    let mut parent: Vec<usize> = (0..bodies.len()).collect();
    for &(a, b) in edges {
        union(&mut parent, index(a), index(b));
    }
    let mut out: Vec<Vec<BodyId>> = Vec::new();
    let mut slot_of_root = vec![usize::MAX; bodies.len()];
    for (i, &body) in bodies.iter().enumerate() {
        let r = root(&mut parent, i);
        if slot_of_root[r] == usize::MAX {
            slot_of_root[r] = out.len();
            out.push(Vec::new());
        }
        out[slot_of_root[r]].push(body);
    }
    out
}

fn sorted_edge((a, b): (BodyId, BodyId)) -> (BodyId, BodyId) {
    (a.min(b), a.max(b))
}

impl GroupGraph {
    /// `bodies` dynamic bodies, each in a group of its own from tick `start`.
    pub fn new(backend: Backend, bodies: usize, start: Tick) -> GroupGraph {
        let table = Table::with_class(backend, bodies, Class::Groups, |b| {
            let id = GroupId {
                birth: start,
                rep: b as BodyId,
            };
            Slot {
                history: vec![(start, id)],
                groups: vec![Group {
                    id,
                    bodies: vec![b as BodyId],
                    contacts: Vec::new(),
                    parents: Vec::new(),
                    end: None,
                    children: Vec::new(),
                    may_split: false,
                }],
                pruned: start,
            }
        });
        GroupGraph { table, start }
    }

    /// `groups` (each a group's bodies; together every body from 0 to `bodies - 1` once) from
    /// tick `start`: the groups of a run's first tick.
    pub fn with_groups(
        backend: Backend,
        bodies: usize,
        start: Tick,
        groups: &[Vec<BodyId>],
    ) -> Result<GroupGraph, GroupError> {
        let mut of = vec![None; bodies];
        // The group each body represents (its smallest body), if any.
        let mut led = vec![None; bodies];
        for (i, g) in groups.iter().enumerate() {
            let rep = *g.iter().min().ok_or(GroupError::NotAPartition(start))?;
            if let Some(slot) = led.get_mut(rep as usize) {
                *slot = Some(i);
            }
            for &b in g {
                let slot = of.get_mut(b as usize).ok_or(GroupError::UnknownBody(b))?;
                if slot.replace(rep).is_some() {
                    return Err(GroupError::NotAPartition(start));
                }
            }
        }
        if of.iter().any(Option::is_none) {
            return Err(GroupError::NotAPartition(start));
        }
        let table = Table::with_class(backend, bodies, Class::Groups, |b| {
            let rep = of[b].expect("checked above");
            let id = GroupId { birth: start, rep };
            let groups = led[b]
                .map(|i| &groups[i])
                .into_iter()
                .map(|g| {
                    let mut bodies = g.clone();
                    bodies.sort_unstable();
                    Group {
                        id,
                        bodies,
                        contacts: Vec::new(),
                        parents: Vec::new(),
                        end: None,
                        children: Vec::new(),
                        may_split: false,
                    }
                })
                .collect();
            Slot {
                history: vec![(start, id)],
                groups,
                pruned: start,
            }
        });
        Ok(GroupGraph { table, start })
    }

    /// The number of bodies.
    pub fn bodies(&self) -> usize {
        self.table.len()
    }

    fn check_body(&self, body: BodyId) -> Result<usize, GroupError> {
        let k = body as usize;
        if k < self.table.len() {
            Ok(k)
        } else {
            Err(GroupError::UnknownBody(body))
        }
    }

    /// The group that holds `body` now (its latest history entry; a look, not a section).
    pub fn group_of(&self, body: BodyId) -> Result<GroupId, GroupError> {
        let k = self.check_body(body)?;
        Ok(self.table.read(k, |s| {
            s.history.last().expect("a body always has a group").1
        }))
    }

    /// A copy of a group's record (a look, not a section).
    pub fn group(&self, id: GroupId) -> Option<Group> {
        let k = id.rep as usize;
        if k >= self.table.len() {
            return None;
        }
        self.table
            .read(k, |s| s.groups.iter().find(|g| g.id == id).cloned())
    }

    /// Runs `plan` as sections until it names every key it needs: it starts with `keys`, and
    /// each run that returns [`Plan::Lacks`] (having changed nothing) adds the keys it lacked.
    fn run<R>(
        &self,
        mut keys: Vec<usize>,
        mut plan: impl FnMut(&mut View<'_, Slot>) -> Plan<R>,
    ) -> R {
        loop {
            #[cfg(timewarp_broken)]
            let outcome = if crate::sync::broken("unguarded_groups") {
                self.table.section_unguarded(&keys, &mut plan)
            } else {
                self.table.section(&keys, &mut plan)
            };
            #[cfg(not(timewarp_broken))]
            let outcome = self.table.section(&keys, &mut plan);
            match outcome {
                Plan::Done(r) => return r,
                Plan::Lacks(more) => {
                    keys.extend(more);
                    keys.sort_unstable();
                    keys.dedup();
                }
            }
        }
    }

    /// The bodies of `id` as a look sees them (empty if it is not there): a first guess of the
    /// keys of a section about it.
    fn peek_bodies(&self, id: GroupId) -> Vec<usize> {
        self.group(id)
            .map(|g| g.bodies.iter().map(|&b| b as usize).collect())
            .unwrap_or_else(|| {
                if (id.rep as usize) < self.table.len() {
                    vec![id.rep as usize]
                } else {
                    Vec::new()
                }
            })
    }

    fn check_group(&self, id: GroupId) -> Result<(), GroupError> {
        if (id.rep as usize) < self.table.len() {
            Ok(())
        } else {
            Err(GroupError::UnknownGroup(id))
        }
    }

    /// The general change at `tick` (after every parent's birth): the live groups `parents`
    /// end, and `children` — each its bodies and its contact edges — are born, holding exactly
    /// the parents' bodies between them. Fusion ([`GroupGraph::fuse`]: many parents, one
    /// child), fission ([`GroupGraph::split`]: one parent, many children) and both at once (a
    /// group splits and one piece fuses with a neighbour at the same tick) are all this. A child
    /// keeps the may-split flag of every parent it holds whole (a flag is not lost by fusing).
    /// Returns the children's ids, in the order given.
    pub fn regroup(
        &self,
        parents: &[GroupId],
        tick: Tick,
        children: &[NewGroup],
    ) -> Result<Vec<GroupId>, GroupError> {
        Ok(self
            .regroup_if(parents, tick, children, None)?
            .expect("no edges to check"))
    }

    /// [`GroupGraph::regroup`], done only if the single parent's edges are still `edges` when
    /// given (`Ok(None)` otherwise, nothing changed): a split decided on a look at them.
    fn regroup_if(
        &self,
        parents: &[GroupId],
        tick: Tick,
        children: &[NewGroup],
        edges: Option<&[(BodyId, BodyId)]>,
    ) -> Result<Option<Vec<GroupId>>, GroupError> {
        let mut keys = Vec::new();
        for &p in parents {
            self.check_group(p)?;
            keys.extend(self.peek_bodies(p));
        }
        let mut parents = parents.to_vec();
        parents.sort_unstable();
        if let Some(w) = parents.windows(2).find(|w| w[0] == w[1]) {
            return Err(GroupError::SameGroup(w[0]));
        }
        let mut kids: Vec<Group> = Vec::with_capacity(children.len());
        for (bodies, edges) in children {
            let mut bodies = bodies.clone();
            bodies.sort_unstable();
            bodies.dedup();
            let Some(&rep) = bodies.first() else {
                return Err(GroupError::NotAPartition(tick));
            };
            let mut edges: Vec<(BodyId, BodyId)> = edges.iter().map(|&e| sorted_edge(e)).collect();
            edges.sort_unstable();
            edges.dedup();
            let id = GroupId { birth: tick, rep };
            let outside = |b: BodyId| bodies.binary_search(&b).is_err();
            if let Some(&e) = edges
                .iter()
                .find(|&&(a, b)| a == b || outside(a) || outside(b))
            {
                return Err(GroupError::ContactOutside(id, e));
            }
            kids.push(Group {
                id,
                bodies,
                contacts: edges,
                parents: Vec::new(),
                end: None,
                children: Vec::new(),
                may_split: false,
            });
        }
        self.run(keys, |v| {
            let mut lacks = Vec::new();
            let mut union: Vec<BodyId> = Vec::new();
            let mut records: Vec<&Group> = Vec::with_capacity(parents.len());
            for &p in &parents {
                match lookup(v, p, &mut lacks) {
                    Err(e) => return Plan::Done(Err(e)),
                    Ok(None) => {}
                    Ok(Some(r)) => {
                        if let Some(e) = r.end {
                            return Plan::Done(Err(GroupError::Ended(p, e)));
                        }
                        if tick <= p.birth {
                            return Plan::Done(Err(GroupError::NotAfterBirth(p, tick)));
                        }
                        if edges.is_some_and(|e| e != r.contacts.as_slice()) {
                            return Plan::Done(Ok(None));
                        }
                        union.extend(&r.bodies);
                        records.push(r);
                    }
                }
            }
            if !lacks.is_empty() {
                return Plan::Lacks(lacks);
            }
            union.sort_unstable();
            let mut given: Vec<BodyId> = kids.iter().flat_map(|k| k.bodies.clone()).collect();
            given.sort_unstable();
            if given != union {
                return Plan::Done(Err(GroupError::NotAPartition(tick)));
            }
            note_lacking(v, &union, &mut lacks);
            if !lacks.is_empty() {
                return Plan::Lacks(lacks);
            }
            // Who contributed to whom, and the flags carried by whole parents.
            let mut born = kids.clone();
            let mut ends: Vec<Vec<GroupId>> = vec![Vec::new(); records.len()];
            for kid in &mut born {
                for (r, end) in records.iter().zip(&mut ends) {
                    let held = r.bodies.iter().filter(|&&b| kid.has(b)).count();
                    if held > 0 {
                        kid.parents.push(r.id);
                        end.push(kid.id);
                    }
                    if held == r.bodies.len() {
                        kid.may_split |= r.may_split;
                    }
                }
            }
            // Everything read; now change.
            for (&p, mut end) in parents.iter().zip(ends) {
                end.sort_unstable();
                let r = lookup_mut(v, p);
                r.end = Some(tick);
                r.children = end;
            }
            let ids: Vec<GroupId> = born.iter().map(|k| k.id).collect();
            for kid in born {
                for &body in &kid.bodies {
                    v.get_mut(body as usize).history.push((tick, kid.id));
                }
                v.get_mut(kid.id.rep as usize).groups.push(kid);
            }
            Plan::Done(Ok(Some(ids)))
        })
    }

    /// Fuses live groups `a` and `b` at `tick` (after both births) because of the contact
    /// `contact` between a body of one and a body of the other: one child with the bodies and
    /// edges of both and the new contact. Returns the new group.
    pub fn fuse(
        &self,
        a: GroupId,
        b: GroupId,
        tick: Tick,
        contact: (BodyId, BodyId),
    ) -> Result<GroupId, GroupError> {
        if a == b {
            return Err(GroupError::SameGroup(a));
        }
        let (ra, rb) = (self.group_or_err(a)?, self.group_or_err(b)?);
        let (c0, c1) = contact;
        if !((ra.has(c0) && rb.has(c1)) || (ra.has(c1) && rb.has(c0))) {
            return Err(GroupError::ContactOutside(a, contact));
        }
        let mut bodies = ra.bodies.clone();
        bodies.extend(&rb.bodies);
        let mut edges = ra.contacts.clone();
        edges.extend(&rb.contacts);
        edges.push(contact);
        // The records were looked at before the section: if either changed since, the
        // section refuses (ended, or not a partition of the parents' bodies any more).
        Ok(self.regroup(&[a, b], tick, &[(bodies, edges)])?[0])
    }

    /// A look at a group's record, or the error that names it.
    fn group_or_err(&self, id: GroupId) -> Result<Group, GroupError> {
        self.check_group(id)?;
        self.group(id).ok_or(GroupError::UnknownGroup(id))
    }

    /// Replaces the contact edges of live group `id` (each between two of its bodies); flags it
    /// may-split when an edge it had is gone. Returns whether it may split now.
    pub fn set_contacts(
        &self,
        id: GroupId,
        edges: &[(BodyId, BodyId)],
    ) -> Result<bool, GroupError> {
        self.check_group(id)?;
        let mut edges: Vec<(BodyId, BodyId)> = edges.iter().map(|&e| sorted_edge(e)).collect();
        edges.sort_unstable();
        edges.dedup();
        self.run(vec![id.rep as usize], |v| {
            // Its only slot is named: the look finds it or names the error.
            let r = match lookup(v, id, &mut Vec::new()) {
                Ok(Some(r)) => r,
                _ => return Plan::Done(Err(GroupError::UnknownGroup(id))),
            };
            if let Some(e) = r.end {
                return Plan::Done(Err(GroupError::Ended(id, e)));
            }
            if let Some(&bad) = edges
                .iter()
                .find(|&&(a, b)| a == b || !r.has(a) || !r.has(b))
            {
                return Plan::Done(Err(GroupError::ContactOutside(id, bad)));
            }
            let removed = r.contacts.iter().any(|e| edges.binary_search(e).is_err());
            let r = lookup_mut(v, id);
            r.may_split |= removed;
            r.contacts.clone_from(&edges);
            Plan::Done(Ok(r.may_split))
        })
    }

    /// Splits live group `id` at `tick` (after its birth) into the connected components of its
    /// contact edges. A connected group does not split: its may-split flag is cleared and the
    /// result is `[id]`. Otherwise the result is the children, ordered by smallest body.
    pub fn split(&self, id: GroupId, tick: Tick) -> Result<Vec<GroupId>, GroupError> {
        loop {
            let r = self.group_or_err(id)?;
            if let Some(e) = r.end {
                return Err(GroupError::Ended(id, e));
            }
            if tick <= id.birth {
                return Err(GroupError::NotAfterBirth(id, tick));
            }
            let parts = components(&r.bodies, &r.contacts);
            if parts.len() > 1 {
                let children: Vec<NewGroup> = parts
                    .into_iter()
                    .map(|bodies| {
                        let edges = r
                            .contacts
                            .iter()
                            .filter(|e| bodies.binary_search(&e.0).is_ok())
                            .copied()
                            .collect();
                        (bodies, edges)
                    })
                    .collect();
                match self.regroup_if(&[id], tick, &children, Some(&r.contacts))? {
                    Some(ids) => return Ok(ids),
                    None => continue, // its edges changed since the look: look again
                }
            }
            // Connected as looked at: clear the flag in a section, unless the edges changed
            // since (then look again).
            let cleared = self.run(vec![id.rep as usize], |v| {
                match lookup(v, id, &mut Vec::new()) {
                    Ok(Some(now)) if now.end.is_none() && now.contacts == r.contacts => {
                        lookup_mut(v, id).may_split = false;
                        Plan::Done(true)
                    }
                    _ => Plan::Done(false),
                }
            });
            if cleared {
                return Ok(vec![id]);
            }
        }
    }

    /// Group `id` throws away its states after tick `r` (see "Rollback" in the module
    /// documentation): undoes every fusion and fission of its lineage after `r`.
    pub fn rollback(&self, id: GroupId, r: Tick) -> Result<Undo, GroupError> {
        self.check_group(id)?;
        if r < self.start {
            return Err(GroupError::BeforeStart(id, r));
        }
        let keys = self.peek_bodies(id);
        self.run(keys, |v| {
            let mut lacks = Vec::new();
            // The ancestors-or-self of `id` alive at `r`.
            let mut alive: BTreeSet<GroupId> = BTreeSet::new();
            let mut seen: BTreeSet<GroupId> = BTreeSet::new();
            let mut stack = vec![id];
            while let Some(x) = stack.pop() {
                if !seen.insert(x) {
                    continue;
                }
                let rec = match lookup(v, x, &mut lacks) {
                    Ok(Some(rec)) => rec,
                    Ok(None) => continue,
                    Err(e) => return Plan::Done(Err(e)),
                };
                if rec.id.birth <= r {
                    if let Some(e) = rec.end.filter(|&e| e <= r) {
                        return Plan::Done(Err(GroupError::Ended(x, e)));
                    }
                    alive.insert(x);
                } else if rec.parents.is_empty() {
                    return Plan::Done(Err(GroupError::BeforeStart(x, r)));
                } else {
                    stack.extend(rec.parents.iter().rev());
                }
            }
            if !lacks.is_empty() {
                return Plan::Lacks(lacks);
            }
            // Their descendants, all born after `r`; and every other parent of those.
            let mut deleted: BTreeSet<GroupId> = BTreeSet::new();
            let mut parents: BTreeSet<GroupId> = BTreeSet::new();
            let mut stack: Vec<GroupId> = Vec::new();
            for &a in &alive {
                let rec = known(v, a);
                stack.extend(&rec.children);
            }
            while let Some(d) = stack.pop() {
                if !deleted.insert(d) {
                    continue;
                }
                let rec = match lookup(v, d, &mut lacks) {
                    Ok(Some(rec)) => rec,
                    Ok(None) => continue,
                    Err(e) => return Plan::Done(Err(e)),
                };
                note_lacking(v, &rec.bodies, &mut lacks);
                parents.extend(&rec.parents);
                stack.extend(&rec.children);
            }
            if !lacks.is_empty() {
                return Plan::Lacks(lacks);
            }
            let mut resumed = Vec::new();
            for &p in parents.difference(&deleted) {
                if alive.contains(&p) {
                    continue;
                }
                match lookup(v, p, &mut lacks) {
                    Ok(Some(rec)) => resumed.push((p, rec.end.expect("a parent has ended"))),
                    Ok(None) => {}
                    Err(e) => return Plan::Done(Err(e)),
                }
            }
            if !lacks.is_empty() {
                return Plan::Lacks(lacks);
            }
            let dead_bodies: Vec<BodyId> = deleted
                .iter()
                .flat_map(|&d| known(v, d).bodies.clone())
                .collect();
            // Everything read; now change.
            for &d in &deleted {
                v.get_mut(d.rep as usize).groups.retain(|g| g.id != d);
            }
            for &body in &dead_bodies {
                v.get_mut(body as usize)
                    .history
                    .retain(|(_, g)| !deleted.contains(g));
            }
            for &g in alive.iter().chain(resumed.iter().map(|(g, _)| g)) {
                let rec = lookup_mut(v, g);
                rec.end = None;
                rec.children.clear();
            }
            Plan::Done(Ok(Undo {
                rolled_back: alive.into_iter().collect(),
                resumed,
                deleted: deleted.into_iter().collect(),
            }))
        })
    }

    /// Drops the records that ended at or before `gvt` and the history they superseded (no
    /// rollback reaches a committed tick). One section per body; returns the records dropped.
    pub fn prune(&self, gvt: Tick) -> usize {
        (0..self.table.len())
            .map(|k| {
                self.table.section(&[k], |v| {
                    let s = v.get(k);
                    let stale = s.groups.iter().filter(|g| g.end.is_some_and(|e| e <= gvt));
                    let n = stale.count();
                    let old = s
                        .history
                        .iter()
                        .skip(1)
                        .take_while(|(t, _)| *t <= gvt)
                        .count();
                    if n == 0 && old == 0 {
                        return 0;
                    }
                    let s = v.get_mut(k);
                    s.groups.retain(|g| g.end.is_none_or(|e| e > gvt));
                    s.history.drain(..old);
                    s.pruned = s.pruned.max(gvt);
                    n
                })
            })
            .sum()
    }

    /// The live groups (a consistent snapshot), ascending.
    pub fn live(&self) -> Vec<Group> {
        let mut out: Vec<Group> = self
            .table
            .snapshot()
            .into_iter()
            .flat_map(|s| s.groups.into_iter().filter(|g| g.end.is_none()))
            .collect();
        out.sort_by_key(|g| g.id);
        out
    }

    /// Every record and history entry, in a canonical text form (for tests that compare graphs).
    pub fn dump(&self) -> String {
        let mut out = String::new();
        for (b, s) in self.table.snapshot().iter().enumerate() {
            out += &format!("body {b}: history {:?}\n", s.history);
            for g in &s.groups {
                out += &format!("  {g:?}\n");
            }
        }
        out
    }

    /// Checks every invariant of the graph on a consistent snapshot (see the module docs).
    pub fn validate(&self) -> Result<(), String> {
        validate_slots(&self.table.snapshot())
    }
}

/// The invariants of a snapshot of the graph's slots.
fn validate_slots(slots: &[Slot]) -> Result<(), String> {
    let n = slots.len();
    let find = |id: GroupId| -> Option<&Group> {
        slots
            .get(id.rep as usize)
            .and_then(|s| s.groups.iter().find(|g| g.id == id))
    };
    let mut owner: Vec<Option<GroupId>> = vec![None; n];
    let mut ids = BTreeSet::new();
    for (k, s) in slots.iter().enumerate() {
        for g in &s.groups {
            let id = g.id;
            if !ids.insert(id) {
                return Err(format!("{id} is recorded twice"));
            }
            if id.rep as usize != k || g.bodies.first() != Some(&id.rep) {
                return Err(format!("{id} is in slot {k} with bodies {:?}", g.bodies));
            }
            if g.bodies.windows(2).any(|w| w[0] >= w[1])
                || g.bodies.iter().any(|&b| b as usize >= n)
            {
                return Err(format!("{id} has bodies {:?}", g.bodies));
            }
            if g.contacts.windows(2).any(|w| w[0] >= w[1])
                || g.contacts
                    .iter()
                    .any(|&(a, b)| a >= b || !g.has(a) || !g.has(b))
            {
                return Err(format!("{id} has contacts {:?}", g.contacts));
            }
            if g.end.is_some() == g.children.is_empty() {
                return Err(format!(
                    "{id} ends at {:?} with children {:?}",
                    g.end, g.children
                ));
            }
            if g.end.is_some_and(|e| e <= id.birth) {
                return Err(format!("{id} ends at {:?}, not after its birth", g.end));
            }
            if g.end.is_none() {
                for &b in &g.bodies {
                    if let Some(other) = owner[b as usize].replace(id) {
                        return Err(format!("body {b} is in live {other} and live {id}"));
                    }
                }
            }
            for &c in &g.children {
                let child = find(c).ok_or(format!("{id} has a missing child {c}"))?;
                if Some(c.birth) != g.end || !child.parents.contains(&id) {
                    return Err(format!("{id} and its child {c} disagree"));
                }
            }
            let mut present: Vec<&Group> = Vec::new();
            for &p in &g.parents {
                match find(p) {
                    Some(parent) => {
                        if parent.end != Some(id.birth) || !parent.children.contains(&id) {
                            return Err(format!("{id} and its parent {p} disagree"));
                        }
                        if !parent.bodies.iter().any(|&b| g.has(b)) {
                            return Err(format!("{id} holds no body of its parent {p}"));
                        }
                        present.push(parent);
                    }
                    None if slots[p.rep as usize].pruned >= id.birth => {}
                    None => return Err(format!("{id} has a missing parent {p}")),
                }
            }
            // The change that made it (its parents, their children, those children's parents,
            // ...): the bodies before are exactly the bodies after, none lost or doubled.
            if !present.is_empty() && present.len() == g.parents.len() {
                let (mut before, mut after): (Vec<BodyId>, Vec<BodyId>) = (Vec::new(), Vec::new());
                let (mut olds, mut news) = (BTreeSet::new(), BTreeSet::from([id]));
                let mut todo: Vec<GroupId> = vec![id];
                let mut whole = true;
                while let Some(x) = todo.pop() {
                    let Some(kid) = find(x) else {
                        whole = false;
                        break;
                    };
                    for &p in &kid.parents {
                        let Some(parent) = find(p) else {
                            whole = false;
                            break;
                        };
                        if olds.insert(p) {
                            before.extend(&parent.bodies);
                            todo.extend(parent.children.iter().filter(|&&c| news.insert(c)));
                        }
                    }
                }
                if whole {
                    for &n in &news {
                        after.extend(
                            &find(n)
                                .ok_or(format!("{id}: sibling {n} is missing"))?
                                .bodies,
                        );
                    }
                    before.sort_unstable();
                    after.sort_unstable();
                    if before != after {
                        return Err(format!(
                            "the change that made {id} turned bodies {before:?} into {after:?}"
                        ));
                    }
                }
            }
        }
    }
    for (b, s) in slots.iter().enumerate() {
        let Some(&(_, last)) = s.history.last() else {
            return Err(format!("body {b} has no history"));
        };
        if owner[b] != Some(last) {
            return Err(format!(
                "body {b}: history ends at {last}, live group {:?}",
                owner[b]
            ));
        }
        if s.history.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(format!("body {b}: history {:?} not ascending", s.history));
        }
        for (i, &(from, g)) in s.history.iter().enumerate() {
            if g.birth != from {
                return Err(format!("body {b}: {g} listed from tick {from}"));
            }
            match find(g) {
                Some(rec) if rec.has(b as BodyId) => {
                    let next = s.history.get(i + 1).map(|e| e.0);
                    if rec.end != next {
                        return Err(format!(
                            "body {b}: {g} ends at {:?}, next {next:?}",
                            rec.end
                        ));
                    }
                }
                Some(_) => return Err(format!("body {b} listed in {g}, which lacks it")),
                None => return Err(format!("body {b}: history names missing {g}")),
            }
        }
    }
    Ok(())
}

// Under loom the table must live inside `loom::model`: these are std-thread tests.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn g(birth: Tick, rep: BodyId) -> GroupId {
        GroupId { birth, rep }
    }

    fn each_backend(f: impl Fn(&GroupGraph)) {
        for &b in Backend::COMPILED {
            let graph = GroupGraph::new(b, 5, 0);
            graph.validate().unwrap();
            f(&graph);
            graph.validate().unwrap();
        }
    }

    #[test]
    fn components_are_ordered_by_smallest_body() {
        assert_eq!(
            components(&[1, 2, 4, 7, 9], &[(4, 9), (1, 7)]),
            vec![vec![1, 7], vec![2], vec![4, 9]]
        );
        assert_eq!(components(&[3, 5], &[(3, 5)]), vec![vec![3, 5]]);
    }

    #[test]
    fn fusion_ends_both_parents_and_moves_their_bodies() {
        each_backend(|graph| {
            let ab = graph.fuse(g(0, 1), g(0, 3), 4, (3, 1)).unwrap();
            assert_eq!(ab, g(4, 1));
            let rec = graph.group(ab).unwrap();
            assert_eq!(rec.bodies, vec![1, 3]);
            assert_eq!(rec.contacts, vec![(1, 3)]);
            assert_eq!(rec.parents, vec![g(0, 1), g(0, 3)]);
            assert_eq!(graph.group(g(0, 3)).unwrap().end, Some(4));
            assert_eq!(graph.group_of(3).unwrap(), ab);
            assert_eq!(graph.group_of(2).unwrap(), g(0, 2));
            graph.validate().unwrap();
            // The parents are gone as live groups; fusing them again is refused, unchanged.
            assert_eq!(
                graph.fuse(g(0, 1), g(0, 2), 5, (1, 2)),
                Err(GroupError::Ended(g(0, 1), 4))
            );
            assert_eq!(
                graph.fuse(ab, g(0, 0), 4, (0, 1)),
                Err(GroupError::NotAfterBirth(ab, 4))
            );
            assert_eq!(
                graph.fuse(ab, g(0, 0), 5, (0, 2)),
                Err(GroupError::ContactOutside(ab, (0, 2)))
            );
            let abc = graph.fuse(g(0, 0), ab, 6, (0, 3)).unwrap();
            assert_eq!(abc, g(6, 0));
            assert_eq!(graph.group(abc).unwrap().bodies, vec![0, 1, 3]);
            assert_eq!(graph.group(abc).unwrap().contacts, vec![(0, 3), (1, 3)]);
            assert_eq!(graph.live().len(), 3);
        });
    }

    #[test]
    fn fission_is_deferred_until_asked_and_splits_into_components() {
        each_backend(|graph| {
            let ab = graph.fuse(g(0, 0), g(0, 1), 2, (0, 1)).unwrap();
            let abc = graph.fuse(ab, g(0, 2), 3, (1, 2)).unwrap();
            // A connected group does not split.
            assert_eq!(graph.set_contacts(abc, &[(0, 1), (2, 1)]), Ok(false));
            assert_eq!(graph.split(abc, 4), Ok(vec![abc]));
            // Dropping an edge flags it; the split happens when asked.
            assert_eq!(graph.set_contacts(abc, &[(1, 2)]), Ok(true));
            assert!(graph.group(abc).unwrap().may_split);
            graph.validate().unwrap();
            assert_eq!(
                graph.set_contacts(abc, &[(1, 4)]),
                Err(GroupError::ContactOutside(abc, (1, 4)))
            );
            let parts = graph.split(abc, 7).unwrap();
            assert_eq!(parts, vec![g(7, 0), g(7, 1)]);
            assert_eq!(graph.group(g(7, 1)).unwrap().bodies, vec![1, 2]);
            assert_eq!(graph.group(g(7, 1)).unwrap().contacts, vec![(1, 2)]);
            assert_eq!(graph.group(g(7, 0)).unwrap().bodies, vec![0]);
            assert_eq!(graph.group_of(0).unwrap(), g(7, 0));
            assert_eq!(graph.split(abc, 8), Err(GroupError::Ended(abc, 7)));
        });
    }

    #[test]
    fn regroup_splits_and_fuses_at_one_tick() {
        each_backend(|graph| {
            let ab = graph.fuse(g(0, 0), g(0, 1), 2, (0, 1)).unwrap();
            graph.set_contacts(ab, &[]).unwrap();
            // At tick 5, {0, 1} falls apart and body 1 lands on body 2: two parents, two
            // children, neither a plain fusion nor a plain fission.
            let kids = graph
                .regroup(
                    &[ab, g(0, 2)],
                    5,
                    &[(vec![0], vec![]), (vec![2, 1], vec![(2, 1)])],
                )
                .unwrap();
            assert_eq!(kids, vec![g(5, 0), g(5, 1)]);
            assert_eq!(graph.group(ab).unwrap().children, kids);
            assert_eq!(graph.group(g(0, 2)).unwrap().children, vec![g(5, 1)]);
            assert_eq!(graph.group(g(5, 1)).unwrap().parents, vec![g(0, 2), ab]);
            assert_eq!(graph.group(g(5, 1)).unwrap().contacts, vec![(1, 2)]);
            // Nothing lost or doubled, and the parents must be live.
            assert_eq!(
                graph.regroup(&[g(5, 0), g(5, 1)], 6, &[(vec![0, 1], vec![])]),
                Err(GroupError::NotAPartition(6))
            );
            assert_eq!(
                graph.regroup(
                    &[g(5, 0), g(5, 1)],
                    6,
                    &[(vec![0, 1, 2, 2], vec![]), (vec![1], vec![])]
                ),
                Err(GroupError::NotAPartition(6))
            );
            assert_eq!(
                graph.regroup(&[ab], 6, &[(vec![0, 1], vec![])]),
                Err(GroupError::Ended(ab, 5))
            );
            graph.validate().unwrap();
            // A rollback of the piece holding body 2 to tick 4 undoes the whole change.
            let undo = graph.rollback(g(5, 1), 4).unwrap();
            assert_eq!(undo.rolled_back, vec![g(0, 2), ab]);
            assert_eq!(undo.deleted, kids);
        });
    }

    #[test]
    fn rollback_before_a_fusion_deletes_the_child_and_revives_the_other_parent() {
        each_backend(|graph| {
            let ab = graph.fuse(g(0, 0), g(0, 1), 5, (0, 1)).unwrap();
            // Parent 1 rolls back to 3 (an event at tick 3 reached it): the fusion never was.
            let undo = graph.rollback(g(0, 1), 3).unwrap();
            assert_eq!(undo.rolled_back, vec![g(0, 1)]);
            assert_eq!(undo.resumed, vec![(g(0, 0), 5)]);
            assert_eq!(undo.deleted, vec![ab]);
            assert!(graph.group(ab).is_none());
            assert_eq!(graph.group_of(0).unwrap(), g(0, 0));
            assert_eq!(graph.group(g(0, 0)).unwrap().end, None);
            graph.validate().unwrap();
            // The same fusion made again has the same id: ids are content.
            assert_eq!(graph.fuse(g(0, 0), g(0, 1), 5, (0, 1)), Ok(ab));
        });
    }

    #[test]
    fn rollback_of_a_group_before_its_birth_rolls_back_its_parents() {
        each_backend(|graph| {
            let ab = graph.fuse(g(0, 0), g(0, 1), 5, (0, 1)).unwrap();
            let abc = graph.fuse(ab, g(0, 2), 8, (1, 2)).unwrap();
            graph.set_contacts(abc, &[(1, 2)]).unwrap();
            let parts = graph.split(abc, 10).unwrap();
            assert_eq!(parts, vec![g(10, 0), g(10, 1)]);
            // The {1, 2} child rolls back to 4: before its birth, its parent's and ab's. The
            // groups alive at 4 are the three first ones; everything after is gone.
            let undo = graph.rollback(g(10, 1), 4).unwrap();
            assert_eq!(undo.rolled_back, vec![g(0, 0), g(0, 1), g(0, 2)]);
            assert_eq!(undo.resumed, vec![]);
            assert_eq!(undo.deleted, vec![ab, abc, g(10, 0), g(10, 1)]);
            assert_eq!(graph.live().len(), 5);
            for b in 0..5 {
                assert_eq!(graph.group_of(b).unwrap(), g(0, b));
            }
        });
    }

    #[test]
    fn rollback_between_fusion_and_fission_keeps_the_fusion() {
        each_backend(|graph| {
            let ab = graph.fuse(g(0, 0), g(0, 1), 5, (0, 1)).unwrap();
            let abc = graph.fuse(ab, g(0, 2), 8, (1, 2)).unwrap();
            let de = graph.fuse(g(0, 3), g(0, 4), 6, (3, 4)).unwrap();
            graph.set_contacts(abc, &[(1, 2)]).unwrap();
            graph.split(abc, 10).unwrap();
            // A child of the fission rolls back to 9: the fission is undone, abc is live again
            // and rolls back to 9 itself; the other child is deleted; de is untouched.
            let undo = graph.rollback(g(10, 0), 9).unwrap();
            assert_eq!(undo.rolled_back, vec![abc]);
            assert_eq!(undo.resumed, vec![]);
            assert_eq!(undo.deleted, vec![g(10, 0), g(10, 1)]);
            assert_eq!(graph.group_of(0).unwrap(), abc);
            assert_eq!(graph.group_of(4).unwrap(), de);
            // Rolling back to 8, the fusion tick itself, keeps the fusion too: abc was born
            // at 8 and holds its state at 8.
            let undo = graph.rollback(abc, 8).unwrap();
            assert_eq!(undo.rolled_back, vec![abc]);
            assert!(undo.deleted.is_empty());
            // Rolling back to 7 undoes the second fusion: ab rolls back, body 2 resumes at 8.
            let undo = graph.rollback(abc, 7).unwrap();
            assert_eq!(undo.rolled_back, vec![g(0, 2), ab]);
            assert_eq!(undo.deleted, vec![abc]);
            // A live group rolling back within its life changes nothing.
            let undo = graph.rollback(de, 7).unwrap();
            assert_eq!(undo.rolled_back, vec![de]);
            assert!(undo.deleted.is_empty() && undo.resumed.is_empty());
            assert_eq!(
                graph.rollback(g(0, 3), 7),
                Err(GroupError::Ended(g(0, 3), 6))
            );
        });
    }

    #[test]
    fn prune_drops_what_no_rollback_can_reach() {
        each_backend(|graph| {
            let ab = graph.fuse(g(0, 0), g(0, 1), 5, (0, 1)).unwrap();
            let abc = graph.fuse(ab, g(0, 2), 8, (1, 2)).unwrap();
            assert_eq!(graph.prune(4), 0);
            assert_eq!(graph.prune(5), 2);
            graph.validate().unwrap();
            assert!(graph.group(g(0, 0)).is_none());
            assert_eq!(graph.prune(8), 2);
            graph.validate().unwrap();
            assert_eq!(graph.group(abc).unwrap().parents, vec![g(0, 2), ab]);
            // A rollback to a tick the GVT has passed would find the lineage gone.
            assert_eq!(
                graph.rollback(abc, 7),
                Err(GroupError::UnknownGroup(g(0, 2)))
            );
            assert_eq!(graph.rollback(abc, 9).unwrap().rolled_back, vec![abc]);
        });
    }

    #[test]
    fn bad_ids_are_refused() {
        each_backend(|graph| {
            assert_eq!(graph.group_of(5), Err(GroupError::UnknownBody(5)));
            assert_eq!(
                graph.fuse(g(0, 9), g(0, 1), 3, (9, 1)),
                Err(GroupError::UnknownGroup(g(0, 9)))
            );
            assert_eq!(
                graph.fuse(g(2, 0), g(0, 1), 3, (0, 1)),
                Err(GroupError::UnknownGroup(g(2, 0)))
            );
            assert_eq!(
                graph.fuse(g(0, 1), g(0, 1), 3, (0, 1)),
                Err(GroupError::SameGroup(g(0, 1)))
            );
            let resumed = GroupGraph::new(Backend::default(), 2, 10);
            assert_eq!(
                resumed.rollback(g(10, 0), 9),
                Err(GroupError::BeforeStart(g(10, 0), 9))
            );
        });
    }

    /// A corrupted snapshot is caught: `validate` is not vacuous.
    #[test]
    fn validate_catches_a_body_in_two_live_groups() {
        let graph = GroupGraph::new(Backend::default(), 3, 0);
        let mut slots = graph.table.snapshot();
        validate_slots(&slots).unwrap();
        slots[0].groups[0].bodies.push(1);
        let e = validate_slots(&slots).unwrap_err();
        assert!(e.contains("body 1 is in live"), "{e}");
        let mut slots = graph.table.snapshot();
        slots[2].history.push((4, GroupId { birth: 4, rep: 2 }));
        assert!(validate_slots(&slots).is_err());
        // A fusion that lost a body on the way.
        graph
            .fuse(
                GroupId { birth: 0, rep: 0 },
                GroupId { birth: 0, rep: 1 },
                3,
                (0, 1),
            )
            .unwrap();
        let mut slots = graph.table.snapshot();
        validate_slots(&slots).unwrap();
        let fused = slots[0]
            .groups
            .iter_mut()
            .find(|g| g.id.birth == 3)
            .unwrap();
        fused.bodies.pop();
        fused.contacts.clear();
        slots[1].history.pop();
        slots[1].groups[0].end = None;
        slots[1].groups[0].children.clear();
        let e = validate_slots(&slots).unwrap_err();
        assert!(e.contains("parent"), "{e}");
    }

    /// Many threads (far more than cores) fuse, split and roll back random groups of a shared
    /// graph; every operation is checked against the graph's invariants afterwards and every
    /// few operations in between (a consistent snapshot each time).
    #[test]
    fn oversubscribed_random_operations_keep_the_graph_valid() {
        use crate::scene::SplitMix64;
        use std::sync::Arc;
        for &backend in Backend::COMPILED {
            let graph = Arc::new(GroupGraph::new(backend, 24, 0));
            let threads: Vec<_> = (0..16u64)
                .map(|t| {
                    let graph = Arc::clone(&graph);
                    std::thread::spawn(move || {
                        let mut rng = SplitMix64::new(t + 1);
                        // Fusions, fissions that split, rollbacks that deleted a group.
                        let mut done = [0u32; 3];
                        for i in 0..1500u64 {
                            let tick = 1 + i / 4 + rng.next_u64() % 8;
                            let a = (rng.next_u64() % 24) as BodyId;
                            let b = (rng.next_u64() % 24) as BodyId;
                            let (ga, gb) = (graph.group_of(a).unwrap(), graph.group_of(b).unwrap());
                            match rng.next_u64() % 4 {
                                0 | 1 => done[0] += graph.fuse(ga, gb, tick, (a, b)).is_ok() as u32,
                                2 => {
                                    let parts = graph
                                        .set_contacts(ga, &[])
                                        .and_then(|_| graph.split(ga, tick));
                                    done[1] += parts.is_ok_and(|p| p.len() > 1) as u32;
                                }
                                _ => {
                                    let undo = graph.rollback(ga, tick.saturating_sub(3));
                                    done[2] += undo.is_ok_and(|u| !u.deleted.is_empty()) as u32;
                                }
                            }
                            if i % 100 == 0 {
                                graph.validate().unwrap();
                            }
                        }
                        done
                    })
                })
                .collect();
            let mut done = [0u32; 3];
            for t in threads {
                for (d, n) in done.iter_mut().zip(t.join().unwrap()) {
                    *d += n;
                }
            }
            graph.validate().unwrap();
            eprintln!("{backend:?}: fusions, fissions, rollbacks across them: {done:?}");
            assert!(
                done.iter().all(|&n| n > 100),
                "{backend:?}: too few operations took effect: {done:?}"
            );
        }
    }
}
