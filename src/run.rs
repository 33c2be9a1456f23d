//! The run loop: a scene, an engine, the sinks, the progress bar and the summary, as a library
//! function ([`run_scene`]) so that the `timewarp` binary, tests and benches share it.
//!
//! A run of `S` seconds commits `round(S * ticks_per_second / frame_ticks)` frames after the
//! initial frame 0; each is handed to the sink as it is committed, then `finish` publishes the
//! outputs (a failed run never calls it, so the CSV sink leaves no partial file). The frame
//! engine (DESIGN.md, "The two engines") steps one frame per call; the warp engine
//! ([`crate::warp::run_warp`]) runs on its own worker threads and hands each frame over as the
//! GVT commits it. Wall time covers the engine's construction, every step and the sinks: what a
//! user waits for.

use std::fmt;
use std::io;
use std::time::{Duration, Instant};

use crate::checkpoint::{Checkpointer, EngineState};
use crate::dynamics::BodyState;
use crate::frame::{FrameConfig, FrameEngine};
use crate::output::{FrameSink, Progress, RunSummary};
use crate::scene::{Scene, World};
use crate::warp::group_rules::Island;

/// Which engine runs the scene (`--engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// Object-centric timewarp (the product).
    Warp,
    /// The frame-centric baseline.
    Frame,
}

/// What guards the shared structures of the warp engine (`--backend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    Stm,
    Locks,
}

impl Default for Backend {
    /// The build's own default guard (`stm` when compiled in), so that a default run works in
    /// a locks-only build too.
    fn default() -> Self {
        match crate::sync::Backend::default().name() {
            "stm" => Backend::Stm,
            _ => Backend::Locks,
        }
    }
}

impl Backend {
    /// The name `--backend` takes (and the cargo feature that compiles it in).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Stm => "stm",
            Backend::Locks => "locks",
        }
    }
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Warp => "warp",
            EngineKind::Frame => "frame",
        }
    }
}

/// How to run a scene.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOptions {
    pub engine: EngineKind,
    /// Accepted for the warp engine; the frame engine has no shared structures to guard.
    pub backend: Backend,
    /// Worker threads, at least 1.
    pub threads: usize,
    /// Simulated seconds; `None` means the scene's `world.seconds`.
    pub seconds: Option<f64>,
    /// Show a progress bar (only ever drawn on a terminal).
    pub progress: bool,
    /// The scene's name or path, for the summary.
    pub label: String,
    /// Warp engine: record every task and report the parallelism estimate
    /// ([`crate::warp::profile`]) in the summary. Off by default: it costs a little per task.
    pub parallelism: bool,
    /// Stop after this much wall time (for benchmarks): the frames committed by then are
    /// handed out and finished as a shorter run, and the summary says `time_limited`.
    pub time_limit: Option<Duration>,
    /// Warp engine: contact groups ([`crate::warp::WarpConfig::groups`]).
    pub groups: bool,
    /// Warp engine: speculate as far as the window at all times instead of the adaptive lead
    /// ([`crate::warp::WarpConfig::full_window`]).
    pub full_window: bool,
    /// Warp engine: the TVHT's time slice in ticks ([`crate::warp::WarpConfig::tvht_span`]).
    pub tvht_span: Option<u64>,
    /// Warp engine: the longest span a body flies as one record
    /// ([`crate::warp::WarpConfig::max_span`]).
    pub max_span: Option<u64>,
    /// Whether islands (frame engine, [`FrameConfig::sleep`]) and contact groups (warp engine,
    /// [`crate::warp::WarpConfig::sleep`]) may fall asleep: `--sleep`, on by default. Off,
    /// nothing ever sleeps.
    pub sleep: bool,
    /// Warp engine with contact groups: the island solver's substep in ticks
    /// ([`crate::warp::WarpConfig::group_substep`]; `None`: the default,
    /// [`crate::warp::group_rules::GROUP_SUBSTEP`]).
    pub group_substep: Option<u64>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            engine: EngineKind::Frame,
            backend: Backend::default(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            seconds: None,
            progress: false,
            label: String::new(),
            parallelism: false,
            time_limit: None,
            groups: false,
            full_window: false,
            tvht_span: None,
            max_span: None,
            sleep: true,
            group_substep: None,
        }
    }
}

