//! # A parallelism estimate from one run: work, span and the speedup they allow
//!
//! A 2-core machine cannot show how the warp engine scales to 16 or 64 cores, but one run on it
//! can bound that scaling. With profiling on ([`super::WarpControl::profile`]) the
//! scheduler records every entity *task* (one turn, [`super::entity::Entity::run`]): its wall
//! time and the tasks it had to wait for:
//!
//! * **the same entity's previous task** (an entity's turns are sequential);
//! * **the tasks whose messages it consumed**: every mailbox message carries the id of the task
//!   that sent it (events, antievents and their acks all gate progress: an entity does not
//!   record a tick while its events wait for acks);
//! * **the GVT advance it waited for**: a task that ended at `LVT_ub` (`Turn::WaitGvt(at)`)
//!   resumes only once the GVT has reached `at`, so its entity's next task (when it starts with
//!   the GVT at `at` or later) depends on the task during whose turn the GVT first reached `at`.
//!   Without these edges the window's synchronisation would be invisible and the estimate too
//!   hopeful; [`Parallelism::span_without_gvt`] gives the span from the first two kinds alone.
//!
//! **Task times** are thread CPU time where the OS gives it (`CLOCK_THREAD_CPUTIME_ID` on Unix,
//! a system call of a few hundred nanoseconds against turns of tens of microseconds or more),
//! wall time elsewhere: on a loaded machine a worker preempted in the middle of a turn would
//! otherwise give that turn the time other processes ran (measured: one 1.2 s "task" in a
//! 2-second run at a load average of 17 on 2 cores, which made the span most of the work).
//!
//! These tasks and edges form a DAG. Its **work** `W` is the sum of the task times, its
//! **span** `S` the heaviest path (the critical path); `W / S` is the parallelism. On `P`
//! workers no schedule beats `max(W / P, S)`, so `speedup(P) <= W / max(W / P, S) =
//! min(P, W / S)` ([`Parallelism::bound`]); a greedy scheduler (work stealing is one, up to
//! steal overheads) finishes within `W / P + S` (Brent), so `W / (W / P + S)` is what it should
//! reach ([`Parallelism::greedy`]).
//!
//! What the estimate does not see: the calling thread's work (draining committed frames to the
//! output, pruning the TVHT), idle time in the scheduler, and the speculation itself: the DAG is
//! the one this run took, with its rollbacks; a run with more workers speculates differently.
//! Task times are those of this run, so they are cleanest from a 1-thread run (no contention, no
//! shared caches). Task ids are handed out when a task takes its entity (under the entity's
//! lock, so one entity's tasks are numbered in the order they ran); with several workers a
//! message can be consumed from a task that started later than its consumer (both running at
//! once). Such an edge would point backwards and is dropped ([`Parallelism::dropped_edges`]),
//! so every edge kept points forwards and the graph has no cycle. With one worker there are
//! none, and the GVT edges are exact (only one task runs at a time, so the task
//! during which the GVT moved is the one whose record moved it).

use super::{BodyId, Tick};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// This thread's CPU time in nanoseconds (wall time since a fixed instant where there is none).
fn now_nanos() -> u64 {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid, writable timespec; the clock id is a constant the OS knows.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64;
        }
    }
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

/// A task's id: its start order in the run.
pub type TaskId = u64;
/// No task (an entity's first turn has no predecessor; a message sent outside a task).
pub const NO_TASK: TaskId = u64::MAX;

/// The parallelism of one run's task DAG (all times in seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Parallelism {
    /// Entity tasks (turns) recorded.
    pub tasks: u64,
    /// Sum of the task times.
    pub work: f64,
    /// The heaviest path through the DAG.
    pub span: f64,
    /// The heaviest path without the GVT edges (entity order and messages only).
    pub span_without_gvt: f64,
    /// Edges from consumed messages and from GVT advances.
    pub message_edges: u64,
    pub gvt_edges: u64,
    /// Message edges from a task that started after its consumer (several workers only).
    pub dropped_edges: u64,
}

impl Parallelism {
    /// `work / span`: the most any number of workers could gain on this DAG.
    pub fn ratio(&self) -> f64 {
        if self.span > 0.0 {
            self.work / self.span
        } else {
            0.0
        }
    }

