//! # `timewarp bench`: scenes x sizes x threads x backends x engines
//!
//! DESIGN.md, "Benchmarks": speed is claimed only from benchmarks. A sweep ([`Sweep`]) lists the
//! scene cases (a built-in scene at a size), the engines, the warp engine's backends and the
//! thread counts; every combination is one *configuration*. Each configuration is run through
//! the library's run loop ([`crate::run::run_scene`], with no output sink: what a user runs
//! without `--out`), so the figures measure what users run:
//!
//! * **warm-up**: `warmup` rounds of every configuration first, not timed. With the
//!   parallelism estimate on, the first warm-up run of each warp configuration is the profiled
//!   one ([`crate::warp::profile`]), so the timed runs pay nothing for it;
//! * **repeats**, *interleaved*: round `r` runs every configuration once, forwards on even
//!   rounds and backwards on odd ones, so that a drift of the machine (other jobs, heat) spreads
//!   over all configurations instead of landing on the ones run last;
//! * **a time limit per run** (`RunOptions::time_limit`): a configuration whose warm-up run
//!   hits it is not repeated; its one run is reported, marked, from the frames it committed
//!   (the warp engine on a scene with resting contact can take hours for a simulated second).
//!
//! Per configuration ([`Row`]): the median, minimum and maximum of wall seconds per simulated
//! second over the repeats, the real-time factor (its inverse), the speedup over the same
//! configuration at 1 thread (ratio of medians) and the efficiency (speedup / threads); for the
//! warp engine the medians of rollbacks and rolled-back ticks, the STM abort ratio
//! (conflict aborts / (aborts + commits)) and mean read- and write-set sizes over all timed runs
//! (from [`crate::sync::stats`](mod@crate::sync::stats), which includes
//! `timewarp_stm::stats`), keys per critical section (both backends), and the parallelism
//! estimate. [`report`] prints the Markdown table and writes the JSON; [`plot`] draws the SVGs.
//! [`peer_chart`] draws the tables of the rapier3d comparison (`peer/`) as a bar chart
//! (`timewarp bench chart`).
//!
//! One abort ratio does not say which shared structure the aborts come from, so each run also
//! keeps the section counters per class of table ([`crate::sync::Class`]: TVHT, GVT buffer,
//! contact groups), and a warp STM row's JSON gives each class's abort ratio
//! (`stm_abort_ratio_by_class`: re-run attempts over attempts, for the classes that ran
//! sections). These count every re-run, whatever its cause, where the overall ratio counts
//! conflict aborts only, so their attempt-weighted mean can sit a little above it. The
//! Markdown table, already wide, keeps its one column.

pub mod peer_chart;
pub mod plot;
pub mod report;

use std::time::Duration;

use serde::Serialize;

use crate::output::{FrameSink, RunSummary};
use crate::run::{Backend, EngineKind, RunOptions, run_scene};
use crate::scene::{Scene, builtin};

/// One scene at one size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub scene: String,
    /// Bodies asked for (the built-in may round: pyramids are whole pyramids).
    pub bodies: usize,
}

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub cases: Vec<Case>,
    pub engines: Vec<EngineKind>,
    /// Backends of the warp engine (the frame engine has no shared structures to guard).
    pub backends: Vec<Backend>,
    pub threads: Vec<usize>,
    /// Simulated seconds of a frame-engine run and of a warp-engine run.
    pub frame_seconds: f64,
    pub warp_seconds: f64,
    /// Untimed rounds first, then timed rounds.
    pub warmup: usize,
    pub repeats: usize,
    /// Wall time after which a run stops (see the module docs).
    pub time_limit: Duration,
    /// Profile the first warm-up run of each warp configuration.
    pub parallelism: bool,
}

/// The backends this build carries.
pub fn compiled_backends() -> Vec<Backend> {
    crate::sync::Backend::COMPILED
        .iter()
        .map(|b| match b.name() {
            "stm" => Backend::Stm,
            _ => Backend::Locks,
        })
        .collect()
}

