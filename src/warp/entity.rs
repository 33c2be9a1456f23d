//! # An entity: one body on its own clock (step, resolve, rollback)
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Section 5, Figure 5 and Algorithms 2-7. An entity
//! holds its state queue — the pre-event states `s_base ..= s_lvt`, each already written into
//! the TVHT under a fresh tag — the contacts it knows at those ticks, and the set of its
//! messages still waiting for an ack (`Pending`). One call of [`Entity::run`] is one turn of the
//! state machine, run by a worker of the scheduler; it never blocks:
//!
//! * **Messages** (the `receive` of Algorithms 2-4). An *event* at `k` is valid when the
//!   receiver's entry at `k` is still the one the contact joined (same tag); it is added to the
//!   contacts at `k` (`Input`/`Done` of the paper are one map here: contacts at ticks `<= LVT`
//!   have been applied, the one at `LVT` is applied by the next step) and, if `k < LVT`, the
//!   entity **rolls back** to `k`. A stale event (its entry was deleted since) is dropped: the
//!   receiver's delete returned that contact and an antievent for it is already on its way to
//!   the sender. An *antievent* removes the matching instance, rolling back to its tick if that
//!   is in the past. Events and antievents are acked after that, whether valid or stale.
//! * **Rollback** to `r` (Algorithms 4 and 7): delete the entries after `r` from the TVHT in one
//!   section; for each contact the delete returns that was a collision, send an antievent to
//!   the other body; forget the contacts after `r`; take back the GVT records after `r`,
//!   newest first; truncate the state queue to `s_r`. The recursion of the paper happens
//!   across entities: the antievents make their receivers roll back in turn.
//! * **Step** (Algorithms 5 and 6): from `s_LVT` and the contacts at `LVT` compute the states
//!   up to `LVT_ub` (at most [`BATCH`] ticks a turn), write them into the TVHT in one section,
//!   which stops at the first tick that meets a contact. Every such contact that is a collision
//!   (rules in [`super::rules`]) becomes an event to the other body and a pending ack. The
//!   states computed past that tick are thrown away, so the batch adapts: after a write that
//!   stopped at its `i`-th tick the next batch is `i` ticks, after a full write it doubles (up
//!   to [`BATCH`]). A body resting on another meets a contact every tick: it then computes
//!   one tick a turn instead of 32 and its section names the buckets of one tick, not of three
//!   slices. Only a matter of speed, like `reach`: a committed state does not depend on how
//!   many ticks anyone computed ahead.
//! * **Resolve**: the entity does not stop stepping while its events wait for acks (its
//!   states are speculative anyway and any message can roll them back), but it does not
//!   **record** a tick `t` in the GVT buffer while any event or antievent it sent at a tick
//!   `<= t` is unacked. That is what makes a committed tick final: an event at `t` can only
//!   come from an entity that has not recorded `t`, and an antievent at `t` from one that is
//!   still waiting for its ack, so neither can reach a tick the GVT has passed.

use super::message::{Instance, Msg};
use super::rules::{Kick, Rules};
use super::tvht::{BodyEntry, Contact, Step, Tvht};
use super::{BodyId, GvtBuffer, Tick};
use crate::dynamics::BodyState;
use crate::geometry::Aabb;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// At most this many ticks are computed and written per turn, so that messages are read often.
pub const BATCH: u64 = 32;

/// What an entity needs from the engine during a turn.
pub struct Env<'a> {
    pub rules: &'a Rules,
    pub tvht: &'a Tvht,
    pub gvt: &'a GvtBuffer,
    /// The last tick to simulate.
    pub end: Tick,
}

/// Why a turn ended: what would let the entity go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// It can step further at once.
    Ready,
    /// It is at `LVT_ub` computed from this GVT: it waits for the GVT to advance.
    WaitGvt(Tick),
    /// It waits for messages only (acks, or nothing at all at the end of the run).
    WaitMessages,
}

/// Counters of one entity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntityStats {
    pub events: u64,
    pub antievents: u64,
    pub rollbacks: u64,
    pub rolled_back_ticks: u64,
    pub tvht_writes: u64,
    pub turns: u64,
    /// Sum of `LVT - GVT` over turns (mean = sum / turns).
    pub lead_sum: u64,
}