/// Why a run could not start or finish. `Display` is one line.
#[derive(Debug)]
pub enum RunError {
    /// The options do not make sense for this scene.
    Invalid(String),
    /// The engine could not start (e.g. the OS refused its worker threads).
    Engine(String),
    /// A sink failed (the message names the file).
    Output(io::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Invalid(m) => f.write_str(m),
            RunError::Engine(m) => f.write_str(m),
            RunError::Output(e) => write!(f, "cannot write output: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

/// The most frames a run may ask for (about 530 years at 60 frames per second).
pub const MAX_FRAMES: u64 = 1 << 40;

/// The longest TVHT time slice `--tvht-span` takes, in ticks (a bucket then holds a cell's
/// entries over this many ticks; any power of two up to it gives the same frames).
pub const MAX_TVHT_SPAN: u64 = 1024;
/// The longest island solver substep `--group-substep` takes, in ticks (a frame of 1/60 s).
pub const MAX_GROUP_SUBSTEP: u64 = 16;

/// Frames in `seconds` of `world`: `round(seconds * ticks_per_second / frame_ticks)`.
pub fn frame_count(world: &World, seconds: f64) -> Result<u64, RunError> {
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(RunError::Invalid(format!(
            "seconds must be finite and positive, got {seconds}"
        )));
    }
    let frames =
        (seconds * f64::from(world.ticks_per_second) / f64::from(world.frame_ticks)).round();
    if frames > MAX_FRAMES as f64 {
        return Err(RunError::Invalid(format!(
            "{seconds:?} seconds is too long a run ({frames:e} frames, at most {MAX_FRAMES})"
        )));
    }
    Ok(frames as u64)
}

/// Checks `options` against `scene` before anything is created; returns the frame count.
pub fn check_options(scene: &Scene, options: &RunOptions) -> Result<u64, RunError> {
    if options.engine == EngineKind::Warp {
        warp_backend(options.backend)?;
    }
    if options.threads == 0 {
        return Err(RunError::Invalid(
            "threads must be at least 1, got 0".into(),
        ));
    }
    frame_count(&scene.world, options.seconds.unwrap_or(scene.world.seconds))
}

/// The guard of the warp engine's shared structures, or an error if this build lacks it.
fn warp_backend(b: Backend) -> Result<crate::sync::Backend, RunError> {
    b.name()
        .parse::<crate::sync::Backend>()
        .map_err(|e| RunError::Invalid(e.to_string()))
}

/// Runs `scene`, handing frame 0 and every committed frame to `sink`, then `sink.finish()`.
pub fn run_scene(
    scene: &Scene,
    options: &RunOptions,
    sink: &mut dyn FrameSink,
) -> Result<RunSummary, RunError> {
    run_scene_with(scene, options, None, sink, None)
}

/// A committed frame a run goes on from, and the engine's state there (from a checkpoint).
#[derive(Clone, Copy, Debug)]
pub struct Resume<'a> {
    pub frame: u64,
    pub state: &'a EngineState,
}

/// [`run_scene`], optionally going on from `resume` (then only the frames after it reach
/// `sink`) and writing checkpoints through `checkpoints`: periodic ones as it asks, and one at
/// the last frame once `sink` has finished. `options.seconds` is the total simulated time.
pub fn run_scene_with(
    scene: &Scene,
    options: &RunOptions,
    resume: Option<Resume<'_>>,
    sink: &mut dyn FrameSink,
    checkpoints: Option<&mut Checkpointer>,
) -> Result<RunSummary, RunError> {
    let frames = check_options(scene, options)?;
    if let Some(r) = resume {
        if r.state.engine() != options.engine {
            return Err(RunError::Invalid(format!(
                "the saved state is the {} engine's, not the {} engine's",
                r.state.engine().name(),
                options.engine.name()
            )));
        }
        if frames < r.frame {
            let dt = f64::from(scene.world.frame_ticks) / f64::from(scene.world.ticks_per_second);
            return Err(RunError::Invalid(format!(
                "the run is already at frame {} ({} s); resume to at least that time, not {} s ({frames} frames)",
                r.frame,
                r.frame as f64 * dt,
                options.seconds.unwrap_or(scene.world.seconds)
            )));
        }
    }
    if options.full_window && options.engine != EngineKind::Warp {
        return Err(RunError::Invalid(
            "--full-window is a warp engine option; the frame engine steps all bodies together"
                .into(),
        ));
    }
    if options.max_span.is_some() && options.engine != EngineKind::Warp {
        return Err(RunError::Invalid(
            "--max-span is a warp engine option; the frame engine has no spans".into(),
        ));
    }
    if let Some(span) = options.tvht_span {
        if options.engine != EngineKind::Warp {
            return Err(RunError::Invalid(
                "--tvht-span is a warp engine option; the frame engine has no TVHT".into(),
            ));
        }
        if !(span.is_power_of_two() && span <= MAX_TVHT_SPAN) {
            return Err(RunError::Invalid(format!(
                "--tvht-span must be a power of two from 1 to {MAX_TVHT_SPAN} ticks, not {span}"
            )));
        }
    }
    if options.groups && options.engine != EngineKind::Warp {
        return Err(RunError::Invalid(
            "contact groups (--groups on) are a warp engine option; the frame engine always \
             solves and sleeps by islands"
                .into(),
        ));
    }
    if let Some(s) = options.group_substep {
        if !options.groups {
            return Err(RunError::Invalid(
                "--group-substep is an option of the warp engine's contact groups (--groups on)"
                    .into(),
            ));
        }
        if !(s.is_power_of_two() && s <= MAX_GROUP_SUBSTEP) {
            return Err(RunError::Invalid(format!(
                "--group-substep must be a power of two from 1 to {MAX_GROUP_SUBSTEP} ticks, not {s}"
            )));
        }
    }
    if let Some(r) = resume {
        for (what, saved, asked) in [
            ("contact groups", r.state.groups(), options.groups),
            ("sleep", r.state.sleep(), options.sleep),
        ] {
            if saved != asked {
                return Err(RunError::Invalid(format!(
                    "the saved state is of a run with {what} {}, this run has {what} {}",
                    on_off(saved),
                    on_off(asked),
                )));
            }
        }
    }
    if options.engine == EngineKind::Warp {
        return run_warp_scene(scene, options, frames, resume, sink, checkpoints);
    }
    let first = resume.map_or(0, |r| r.frame);
    let progress = Progress::new(frames - first, options.progress);
    let start = Instant::now();
    let mut engine = match resume {
        None => {
            let config = FrameConfig {
                threads: options.threads,
                sleep: options.sleep,
                ..FrameConfig::default()
            };
            FrameEngine::try_new(scene, config).map_err(RunError::Engine)?
        }
        Some(Resume {
            state: EngineState::Frame(snap),
            ..
        }) => FrameEngine::from_snapshot(scene, options.threads, snap).map_err(RunError::Engine)?,
        Some(_) => unreachable!("the engine kind was checked above"),
    };
    let deadline = options.time_limit.map(|l| start + l);
    let mut ck = checkpoints;
    if resume.is_none() {
        sink.frame(engine.frame(), engine.time(), engine.states())
            .map_err(RunError::Output)?;
        if let Some(c) = ck.as_deref_mut() {
            c.observe(engine.frame(), engine.time(), engine.states())
                .map_err(RunError::Output)?;
        }
    }
    let mut stepped = first;
    for done in first + 1..=frames {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        engine.step();
        if let Some(fault) = engine.fault() {
            return Err(RunError::Engine(format!(
                "the simulation broke down: {fault}"
            )));
        }
        sink.frame(engine.frame(), engine.time(), engine.states())
            .map_err(RunError::Output)?;
        if let Some(c) = ck.as_deref_mut() {
            c.observe(engine.frame(), engine.time(), engine.states())
                .map_err(RunError::Output)?;
            if c.due(done) && done < frames {
                c.save(done, &EngineState::Frame(Box::new(engine.snapshot())))
                    .map_err(checkpoint_error)?;
            }
        }
        progress.set(done - first);
        stepped = done;
    }
    sink.finish().map_err(RunError::Output)?;
    if let Some(c) = ck {
        c.save(stepped, &EngineState::Frame(Box::new(engine.snapshot())))
            .map_err(checkpoint_error)?;
    }
    let wall_seconds = start.elapsed().as_secs_f64();
    progress.finish();

    let stats = engine.stats();
    Ok(RunSummary {
        scene: options.label.clone(),
        engine: options.engine.name().to_string(),
        threads: options.threads,
        bodies: scene.bodies.len(),
        dynamic_bodies: scene.bodies.iter().filter(|b| !b.is_static).count(),
        frames: stepped - first,
        simulated_seconds: (stepped - first) as f64 * engine.dt(),
        resumed_from: resume.map(|r| r.frame),
        time_limited: stepped < frames,
        wall_seconds,
        events: Some(0),
        rollbacks: Some(0),
        stm_commits: None,
        stm_aborts: None,
        contacts_max: stats.contacts_max,
        islands_awake_last: stats.islands_awake_last,
        islands_sleeping_last: stats.islands_sleeping_last,
        island_links: stats.island_links,
        island_splits: stats.island_splits,
        sleep_off: !options.sleep,
        warp: None,
    })
}

/// `on` or `off`, as the command line spells a switch.
fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// The group of each dynamic body (in scene order) for [`FrameSink::groups`]: the scene id of
/// its island's smallest body, with [`crate::output::GROUP_ASLEEP`] while the island sleeps.
/// `islands` name bodies by their index among the dynamic ones, whose scene ids are `dynamic`.
fn group_values(islands: &[Island], dynamic: &[usize]) -> Vec<u32> {
    let mut groups = vec![0; dynamic.len()];
    for island in islands {
        let Some(&first) = island.bodies.first() else {
            continue;
        };
        let mut value = dynamic[first as usize] as u32;
        if island.asleep {
            value |= crate::output::GROUP_ASLEEP;
        }
        for &b in &island.bodies {
            groups[b as usize] = value;
        }
    }
    groups
}

fn checkpoint_io(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("cannot write checkpoint {e}"))
}