/// 1, 2, 4, ... up to `max`, and `max` itself.
pub fn thread_ladder(max: usize) -> Vec<usize> {
    let max = max.max(1);
    let mut t: Vec<usize> = std::iter::successors(Some(1usize), |&x| Some(x * 2))
        .take_while(|&x| x < max)
        .collect();
    t.push(max);
    t
}

fn cases(list: &[(&str, &[usize])]) -> Vec<Case> {
    list.iter()
        .flat_map(|&(scene, sizes)| {
            sizes.iter().map(move |&bodies| Case {
                scene: scene.to_string(),
                bodies,
            })
        })
        .collect()
}

impl Sweep {
    /// The full sweep: parallel, cylinders and bouncing at N = 500 and 2000, pyramids at
    /// 10010; both engines; every compiled backend; 1, 2, 4, ... up to `max_threads`.
    pub fn full(max_threads: usize) -> Sweep {
        Sweep {
            cases: cases(&[
                ("parallel", &[500, 2000]),
                ("cylinders", &[500, 2000]),
                ("bouncing", &[500, 2000]),
                ("pyramids", &[10010]),
            ]),
            engines: vec![EngineKind::Frame, EngineKind::Warp],
            backends: compiled_backends(),
            threads: thread_ladder(max_threads),
            frame_seconds: 2.0,
            warp_seconds: 0.1,
            warmup: 1,
            repeats: 5,
            time_limit: Duration::from_secs(60),
            parallelism: true,
        }
    }

    /// A small sweep, under 3 minutes on a 2-core machine: parallel, cylinders and bouncing at
    /// 200 and 500 bodies, pyramids at 550, 1 and 2 threads, short spans (the warp engine is
    /// still hundreds of times slower than the frame engine on contact scenes), 3 repeats, 5 s
    /// per run at most.
    pub fn quick() -> Sweep {
        Sweep {
            cases: cases(&[
                ("parallel", &[200, 500]),
                ("cylinders", &[200, 500]),
                ("bouncing", &[200, 500]),
                ("pyramids", &[550]),
            ]),
            engines: vec![EngineKind::Frame, EngineKind::Warp],
            backends: compiled_backends(),
            threads: vec![1, 2],
            frame_seconds: 1.0,
            warp_seconds: 0.05,
            warmup: 1,
            repeats: 3,
            time_limit: Duration::from_secs(5),
            parallelism: true,
        }
    }

    /// Every configuration, in run order.
    pub fn configs(&self) -> Vec<Config> {
        let mut out = Vec::new();
        for case in &self.cases {
            for &engine in &self.engines {
                let backends: Vec<Option<Backend>> = match engine {
                    EngineKind::Frame => vec![None],
                    EngineKind::Warp => self.backends.iter().map(|&b| Some(b)).collect(),
                };
                for backend in backends {
                    for &threads in &self.threads {
                        out.push(Config {
                            scene: case.scene.clone(),
                            bodies: case.bodies,
                            engine,
                            backend,
                            threads,
                            seconds: match engine {
                                EngineKind::Frame => self.frame_seconds,
                                EngineKind::Warp => self.warp_seconds,
                            },
                            groups: false,
                            sleep: true,
                        });
                    }
                }
            }
        }
        out
    }
}

/// One configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub scene: String,
    pub bodies: usize,
    pub engine: EngineKind,
    /// `None` for the frame engine.
    pub backend: Option<Backend>,
    pub threads: usize,
    pub seconds: f64,
    /// Warp engine: contact groups (`timewarp bench` measures without: the paper's method).
    pub groups: bool,
    /// Whether islands and contact groups may fall asleep (`--sleep`; on in `timewarp bench`).
    pub sleep: bool,
}

