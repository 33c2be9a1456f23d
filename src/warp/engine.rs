//! # The warp engine: entities as soft-threads on a work-stealing pool
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Section 5: "instead of being scheduled directly by
//! the operating system each entity places tasks on one of several task queues, one per core",
//! each served by one worker thread. Here every dynamic body is an [`Entity`] with a mailbox
//! (a lock-free `crossbeam` queue) and a `scheduled` flag; `T` workers each own a
//! `crossbeam-deque` deque and steal from the others and from the global injector when theirs
//! is empty, half a queue at a time. A task is one turn of an entity ([`Entity::run`]): it
//! reads the mailbox, steps, records, and returns at once. No worker ever waits for an entity:
//!
//! * a message is pushed to the receiver's mailbox, and the receiver is scheduled (pushed on
//!   the sender's worker's deque) unless its flag says it already is;
//! * the deques are FIFO: with LIFO deques a few entities exchanging events and antievents
//!   far ahead of the GVT kept re-pushing themselves on top and starved the entity holding
//!   the GVT back (measured: cylinders with 200 bodies stalled with the GVT stuck while
//!   speculative events grew without end); FIFO gives every scheduled entity its turn;
//! * after a turn the flag is cleared, then the entity is scheduled again if it can step
//!   further or its mailbox is not empty (the check after clearing the flag closes the race
//!   with a sender that saw the flag still set);
//! * an entity at `LVT_ub` parks until the GVT reaches a tick it names (`Turn::WaitGvt`:
//!   when its lead over the GVT has fallen to half its reach), in a heap ordered by that tick;
//!   whoever sees the GVT advance wakes those whose tick it reached; an entity that parks
//!   re-checks the GVT after parking, so no advance is missed;
//! * an entity that waits for acks is simply not scheduled: the ack's arrival schedules it;
//! * a worker that finds no task spins and yields a little (crossbeam's `Backoff`), then
//!   sleeps on its `Parker` until a push wakes it (or a millisecond passes): idle workers
//!   leave the cores to the busy ones, which matters most when threads outnumber cores;
//! * `LVT_ub` is `GVT + lead`, the run's [`super::lead`], at most the window: a worker about
//!   to sleep for want of a task doubles it (at most once per lead of GVT) if the workers
//!   were idle for more than 5% of their time over the last 64 ticks of GVT, and it halves
//!   again once the GVT has gone 128 ticks with no such worker (`--full-window`: the window
//!   itself, as in the paper).
//!
//! **Contact groups** ([`WarpConfig::groups`], seed 001, Section 4.4). Each entity lives in the
//! slot of its smallest body; with groups the other bodies' slots are empty. Messages are
//! addressed to bodies and go to the mailbox of the slot that holds the body now (`owner`); a
//! message that reaches an entity that no longer holds its body (sent just before a change) is
//! passed on. A group whose step meets a change at its LVT `t` waits there. Right after its
//! turn the worker tries to make the change speculatively (see "Speculative changes" in
//! [`super::entity`]): under the `changes` lock it takes the group and, transitively, those it
//! fuses with at `t`, locks their slots (only turns hold slot locks, and a turn never waits for
//! a lock, so this cannot deadlock), and if every one is ready, replaces them by the new groups
//! ([`Entity::regroup`]), records the change in the island graph ([`GroupGraph`]), puts the
//! parents in the graveyard, moves the waiting mail and schedules the new groups. Otherwise the
//! group announces `t`; once `t` is committed one worker at a time (`regroup_committed`) makes
//! the change the same way, final. The GVT cannot pass `t + 1` before that, since the waiting
//! groups have not recorded it. A speculative change that a message proves wrong is undone
//! (`Shared::undo`): the island graph rolls back, the groups born since take back what they
//! did, and the parents come back from the graveyard into their slots. Parents stay there
//! until the GVT passes the tick they ended at.
//!
//! The run ends when the GVT passes the last tick. The calling thread drains committed frames
//! from the GVT buffer ([`GvtBuffer::drain_committed`]) as they come and hands them to the
//! output. The workers sweep the TVHT behind the GVT (`Shared::sweep`): after each turn, a
//! worker that sees the GVT moved since the last sweep claims the ticks in between and sweeps
//! their share of the buckets. (The calling thread did this before, between frames; with 64
//! workers on 2 cores it got a 65th of the processors, the sweep fell behind the GVT by
//! seconds, and the table held up to twice the entries it needs: `bouncing` 2000, 64 workers,
//! live heap 0.77-1.23 GB against 0.53 GB with 2 workers.) A sweep looks only at the buckets
//! that writes and naps noted in the TVHT's ledger under the slices the GVT passed: sweeping
//! the whole table round robin once per window looked mostly at empty buckets (5-7% of the
//! time of a run) and left entries up to a window behind the GVT; once per two leads of 32
//! ticks it took a third less memory on `parallel` 2000, but a quarter of the time of
//! `pyramids` 1100 (10 s, one worker) went to empty buckets.
//!
//! **Chaos.** A test-only mode ([`WarpConfig::chaos`]) perturbs the schedule from a seed: random
//! yields and sleeps before turns and after their tails (when the entity may already be running
//! elsewhere), random spins between pushing a message and scheduling its receiver, and tasks
//! deferred to the global queue. The determinism tests run it over many
//! seeds: the committed frames must not change.
//!
//! **Determinism.** Which worker runs which turn, and in what order messages arrive, changes
//! only the speculation, never a committed state: a committed state at `k + 1` is the rule of
//! [`super::rules`] applied to the final state at `k` and the contacts at `k`, which are a
//! function of the final states at `k` (see [`super::entity`] for why a committed tick is
//! final). So the frames are bit-identical for any thread count, backend and window; the
//! tests compare them with the sequential [`super::reference`].

use super::entity::{Entity, EntityStats, Env, PendingMsg, Scratch, Turn};
use super::group_rules::{Island, contact_candidates, initial_islands};
use super::island_log::IslandLog;
use super::lead::{Lead, LeadStats};
use super::message::Msg;
use super::profile::{NO_TASK, Parallelism, Profiler, TaskId};
use super::rules::{Anchor, Rules};
use super::tvht::DEFAULT_SPAN_TICKS;
use super::{
    Announcements, BodyId, EntityId, GroupGraph, GroupId, GvtBuffer, GvtConfig, Tick, Tvht,
    TvhtConfig,
};
use crate::dynamics::BodyState;
use crate::scene::{Scene, SplitMix64};
use crate::sync::Backend;
use crossbeam::queue::SegQueue;
use crossbeam::sync::{Parker, Unparker};
use crossbeam::utils::Backoff;
use crossbeam_deque::{Injector, Stealer, Worker};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