fn checkpoint_error(e: io::Error) -> RunError {
    RunError::Output(checkpoint_io(e))
}

/// The warp engine's run: committed frames (dynamic bodies) are merged with the static bodies'
/// constant states into scene order for the sink.
fn run_warp_scene(
    scene: &Scene,
    options: &RunOptions,
    frames: u64,
    resume: Option<Resume<'_>>,
    sink: &mut dyn FrameSink,
    mut ck: Option<&mut Checkpointer>,
) -> Result<RunSummary, RunError> {
    let backend = warp_backend(options.backend)?;
    let first = resume.map_or(0, |r| r.frame);
    let progress = Progress::new(frames - first, options.progress);
    let start = Instant::now();
    let w = &scene.world;
    let frame_ticks = u64::from(w.frame_ticks);
    let dt = f64::from(w.frame_ticks) / f64::from(w.ticks_per_second);
    let mut all: Vec<BodyState> = scene.bodies.iter().map(BodyState::from_desc).collect();
    let dynamic: Vec<usize> = crate::output::dynamic_bodies(scene)
        .into_iter()
        .map(|i| i as usize)
        .collect();
    let (start_states, start_islands) = match resume {
        None => (None, None),
        Some(Resume {
            state: EngineState::Warp {
                states, anchors, ..
            },
            ..
        }) => (
            Some(states.as_slice()),
            Some(
                anchors
                    .iter()
                    .enumerate()
                    .map(|(b, &a)| Island::single(b as u32, a))
                    .collect::<Vec<_>>(),
            ),
        ),
        Some(Resume {
            state: EngineState::WarpGroups {
                states, islands, ..
            },
            ..
        }) => (Some(states.as_slice()), Some(islands.clone())),
        Some(_) => unreachable!("the engine kind was checked above"),
    };
    let config_substep = options
        .group_substep
        .unwrap_or(crate::warp::group_rules::GROUP_SUBSTEP);
    // The engine's state at a frame: the states and what the engine handed out with them,
    // the islands of the contact groups (with their anchors), or, without groups, one island
    // per body carrying its anchor.
    let state_at = |states: &[BodyState], islands: Vec<Island>| {
        if options.groups {
            EngineState::WarpGroups {
                states: states.to_vec(),
                islands,
                sleep: options.sleep,
                group_substep: config_substep,
            }
        } else {
            EngineState::Warp {
                states: states.to_vec(),
                anchors: islands.iter().map(|i| i.anchors[0]).collect(),
                sleep: options.sleep,
            }
        }
    };
    let config = crate::warp::WarpConfig {
        threads: options.threads,
        backend,
        window: None,
        full_window: options.full_window,
        chaos: None,
        groups: options.groups,
        tvht_span: options.tvht_span,
        max_span: options.max_span,
        sleep: options.sleep,
        group_substep: config_substep,
        anchor_cells: None,
    };
    // The engine's state at the last committed frame, for the final checkpoint (known only at
    // the frames the engine hands out islands for: with contact groups the groups, without
    // them each body's anchor).
    let mut last: Option<EngineState> = resume.map(|r| r.state.clone());
    // Islands are logged for periodic checkpoints, and at every frame for a sink that wants
    // the contact groups (every multiple of a checkpoint's period is a frame tick).
    let wants_groups = options.groups && sink.wants_groups();
    let islands_every = if wants_groups {
        Some(frame_ticks)
    } else {
        ck.as_deref()
            .map(|c| c.every().map_or(0, |e| e.saturating_mul(frame_ticks)))
    };
    let mut sink_error = None;
    let mut last_frame = first;
    let mut out =
        |tick: u64, states: &[BodyState], islands: Option<Vec<Island>>| -> Result<(), String> {
            let frame = tick / frame_ticks;
            if resume.is_some() && frame == first {
                return Ok(()); // the checkpoint's own frame: already committed and hashed
            }
            // Every body in scene order: the committed states as they are where no body is
            // static (the engine commits the dynamic ones, in scene order), else merged with
            // the static bodies' constant states.
            let all: &[BodyState] = if dynamic.len() == all.len() {
                states
            } else {
                for (&i, s) in dynamic.iter().zip(states) {
                    all[i] = *s;
                }
                &all
            };
            last_frame = frame;
            let mut fail = |e: io::Error| {
                let m = e.to_string();
                sink_error = Some(e);
                m
            };
            if let (true, Some(islands)) = (wants_groups, &islands) {
                sink.groups(frame, &group_values(islands, &dynamic))
                    .map_err(&mut fail)?;
            }
            sink.frame(frame, frame as f64 * dt, all)
                .map_err(&mut fail)?;
            if let Some(c) = ck.as_deref_mut() {
                c.observe(frame, frame as f64 * dt, all)
                    .map_err(&mut fail)?;
                let state = islands.map(|islands| state_at(states, islands));
                if c.due(frame) && frame < frames {
                    let Some(state) = &state else {
                        return Err(format!("no islands were handed out at frame {frame}"));
                    };
                    c.save(frame, state).map_err(|e| fail(checkpoint_io(e)))?;
                }
                last = state;
            }
            progress.set(frame - first);
            Ok(())
        };
    let control = crate::warp::WarpControl {
        profile: options.parallelism,
        deadline: options.time_limit.map(|l| start + l),
        islands_every,
    };
    let result = if frames == first {
        Ok(crate::warp::WarpStats::default()) // nothing left to simulate
    } else {
        crate::warp::run_warp_from_with(
            scene,
            config,
            crate::warp::WarpStart {
                tick: first * frame_ticks,
                states: start_states,
                islands: start_islands.as_deref(),
            },
            frames * frame_ticks,
            &mut out,
            control,
        )
    };
    let stats = match (result, sink_error) {
        (Err(_), Some(e)) => return Err(RunError::Output(e)),
        (Err(e), None) => return Err(RunError::Engine(e)),
        (Ok(s), _) => s,
    };
    sink.finish().map_err(RunError::Output)?;
    if let Some(c) = ck {
        let Some(state) = last else {
            return Err(RunError::Engine(format!(
                "no engine state to checkpoint at frame {last_frame} (the islands of that \
                 frame were not handed out)"
            )));
        };
        c.save(last_frame, &state).map_err(checkpoint_error)?;
    }
    let wall_seconds = start.elapsed().as_secs_f64();
    progress.finish();
    Ok(RunSummary {
        scene: options.label.clone(),
        engine: options.engine.name().to_string(),
        threads: options.threads,
        bodies: scene.bodies.len(),
        dynamic_bodies: dynamic.len(),
        frames: last_frame - first,
        simulated_seconds: (last_frame - first) as f64 * dt,
        resumed_from: resume.map(|r| r.frame),
        time_limited: last_frame < frames,
        wall_seconds,
        events: Some(stats.entities.events),
        rollbacks: Some(stats.entities.rollbacks),
        stm_commits: stats.stm_commits,
        stm_aborts: stats.stm_aborts,
        sleep_off: !options.sleep,
        warp: Some(stats),
        ..RunSummary::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{Checksum, CsvSink, Tee};
    use crate::scene::builtin;

    struct Frames(Vec<(u64, f64)>, bool);

    impl FrameSink for Frames {
        fn frame(&mut self, frame: u64, time: f64, states: &[BodyState]) -> io::Result<()> {
            assert!(!states.is_empty());
            self.0.push((frame, time));
            Ok(())
        }
        fn finish(&mut self) -> io::Result<()> {
            self.1 = true;
            Ok(())
        }
    }

    fn options(seconds: f64) -> RunOptions {
        RunOptions {
            threads: 1,
            seconds: Some(seconds),
            label: "test".into(),
            ..RunOptions::default()
        }
    }

    #[test]
    fn frame_counts_round_to_whole_frames() {
        let w = World::default();
        assert_eq!(frame_count(&w, 10.0).unwrap(), 600);
        assert_eq!(frame_count(&w, 0.1).unwrap(), 6);
        assert_eq!(frame_count(&w, 0.025).unwrap(), 2); // 1.5 frames rounds up
        assert_eq!(frame_count(&w, 0.001).unwrap(), 0);
        assert!(frame_count(&w, -1.0).is_err());
        assert!(frame_count(&w, f64::NAN).is_err());
        assert!(frame_count(&w, 1e300).is_err());
    }

    #[test]
    fn runs_every_frame_in_order_then_finishes() {
        let scene = builtin("parallel", Some(4)).unwrap();
        let mut log = Frames(Vec::new(), false);
        let summary = run_scene(&scene, &options(0.1), &mut log).unwrap();
        let frames: Vec<u64> = log.0.iter().map(|f| f.0).collect();
        assert_eq!(frames, (0..=6).collect::<Vec<_>>());
        assert!((log.0[6].1 - 0.1).abs() < 1e-12);
        assert!(log.1);
        assert_eq!(summary.frames, 6);
        assert_eq!(summary.dynamic_bodies, 4);
        assert!((summary.simulated_seconds - 0.1).abs() < 1e-12);
    }

    #[test]
    fn refuses_zero_threads() {
        let scene = builtin("parallel", Some(2)).unwrap();
        let mut log = Frames(Vec::new(), false);
        let none = RunOptions {
            threads: 0,
            ..options(0.1)
        };
        assert!(run_scene(&scene, &none, &mut log).is_err());
        let warp = RunOptions {
            engine: EngineKind::Warp,
            ..none
        };
        assert!(run_scene(&scene, &warp, &mut log).is_err());
        assert!(log.0.is_empty());
    }

    #[test]
    fn the_warp_engine_runs_every_frame_with_statics_in_place() {
        let scene = builtin("cylinders", Some(10)).unwrap();
        for backend in [Backend::Stm, Backend::Locks] {
            if warp_backend(backend).is_err() {
                continue;
            }
            let mut log = Frames(Vec::new(), false);
            let warp = RunOptions {
                engine: EngineKind::Warp,
                backend,
                threads: 2,
                ..options(0.1)
            };
            let s = run_scene(&scene, &warp, &mut log).unwrap();
            let frames: Vec<u64> = log.0.iter().map(|f| f.0).collect();
            assert_eq!(frames, (0..=6).collect::<Vec<_>>());
            assert!((log.0[6].1 - 0.1).abs() < 1e-12);
            assert!(log.1);
            assert_eq!(
                (s.engine.as_str(), s.frames, s.dynamic_bodies),
                ("warp", 6, 10)
            );
            let mut a = Checksum::new(&scene);
            run_scene(&scene, &warp, &mut a).unwrap();
            let mut b = Checksum::new(&scene);
            run_scene(
                &scene,
                &RunOptions {
                    threads: 1,
                    ..warp.clone()
                },
                &mut b,
            )
            .unwrap();
            assert_eq!(a.value(), b.value());
        }
    }

    #[test]
    fn a_time_limit_stops_both_engines_early_and_says_so() {
        // Bouncing never sleeps (pyramids do, and then 1000 s of frames took under 0.1 s).
        let scene = builtin("bouncing", Some(200)).unwrap();
        for engine in [EngineKind::Frame, EngineKind::Warp] {
            let mut log = Frames(Vec::new(), false);
            let o = RunOptions {
                engine,
                time_limit: Some(Duration::from_millis(100)),
                groups: false,
                ..options(1000.0)
            };
            let s = run_scene(&scene, &o, &mut log).unwrap();
            assert!(s.time_limited, "{engine:?}");
            assert!(s.frames < 60_000 && s.wall_seconds < 30.0, "{s:?}");
            // The warp engine may stop before even frame 0 is committed.
            let handed = log.0.len() as u64;
            assert!(handed == s.frames + 1 || (engine == EngineKind::Warp && handed == 0));
            assert!(s.to_string().contains("(stopped at the time limit)"));
            assert!(log.1, "a shorter run is still finished");
        }
    }

    /// A sink that fails at a given frame, as a full disk would.
    struct FailAt(u64);

    impl FrameSink for FailAt {
        fn frame(&mut self, frame: u64, _: f64, _: &[BodyState]) -> io::Result<()> {
            if frame == self.0 {
                Err(io::Error::other("disk full"))
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn a_failed_run_publishes_no_csv() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let scene = builtin("parallel", Some(4)).unwrap();
        let mut csv = CsvSink::create(&path, &scene).unwrap();
        let mut fail = FailAt(3);
        let result = {
            let mut tee = Tee::new();
            tee.push(&mut csv);
            tee.push(&mut fail);
            run_scene(&scene, &options(0.1), &mut tee)
        };
        let e = result.unwrap_err();
        assert_eq!(e.to_string(), "cannot write output: disk full");
        drop(csv);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn identical_runs_have_identical_checksums() {
        let scene = builtin("bouncing", Some(20)).unwrap();
        let run = |threads| {
            let mut c = Checksum::new(&scene);
            let o = RunOptions {
                threads,
                ..options(0.2)
            };
            run_scene(&scene, &o, &mut c).unwrap();
            (c.value(), c.frames())
        };
        let (a, frames) = run(1);
        assert_eq!(frames, 13);
        assert_eq!(run(3), (a, frames));
        assert_ne!(a, Checksum::new(&scene).value());
    }
}