impl Config {
    pub fn backend_name(&self) -> &'static str {
        self.backend.map_or("-", Backend::name)
    }

    /// The same configuration at another thread count.
    fn same_but_threads(&self, other: &Config) -> bool {
        self.scene == other.scene
            && self.bodies == other.bodies
            && self.engine == other.engine
            && self.backend == other.backend
            && self.groups == other.groups
            && self.sleep == other.sleep
    }
}

/// What one run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sample {
    pub wall_seconds: f64,
    pub simulated_seconds: f64,
    /// Simulated seconds of one frame (for a run stopped before its first frame).
    pub frame_seconds: f64,
    pub frames: u64,
    pub time_limited: bool,
    pub events: u64,
    pub rollbacks: u64,
    pub rolled_back_ticks: u64,
    pub antievents: u64,
    /// Critical sections, their attempts and the keys they named (both backends).
    pub sections: u64,
    pub attempts: u64,
    pub keys: u64,
    /// The same (and lock acquisitions) per class of table, for the classes that ran sections.
    pub by_class: crate::sync::ByClass,
    /// STM commits (all, and read-write ones), conflict aborts, read- and write-set entries.
    pub stm_commits: u64,
    pub stm_rw_commits: u64,
    pub stm_aborts: u64,
    pub stm_read_set: u64,
    pub stm_write_set: u64,
}

impl Sample {
    /// Wall seconds per simulated second. A run stopped before its first frame gives a lower
    /// bound: its wall time over one frame's simulated time ([`Sample::at_least`]).
    pub fn per_second(&self) -> f64 {
        if self.simulated_seconds > 0.0 {
            self.wall_seconds / self.simulated_seconds
        } else if self.frame_seconds > 0.0 {
            self.wall_seconds / self.frame_seconds
        } else {
            f64::INFINITY
        }
    }

    /// [`Sample::per_second`] is only a lower bound (no frame committed before the limit).
    pub fn at_least(&self) -> bool {
        self.simulated_seconds <= 0.0
    }
}

/// The parallelism estimate of one run, as reported.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub tasks: u64,
    pub work_seconds: f64,
    pub span_seconds: f64,
    pub span_without_gvt_seconds: f64,
    pub work_over_span: f64,
    pub message_edges: u64,
    pub gvt_edges: u64,
    pub dropped_edges: u64,
    /// `[P, speedup bound, greedy speedup]` for P = 2, 4, 8, 16, 64.
    pub bounds: [[f64; 3]; 5],
}

/// The worker counts the estimate is given for.
pub const ESTIMATE_WORKERS: [usize; 5] = [2, 4, 8, 16, 64];

impl From<crate::warp::Parallelism> for Estimate {
    fn from(p: crate::warp::Parallelism) -> Self {
        Estimate {
            tasks: p.tasks,
            work_seconds: p.work,
            span_seconds: p.span,
            span_without_gvt_seconds: p.span_without_gvt,
            work_over_span: p.ratio(),
            message_edges: p.message_edges,
            gvt_edges: p.gvt_edges,
            dropped_edges: p.dropped_edges,
            bounds: ESTIMATE_WORKERS.map(|w| [w as f64, p.bound(w), p.greedy(w)]),
        }
    }
}

impl Estimate {
    /// The speedup bound at `p` workers (one of [`ESTIMATE_WORKERS`]).
    pub fn bound(&self, p: usize) -> Option<f64> {
        self.bounds.iter().find(|b| b[0] == p as f64).map(|b| b[1])
    }
}

/// One configuration's results.
#[derive(Clone, Debug)]
pub struct Row {
    pub config: Config,
    /// Dynamic bodies of the scene as built.
    pub dynamic_bodies: usize,
    pub samples: Vec<Sample>,
    /// The warm-up hit the time limit: the one sample is that run.
    pub too_slow: bool,
    pub estimate: Option<Estimate>,
    /// Median wall seconds per simulated second of the 1-thread configuration over this one's.
    pub speedup: Option<f64>,
}

