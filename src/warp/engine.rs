//! # The warp engine: entities as soft-threads on a work-stealing pool
//!
//! Seed 000 (Koenig, Karamouzas and Guy), Section 5: "instead of being scheduled directly by
//! the operating system each entity places tasks on one of several task queues, one per core",
//! each served by one worker thread. Here every dynamic body is an [`Entity`] with a mailbox
//! (a lock-free `crossbeam` queue) and a `scheduled` flag; `T` workers each own a
//! `crossbeam-deque` deque and steal from the others and from the global injector when theirs
//! is empty. A task is one turn of an entity ([`Entity::run`]): it reads the mailbox, steps,
//! records, and returns at once. No worker ever waits for an entity:
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
//! * an entity at `LVT_ub` parks on a list, and whoever sees the GVT advance wakes the list;
//!   an entity that parks re-checks the GVT after parking, so no advance is missed;
//! * an entity that waits for acks is simply not scheduled: the ack's arrival schedules it.
//!
//! The run ends when the GVT passes the last tick. The calling thread drains committed frames
//! from the GVT buffer ([`GvtBuffer::drain_committed`]) as they come, hands them to the output,
//! and prunes the TVHT behind the GVT.
//!
//! **Determinism.** Which worker runs which turn, and in what order messages arrive, changes
//! only the speculation, never a committed state: a committed state at `k + 1` is the rule of
//! [`super::rules`] applied to the final state at `k` and the contacts at `k`, which are a
//! function of the final states at `k` (see [`super::entity`] for why a committed tick is
//! final). So the frames are bit-identical for any thread count, backend and window; the
//! tests compare them with the sequential [`super::reference`].

use super::entity::{Entity, EntityStats, Env, Turn};
use super::message::Msg;
use super::profile::{NO_TASK, Parallelism, Profiler, TaskId};
use super::rules::Rules;
use super::{BodyId, GvtBuffer, GvtConfig, Tick, Tvht, TvhtConfig};
use crate::dynamics::BodyState;
use crate::scene::Scene;
use crate::sync::Backend;
use crossbeam::queue::SegQueue;
use crossbeam::utils::Backoff;
use crossbeam_deque::{Injector, Stealer, Worker};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Settings of a warp run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpConfig {
    /// Worker threads (at least 1).
    pub threads: usize,
    pub backend: Backend,
    /// `LVT_ub - GVT` in ticks; `None` takes the scene's `world.window`.
    pub window: Option<u64>,
}

/// What a warp run did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WarpStats {
    /// Collision events sent.
    pub events: u64,
    pub antievents: u64,
    pub rollbacks: u64,
    pub rolled_back_ticks: u64,
    /// Entity-ticks written into the TVHT.
    pub tvht_writes: u64,
    /// Entity turns run.
    pub turns: u64,
    /// Mean `LVT - GVT` seen at the end of a turn, in ticks.
    pub mean_lead: f64,
    /// Critical sections (TVHT and GVT buffer) and their attempts (STM re-runs).
    pub sections: u64,
    pub attempts: u64,
    /// STM commits and aborts of the run (None for the lock backend).
    pub stm_commits: Option<u64>,
    pub stm_aborts: Option<u64>,
    /// The task DAG's work and span, when the run was profiled ([`WarpControl::profile`]).
    pub parallelism: Option<Parallelism>,
    /// The run stopped at [`WarpControl::deadline`] before the end tick was committed.
    pub time_limited: bool,
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
}

/// Shared by the workers.
struct Shared<'a> {
    env: Env<'a>,
    entities: Vec<Mutex<Entity>>,
    /// Messages, each with the id of the task that sent it (for the profiler).
    mailboxes: Vec<SegQueue<(TaskId, Msg)>>,
    scheduled: Vec<AtomicBool>,
    injector: Injector<BodyId>,
    stealers: Vec<Stealer<BodyId>>,
    parked: Mutex<Vec<BodyId>>,
    stop: AtomicBool,
    error: Mutex<Option<String>>,
    gvt_seen: AtomicU64,
    /// Task records for the parallelism estimate (`None`: not profiled, nothing recorded).
    profile: Option<Profiler>,
}