/// Settings of a warp run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpConfig {
    /// Worker threads (at least 1).
    pub threads: usize,
    pub backend: Backend,
    /// `LVT_ub - GVT` in ticks; `None` takes the scene's `world.window`.
    pub window: Option<u64>,
    /// Whether entities may speculate as far as the window at all times (the paper's fixed
    /// window), rather than as far as the run's adaptive lead ([`super::lead`]: from
    /// 32 or 64 ticks, as rollbacks are frequent or rare, longer while workers starve). Frames
    /// are the same either way; only speed and memory differ.
    pub full_window: bool,
    /// Test-only schedule perturbation (see "Chaos" in the module documentation): `Some(seed)`
    /// makes every worker, from a random stream seeded by `seed` and its index, yield, sleep,
    /// spin between sending a message and scheduling its receiver, and defer tasks to the
    /// global queue at random. Committed frames must not change; only speed does.
    pub chaos: Option<u64>,
    /// Contact groups (seed 001, Section 4.4): bodies in slow, lasting contact are one entity,
    /// an island stepped by the island solver, that fuses, splits and sleeps by the rules of
    /// [`super::group_rules`]; the frames equal [`super::reference::grouped_reference`]. Off:
    /// every body is an entity of its own, by the rules of [`super::rules`].
    pub groups: bool,
    /// The TVHT's time slice in ticks (a power of two; `None`:
    /// [`super::tvht::DEFAULT_SPAN_TICKS`]). Frames are the same for any; only speed and
    /// contention differ.
    pub tvht_span: Option<u64>,
    /// The longest span in ticks a body flies as one TVHT record (see "Spans" in
    /// [`super::entity`]; `None`: as far as the window past the GVT, `Some(0)`: every tick written on
    /// its own). Frames are the same for any; only speed differs.
    pub max_span: Option<u64>,
    /// With contact groups: whether a group may fall asleep ([`Rules::sleep`], `--sleep`).
    /// Off, no group ever sleeps or naps; the frames equal the grouped reference's with
    /// sleep off. Without contact groups nothing sleeps either way.
    pub sleep: bool,
    /// With contact groups: the island solver's substep in ticks ([`Rules::group_substep`],
    /// `--group-substep`; rule 4 of [`super::group_rules`]). Committed frames depend on it; the
    /// grouped reference with the same substep is what they equal.
    pub group_substep: u64,
    /// Anchor cells per body in the GVT buffer, at least 2 (its "Reuse"; `None`:
    /// [`MAX_POSITIONS`](super::gvt::MAX_POSITIONS)). Fewer make entities wait for the GVT word
    /// before they record pieces further ahead; frames are the same for any.
    pub anchor_cells: Option<usize>,
}

impl Default for WarpConfig {
    /// All cores, the default backend, the scene's window, no chaos.
    fn default() -> Self {
        WarpConfig {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            backend: Backend::default(),
            window: None,
            full_window: false,
            chaos: None,
            groups: false,
            tvht_span: None,
            max_span: None,
            sleep: true,
            group_substep: super::group_rules::GROUP_SUBSTEP,
            anchor_cells: None,
        }
    }
}

/// A worker's source of schedule perturbations ([`WarpConfig::chaos`]).
struct Chaos(Option<std::cell::RefCell<SplitMix64>>);

impl Chaos {
    fn new(seed: Option<u64>, worker: usize) -> Chaos {
        Chaos(seed.map(|s| {
            std::cell::RefCell::new(SplitMix64::new(
                s ^ (worker as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ))
        }))
    }

    /// A random number below `n`, or `None` without chaos.
    fn roll(&self, n: u64) -> Option<u64> {
        Some(self.0.as_ref()?.borrow_mut().next_u64() % n)
    }

    /// Before a turn and after its tail: sometimes yield the thread, sometimes sleep up to
    /// 50 µs.
    fn pause(&self) {
        match self.roll(16) {
            Some(0..=3) => std::thread::yield_now(),
            Some(4) => {
                let us = self.roll(50).unwrap_or(0);
                std::thread::sleep(Duration::from_micros(us));
            }
            _ => {}
        }
    }

    /// Whether to push a found task back to the global queue instead of running it now.
    fn defer(&self) -> bool {
        self.roll(8) == Some(0)
    }

    /// Between a message's push and its receiver's scheduling: sometimes spin a while, which
    /// widens the window in which the receiver may run, finish and clear its flag.
    fn after_send(&self) {
        if let Some(0) = self.roll(4) {
            for _ in 0..self.roll(200).unwrap_or(0) {
                std::hint::spin_loop();
            }
        }
    }
}

/// What a warp run did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WarpStats {
    /// The entities' counters, summed over the run: collision events sent, antievents,
    /// rollbacks and the ticks they took back, entity-ticks written into the TVHT, turns run,
    /// `LVT - GVT` summed at the end of turns ([`WarpStats::mean_lead`]), and with contact
    /// groups the group-ticks stepped asleep and the naps (see below).
    pub entities: EntityStats,
    /// Critical sections (TVHT, GVT buffer, contact groups) and their attempts (STM re-runs).
    pub sections: u64,
    pub attempts: u64,
    /// The same, and keys, split by the structure the sections ran on: where the re-runs were.
    pub by_class: crate::sync::ByClass,
    /// STM commits and aborts of the run (None for the lock backend).
    pub stm_commits: Option<u64>,
    pub stm_aborts: Option<u64>,
    /// The task DAG's work and span, when the run was profiled ([`WarpControl::profile`]).
    pub parallelism: Option<Parallelism>,
    /// The run stopped at [`WarpControl::deadline`] before the end tick was committed.
    pub time_limited: bool,
    /// Whether the run had contact groups ([`WarpConfig::groups`]).
    pub groups: bool,
    /// Contact groups: group changes made (those that stood; see [`super::entity`]),
    /// fusions and fissions among them, and the groups asleep at the end. (The group-ticks
    /// stepped asleep, the naps, sleep-record writes, and the naps cut by rollbacks are the
    /// entities' counters.)
    pub group_changes: u64,
    pub fusions: u64,
    pub fissions: u64,
    pub sleeping_groups: u64,
    /// Rollbacks across group changes: speculative changes undone because a message reached
    /// one of their groups at or before its birth (each may undo several changes made since;
    /// the changes counted above are those that stood).
    pub rollbacks_across_changes: u64,
    /// The fusions and fissions they undid.
    pub fusions_undone: u64,
    pub fissions_undone: u64,
    /// Of the changes counted above, those made before their tick was committed.
    pub speculative_changes: u64,
    /// Seconds spent on island management: making the group changes (closure, new entities,
    /// the island graph, mail) and pruning the island graph.
    pub island_seconds: f64,
    /// The window, and how the lead under it moved ([`super::lead`]).
    pub window: u64,
    pub lead: LeadStats,
    /// Refinements of span records to the tick ([`Tvht::refinements`]), and those that found a
    /// contact.
    pub refinements: u64,
    pub refinements_met: u64,
}

impl WarpStats {
    /// Mean `LVT - GVT` seen at the end of a turn, in ticks (0 without turns).
    pub fn mean_lead(&self) -> f64 {
        let e = &self.entities;
        if e.turns == 0 {
            0.0
        } else {
            e.lead_sum as f64 / e.turns as f64
        }
    }
}