/// The median of `v` (sorted in place; the mean of the middle two for an even count, NaN for
/// none): how every figure of the benches, `peer/` and `examples/floor.rs` is taken.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Row {
    fn per_second(&self) -> Vec<f64> {
        self.samples.iter().map(Sample::per_second).collect()
    }
    /// Median wall seconds per simulated second.
    pub fn median(&self) -> f64 {
        median(&mut self.per_second())
    }
    pub fn min(&self) -> f64 {
        self.per_second().into_iter().fold(f64::INFINITY, f64::min)
    }
    pub fn max(&self) -> f64 {
        self.per_second().into_iter().fold(0.0, f64::max)
    }
    /// Simulated seconds per wall second (median).
    pub fn real_time_factor(&self) -> f64 {
        1.0 / self.median()
    }
    pub fn efficiency(&self) -> Option<f64> {
        self.speedup.map(|s| s / self.config.threads as f64)
    }
    pub fn time_limited(&self) -> bool {
        self.too_slow || self.samples.iter().any(|s| s.time_limited)
    }
    /// The figures are lower bounds: a run committed no frame before the time limit.
    pub fn at_least(&self) -> bool {
        self.samples.iter().any(Sample::at_least)
    }
    fn median_of(&self, f: impl Fn(&Sample) -> u64) -> f64 {
        median(&mut self.samples.iter().map(|s| f(s) as f64).collect::<Vec<_>>())
    }
    pub fn rollbacks(&self) -> f64 {
        self.median_of(|s| s.rollbacks)
    }
    pub fn rolled_back_ticks(&self) -> f64 {
        self.median_of(|s| s.rolled_back_ticks)
    }
    pub fn events(&self) -> f64 {
        self.median_of(|s| s.events)
    }
    fn sum(&self, f: impl Fn(&Sample) -> u64) -> u64 {
        self.samples.iter().map(f).sum()
    }
    /// Conflict aborts / (aborts + commits) over the timed runs (STM backend only).
    pub fn stm_abort_ratio(&self) -> Option<f64> {
        if self.config.backend != Some(Backend::Stm) {
            return None;
        }
        let (a, c) = (self.sum(|s| s.stm_aborts), self.sum(|s| s.stm_commits));
        (a + c > 0).then(|| a as f64 / (a + c) as f64)
    }
    /// Per class of table that ran sections, its re-run attempts over its attempts over the
    /// timed runs (STM backend only): which structure the aborts come from.
    pub fn stm_abort_ratio_by_class(&self) -> Option<Vec<(crate::sync::Class, f64)>> {
        if self.config.backend != Some(Backend::Stm) {
            return None;
        }
        let sum = self
            .samples
            .iter()
            .fold(crate::sync::ByClass::default(), |sum, s| {
                sum.plus(&s.by_class)
            });
        let ratios: Vec<_> = sum.ran().map(|(c, s)| (c, s.retry_ratio())).collect();
        (!ratios.is_empty()).then_some(ratios)
    }
    /// Mean read- and write-set sizes of committed read-write transactions (STM backend).
    pub fn stm_sets(&self) -> Option<(f64, f64)> {
        if self.config.backend != Some(Backend::Stm) {
            return None;
        }
        let rw = self.sum(|s| s.stm_rw_commits);
        (rw > 0).then(|| {
            (
                self.sum(|s| s.stm_read_set) as f64 / rw as f64,
                self.sum(|s| s.stm_write_set) as f64 / rw as f64,
            )
        })
    }
    /// Mean keys named per critical section (both backends of the warp engine).
    pub fn keys_per_section(&self) -> Option<f64> {
        let n = self.sum(|s| s.sections);
        (n > 0).then(|| self.sum(|s| s.keys) as f64 / n as f64)
    }
}

/// A sink that drops every frame (a benchmark run writes nothing).
struct Discard;