/// An entity's reused buffers.
#[derive(Default)]
struct Scratch {
    kicks: Vec<Kick>,
    /// The states computed by a step, as TVHT entries.
    entries: Vec<[BodyEntry; 1]>,
    /// The states recorded in the GVT buffer by a turn.
    records: Vec<[(BodyId, BodyState); 1]>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Event,
    Antievent,
}

/// One body simulated on its own clock.
pub struct Entity {
    id: BodyId,
    started: bool,
    /// Tick of `states[0]`.
    base: Tick,
    states: VecDeque<BodyState>,
    tags: VecDeque<u64>,
    aabbs: VecDeque<Aabb>,
    next_tag: u64,
    /// Collisions known at ticks `base ..= lvt`, by (tick, other body).
    contacts: BTreeMap<(Tick, BodyId), Contact>,
    /// Messages sent and not acked yet, ordered by tick.
    pending: BTreeSet<(Instance, Kind)>,
    /// Ticks `< recorded` are recorded in the GVT buffer.
    recorded: Tick,
    /// How far past the GVT this entity speculates now (`1 ..= window`): halved by every
    /// rollback, doubled by every turn without one. Only a matter of speed: committed states
    /// do not depend on how far anyone speculated.
    reach: u64,
    /// Ticks to compute in the next step (`1 ..= BATCH`; see "Step" in the module docs).
    batch: u64,
    /// Buffers reused from turn to turn (their contents do not outlive a call).
    scratch: Scratch,
    pub stats: EntityStats,
}

impl Entity {
    /// Body `id` at its initial state at tick 0 (written at its first turn).
    pub fn new(id: BodyId, initial: BodyState) -> Entity {
        Entity::starting_at(id, initial, 0)
    }

    /// Body `id` at committed state `state` at tick `tick` (a resumed run; the GVT starts there).
    pub fn starting_at(id: BodyId, state: BodyState, tick: Tick) -> Entity {
        Entity {
            id,
            started: false,
            base: tick,
            states: VecDeque::from([state]),
            tags: VecDeque::from([0]),
            aabbs: VecDeque::new(),
            next_tag: 0,
            contacts: BTreeMap::new(),
            pending: BTreeSet::new(),
            recorded: tick,
            reach: u64::MAX,
            batch: BATCH,
            scratch: Scratch::default(),
            stats: EntityStats::default(),
        }
    }

    /// The local virtual time: the tick of the latest state.
    pub fn lvt(&self) -> Tick {
        self.base + self.states.len() as Tick - 1
    }

    /// How many of the events and antievents this entity sent still wait for their ack (0 at
    /// the end of a run; the loom model `engine_rollback` checks it).
    pub fn unacked(&self) -> usize {
        self.pending.len()
    }

    fn at(&self, t: Tick) -> usize {
        (t - self.base) as usize
    }