/// Optional controls of a warp run (the default: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarpControl {
    /// Record every task for the parallelism estimate of [`super::profile`]
    /// ([`WarpStats::parallelism`]); each turn then costs two clock reads and a record.
    pub profile: bool,
    /// Stop once this instant has passed: the frames committed by then have been handed out,
    /// and the stats say [`WarpStats::time_limited`].
    pub deadline: Option<Instant>,
    /// With contact groups: hand out the islands of the groups alive at the last tick and at
    /// every tick that is a multiple of this many ticks (0: the last tick only) with their
    /// frames, for checkpoints ([`super::island_log`]). `None`: no islands.
    pub islands_every: Option<u64>,
}

/// What the group changes made.
#[derive(Default)]
struct Changes {
    made: u64,
    fusions: u64,
    fissions: u64,
    /// Speculative changes undone (rollbacks across group changes).
    undone: u64,
    /// Fusions and fissions undone.
    fusions_undone: u64,
    fissions_undone: u64,
    /// Speculative changes made and not undone (counted in `made` too).
    speculative: u64,
    /// The serial number of the last speculative change.
    serial: u64,
    /// Whether the island graph changed since it was last pruned.
    unpruned: bool,
    /// Time spent making changes and pruning the island graph.
    spent: Duration,
}

/// Shared by the workers.
struct Shared<'a> {
    env: Env<'a>,
    /// One slot per body: the entity whose smallest body it is, if any (with contact groups
    /// the other bodies' slots are empty).
    entities: Vec<Mutex<Option<Entity>>>,
    /// The slot of the entity that holds each body now (messages are addressed to bodies).
    owner: Vec<AtomicU32>,
    /// Messages, each with the id of the task that sent it (for the profiler) and the body it
    /// is addressed to.
    mailboxes: Vec<SegQueue<(TaskId, BodyId, Msg)>>,
    /// Group changes announced by turns, made once their tick is committed.
    announced: Announcements,
    changes: Mutex<Changes>,
    /// The island graph (contact groups only).
    graph: Option<GroupGraph>,
    /// Counters of entities that ended (their groups changed).
    retired: Mutex<EntityStats>,
    scheduled: Vec<AtomicBool>,
    injector: Injector<BodyId>,
    stealers: Vec<Stealer<BodyId>>,
    /// Entities parked until the GVT reaches a tick: (tick, entity), earliest first.
    parked: Mutex<BinaryHeap<Reverse<(Tick, BodyId)>>>,
    stop: AtomicBool,
    error: Mutex<Option<String>>,
    gvt_seen: AtomicU64,
    /// The TVHT has been swept up to this tick (its floor); see `sweep`.
    swept_to: AtomicU64,
    /// Idle workers asleep (see `idle`): how many, which, and how to wake each.
    sleepers: AtomicUsize,
    asleep: Vec<AtomicBool>,
    unparkers: Vec<Unparker>,
    /// Task records for the parallelism estimate (`None`: not profiled, nothing recorded).
    profile: Option<Profiler>,
    /// Groups that ended in a speculative change, by id: kept until the GVT passes the tick
    /// they ended at, in case the change is undone.
    graveyard: Mutex<BTreeMap<GroupId, Buried>>,
}

/// A group that ended in a speculative change, kept in case the change is undone.
struct Buried {
    /// The tick it ended at (the change's).
    end: Tick,
    entity: Entity,
    /// The change it ended in: a serial number (shared by the change's parents), and what
    /// it counted.
    change: u64,
    counted: Counted,
}

/// The changes, fusions and fissions one group change counted (as the grouped reference
/// reports them: several independent changes may be made at one tick in one go).
#[derive(Clone, Copy)]
struct Counted {
    changes: u64,
    fusions: u64,
    fissions: u64,
}

/// Locks `m`, whether or not a thread panicked holding it (a panic stops the run anyway).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The lock if it is free (`None` if another thread holds it).
fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// What [`Shared::regroup_at`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Regroup {
    /// The change was made.
    Made,
    /// No change is due (or, before its tick is committed, not every group of it is ready).
    NotMade,
    /// At a committed tick: an entity of the change is in a turn; nothing was touched, ask
    /// again.
    Busy,
}

/// An idle worker sleeps at most this long before it looks for work again (a safety net: a
/// task pushed while it was falling asleep wakes it at once, see `Shared::idle`).
const IDLE_NAP: Duration = Duration::from_millis(1);