impl FrameSink for Discard {
    fn frame(&mut self, _: u64, _: f64, _: &[crate::dynamics::BodyState]) -> std::io::Result<()> {
        Ok(())
    }
}

/// One run of `config` on `scene` through [`run_scene`].
pub fn run_once(
    scene: &Scene,
    config: &Config,
    time_limit: Duration,
    profile: bool,
) -> Result<(Sample, Option<Estimate>), String> {
    let options = RunOptions {
        engine: config.engine,
        backend: config.backend.unwrap_or(Backend::Stm),
        threads: config.threads,
        seconds: Some(config.seconds),
        progress: false,
        label: config.scene.clone(),
        parallelism: profile && config.engine == EngineKind::Warp,
        time_limit: Some(time_limit),
        groups: config.groups && config.engine == EngineKind::Warp,
        full_window: false,
        tvht_span: None,
        max_span: None,
        sleep: config.sleep,
        group_substep: None,
    };
    let before = crate::sync::stats();
    let summary = run_scene(scene, &options, &mut Discard).map_err(|e| {
        format!(
            "{} N={} {} {} T={}: {e}",
            config.scene,
            config.bodies,
            config.engine.name(),
            config.backend_name(),
            config.threads
        )
    })?;
    let sync = crate::sync::stats().since(&before);
    let (mut s, e) = sample(&summary, &sync);
    s.frame_seconds = f64::from(scene.world.frame_ticks) / f64::from(scene.world.ticks_per_second);
    Ok((s, e))
}

fn sample(summary: &RunSummary, sync: &crate::sync::SyncStats) -> (Sample, Option<Estimate>) {
    let w = summary.warp.unwrap_or_default();
    #[allow(unused_mut)]
    let mut s = Sample {
        wall_seconds: summary.wall_seconds,
        simulated_seconds: summary.simulated_seconds,
        frames: summary.frames,
        time_limited: summary.time_limited,
        events: w.entities.events,
        rollbacks: w.entities.rollbacks,
        rolled_back_ticks: w.entities.rolled_back_ticks,
        antievents: w.entities.antievents,
        sections: sync.sections,
        attempts: sync.attempts,
        keys: sync.keys,
        by_class: sync.by_class,
        ..Sample::default()
    };
    #[cfg(feature = "stm")]
    {
        s.stm_commits = sync.stm.commits;
        s.stm_rw_commits = sync.stm.commits - sync.stm.read_only_commits;
        s.stm_aborts = sync.stm.conflict_aborts();
        s.stm_read_set = sync.stm.read_set;
        s.stm_write_set = sync.stm.write_set;
    }
    (s, w.parallelism.map(Estimate::from))
}