impl Shared<'_> {
    fn schedule(&self, id: BodyId, local: &Worker<BodyId>) {
        if !self.scheduled[id as usize].swap(true, Ordering::SeqCst) {
            local.push(id);
        }
    }

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
                match self.stealers[(me + k) % n].steal() {
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
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        self.stop.store(true, Ordering::SeqCst);
    }

    fn done(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.env.gvt.gvt() > self.env.end
    }

    /// Wakes the parked entities if the GVT moved since anyone last looked.
    fn wake_parked(&self, local: &Worker<BodyId>) {
        let g = self.env.gvt.gvt();
        if self.gvt_seen.fetch_max(g, Ordering::SeqCst) < g {
            let list = std::mem::take(&mut *self.parked.lock().unwrap_or_else(|p| p.into_inner()));
            for id in list {
                self.schedule(id, local);
            }
        }
    }

    fn turn(&self, id: BodyId, local: &Worker<BodyId>, me: usize) {
        let Some(profile) = &self.profile else {
            self.turn_with(id, local, None);
            return;
        };
        let mut task = profile.begin(id, self.env.gvt.gvt());
        let parked = self.turn_with(id, local, Some(&mut task));
        profile.end(task, me, self.env.gvt.gvt(), parked);
    }

    /// One turn; returns the GVT the entity now waits to see advanced, if it parked.
    fn turn_with(
        &self,
        id: BodyId,
        local: &Worker<BodyId>,
        task: Option<&mut super::profile::Open>,
    ) -> Option<Tick> {
        let i = id as usize;
        let me = task.as_ref().map_or(NO_TASK, |t| t.id);
        let mut deps = task.map(|t| &mut t.deps);
        let result = {
            let mut e = self.entities[i].lock().unwrap_or_else(|p| p.into_inner());
            let mailbox = &self.mailboxes[i];
            e.run(
                &self.env,
                &mut || {
                    let (from, m) = mailbox.pop()?;
                    if let Some(d) = deps.as_mut() {
                        d.push(from);
                    }
                    Some(m)
                },
                &mut |to, m| {
                    self.mailboxes[to as usize].push((me, m));
                    self.schedule(to, local);
                },
            )
        };
        let mut parked = None;
        self.scheduled[i].store(false, Ordering::SeqCst);
        match result {
            Err(e) => self.fail(e),
            Ok(Turn::Ready) => self.schedule(id, local),
            Ok(Turn::WaitGvt(g)) => {
                parked = Some(g);
                self.parked
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(id);
                if self.env.gvt.gvt() != g {
                    self.schedule(id, local);
                }
            }
            Ok(Turn::WaitMessages) => {}
        }
        if !self.mailboxes[i].is_empty() {
            self.schedule(id, local);
        }
        self.wake_parked(local);
        parked
    }

    fn work(&self, local: Worker<BodyId>, me: usize) {
        let backoff = Backoff::new();
        while !self.done() {
            match self.find_task(&local, me) {
                Some(id) => {
                    backoff.reset();
                    self.turn(id, &local, me);
                }
                None => {
                    self.wake_parked(&local);
                    if backoff.is_completed() {
                        std::thread::yield_now();
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

/// Runs `scene` for `end_tick` ticks with the warp engine, handing every committed frame
/// (tick, states of the dynamic bodies in order) to `out` in order, the first being tick 0.
/// Stops at the first error of `out` or of the engine.
pub fn run_warp(
    scene: &Scene,
    config: WarpConfig,
    end_tick: Tick,
    out: &mut FrameOut<'_>,
) -> Result<WarpStats, String> {
    run_warp_with(scene, config, end_tick, out, WarpControl::default())
}

/// [`run_warp`] with the optional controls: the parallelism estimate, a deadline.
pub fn run_warp_with(
    scene: &Scene,
    config: WarpConfig,
    end_tick: Tick,
    out: &mut FrameOut<'_>,
    control: WarpControl,
) -> Result<WarpStats, String> {
    let rules = Rules::new(scene)?;
    let threads = config.threads.max(1);
    let window = config
        .window
        .unwrap_or(u64::from(scene.world.window))
        .max(1);
    let n = rules.bodies();
    let frame_ticks = u64::from(scene.world.frame_ticks);
    let tvht = Tvht::new(
        config.backend,
        TvhtConfig::for_scene(n, rules.largest_side, window),
    )
    .map_err(|e| e.to_string())?;
    let gvt = GvtBuffer::new(config.backend, GvtConfig::new(n, frame_ticks, window))
        .map_err(|e| e.to_string())?;
    let before = crate::sync::stats();
    let workers: Vec<Worker<BodyId>> = (0..threads).map(|_| Worker::new_fifo()).collect();
    let shared = Shared {
        env: Env {
            rules: &rules,
            tvht: &tvht,
            gvt: &gvt,
            end: end_tick,
        },
        entities: (0..n)
            .map(|i| Mutex::new(Entity::new(i as BodyId, rules.initial[i])))
            .collect(),
        mailboxes: (0..n).map(|_| SegQueue::new()).collect(),
        scheduled: (0..n).map(|_| AtomicBool::new(true)).collect(),
        injector: Injector::new(),
        stealers: workers.iter().map(Worker::stealer).collect(),
        parked: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        error: Mutex::new(None),
        gvt_seen: AtomicU64::new(0),
        profile: control.profile.then(|| Profiler::new(n, threads)),
    };
    for i in 0..n {
        shared.injector.push(i as BodyId);
    }
    let buckets = tvht_buckets(n, rules.largest_side, window);
    let prune_per_tick = buckets.div_ceil(window as usize).max(1);
    let mut pruned_to: Tick = 0;
    let mut out_error = None;
    let mut time_limited = false;
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (me, w) in workers.into_iter().enumerate() {
            let shared = &shared;
            let h = std::thread::Builder::new()
                .name(format!("warp-{me}"))
                .spawn_scoped(s, move || shared.work(w, me));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => shared.fail(format!("cannot start worker thread: {e}")),
            }
        }
        // The output: drain committed frames until the end tick is committed.
        loop {
            let finished = shared.done();
            for (t, states) in gvt.drain_committed() {
                if t > end_tick || out_error.is_some() {
                    break;
                }
                if let Err(e) = out(t, &states) {
                    out_error = Some(e);
                    shared.stop.store(true, Ordering::SeqCst);
                }
            }
            if finished {
                break;
            }
            if control.deadline.is_some_and(|d| Instant::now() >= d) {
                time_limited = true;
                shared.stop.store(true, Ordering::SeqCst);
                continue; // drain what is committed, then stop
            }
            let g = gvt.gvt();
            // Sweep the table once per window of committed ticks (TVHT module docs).
            if g > pruned_to + 1 {
                let ticks = (g - 1 - pruned_to) as usize;
                tvht.prune_step(g - 1, (ticks * prune_per_tick).min(buckets));
                pruned_to = g - 1;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        for h in handles {
            if h.join().is_err() {
                shared.fail("a warp worker panicked".into());
            }
        }
    });
    if let Some(e) = out_error {
        return Err(e);
    }
    if let Some(e) = shared
        .error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(e);
    }
    let mut sum = EntityStats::default();
    for e in &shared.entities {
        let s = e.lock().unwrap_or_else(|p| p.into_inner()).stats;
        sum.events += s.events;
        sum.antievents += s.antievents;
        sum.rollbacks += s.rollbacks;
        sum.rolled_back_ticks += s.rolled_back_ticks;
        sum.tvht_writes += s.tvht_writes;
        sum.turns += s.turns;
        sum.lead_sum += s.lead_sum;
    }
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
    Ok(WarpStats {
        events: sum.events,
        antievents: sum.antievents,
        rollbacks: sum.rollbacks,
        rolled_back_ticks: sum.rolled_back_ticks,
        tvht_writes: sum.tvht_writes,
        turns: sum.turns,
        mean_lead: if sum.turns == 0 {
            0.0
        } else {
            sum.lead_sum as f64 / sum.turns as f64
        },
        sections: sync.sections,
        attempts: sync.attempts,
        stm_commits,
        stm_aborts,
        parallelism,
        time_limited,
    })
}

fn tvht_buckets(n: usize, largest_side: f32, window: u64) -> usize {
    TvhtConfig::for_scene(n, largest_side, window).buckets
}