impl Shared<'_> {
    fn schedule(&self, id: BodyId, local: &Worker<BodyId>) {
        if !self.scheduled[id as usize].swap(true, Ordering::SeqCst) {
            local.push(id);
            self.notify();
        }
    }

    /// After a push: wakes one sleeping worker, if any. The fence pairs with the one in
    /// `idle`: either the pusher sees the sleeper's count, or the sleeper sees the task.
    fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) == 0 {
            return;
        }
        for (i, a) in self.asleep.iter().enumerate() {
            if a.swap(false, Ordering::SeqCst) {
                self.unparkers[i].unpark();
                return;
            }
        }
    }

    /// Whether any queue holds a task (for a worker about to sleep).
    fn any_task(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    /// An idle worker, after spinning and yielding a while, sleeps until a task is pushed (or
    /// `IDLE_NAP` passes). Without this, idle workers spun on their cores: with 32 workers on 2
    /// cores they took the CPU from the few that had work.
    fn idle(&self, me: usize, parker: &Parker) {
        self.asleep[me].store(true, Ordering::SeqCst);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !self.any_task() && !self.done() {
            parker.park_timeout(IDLE_NAP);
        }
        self.asleep[me].store(false, Ordering::SeqCst);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// The next task: the worker's own, else a batch taken from the global queue or from
    /// another worker (about half of its deque: whoever wakes the parked entities as the GVT
    /// moves pushes them all on its own deque, and stealing them one at a time made the
    /// workers take turns at that deque's end and pass the entities back and forth; in
    /// batches, 2-worker runs took 9-17% less wall time here with locks, 5% with the STM).
    fn find_task(&self, local: &Worker<BodyId>, me: usize) -> Option<BodyId> {
        if let Some(t) = local.pop() {
            return Some(t);
        }
        loop {
            let mut retry = false;
            match self.injector.steal_batch_and_pop(local) {
                crossbeam_deque::Steal::Success(t) => return Some(t),
                crossbeam_deque::Steal::Retry => retry = true,
                crossbeam_deque::Steal::Empty => {}
            }
            let n = self.stealers.len();
            for k in 1..n {
                match self.stealers[(me + k) % n].steal_batch_and_pop(local) {
                    crossbeam_deque::Steal::Success(t) => return Some(t),
                    crossbeam_deque::Steal::Retry => retry = true,
                    crossbeam_deque::Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    fn fail(&self, e: String) {
        let mut slot = lock(&self.error);
        slot.get_or_insert(e);
        self.stop.store(true, Ordering::SeqCst);
    }

    fn done(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.env.gvt.gvt() > self.env.end
    }

    /// Sweeps the TVHT behind the GVT, if it moved since anyone last looked: the buckets its
    /// ledger noted under the time slices the GVT has passed ([`Tvht::prune_touched`]; each
    /// slice is swept by one worker, whichever claims it), so the work is shared by whichever
    /// workers run, in step with the GVT.
    fn sweep(&self) {
        let target = self.env.gvt.gvt().saturating_sub(1);
        if self.swept_to.fetch_max(target, Ordering::AcqRel) < target {
            self.env.tvht.prune_touched(target);
        }
    }

    /// Wakes the parked entities whose tick the GVT reached, if it moved since anyone last
    /// looked.
    fn wake_parked(&self, local: &Worker<BodyId>) {
        let g = self.env.gvt.gvt();
        if self.gvt_seen.fetch_max(g, Ordering::SeqCst) < g {
            self.env.lead.settle(g);
            let mut woken = Vec::new();
            {
                let mut parked = lock(&self.parked);
                while let Some(&Reverse((at, id))) = parked.peek() {
                    if at > g {
                        break;
                    }
                    parked.pop();
                    woken.push(id);
                }
            }
            for id in woken {
                self.schedule(id, local);
            }
        }
    }

    fn turn(
        &self,
        id: BodyId,
        (local, scratch): (&Worker<BodyId>, &mut Scratch),
        me: usize,
        chaos: &Chaos,
    ) {
        let task = self.turn_with(id, (local, scratch), chaos);
        // The turn's tail (rescheduling, waking parked entities, group changes) is over; the
        // entity may already be running elsewhere. Chaos widens that window, where the
        // profiler's records once crossed (see [`Profiler::begin`]).
        chaos.pause();
        if let (Some(profile), Some(task)) = (&self.profile, task) {
            profile.end(task, me, self.env.gvt.gvt());
        }
    }

    /// One turn; returns its task record when the run is profiled.
    fn turn_with(
        &self,
        id: BodyId,
        (local, scratch): (&Worker<BodyId>, &mut Scratch),
        chaos: &Chaos,
    ) -> Option<super::profile::Open> {
        let i = id as usize;
        let result = {
            let mut slot = lock(&self.entities[i]);
            // The task is opened under the entity's lock (see [`Profiler::begin`]).
            let mut task = self
                .profile
                .as_ref()
                .map(|p| p.begin(id, self.env.gvt.gvt()));
            let me = task.as_ref().map_or(NO_TASK, |t| t.id);
            let mailbox = &self.mailboxes[i];
            let Some(e) = slot.as_mut() else {
                // An empty slot (its body is in a group): pass its mail on.
                drop(slot);
                self.scheduled[i].store(false, Ordering::SeqCst);
                while let Some((from, to, m)) = mailbox.pop() {
                    self.post(from, to, m, local, chaos);
                }
                if !mailbox.is_empty() {
                    self.schedule(id, local);
                }
                return task;
            };
            // Mail for a body this entity no longer holds (sent before its group changed)
            // goes on to the body's entity now.
            let mut mail = Vec::new();
            while let Some((from, to, m)) = mailbox.pop() {
                if e.holds(to) {
                    mail.push((from, to, m));
                } else {
                    self.post(from, to, m, local, chaos);
                }
            }
            let mut mail = mail.into_iter();
            let mut deps = task.as_mut().map(|t| &mut t.deps);
            let result = e.run(
                &self.env,
                scratch,
                &mut || {
                    let (from, to, m) = mail.next()?;
                    if let Some(d) = deps.as_mut() {
                        d.push(from);
                    }
                    Some((to, m))
                },
                &mut |to, m| self.post(me, to, m, local, chaos),
            );
            if let (Some(p), Some(t), Ok(Turn::WaitGvt(at))) = (&self.profile, &task, &result) {
                p.park(t, *at);
            }
            // A change whose groups have all recorded its tick is made at once, below (see
            // "Speculative changes"); any other waits for its tick to be committed.
            let now = e.speculative_change(self.env.gvt.gvt());
            if let (Some(t), None) = (e.ending(), now) {
                self.announced.announce(t, e.bodies()[0]);
            }
            (result, now, task)
        };
        let (result, change_now, task) = result;
        self.scheduled[i].store(false, Ordering::SeqCst);
        match result {
            Err(e) => self.fail(e),
            Ok(Turn::Ready) => self.schedule(id, local),
            Ok(Turn::WaitGvt(at)) => {
                lock(&self.parked).push(Reverse((at, id)));
                if self.env.gvt.gvt() >= at {
                    self.schedule(id, local);
                }
            }
            Ok(Turn::WaitMessages) => {}
            Ok(Turn::Undo(_)) => {
                if let Err(e) = self.undo(id, local) {
                    self.fail(e);
                }
            }
        }
        if let Some(t) = change_now {
            let mut changes = lock(&self.changes);
            let started = Instant::now();
            let made = self.regroup_at(t, BTreeSet::from([id]), &mut changes, local, true);
            changes.spent += started.elapsed();
            drop(changes);
            match made {
                Err(e) => self.fail(e),
                // A group it fuses with is not ready yet: it is made when the last one is,
                // or at the committed tick.
                Ok(Regroup::NotMade | Regroup::Busy) => self.announced.announce(t, id),
                Ok(Regroup::Made) => {}
            }
        }
        if !self.mailboxes[i].is_empty() {
            self.schedule(id, local);
        }
        self.wake_parked(local);
        self.regroup_committed(local);
        task
    }

    /// Undoes the speculative change that made the entity in slot `id`, which got a message
    /// at or before its birth ([`Turn::Undo`]): the island graph rolls its group back to the
    /// tick before its birth ([`GroupGraph::rollback`]), which deletes it and every group born
    /// of its parents' changes since, and revives its parents and the other parents of those
    /// changes. The deleted entities take back all they did after their birth; the revived ones
    /// (kept in the graveyard) take their slots, each with the messages sent from its bodies
    /// that still wait for acks, and go on from the tick they ended at; the messages the
    /// deleted ones held back go to them as well.
    fn undo(&self, id: BodyId, local: &Worker<BodyId>) -> Result<(), String> {
        let graph = self
            .graph
            .as_ref()
            .ok_or("a group change undone without contact groups")?;
        let mut changes = lock(&self.changes);
        let started = Instant::now();
        let mut held: BTreeMap<EntityId, MutexGuard<'_, Option<Entity>>> = BTreeMap::new();
        let slot = lock(&self.entities[id as usize]);
        // Another worker may have undone it already (a sibling's message, an extra turn).
        let Some(gid) = slot
            .as_ref()
            .filter(|e| e.undo_pending())
            .map(Entity::group_id)
        else {
            return Ok(());
        };
        held.insert(id, slot);
        let undo = graph
            .rollback(gid, gid.birth - 1)
            .map_err(|e| format!("undoing the change that made {gid}: {e}"))?;
        let none = Chaos(None);
        let mut send = |to: BodyId, m: Msg| self.post(NO_TASK, to, m, local, &none);
        let mut grave = lock(&self.graveyard);
        let mut undone_changes: BTreeMap<u64, Counted> = BTreeMap::new();
        let mut bury = |b: &Buried| undone_changes.insert(b.change, b.counted);
        // The groups live again: every one ended in a speculative change, still buried.
        let mut revived = Vec::new();
        for g in undo
            .rolled_back
            .iter()
            .chain(undo.resumed.iter().map(|(g, _)| g))
        {
            let Some(b) = grave.remove(g) else {
                return Err(format!(
                    "undoing the change that made {gid}: group {g}, to live again, is not in \
                     the graveyard"
                ));
            };
            bury(&b);
            revived.push(b.entity);
        }
        // The deleted groups: live ones from their slots, ended ones from the graveyard.
        let mut pending = Vec::new();
        let mut stash = Vec::new();
        let mut next_tag = 0;
        let mut stats = EntityStats::default();
        // Newest first: a body's GVT records are a prefix of the ticks, so the groups it was
        // in take theirs back from the last one, each a suffix (see `gvt`).
        let mut deleted = undo.deleted.clone();
        deleted.sort_by_key(|d| std::cmp::Reverse(d.birth));
        for d in &deleted {
            let (e, ended) = match grave.remove(d) {
                Some(b) => {
                    bury(&b);
                    (b.entity, true)
                }
                None => {
                    let slot = held
                        .entry(d.rep)
                        .or_insert_with(|| lock(&self.entities[d.rep as usize]));
                    match slot.take() {
                        Some(e) if e.group_id() == *d => (e, false),
                        other => {
                            **slot = other;
                            return Err(format!(
                                "undoing the change that made {gid}: group {d} is not in its slot"
                            ));
                        }
                    }
                }
            };
            let gone = e.undone(&self.env, ended, &mut send)?;
            pending.extend(gone.pending);
            stash.extend(gone.stash);
            next_tag = next_tag.max(gone.next_tag);
            if !ended {
                stats.add(&gone.stats);
            }
        }
        drop(grave);
        lock(&self.retired).add(&stats);
        // Each message waiting for its ack goes to the revived group holding its sender.
        let mut theirs: Vec<Vec<PendingMsg>> = vec![Vec::new(); revived.len()];
        for p in pending {
            let Some(k) = revived.iter().position(|e| e.holds(p.2)) else {
                return Err(format!(
                    "undoing the change that made {gid}: no group lives again with body {}",
                    p.2
                ));
            };
            theirs[k].push(p);
        }
        let mut placed = Vec::with_capacity(revived.len());
        for (mut e, pending) in revived.into_iter().zip(theirs) {
            e.revive(&pending, next_tag);
            placed.push(
                self.place(&mut held, e)
                    .map_err(|e| format!("undoing the change that made {gid}: {e}"))?,
            );
        }
        // The held-back messages first, then whatever waits in the slots that changed.
        let stash = stash.into_iter().map(|(to, m)| (NO_TASK, to, m)).collect();
        self.hand_over(held, stash, placed, local);
        for c in undone_changes.into_values() {
            changes.made -= c.changes;
            changes.fusions -= c.fusions;
            changes.fissions -= c.fissions;
            changes.speculative -= c.changes;
            changes.fusions_undone += c.fusions;
            changes.fissions_undone += c.fissions;
        }
        changes.undone += 1;
        changes.unpruned = true;
        changes.spent += started.elapsed();
        Ok(())
    }

    /// Sends `m` from task `from` to body `to`: into the mailbox of the entity holding it.
    fn post(&self, from: TaskId, to: BodyId, m: Msg, local: &Worker<BodyId>, chaos: &Chaos) {
        let slot = self.owner[to as usize].load(Ordering::SeqCst);
        self.mailboxes[slot as usize].push((from, to, m));
        chaos.after_send();
        self.schedule(slot, local);
    }

    /// Makes the group changes whose tick is committed (contact groups; see "Ending" in
    /// [`super::entity`] and [`super::announcements`]). One worker at a time does it; the
    /// others go on. A change one of whose entities is in a turn is asked again, without the
    /// change lock in between, until that turn is over (turns are short, and never wait for
    /// the maker).
    fn regroup_committed(&self, local: &Worker<BodyId>) {
        let gvt = self.env.gvt.gvt();
        let made = self.announced.make_committed(gvt, |t, ids| {
            loop {
                let mut changes = lock(&self.changes);
                let started = Instant::now();
                let made = self.regroup_at(t, ids.clone(), &mut changes, local, false);
                changes.spent += started.elapsed();
                drop(changes);
                match made {
                    Ok(Regroup::Busy) => std::thread::yield_now(),
                    other => break other.map(|_| ()),
                }
            }
        });
        if let Err(e) = made {
            self.fail(e);
        }
    }

    /// The group change at tick `t`: the entities `ids` ask for it; those that fuse with them
    /// there join it (transitively). At a committed tick (`speculative` false) they announced
    /// it. `speculative`: the one entity `ids` names asks before `t` is committed; the change is
    /// made only if every group of it is ready ([`Entity::ready_to_change`]), and the parents go
    /// to the graveyard. Returns what it did ([`Regroup`]).
    fn regroup_at(
        &self,
        t: Tick,
        ids: BTreeSet<EntityId>,
        changes: &mut Changes,
        local: &Worker<BodyId>,
        speculative: bool,
    ) -> Result<Regroup, String> {
        let rules = self.env.rules;
        let mut held: BTreeMap<EntityId, MutexGuard<'_, Option<Entity>>> = BTreeMap::new();
        // (entity, the body of a group fusing with it at `t` that led here, if any)
        let mut todo: Vec<(EntityId, Option<BodyId>)> =
            ids.into_iter().map(|i| (i, None)).collect();
        let mut parents = Vec::new();
        while let Some((id, via)) = todo.pop() {
            if held.contains_key(&id) {
                continue;
            }
            // A slot in a turn is never waited for here, with the change lock held. Before `t`
            // is committed, its group asks itself after its turn if it is ready then; at a
            // committed tick the change is `Busy`: nothing has been touched, and the maker
            // lets the change lock go before it asks again (`regroup_committed`). (It used to
            // wait here, and every worker with a speculative change to make then waited for
            // the change lock behind it: `avalanche` 300 on 16 cores counted 80% of its wall
            // time as island management, nearly all of it that wait.)
            let Some(slot) = try_lock(&self.entities[id as usize]) else {
                return Ok(if speculative {
                    Regroup::NotMade
                } else {
                    Regroup::Busy
                });
            };
            // At LVT `t` and born before it: a group never changes at its birth tick. (A group
            // that announced `t` and then split there speculatively leaves its announcement
            // behind; its slot may hold a child born at `t` by then, which is not asked.)
            // Before `t` is committed, it must also have recorded `t`, as every group of the
            // change must; if one has not, the change is not made now.
            let asked = slot.as_ref().is_some_and(|e| {
                if speculative {
                    e.ready_to_change(t)
                } else {
                    e.lvt() == t && e.group_id().birth < t
                }
            });
            if speculative && !asked {
                return Ok(Regroup::NotMade);
            }
            let joins = match slot.as_ref() {
                Some(e) if asked => {
                    let (change, partners) = e.change_at_lvt(rules);
                    for b in partners {
                        todo.push((self.owner[b as usize].load(Ordering::SeqCst), Some(b)));
                    }
                    change
                }
                // Announced, then changed its mind (or already regrouped).
                _ if via.is_none() => false,
                // A fusion at a committed tick is seen by both groups (every event at `t` is
                // acknowledged, so the partner rolled back to `t` and stopped there): a partner
                // elsewhere means the protocol broke, and the change would be made half.
                other => {
                    return Err(format!(
                        "group change at tick {t}: body {} fuses there, but its entity {id} is \
                         {}",
                        via.unwrap_or_default(),
                        other.map_or("gone".to_string(), |e| format!(
                            "at LVT {}, born at {}",
                            e.lvt(),
                            e.group_id().birth
                        ))
                    ));
                }
            };
            if joins {
                parents.push(id);
            }
            held.insert(id, slot);
        }
        if parents.is_empty() {
            return Ok(Regroup::NotMade);
        }
        let mut ended = Vec::with_capacity(parents.len());
        let mut stats = EntityStats::default();
        for id in &parents {
            let e = held
                .get_mut(id)
                .and_then(|s| s.take())
                .expect("a parent is held");
            stats.add(&e.stats);
            ended.push(e);
        }
        lock(&self.retired).add(&stats);
        let parent_ids: Vec<_> = ended.iter().map(Entity::group_id).collect();
        let (mut kids, made) = Entity::regroup(rules, &ended, t)
            .map_err(|e| format!("group change at tick {t}: {e}"))?;
        let counted = Counted {
            changes: made.len() as u64,
            fusions: made.iter().filter(|c| c.is_fusion()).count() as u64,
            fissions: made.iter().filter(|c| c.is_fission()).count() as u64,
        };
        // A tick the GVT has passed meanwhile is final: nothing to keep for an undo.
        let bury = speculative && t >= self.env.gvt.gvt();
        if bury {
            changes.serial += 1;
            let mut grave = lock(&self.graveyard);
            for entity in ended {
                let buried = Buried {
                    end: t,
                    entity,
                    change: changes.serial,
                    counted,
                };
                grave.insert(buried.entity.group_id(), buried);
            }
            for k in &mut kids {
                k.set_speculative();
            }
        }
        if let Some(graph) = &self.graph {
            let children: Vec<_> = kids
                .iter()
                .map(|k| (k.bodies().to_vec(), k.edges()))
                .collect();
            graph
                .regroup(&parent_ids, t, &children)
                .map_err(|e| format!("island graph at tick {t}: {e}"))?;
            changes.unpruned = true;
        }
        changes.made += counted.changes;
        changes.fusions += counted.fusions;
        changes.fissions += counted.fissions;
        if bury {
            changes.speculative += counted.changes;
        }
        let placed = kids
            .into_iter()
            .map(|kid| self.place(&mut held, kid))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("group change at tick {t}: {e}"))?;
        self.hand_over(held, Vec::new(), placed, local);
        Ok(Regroup::Made)
    }

    /// Puts entity `e` into the slot of its smallest body (locked into `held` if it is not
    /// yet), which must be empty, and routes its bodies' messages there. Returns the slot.
    fn place<'s>(
        &'s self,
        held: &mut BTreeMap<EntityId, MutexGuard<'s, Option<Entity>>>,
        e: Entity,
    ) -> Result<EntityId, String> {
        let id = e.bodies()[0];
        for &b in e.bodies() {
            self.owner[b as usize].store(id, Ordering::SeqCst);
        }
        let slot = held
            .entry(id)
            .or_insert_with(|| lock(&self.entities[id as usize]));
        if slot.is_some() {
            return Err(format!("slot {id} is taken"));
        }
        **slot = Some(e);
        Ok(id)
    }

    /// After a group change or its undo: unlocks the slots `held`, posts `first`, then
    /// whatever waits in those slots' mailboxes, to the entities that hold the bodies now, and
    /// schedules the entities `placed`.
    fn hand_over(
        &self,
        held: BTreeMap<EntityId, MutexGuard<'_, Option<Entity>>>,
        mut first: Vec<(TaskId, BodyId, Msg)>,
        placed: Vec<EntityId>,
        local: &Worker<BodyId>,
    ) {
        for &id in held.keys() {
            while let Some(m) = self.mailboxes[id as usize].pop() {
                first.push(m);
            }
        }
        drop(held);
        let none = Chaos(None);
        for (from, to, m) in first {
            self.post(from, to, m, local, &none);
        }
        // Scheduled whatever their flag says: a turn of the slot's old entity may still be
        // finishing, and it would clear the flag after this push (an extra turn is harmless).
        for id in placed {
            self.scheduled[id as usize].store(true, Ordering::SeqCst);
            local.push(id);
            self.notify();
        }
    }

    fn work(&self, local: Worker<BodyId>, me: usize, chaos: Chaos, parker: Parker) {
        let backoff = Backoff::new();
        // The worker's buffers, lent to each entity for its turn (see [`Scratch`]).
        let mut scratch = Scratch::default();
        // Since when the worker has found nothing to run (see `lead`, "Starving").
        let mut idle_since: Option<Instant> = None;
        while !self.done() {
            let found = self.find_task(&local, me);
            match (&found, idle_since) {
                (Some(_), Some(t)) => {
                    self.env.lead.idled(t.elapsed());
                    idle_since = None;
                }
                (None, None) => idle_since = Some(Instant::now()),
                _ => {}
            }
            match found {
                Some(id) if chaos.defer() => {
                    // Still flagged as scheduled: it runs when someone takes it from there.
                    self.injector.push(id);
                    self.notify();
                }
                Some(id) => {
                    backoff.reset();
                    chaos.pause();
                    self.turn(id, (&local, &mut scratch), me, &chaos);
                    self.sweep();
                }
                None => {
                    self.sweep();
                    self.wake_parked(&local);
                    self.regroup_committed(&local);
                    if backoff.is_completed() {
                        // Nothing to run for a while: entities may not be far enough ahead
                        // for this many workers (unless the run is ending).
                        if let Some(t) = idle_since {
                            let now = Instant::now();
                            self.env.lead.idled(now - t);
                            idle_since = Some(now);
                        }
                        self.env.lead.starved(self.env.gvt.gvt());
                        self.idle(me, &parker);
                        backoff.reset();
                    } else {
                        backoff.snooze();
                    }
                }
            }
        }
    }
}

/// Where committed frames go: `(tick, states of the dynamic bodies)`; an error stops the run.
pub type FrameOut<'a> = dyn FnMut(Tick, &[BodyState]) -> Result<(), String> + 'a;

/// The same, with the islands of the contact groups alive at the tick (as they stand before
/// its rules) at the ticks [`WarpControl::islands_every`] asks for.
pub type GroupedFrameOut<'a> =
    dyn FnMut(Tick, &[BodyState], Option<Vec<Island>>) -> Result<(), String> + 'a;

/// Where a warp run starts.
#[derive(Clone, Copy, Debug, Default)]
pub struct WarpStart<'a> {
    /// A frame tick: 0, or a checkpoint's.
    pub tick: Tick,
    /// The committed states of the dynamic bodies there (`None`: the scene's initial states,
    /// at tick 0 only).
    pub states: Option<&'a [BodyState]>,
    /// After tick 0, from a checkpoint: the islands of the groups alive there, as they stand
    /// before its rules, with their anchors; without contact groups, one island per body,
    /// which carries its anchor (what [`GroupedFrameOut`] hands out).
    pub islands: Option<&'a [Island]>,
}

/// Runs `scene` for `end_tick` ticks with the warp engine, handing every committed frame
/// (tick, states of the dynamic bodies in order) to `out` in order, the first being tick 0.
/// Stops at the first error of `out` or of the engine.
pub fn run_warp(
    scene: &Scene,
    config: WarpConfig,
    end_tick: Tick,
    out: &mut FrameOut<'_>,
) -> Result<WarpStats, String> {
    run_warp_from_with(
        scene,
        config,
        WarpStart::default(),
        end_tick,
        &mut |t, states, _| out(t, states),
        WarpControl::default(),
    )
}

/// [`run_warp`] from `start`: the first frame handed to `out` is `start.tick`'s. A checkpoint
/// resumes this way: by the rules a committed state depends only on the states at the tick
/// before and on the anchors the bodies fly from (and, with contact groups, on the islands
/// there, which hold their anchors), so the frames equal those of one run from tick 0. Groups resumed at tick `k` count as born at `k - 1`: they are older
/// than the checkpoint, and may change at `k` as the groups of the run that was cut did.
///
/// `control` adds the optional controls: the parallelism estimate, a deadline, the islands to
/// hand out with the frames a checkpoint may be taken at.
pub fn run_warp_from_with(
    scene: &Scene,
    config: WarpConfig,
    from: WarpStart<'_>,
    end_tick: Tick,
    out: &mut GroupedFrameOut<'_>,
    control: WarpControl,
) -> Result<WarpStats, String> {
    let rules = Rules {
        sleep: config.sleep,
        group_substep: config.group_substep,
        ..Rules::new(scene)?
    };
    let start_tick = from.tick;
    let start = from.states.unwrap_or(&rules.initial);
    if start.len() != rules.bodies() || start_tick > end_tick {
        return Err(format!(
            "cannot start {} bodies from {} states at tick {start_tick} (end {end_tick})",
            rules.bodies(),
            start.len()
        ));
    }
    let threads = config.threads.max(1);
    let window = config
        .window
        .unwrap_or(u64::from(scene.world.window))
        .max(1);
    let n = rules.bodies();
    let frame_ticks = u64::from(scene.world.frame_ticks);
    let tvht = Tvht::new(
        config.backend,
        TvhtConfig::for_scene_with_span(
            n,
            rules.largest_side,
            window,
            config.tvht_span.unwrap_or(DEFAULT_SPAN_TICKS),
        )
        .with_sleep_records(true),
    )
    .and_then(|t| t.with_flight(std::sync::Arc::new(rules.clone())))
    .map_err(|e| e.to_string())?;
    let gvt_config = GvtConfig {
        start_tick,
        chunk: GvtConfig::chunk_for(threads, n),
        copiers: threads,
        flight: rules.free_flight(),
        positions: config.anchor_cells.unwrap_or(super::gvt::MAX_POSITIONS),
        ..GvtConfig::new(n, frame_ticks, window)
    };
    let gvt = GvtBuffer::new(config.backend, gvt_config).map_err(|e| e.to_string())?;
    // The entities: one per body, or one per contact group of the first tick (in the slot of
    // its smallest body).
    let mut slots: Vec<Option<Entity>> = Vec::with_capacity(n);
    let mut graph = None;
    if config.groups {
        // A fresh run's groups are born at its first tick; resumed ones are older.
        let (islands, birth) = match (start_tick, from.islands) {
            (0, None) => {
                let candidates = contact_candidates(&rules, start);
                (initial_islands(&rules, start, &candidates), 0)
            }
            (k, Some(islands)) if k > 0 => (islands.to_vec(), k - 1),
            (k, _) => {
                return Err(format!(
                    "a warp run with contact groups starts at tick 0 without islands, or \
                     later with the islands of its checkpoint (tick {k}, islands {})",
                    if from.islands.is_some() {
                        "given"
                    } else {
                        "missing"
                    }
                ));
            }
        };
        if let Some(isl) = islands.iter().find(|i| i.asleep && !config.sleep) {
            return Err(format!(
                "a warp run with sleep off cannot start from a sleeping group (bodies {:?})",
                isl.bodies
            ));
        }
        let bodies: Vec<Vec<BodyId>> = islands.iter().map(|i| i.bodies.clone()).collect();
        graph = Some(
            GroupGraph::with_groups(config.backend, n, birth, &bodies)
                .map_err(|e| format!("the islands to start from: {e}"))?,
        );
        slots.resize_with(n, || None);
        for isl in islands {
            let states = isl.bodies.iter().map(|&b| start[b as usize]).collect();
            let id = isl.bodies[0] as usize;
            slots[id] = Some(Entity::group_born(isl, states, start_tick, birth));
        }
    } else {
        // Each body flies from its anchor: its start state in a fresh run, its checkpoint's.
        let anchors: Vec<Anchor> = match (start_tick, from.islands) {
            (0, None) => start.iter().map(|&s| Anchor::at(0, s)).collect(),
            (k, Some(islands)) if k > 0 && islands.len() == n => {
                let mut anchors = vec![None; n];
                for isl in islands {
                    if let ([b], [a]) = (isl.bodies.as_slice(), isl.anchors.as_slice())
                        && let Some(slot) = anchors.get_mut(*b as usize)
                    {
                        *slot = Some(*a);
                    }
                }
                anchors
                    .into_iter()
                    .collect::<Option<Vec<Anchor>>>()
                    .ok_or_else(|| {
                        format!("the anchors to start from at tick {k} are not one per body")
                    })?
            }
            (k, _) => {
                return Err(format!(
                    "a warp run starts at tick 0 without anchors, or later with the anchors of \
                     its checkpoint (tick {k}, {} islands of one body given)",
                    from.islands.map_or(0, |i| i.len())
                ));
            }
        };
        if let Some((b, a)) = anchors
            .iter()
            .enumerate()
            .find(|(_, a)| a.tick > start_tick)
        {
            return Err(format!(
                "body {b}'s anchor at tick {} is after the start, tick {start_tick}",
                a.tick
            ));
        }
        slots.extend((0..n).map(|i| {
            let state = rules.flight(&anchors[i], start_tick);
            Some(Entity::starting_at(
                i as BodyId,
                anchors[i],
                state,
                start_tick,
            ))
        }));
    }
    let mut owner: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    for e in slots.iter().flatten() {
        for &b in e.bodies() {
            owner[b as usize] = AtomicU32::new(e.bodies()[0]);
        }
    }
    let live: Vec<usize> = (0..n).filter(|&i| slots[i].is_some()).collect();
    let island_log = control
        .islands_every
        .map(|every| IslandLog::new(every, end_tick));
    let lead = if config.full_window {
        Lead::fixed(window)
    } else {
        Lead::new(window, n, threads)
    };
    let before = crate::sync::stats();
    let workers: Vec<Worker<BodyId>> = (0..threads).map(|_| Worker::new_fifo()).collect();
    let parkers: Vec<Parker> = (0..threads).map(|_| Parker::new()).collect();
    let shared = Shared {
        env: Env {
            rules: &rules,
            tvht: &tvht,
            gvt: &gvt,
            end: end_tick,
            islands: island_log.as_ref(),
            lead: &lead,
            max_span: config.max_span.unwrap_or(u64::MAX),
        },
        scheduled: slots.iter().map(|e| AtomicBool::new(e.is_some())).collect(),
        entities: slots.into_iter().map(Mutex::new).collect(),
        owner,
        mailboxes: (0..n).map(|_| SegQueue::new()).collect(),
        announced: Announcements::default(),
        changes: Mutex::new(Changes::default()),
        graph,
        retired: Mutex::new(EntityStats::default()),
        injector: Injector::new(),
        stealers: workers.iter().map(Worker::stealer).collect(),
        parked: Mutex::new(BinaryHeap::new()),
        stop: AtomicBool::new(false),
        error: Mutex::new(None),
        gvt_seen: AtomicU64::new(start_tick),
        swept_to: AtomicU64::new(start_tick),
        sleepers: AtomicUsize::new(0),
        asleep: (0..threads).map(|_| AtomicBool::new(false)).collect(),
        unparkers: parkers.iter().map(|p| p.unparker().clone()).collect(),
        profile: control.profile.then(|| Profiler::new(n, threads)),
        graveyard: Mutex::new(BTreeMap::new()),
    };
    for i in live {
        shared.injector.push(i as BodyId);
    }
    let mut pruned_graph: Tick = start_tick;
    let mut out_error = None;
    let mut time_limited = false;
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (me, (w, p)) in workers.into_iter().zip(parkers).enumerate() {
            let shared = &shared;
            let h = std::thread::Builder::new()
                .name(format!("warp-{me}"))
                .spawn_scoped(s, move || {
                    shared.work(w, me, Chaos::new(config.chaos, me), p)
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => shared.fail(format!("cannot start worker thread: {e}")),
            }
        }
        // The output: drain committed frames until the end tick is committed.
        let mut deliver = |out_error: &mut Option<String>| {
            for (t, states) in gvt.drain_committed() {
                if t > end_tick || out_error.is_some() {
                    break;
                }
                let islands = match &island_log {
                    Some(log) if log.wants(t) => match log.take(t, n) {
                        Ok(i) => Some(i),
                        Err(e) => {
                            shared.fail(format!("island log: {e}"));
                            break;
                        }
                    },
                    _ => None,
                };
                if let Err(e) = out(t, &states, islands) {
                    *out_error = Some(e);
                    shared.stop.store(true, Ordering::SeqCst);
                }
                gvt.give_back(states);
            }
        };
        let mut buried_gvt = Tick::MAX;
        loop {
            let finished = shared.done();
            deliver(&mut out_error);
            if finished {
                break;
            }
            if control.deadline.is_some_and(|d| Instant::now() >= d) {
                time_limited = true;
                shared.stop.store(true, Ordering::SeqCst);
                continue; // drain what is committed, then stop
            }
            let g = gvt.gvt();
            // Fissions behind the GVT are final: their parents are no longer needed. (Looked
            // at when the GVT has moved: the graveyard may hold thousands, and this loop runs
            // every 200 us.)
            if g != buried_gvt
                && let Ok(mut grave) = shared.graveyard.try_lock()
            {
                grave.retain(|_, b| b.end >= g);
                buried_gvt = g;
            }
            // The island graph's records behind the GVT, after changes (one section a body).
            if let Some(graph) = &shared.graph {
                if g >= pruned_graph + frame_ticks
                    && std::mem::take(&mut lock(&shared.changes).unpruned)
                {
                    let started = Instant::now();
                    graph.prune(g - 1);
                    pruned_graph = g;
                    lock(&shared.changes).spent += started.elapsed();
                }
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        for h in handles {
            if h.join().is_err() {
                shared.fail("a warp worker panicked".into());
            }
        }
        // The GVT word moves before the committed frame is queued (GVT buffer), so the loop
        // above may see the end committed while the last frame is still on its way: once the
        // workers have finished, every committed frame is queued; hand out the rest.
        // (Found by `tests/fuzz_sim.rs`: a run that returned Ok one frame short.)
        deliver(&mut out_error);
    });
    if let Some(e) = out_error {
        return Err(e);
    }
    if let Some(e) = lock(&shared.error).take() {
        return Err(e);
    }
    let mut sum = *lock(&shared.retired);
    let mut sleeping_groups = 0;
    let mut groups: Vec<Vec<BodyId>> = Vec::new();
    for e in &shared.entities {
        if let Some(e) = lock(e).as_ref() {
            sum.add(&e.stats);
            sleeping_groups += u64::from(e.asleep());
            groups.push(e.bodies().to_vec());
        }
    }
    // The island graph must hold, and its live groups be the entities the run ended with.
    if let Some(graph) = &shared.graph {
        graph
            .validate()
            .map_err(|e| format!("the island graph is broken at the end of the run: {e}"))?;
        let live: Vec<Vec<BodyId>> = graph.live().into_iter().map(|g| g.bodies).collect();
        groups.sort();
        let mut live_sorted = live;
        live_sorted.sort();
        if live_sorted != groups {
            return Err(format!(
                "the island graph's live groups {live_sorted:?} are not the run's groups {groups:?}"
            ));
        }
    }
    let changes = lock(&shared.changes);
    let sync = crate::sync::stats().since(&before);
    let parallelism = match shared.profile {
        Some(p) => Some(p.analyse()?),
        None => None,
    };
    #[cfg(feature = "stm")]
    let (stm_commits, stm_aborts) = if config.backend == Backend::Stm {
        (Some(sync.stm.commits), Some(sync.stm.aborts()))
    } else {
        (None, None)
    };
    #[cfg(not(feature = "stm"))]
    let (stm_commits, stm_aborts) = (None, None);
    let (refinements, refinements_met) = tvht.refinements();
    Ok(WarpStats {
        entities: sum,
        sections: sync.sections,
        attempts: sync.attempts,
        by_class: sync.by_class,
        stm_commits,
        stm_aborts,
        parallelism,
        time_limited,
        groups: config.groups,
        group_changes: changes.made,
        fusions: changes.fusions,
        fissions: changes.fissions,
        sleeping_groups,
        rollbacks_across_changes: changes.undone,
        fusions_undone: changes.fusions_undone,
        fissions_undone: changes.fissions_undone,
        speculative_changes: changes.speculative,
        island_seconds: changes.spent.as_secs_f64(),
        window,
        lead: lead.stats(),
        refinements,
        refinements_met,
    })
}