/// Runs the sweep; `log` hears one line per run.
pub fn run_sweep(sweep: &Sweep, mut log: impl FnMut(&str)) -> Result<Vec<Row>, String> {
    if sweep.repeats == 0 {
        return Err("repeats must be at least 1".into());
    }
    let configs = sweep.configs();
    if configs.is_empty() {
        return Err("the sweep is empty (no scene, engine, backend or thread count)".into());
    }
    let mut scenes: Vec<(Case, Scene)> = Vec::new();
    for c in &sweep.cases {
        let scene = builtin(&c.scene, Some(c.bodies)).map_err(|e| e.to_string())?;
        scenes.push((c.clone(), scene));
    }
    let scene_of = |c: &Config| {
        &scenes
            .iter()
            .find(|(k, _)| k.scene == c.scene && k.bodies == c.bodies)
            .expect("every configuration's case was built")
            .1
    };
    let mut rows: Vec<Row> = configs
        .iter()
        .map(|c| Row {
            config: c.clone(),
            dynamic_bodies: scene_of(c).bodies.iter().filter(|b| !b.is_static).count(),
            samples: Vec::new(),
            too_slow: false,
            estimate: None,
            speedup: None,
        })
        .collect();
    let total = rows.len();
    let describe = |c: &Config| {
        format!(
            "{} N={} {} {} T={}",
            c.scene,
            c.bodies,
            c.engine.name(),
            c.backend_name(),
            c.threads
        )
    };
    // Warm-up: at least one round when the estimate is wanted (its run is the profiled one).
    let warmup = sweep.warmup.max(usize::from(sweep.parallelism));
    for round in 0..warmup {
        for (i, row) in rows.iter_mut().enumerate() {
            let profile = sweep.parallelism && round == 0;
            let (s, est) = run_once(
                scene_of(&row.config),
                &row.config,
                sweep.time_limit,
                profile,
            )?;
            log(&format!(
                "warm-up {}/{warmup} [{}/{total}] {}: {:.4} s/s{}",
                round + 1,
                i + 1,
                describe(&row.config),
                s.per_second(),
                if s.time_limited { " (time limit)" } else { "" }
            ));
            if est.is_some() {
                row.estimate = est;
            }
            if s.time_limited && !row.too_slow {
                row.too_slow = true;
                row.samples.push(s);
            }
        }
    }
    for round in 0..sweep.repeats {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..total).collect()
        } else {
            (0..total).rev().collect()
        };
        for i in order {
            let row = &mut rows[i];
            if row.too_slow {
                continue;
            }
            let (s, _) = run_once(scene_of(&row.config), &row.config, sweep.time_limit, false)?;
            log(&format!(
                "run {}/{} [{}/{total}] {}: {:.4} s/s{}",
                round + 1,
                sweep.repeats,
                i + 1,
                describe(&row.config),
                s.per_second(),
                if s.time_limited { " (time limit)" } else { "" }
            ));
            row.samples.push(s);
        }
    }
    let medians: Vec<f64> = rows.iter().map(Row::median).collect();
    for i in 0..rows.len() {
        let base = rows
            .iter()
            .position(|r| r.config.threads == 1 && r.config.same_but_threads(&rows[i].config));
        rows[i].speedup = base
            .filter(|&b| {
                !rows[b].at_least()
                    && !rows[i].at_least()
                    && medians[b].is_finite()
                    && medians[i].is_finite()
                    && medians[i] > 0.0
            })
            .map(|b| medians[b] / medians[i]);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ladders_double_up_to_the_maximum() {
        assert_eq!(thread_ladder(1), vec![1]);
        assert_eq!(thread_ladder(2), vec![1, 2]);
        assert_eq!(thread_ladder(6), vec![1, 2, 4, 6]);
        assert_eq!(thread_ladder(16), vec![1, 2, 4, 8, 16]);
    }

    #[test]
    fn configurations_cross_everything_and_the_frame_engine_has_no_backend() {
        let mut s = Sweep::quick();
        s.backends = vec![Backend::Stm, Backend::Locks];
        let c = s.configs();
        // 7 cases x (frame: 1 + warp: 2 backends) x 2 thread counts.
        assert_eq!(c.len(), 7 * 3 * 2);
        assert!(
            c.iter()
                .all(|c| (c.engine == EngineKind::Frame) == c.backend.is_none())
        );
        assert!(c.iter().any(|c| c.backend == Some(Backend::Locks)));
    }

    #[test]
    fn medians_and_speedups_come_from_the_repeats() {
        let mut v = [3.0, 1.0, 2.0];
        assert_eq!(median(&mut v), 2.0);
        let mut v = [4.0, 1.0, 2.0, 3.0];
        assert_eq!(median(&mut v), 2.5);
        let s = |w: f64| Sample {
            wall_seconds: w,
            simulated_seconds: 0.5,
            ..Sample::default()
        };
        let row = Row {
            config: Sweep::quick().configs()[1].clone(),
            dynamic_bodies: 500,
            samples: vec![s(1.0), s(3.0), s(2.0)],
            too_slow: false,
            estimate: None,
            speedup: Some(1.5),
        };
        assert_eq!((row.median(), row.min(), row.max()), (4.0, 2.0, 6.0));
        assert_eq!(row.real_time_factor(), 0.25);
        assert_eq!(row.efficiency(), Some(1.5 / row.config.threads as f64));
    }

    #[test]
    fn a_tiny_sweep_runs_through_the_run_loop() {
        let sweep = Sweep {
            cases: vec![Case {
                scene: "parallel".into(),
                bodies: 8,
            }],
            engines: vec![EngineKind::Frame, EngineKind::Warp],
            backends: compiled_backends(),
            threads: vec![1, 2],
            frame_seconds: 0.1,
            warp_seconds: 0.05,
            warmup: 1,
            repeats: 2,
            time_limit: Duration::from_secs(60),
            parallelism: true,
        };
        let mut lines = 0;
        let rows = run_sweep(&sweep, |_| lines += 1).unwrap();
        assert_eq!(rows.len(), 2 * (1 + compiled_backends().len()));
        assert_eq!(lines, rows.len() * 3);
        for r in &rows {
            assert_eq!(r.samples.len(), 2);
            assert!(r.median() > 0.0 && r.median().is_finite());
            assert!(r.speedup.is_some());
            assert_eq!(r.config.threads == 1, r.speedup == Some(1.0));
            assert_eq!(
                r.estimate.is_some(),
                r.config.engine == EngineKind::Warp,
                "{r:?}"
            );
        }
        let warp = rows
            .iter()
            .find(|r| r.config.engine == EngineKind::Warp)
            .unwrap();
        let e = warp.estimate.unwrap();
        assert!(e.work_seconds >= e.span_seconds && e.span_seconds > 0.0);
        assert!(warp.keys_per_section().is_some());
        // Per-class abort ratios for STM rows only, naming at least the TVHT and the GVT
        // buffer, which every warp run uses (the counters are process-wide: other tests may add
        // classes, never remove these), each a ratio.
        for r in rows.iter().filter(|r| r.config.engine == EngineKind::Warp) {
            let by_class = r.stm_abort_ratio_by_class();
            assert_eq!(
                by_class.is_some(),
                r.config.backend == Some(Backend::Stm),
                "{r:?}"
            );
            if let Some(v) = by_class {
                let classes: Vec<_> = v.iter().map(|(c, _)| *c).collect();
                assert!(classes.contains(&crate::sync::Class::Tvht), "{v:?}");
                assert!(classes.contains(&crate::sync::Class::Gvt), "{v:?}");
                assert!(v.iter().all(|(_, a)| (0.0..=1.0).contains(a)), "{v:?}");
            }
        }
        let json = report::json(&report::Machine::here(), &sweep, &rows, 1.0);
        let stm_rows = rows
            .iter()
            .filter(|r| r.stm_abort_ratio_by_class().is_some())
            .count();
        assert_eq!(
            json.matches("\"stm_abort_ratio_by_class\": {").count(),
            stm_rows,
            "{json}"
        );
        assert!(stm_rows == 0 || json.contains("\"TVHT\": "), "{json}");
    }

    #[test]
    fn a_run_past_its_time_limit_is_marked_and_not_repeated() {
        let sweep = Sweep {
            cases: vec![Case {
                scene: "bouncing".into(),
                bodies: 50,
            }],
            engines: vec![EngineKind::Frame],
            backends: vec![],
            threads: vec![1],
            frame_seconds: 1000.0,
            warp_seconds: 0.05,
            warmup: 1,
            repeats: 3,
            time_limit: Duration::from_millis(50),
            parallelism: false,
        };
        let rows = run_sweep(&sweep, |_| {}).unwrap();
        assert_eq!(rows.len(), 1);
        assert!(rows[0].too_slow && rows[0].time_limited());
        assert_eq!(rows[0].samples.len(), 1);
        assert!(rows[0].samples[0].frames > 0);
        assert!(rows[0].median().is_finite());
    }
}