    /// One turn: read `inbox`, step, record. Messages to others go through `send`.
    pub fn run(
        &mut self,
        env: &Env<'_>,
        inbox: &mut dyn FnMut() -> Option<Msg>,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<Turn, String> {
        self.stats.turns += 1;
        if !self.started {
            self.started = true;
            let s0 = self.states[0];
            self.aabbs.push_back(env.rules.aabb(self.id as usize, &s0));
            self.tags[0] = self.next_tag;
            let bodies = [BodyEntry {
                body: self.id,
                aabb: self.aabbs[0],
                state: s0,
            }];
            let (_, found) = env
                .tvht
                .write_steps_tagged(
                    self.id,
                    self.next_tag,
                    &[Step {
                        tick: self.base,
                        bodies: &bodies,
                    }],
                )
                .map_err(|e| e.to_string())?;
            self.next_tag += 1;
            self.stats.tvht_writes += 1;
            self.report(env, &found, send);
        }
        let rollbacks = self.stats.rollbacks;
        while let Some(m) = inbox() {
            self.handle(env, m, send)?;
        }
        let gvt = env.gvt.gvt();
        let window = env.gvt.window();
        self.reach = if self.stats.rollbacks > rollbacks {
            (self.reach.min(window) / 2).max(1)
        } else {
            self.reach.saturating_mul(2).min(window)
        };
        let ub = (gvt + self.reach).min(env.end);
        if self.lvt() < ub {
            self.step(env, ub, send)?;
        }
        self.record(env)?;
        self.trim(gvt);
        self.stats.lead_sum += self.lvt().saturating_sub(gvt);
        Ok(if self.lvt() < ub {
            Turn::Ready
        } else if self.lvt() < env.end {
            Turn::WaitGvt(gvt)
        } else {
            Turn::WaitMessages
        })
    }

    fn handle(
        &mut self,
        env: &Env<'_>,
        m: Msg,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<(), String> {
        match m {
            Msg::Event(c) => {
                let inst = Instance::of(&c);
                let t = inst.tick;
                let other = inst.other(self.id);
                let live = t >= self.base
                    && t <= self.lvt()
                    && self.tags[self.at(t)] == inst.tag_of(self.id);
                if live {
                    self.contacts.insert((t, other), c);
                    if t < self.lvt() {
                        self.rollback(env, t, send)?;
                    }
                }
                send(other, Msg::EventAck(inst));
            }
            Msg::EventAck(inst) => {
                self.pending.remove(&(inst, Kind::Event));
            }
            Msg::Antievent(inst) => {
                let t = inst.tick;
                let other = inst.other(self.id);
                self.pending.remove(&(inst, Kind::Event));
                let known = self
                    .contacts
                    .get(&(t, other))
                    .is_some_and(|c| Instance::of(c) == inst);
                if known {
                    self.contacts.remove(&(t, other));
                    if t < self.lvt() {
                        self.rollback(env, t, send)?;
                    }
                }
                send(other, Msg::AntieventAck(inst));
            }
            Msg::AntieventAck(inst) => {
                self.pending.remove(&(inst, Kind::Antievent));
            }
        }
        Ok(())
    }

    /// Rolls back to `r < lvt` (Algorithms 4 and 7).
    fn rollback(
        &mut self,
        env: &Env<'_>,
        r: Tick,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<(), String> {
        let lvt = self.lvt();
        debug_assert!(r < lvt && r >= self.base);
        let entries: Vec<[BodyEntry; 1]> = (r + 1..=lvt)
            .map(|t| {
                [BodyEntry {
                    body: self.id,
                    aabb: self.aabbs[self.at(t)],
                    state: self.states[self.at(t)],
                }]
            })
            .collect();
        let steps: Vec<Step<'_>> = entries
            .iter()
            .enumerate()
            .map(|(i, b)| Step {
                tick: r + 1 + i as Tick,
                bodies: b,
            })
            .collect();
        let gone = env
            .tvht
            .delete_steps(self.id, &steps)
            .map_err(|e| format!("rollback of body {} to tick {r}: {e}", self.id))?;
        for c in &gone {
            let inst = Instance::of(c);
            self.pending.remove(&(inst, Kind::Event));
            if env
                .rules
                .in_contact(c.a.body as usize, &c.a.state, c.b.body as usize, &c.b.state)
            {
                let other = inst.other(self.id);
                send(other, Msg::Antievent(inst));
                self.pending.insert((inst, Kind::Antievent));
                self.stats.antievents += 1;
            }
        }
        self.contacts.retain(|&(t, _), _| t <= r);
        if self.recorded > r + 1 {
            env.gvt
                .unrecord_ticks(r + 1..self.recorded, &[self.id])
                .map_err(|e| format!("rollback of body {} to tick {r}: {e}", self.id))?;
            self.recorded = r + 1;
        }
        let keep = self.at(r) + 1;
        self.states.truncate(keep);
        self.tags.truncate(keep);
        self.aabbs.truncate(keep);
        self.stats.rollbacks += 1;
        self.stats.rolled_back_ticks += lvt - r;
        Ok(())
    }

    /// The kicks of this body at `t` (statics and known collisions) from state `s`.
    fn kicks(&self, env: &Env<'_>, t: Tick, s: &BodyState, out: &mut Vec<Kick>) {
        out.clear();
        let me = self.id as usize;
        env.rules.static_kicks(me, s, out);
        for (_, c) in self.contacts.range((t, 0)..=(t, BodyId::MAX)) {
            let other = if c.a.body == self.id { &c.b } else { &c.a };
            if let Some(k) = env
                .rules
                .pair_kick(me, s, other.body as usize, &other.state)
            {
                out.push(k);
            }
        }
    }

    /// Step: compute and write up to `BATCH` ticks towards `ub`.
    fn step(
        &mut self,
        env: &Env<'_>,
        ub: Tick,
        send: &mut dyn FnMut(BodyId, Msg),
    ) -> Result<(), String> {
        let lvt = self.lvt();
        let n = (ub - lvt).min(self.batch);
        let me = self.id as usize;
        let mut kicks = std::mem::take(&mut self.scratch.kicks);
        let mut s = self.states[self.at(lvt)];
        let mut new = std::mem::take(&mut self.scratch.entries);
        new.clear();
        for i in 0..n {
            if i == 0 {
                self.kicks(env, lvt, &s, &mut kicks);
            } else {
                kicks.clear();
                env.rules.static_kicks(me, &s, &mut kicks);
            }
            s = env.rules.advance(&s, &mut kicks);
            if !(s.position.is_finite() && s.velocity.is_finite()) {
                return Err(format!(
                    "body {} has a non-finite state at tick {}",
                    self.id,
                    lvt + 1 + i
                ));
            }
            new.push([BodyEntry {
                body: self.id,
                aabb: env.rules.aabb(me, &s),
                state: s,
            }]);
        }
        let steps: Vec<Step<'_>> = new
            .iter()
            .enumerate()
            .map(|(i, b)| Step {
                tick: lvt + 1 + i as Tick,
                bodies: b,
            })
            .collect();
        let (written, found) = env
            .tvht
            .write_steps_tagged(self.id, self.next_tag, &steps)
            .map_err(|e| e.to_string())?;
        for (i, b) in new.iter().take(written).enumerate() {
            self.states.push_back(b[0].state);
            self.aabbs.push_back(b[0].aabb);
            self.tags.push_back(self.next_tag + i as u64);
        }
        self.next_tag += n;
        self.stats.tvht_writes += written as u64;
        self.batch = if (written as u64) < n {
            (written as u64).max(1)
        } else {
            (self.batch * 2).min(BATCH)
        };
        self.scratch.kicks = kicks;
        self.scratch.entries = new;
        self.report(env, &found, send);
        Ok(())
    }

    /// Turns the contacts a write found into events.
    fn report(&mut self, env: &Env<'_>, found: &[Contact], send: &mut dyn FnMut(BodyId, Msg)) {
        for c in found {
            if !env
                .rules
                .in_contact(c.a.body as usize, &c.a.state, c.b.body as usize, &c.b.state)
            {
                continue;
            }
            let inst = Instance::of(c);
            let other = inst.other(self.id);
            self.contacts.insert((inst.tick, other), *c);
            self.pending.insert((inst, Kind::Event));
            send(other, Msg::Event(*c));
            self.stats.events += 1;
        }
    }

    /// Records the ticks whose state is final as far as this entity knows.
    fn record(&mut self, env: &Env<'_>) -> Result<(), String> {
        let mut lim = self.lvt().min(env.end);
        // BROKEN ON PURPOSE in a test-only `cfg(timewarp_broken)` build with
        // `TIMEWARP_BROKEN=record_before_ack` (a loom negative control, see `sync::broken`):
        // ticks are recorded without waiting for the acks of the messages sent at them (no
        // resolve), so a tick can commit with the state of a body that has not yet rolled
        // back for an event at an earlier tick.
        #[cfg(timewarp_broken)]
        let pending = if crate::sync::broken("record_before_ack") {
            None
        } else {
            self.pending.first()
        };
        #[cfg(not(timewarp_broken))]
        let pending = self.pending.first();
        if let Some((first, _)) = pending {
            if first.tick == 0 {
                return Ok(());
            }
            lim = lim.min(first.tick - 1);
        }
        if self.recorded > lim {
            return Ok(());
        }
        let first = self.recorded;
        let mut records = std::mem::take(&mut self.scratch.records);
        records.clear();
        records.extend((first..=lim).map(|t| [(self.id, self.states[self.at(t)])]));
        let ticks: Vec<&[(BodyId, BodyState)]> = records.iter().map(|r| &r[..]).collect();
        let recorded = env
            .gvt
            .record_ticks(first, &ticks)
            .map_err(|e| format!("body {} records ticks {first}..={lim}: {e}", self.id));
        drop(ticks);
        self.scratch.records = records;
        recorded?;
        self.recorded = lim + 1;
        Ok(())
    }

    /// Forgets what is older than GVT - 1 (final and never read again).
    fn trim(&mut self, gvt: Tick) {
        while self.base + 1 < gvt && self.base < self.lvt() {
            self.states.pop_front();
            self.tags.pop_front();
            self.aabbs.pop_front();
            self.base += 1;
        }
        let base = self.base;
        while self
            .contacts
            .first_key_value()
            .is_some_and(|(&(t, _), _)| t < base)
        {
            self.contacts.pop_first();
        }
    }
}