    /// Upper bound of the speedup on `p` workers: `work / max(work / p, span)`.
    pub fn bound(&self, p: usize) -> f64 {
        let d = (self.work / p as f64).max(self.span);
        if d > 0.0 { self.work / d } else { 0.0 }
    }

    /// What a greedy scheduler is guaranteed on `p` workers: `work / (work / p + span)`.
    pub fn greedy(&self, p: usize) -> f64 {
        let d = self.work / p as f64 + self.span;
        if d > 0.0 { self.work / d } else { 0.0 }
    }
}

/// The heaviest path through a DAG: `weights[i]` is task `i`'s time, `edges` are
/// `(before, after)` pairs. Any node order; an error names a cycle or an edge out of range.
pub fn span(weights: &[u64], edges: &[(usize, usize)]) -> Result<u64, String> {
    let n = weights.len();
    let mut indegree = vec![0u32; n];
    let mut start = vec![0usize; n + 1];
    for &(a, b) in edges {
        if a >= n || b >= n {
            return Err(format!("edge ({a}, {b}) names a task out of 0..{n}"));
        }
        indegree[b] += 1;
        start[a + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut succ = vec![0usize; edges.len()];
    for &(a, b) in edges {
        succ[fill[a]] = b;
        fill[a] += 1;
    }
    // Kahn's order; `ready[i]` is the latest finish among i's predecessors.
    let mut ready = vec![0u64; n];
    let mut queue: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut done = 0;
    let mut longest = 0;
    while let Some(i) = queue.pop() {
        done += 1;
        let finish = ready[i] + weights[i];
        longest = longest.max(finish);
        for &j in &succ[start[i]..start[i + 1]] {
            ready[j] = ready[j].max(finish);
            indegree[j] -= 1;
            if indegree[j] == 0 {
                queue.push(j);
            }
        }
    }
    if done != n {
        return Err(format!(
            "the graph has a cycle ({} of {n} tasks ordered)",
            done
        ));
    }
    Ok(longest)
}

/// One recorded task.
#[derive(Clone, Copy, Debug)]
struct Task {
    id: TaskId,
    nanos: u64,
    prev: TaskId,
    /// The tick this task's entity waited for the GVT to reach (`u64::MAX`: none).
    gvt_wait: Tick,
    /// The GVT at the task's start and end.
    gvt_from: Tick,
    gvt_to: Tick,
    deps_start: usize,
    deps_len: usize,
}

/// One worker's records (only that worker writes them).
#[derive(Default)]
struct Log {
    tasks: Vec<Task>,
    deps: Vec<TaskId>,
}

/// The profiler of one run, shared by the workers.
pub(crate) struct Profiler {
    next: AtomicU64,
    /// Per entity: its last task, and the GVT it parked on (`u64::MAX`: not parked).
    last: Vec<AtomicU64>,
    parked_at: Vec<AtomicU64>,
    logs: Vec<Mutex<Log>>,
}

/// A task in progress.
pub(crate) struct Open {
    pub id: TaskId,
    entity: BodyId,
    start: u64,
    gvt_from: Tick,
    /// The entity's previous task, and the GVT it waited for (`u64::MAX`: none).
    prev: TaskId,
    gvt_wait: Tick,
    /// The ids of the messages' senders, as the inbox hands them over.
    pub deps: Vec<TaskId>,
}

impl Profiler {
    pub(crate) fn new(entities: usize, workers: usize) -> Profiler {
        Profiler {
            next: AtomicU64::new(0),
            last: (0..entities).map(|_| AtomicU64::new(NO_TASK)).collect(),
            parked_at: (0..entities).map(|_| AtomicU64::new(u64::MAX)).collect(),
            logs: (0..workers).map(|_| Mutex::new(Log::default())).collect(),
        }
    }

    /// Starts a task of `entity` with the GVT at `gvt`. Called **under the entity's lock**
    /// (its slot's mutex), before it reads its mailbox: the task's id and its link to the
    /// entity's previous task are taken there, so the ids of one entity's tasks follow the
    /// order in which they held the entity, and every edge of the DAG points from a smaller id
    /// to a larger one (no cycle can form). Taken outside the lock, they did not: a worker
    /// releases the entity, reschedules it and finishes its turn's tail (waking parked
    /// entities, group changes) before it closes its task, so another worker could run the
    /// entity's next turn to its end first; the two swaps of the entity's last task then
    /// crossed, a backward edge closed a cycle, and the estimate failed ("the graph has a
    /// cycle": `bouncing` 500, 8 workers, on a 16-core machine).
    pub(crate) fn begin(&self, entity: BodyId, gvt: Tick) -> Open {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let e = entity as usize;
        // Both swaps happen under the entity's lock, which orders them: relaxed is enough.
        let prev = self.last[e].swap(id, Ordering::Relaxed);
        let waited = self.parked_at[e].swap(u64::MAX, Ordering::Relaxed);
        // The wait counts only if this task started with the GVT already there (an entity
        // woken by a message before the GVT moved did not wait for it).
        let gvt_wait = if waited != u64::MAX && gvt >= waited {
            waited
        } else {
            u64::MAX
        };
        Open {
            id,
            entity,
            start: now_nanos(),
            gvt_from: gvt,
            prev,
            gvt_wait,
            deps: Vec::new(),
        }
    }

    /// The task's entity now waits for the GVT to reach `at`. Called under the entity's lock,
    /// like [`Profiler::begin`], so that its next task sees it.
    pub(crate) fn park(&self, task: &Open, at: Tick) {
        self.parked_at[task.entity as usize].store(at, Ordering::Relaxed);
    }

    /// Ends `task` on worker `me` with the GVT at `gvt` (anywhere after its turn).
    pub(crate) fn end(&self, task: Open, me: usize, gvt: Tick) {
        let nanos = now_nanos().saturating_sub(task.start);
        let mut log = self.logs[me].lock().unwrap_or_else(|p| p.into_inner());
        let deps_start = log.deps.len();
        log.deps.extend_from_slice(&task.deps);
        log.tasks.push(Task {
            id: task.id,
            nanos,
            prev: task.prev,
            gvt_wait: task.gvt_wait,
            gvt_from: task.gvt_from,
            gvt_to: gvt,
            deps_start,
            deps_len: task.deps.len(),
        });
    }

    /// The DAG's work and span.
    pub(crate) fn analyse(self) -> Result<Parallelism, String> {
        let n = self.next.load(Ordering::Relaxed) as usize;
        let mut weights = vec![0u64; n];
        let mut tasks: Vec<(Task, Vec<TaskId>)> = Vec::with_capacity(n);
        for log in self.logs {
            let log = log.into_inner().unwrap_or_else(|p| p.into_inner());
            for t in log.tasks {
                let deps = log.deps[t.deps_start..t.deps_start + t.deps_len].to_vec();
                tasks.push((t, deps));
            }
        }
        tasks.sort_by_key(|(t, _)| t.id);
        // GVT advances, by the GVT they reached: the first one to reach `at` is the one waited for.
        let mut advances: Vec<(Tick, TaskId)> = tasks
            .iter()
            .filter(|(t, _)| t.gvt_to > t.gvt_from)
            .map(|(t, _)| (t.gvt_to, t.id))
            .collect();
        advances.sort_unstable();
        let mut p = Parallelism {
            tasks: tasks.len() as u64,
            ..Parallelism::default()
        };
        let mut base_edges = Vec::new();
        let mut gvt_edges = Vec::new();
        for (t, deps) in &tasks {
            let me = t.id as usize;
            weights[me] = t.nanos;
            if t.prev != NO_TASK {
                base_edges.push((t.prev as usize, me));
            }
            for &d in deps {
                if d == NO_TASK {
                    continue;
                }
                if d < t.id {
                    base_edges.push((d as usize, me));
                    p.message_edges += 1;
                } else {
                    p.dropped_edges += 1;
                }
            }
            if t.gvt_wait != u64::MAX {
                let from = advances.partition_point(|&(g, _)| g < t.gvt_wait);
                if let Some(&(_, d)) = advances[from..].iter().find(|&&(_, d)| d < t.id) {
                    gvt_edges.push((d as usize, me));
                }
            }
        }
        p.gvt_edges = gvt_edges.len() as u64;
        p.work = weights.iter().sum::<u64>() as f64 * 1e-9;
        p.span_without_gvt = span(&weights, &base_edges)? as f64 * 1e-9;
        base_edges.extend_from_slice(&gvt_edges);
        p.span = span(&weights, &base_edges)? as f64 * 1e-9;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_of_a_hand_built_dag() {
        // 0 ──▶ 1 ──▶ 3
        //  \         ▲
        //   ▶ 2 ─────┘      4 (alone)
        // weights 2, 5, 1, 3, 9: paths 0-1-3 = 10, 0-2-3 = 6; node 4 alone = 9.
        let w = [2, 5, 1, 3, 9];
        let e = [(0, 1), (0, 2), (1, 3), (2, 3)];
        assert_eq!(span(&w, &e), Ok(10));
        // Node order does not matter: the same DAG numbered backwards.
        let rw: Vec<u64> = w.iter().rev().copied().collect();
        let re: Vec<(usize, usize)> = e.iter().map(|&(a, b)| (4 - a, 4 - b)).collect();
        assert_eq!(span(&rw, &re), Ok(10));
        // A heavier lone node dominates; no edges: the heaviest task.
        assert_eq!(span(&[2, 5, 1, 3, 11], &e), Ok(11));
        assert_eq!(span(&[4, 7, 1], &[]), Ok(7));
        // A chain is the whole work.
        assert_eq!(span(&[1, 2, 3, 4], &[(0, 1), (1, 2), (2, 3)]), Ok(10));
        // Diamond with a long side branch joining late.
        let w = [1, 1, 1, 1, 1, 1, 10];
        let e = [(0, 1), (1, 2), (2, 3), (0, 6), (6, 3), (3, 4), (4, 5)];
        assert_eq!(span(&w, &e), Ok(1 + 10 + 1 + 1 + 1));
        assert_eq!(span(&[], &[]), Ok(0));
    }

    #[test]
    fn cycles_and_bad_edges_are_refused() {
        assert!(
            span(&[1, 1], &[(0, 1), (1, 0)])
                .unwrap_err()
                .contains("cycle")
        );
        assert!(span(&[1], &[(0, 1)]).unwrap_err().contains("out of"));
    }

    #[test]
    fn bounds_follow_work_and_span() {
        let p = Parallelism {
            work: 64.0,
            span: 4.0,
            ..Parallelism::default()
        };
        assert_eq!(p.ratio(), 16.0);
        assert_eq!(p.bound(1), 1.0);
        assert_eq!(p.bound(4), 4.0);
        assert_eq!(p.bound(16), 16.0);
        assert_eq!(p.bound(64), 16.0);
        assert_eq!(p.greedy(4), 64.0 / 20.0);
        assert_eq!(p.greedy(64), 64.0 / 5.0);
        assert_eq!(Parallelism::default().bound(8), 0.0);
    }

    #[test]
    fn the_profiler_links_entity_order_messages_and_gvt_waits() {
        // Worker 0 runs: a0 (entity 0, parks at GVT 0), b0 (entity 1, sends to 0, moves GVT
        // 0 -> 1), a1 (entity 0, consumes b0's message, GVT already 1).
        // Task times are CPU time: spin, do not sleep.
        let spin = |ms: u64| {
            let t = now_nanos();
            while now_nanos() < t + ms * 1_000_000 {
                std::hint::spin_loop();
            }
        };
        let p = Profiler::new(2, 1);
        let a0 = p.begin(0, 0);
        let a0_id = a0.id;
        spin(2);
        p.park(&a0, 1);
        p.end(a0, 0, 0);
        let b0 = p.begin(1, 0);
        let b0_id = b0.id;
        spin(2);
        p.end(b0, 0, 1);
        let mut a1 = p.begin(0, 1);
        a1.deps.push(b0_id);
        p.end(a1, 0, 1);
        assert_eq!((a0_id, b0_id), (0, 1));
        let r = p.analyse().unwrap();
        assert_eq!(r.tasks, 3);
        assert_eq!((r.message_edges, r.gvt_edges, r.dropped_edges), (1, 1, 0));
        // Every task is on one chain (a0 -> a1, b0 -> a1): span = b0 + a1 or a0 + a1, both
        // shorter than the work, and b0 and a0 overlap.
        assert!(r.span < r.work, "{r:?}");
        assert!(r.span >= 0.002, "{r:?}");
    }
}
