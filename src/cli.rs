//! The `timewarp` command line (DESIGN.md, "Command line (contract)").
//!
//! ```text
//! timewarp run [SCENE] [--bodies N] [--seconds S] [--engine warp|frame] [--threads T]
//!              [--backend stm|locks] [--out FILE] [--checksum] [--quiet] [--parallelism]
//!              [--groups on|off] [--sleep on|off] [--group-substep TICKS] [--full-window]
//!              [--checkpoint FILE [--checkpoint-every S]]
//! timewarp resume FILE [--seconds S] [--threads T] [--backend stm|locks] [--out FILE]
//!              [--checksum] [--quiet] [--checkpoint FILE [--checkpoint-every S]]
//! timewarp view FILE [--out PAGE.html] [--scene SCENE [--bodies N]] [--raw] [--quiet]
//! timewarp scenes [--export NAME [--bodies N]]
//! timewarp bench [--quick] [--scenes LIST] [--sizes LIST] [--threads LIST] [--backends LIST]
//!                [--engines LIST] [--seconds S] [--warp-seconds S] [--warmup W] [--repeats R]
//!                [--time-limit S] [--no-parallelism] [--out-dir DIR] [--quiet]
//! timewarp bench chart PEER.md... --out FILE.svg [--title TEXT]
//! ```
//!
//! `SCENE` is a path when it ends in `.toml`, contains a path separator or names an existing
//! file, and a built-in name otherwise; without one, `run` plays `cylinders` (200 spheres,
//! 10 s). The engine is the warp engine unless `--engine frame`; with it, contact groups are
//! on unless `--groups off` (the paper's method alone: every body its own entity); entities
//! speculate as far as an adaptive lead under the scene's window unless `--full-window`
//! (`warp::lead`). With either engine, resting islands or groups fall asleep unless `--sleep
//! off`, with which nothing ever sleeps (the summary's first line then ends `sleep off`).
//! Contact groups solve their contacts in steps of 16 ticks (60 Hz at 960 ticks per second,
//! the solver at 240 Hz inside) unless `--group-substep` says another power of two up to 16
//! (1: tick by tick); the frames depend on it, and `resume` keeps the checkpoint's.
//! `--bodies` resizes a built-in (an error for files), `--seconds` overrides `world.seconds`.
//! `run` prints the summary on stdout (not with `--quiet`, which also hides the progress bar)
//! and then, with `--checksum`, the line `checksum: <16 hex digits>`.
//! `scenes` lists the built-ins; `scenes --export NAME` prints one as a scene file. `--out`
//! writes the committed frames as CSV or glTF by the file's extension; `view` turns either into
//! one HTML page that plays the run (`timewarp::view`; a CSV needs its scene, `--scene`, by
//! default the default scene), written to `--out` or beside FILE with the extension `.html`.
//! `bench chart` draws `peer/`'s tables as an SVG bar chart (`timewarp::bench::peer_chart`).
//!
//! `--checkpoint FILE` saves the run's state at its last frame (and with `--checkpoint-every S`
//! every `S` simulated seconds too); `resume FILE` continues such a run to `--seconds` in all
//! (default: the length of the run that wrote it), with the checkpoint's scene, engine, contact
//! groups, `--sleep` and group substep, any thread count and backend; its `--checksum` covers the frames
//! before the checkpoint too, so it equals the uninterrupted run's, and its `--out` holds the
//! frames after the checkpoint (see `checkpoint.rs` in the library).
//!
//! Every failure — a bad flag, a bad scene, an output that cannot be written, even a bug that
//! panics — ends as exactly one line `error: ...` on stderr and exit status 2. clap's own
//! multi-line messages are folded into one line. A closed stdout (`timewarp scenes | head -1`)
//! is not an error: output stops quietly.

use std::io::{self, Write};
use std::path::{MAIN_SEPARATOR, Path, PathBuf};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand, ValueEnum};

use timewarp::bench::report::{self, Machine};
use timewarp::bench::{Case, Sweep, peer_chart, plot, run_sweep};
use timewarp::checkpoint::{Checkpoint, Checkpointer};
use timewarp::output::{Checksum, CsvSink, FrameSink, GlbSink, Tee};
use timewarp::run::{
    Backend, EngineKind, MAX_FRAMES, Resume, RunOptions, check_options, run_scene_with,
};
use timewarp::scene::{Scene, builtin, builtin_names, builtin_toml, load};

/// The scene `run` plays without an argument.
pub const DEFAULT_SCENE: &str = "cylinders";
/// Exit status of every error.
pub const EXIT_ERROR: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "timewarp",
    version,
    about = "A parallel rigid-body physics engine: object-centric timewarp on a TL2 STM or ordered locks",
    after_help = "Start with `timewarp run` (the default scene) and `timewarp COMMAND --help`; the README and docs/usage.md say more."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a scene: a built-in name or a TOML scene file
    Run(RunArgs),
    /// Continue a run from a checkpoint file to a later simulated time
    Resume(ResumeArgs),
    /// List the built-in scenes, or print one as a scene file
    Scenes(ScenesArgs),
    /// Benchmark scenes x sizes x threads x backends x engines: Markdown table, JSON, SVG plots
    Bench(BenchArgs),
    /// Write one self-contained HTML page that plays a run (its .glb or .csv) in a browser
    View(ViewArgs),
}

#[derive(Args, Debug)]
struct ViewArgs {
    /// The .glb or .csv file written by `timewarp run --out`
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Where to write the page [default: FILE with the extension .html, e.g. run.glb ->
    /// run.html]
    #[arg(long, value_name = "PAGE")]
    out: Option<PathBuf>,
    /// For a .csv file, which has no shapes: the scene the run played, a built-in name or a
    /// .toml file [default: the default scene of `run`, cylinders]
    #[arg(long, value_name = "SCENE")]
    scene: Option<String>,
    /// For a .csv file of a built-in scene: its number of bodies, as given to `run`
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_bodies)]
    bodies: Option<usize>,
    /// Store the frames uncompressed (base64 only) instead of gzipped
    #[arg(long)]
    raw: bool,
    /// Print nothing
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
struct BenchArgs {
    #[command(subcommand)]
    chart: Option<BenchCommand>,
    /// The small sweep (parallel, cylinders, bouncing at 200 and 500 bodies, pyramids at 550; 1 and 2 threads; short spans)
    #[arg(long)]
    quick: bool,
    /// Scenes, comma-separated: NAME (at the --sizes) or NAME=N (default: parallel, cylinders,
    /// bouncing at 500 and 2000, pyramids=10010)
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    scenes: Vec<String>,
    /// Body counts for the scenes named without =N
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_bodies)]
    sizes: Vec<usize>,
    /// Thread counts (default: 1, 2, 4, ... up to the available parallelism)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_threads)]
    threads: Vec<usize>,
    /// Warp engine backends (default: every one compiled in)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_enum)]
    backends: Vec<Backend>,
    /// Engines (default: frame and warp)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_enum)]
    engines: Vec<EngineKind>,
    /// Simulated seconds of a frame-engine run (default 2; --quick 1)
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    seconds: Option<f64>,
    /// Simulated seconds of a warp-engine run (default 0.1; --quick 0.05)
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    warp_seconds: Option<f64>,
    /// Untimed warm-up rounds (default 1)
    #[arg(long, value_name = "W")]
    warmup: Option<usize>,
    /// Timed, interleaved rounds (default 5; --quick 3)
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u64).range(1..=1000))]
    repeats: Option<u64>,
    /// Wall seconds after which one run stops (default 60; --quick 5)
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    time_limit: Option<f64>,
    /// Do not profile the warm-up runs for the parallelism estimate
    #[arg(long)]
    no_parallelism: bool,
    /// Folder for bench.json and the SVG plots
    #[arg(long, value_name = "DIR", default_value = "bench-out")]
    out_dir: PathBuf,
    /// No progress lines on stderr
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Draw the tables of the rapier3d comparison (the Markdown that `peer/` prints) as one
    /// SVG bar chart of the ratios rapier / timewarp, without running anything
    Chart(ChartArgs),
}

#[derive(Args, Debug)]
struct ChartArgs {
    /// Tables printed by `peer/` (e.g. docs/bench/RUN/peer-60-locks.md peer-960-locks.md): a
    /// series of bars per table and timewarp engine
    #[arg(value_name = "PEER.md", required = true)]
    tables: Vec<PathBuf>,
    /// The SVG file to write
    #[arg(long, value_name = "FILE.svg")]
    out: PathBuf,
    /// The chart's title
    #[arg(
        long,
        default_value = "rapier3d against timewarp: wall time per simulated second"
    )]
    title: String,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// A built-in scene name (see `timewarp scenes`) or a path to a .toml scene file
    #[arg(value_name = "SCENE")]
    scene: Option<String>,
    /// Number of bodies of a built-in scene (for pyramids: boxes, rounded to whole pyramids)
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_bodies)]
    bodies: Option<usize>,
    /// Simulated seconds (default: the scene's world.seconds)
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    seconds: Option<f64>,
    /// Engine: `warp`, object-centric timewarp (the product: every body or contact group on
    /// its own clock in ticks of the scene's tick, speculating past the GVT and rolling back on
    /// collisions), or `frame`, the baseline (all bodies in lock-step at one frame, 1/60 s in
    /// the built-ins, persistent islands solved in parallel: the faster of the two today)
    #[arg(long, value_enum, default_value_t = EngineKind::Warp)]
    engine: EngineKind,
    #[command(flatten)]
    play: PlayArgs,
    /// Warp engine: record every task and print the parallelism estimate (work, span, speedup
    /// bounds) in the summary
    #[arg(long)]
    parallelism: bool,
    /// Warp engine: contact groups. Bodies in slow contact fuse into one island entity, which
    /// splits when they part and sleeps when they rest; `off` makes every body an entity of its
    /// own (the paper's method alone, what `timewarp bench` measures) [default: on with the
    /// warp engine]
    #[arg(long, value_enum, value_name = "on|off")]
    groups: Option<Toggle>,
    /// Either engine: whether resting islands (frame engine) and contact groups (warp engine)
    /// fall asleep, costing nothing until something wakes them. `off`: nothing ever sleeps,
    /// which measures the cost of an awake pile (rapier's `can_sleep(false)`, Box2D's
    /// `enableSleep = false`)
    #[arg(long, value_enum, value_name = "on|off", default_value_t = Toggle::On)]
    sleep: Toggle,
    /// Warp engine: let entities speculate as far as the scene's window at all times (the
    /// paper's fixed window) instead of the adaptive lead under it, which rises when workers
    /// starve and falls when rollbacks pile up. The committed frames are the same either way
    #[arg(long)]
    full_window: bool,
    /// Warp engine: the TVHT's time slice, in ticks (a power of two up to 1024): consecutive
    /// ticks of a cell share a bucket. Frames are the same for any; speed and contention
    /// differ [default: 64]
    #[arg(long, value_name = "TICKS")]
    tvht_span: Option<u64>,
    /// Warp engine: the longest span, in ticks, that a body with nothing near it flies as one
    /// TVHT record, or a group glides through a substep (0: every tick written on its own).
    /// Frames are the same for any; speed differs [default: as far as the entity's lead]
    #[arg(long, value_name = "TICKS")]
    max_span: Option<u64>,
    /// Warp engine with contact groups: the island solver's substep, in ticks (a power of two
    /// up to 16): a group with contacts solves them for this many ticks at once from every
    /// multiple of it. Frames depend on it [default: 16, 60 Hz at 960 ticks per second]
    #[arg(long, value_name = "TICKS")]
    group_substep: Option<u64>,
}

/// A switch given as `on` or `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Toggle {
    On,
    Off,
}

#[derive(Args, Debug)]
struct CheckpointArgs {
    /// Save the run's state at its last frame to FILE (atomically, with the scene: `timewarp
    /// resume FILE` needs nothing else, and resumes bit for bit)
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
    /// Also save it every S simulated seconds (at the committed frame nearest each multiple)
    #[arg(long, value_name = "S", requires = "checkpoint", allow_negative_numbers = true, value_parser = parse_seconds)]
    checkpoint_every: Option<f64>,
}

#[derive(Args, Debug)]
struct ResumeArgs {
    /// A checkpoint written by `timewarp run --checkpoint`
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Simulated seconds to run to, in all (default: the length of the run that wrote it)
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    seconds: Option<f64>,
    #[command(flatten)]
    play: PlayArgs,
}

/// The options `run` and `resume` share: the workers, the guard, and what the run writes.
#[derive(Args, Debug)]
struct PlayArgs {
    /// Worker threads (default: the available parallelism). The committed frames are the same
    /// for any count
    #[arg(long, value_name = "T", allow_negative_numbers = true, value_parser = parse_threads)]
    threads: Option<usize>,
    /// What guards the shared structures of the warp engine: the TL2 STM or ordered locks,
    /// among those compiled in (cargo features `stm`, the default, and `locks`). The committed
    /// frames are the same under either (the default is stm when compiled in, else locks)
    #[arg(long, value_enum, default_value_t = Backend::default())]
    backend: Backend,
    /// Write the committed frames to FILE, written whole or not at all: `.csv` (one row per
    /// dynamic body per frame: frame, time, body, position, rotation, velocity, angular
    /// velocity) or `.glb` (an animated glTF 2.0 binary: a node per body, a mesh per shape);
    /// after `resume`, the frames after the checkpoint. `timewarp view FILE` plays either in a
    /// browser
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print `checksum: <16 hex digits>`, a hash of the bits of every committed frame from
    /// frame 0 (after `resume`, the frames before the checkpoint included)
    #[arg(long)]
    checksum: bool,
    /// No progress bar and no summary
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    checkpoint: CheckpointArgs,
}

impl PlayArgs {
    /// What the run writes.
    fn outputs(&self) -> Outputs<'_> {
        Outputs {
            out: self.out.as_deref(),
            checksum: self.checksum,
            quiet: self.quiet,
            checkpoint: &self.checkpoint,
        }
    }
}

#[derive(Args, Debug)]
struct ScenesArgs {
    /// Print the built-in scene NAME as a TOML scene file
    #[arg(long, value_name = "NAME")]
    export: Option<String>,
    /// Number of bodies of the exported scene
    #[arg(long, value_name = "N", requires = "export", allow_negative_numbers = true, value_parser = parse_bodies)]
    bodies: Option<usize>,
}

/// The most threads `--threads` accepts.
const MAX_THREADS: usize = 4096;

fn parse_bodies(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if n >= 1 => usize::try_from(n).map_err(|_| format!("{n} is too many bodies")),
        _ => Err(format!(
            "the number of bodies must be a whole number of at least 1, got {s}"
        )),
    }
}

fn parse_threads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (1..=MAX_THREADS as i64).contains(&n) => Ok(n as usize),
        _ => Err(format!(
            "the number of threads must be a whole number from 1 to {MAX_THREADS}, got {s}"
        )),
    }
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("seconds must be a finite positive number, got {s}")),
    }
}

/// An error on its way to the one `error:` line.
struct Failure(String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

/// Writes to stdout; a closed pipe is not an error (the reader has seen what it wanted).
fn print_out(text: &str) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(Failure(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// Folds clap's message (error line, indented details, blank line, usage, hint) into one line.
fn one_line_clap_error(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut parts: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if let Some(tip) = line.strip_prefix("tip:") {
            parts.push(format!("(tip:{tip})"));
        } else if !line.is_empty() {
            parts.push(line.to_string());
        }
    }
    let joined = parts.join(" ");
    let joined = joined.strip_prefix("error: ").unwrap_or(&joined);
    joined.to_string()
}

/// A scene argument names a file when it ends in `.toml`, has a path separator or exists.
fn is_path(arg: &str) -> bool {
    arg.ends_with(".toml")
        || arg.contains('/')
        || arg.contains(MAIN_SEPARATOR)
        || Path::new(arg).is_file()
}

fn resolve_scene(args: &RunArgs) -> Result<(Scene, String), Failure> {
    scene_of(args.scene.as_deref(), args.bodies)
}

/// The scene `name` (a built-in or a file; the default scene when `None`) with `bodies`, and
/// its label.
fn scene_of(name: Option<&str>, bodies: Option<usize>) -> Result<(Scene, String), Failure> {
    let name = name.unwrap_or(DEFAULT_SCENE);
    if is_path(name) {
        if bodies.is_some() {
            return Err(Failure(format!(
                "--bodies applies to built-in scenes only; the scene file {name} gives its own bodies"
            )));
        }
        Ok((load(Path::new(name))?, name.to_string()))
    } else {
        Ok((builtin(name, bodies)?, name.to_string()))
    }
}

fn view(args: ViewArgs) -> Result<(), Failure> {
    let is_csv = args
        .file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    // A .glb file carries its shapes; `read_recording` refuses a scene given with one.
    let scene = if is_csv || args.scene.is_some() || args.bodies.is_some() {
        Some(scene_of(args.scene.as_deref(), args.bodies)?)
    } else {
        None
    };
    let rec = timewarp::view::read_recording(
        &args.file,
        scene.as_ref().map(|(s, label)| (s, label.as_str())),
    )?;
    let out = args
        .out
        .unwrap_or_else(|| timewarp::view::default_page(&args.file));
    if out == args.file {
        return Err(Failure(format!(
            "--out {}: the page would replace the run it plays",
            out.display()
        )));
    }
    let encoding = if args.raw {
        timewarp::view::Encoding::Raw
    } else {
        timewarp::view::Encoding::Gzip
    };
    let source = args.file.file_name().map_or_else(
        || args.file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let stats = timewarp::view::write_page(&rec, &source, &out, encoding)?;
    if !args.quiet {
        print_out(&format!(
            "wrote {} ({} frames of {} bodies, {:.1} MB): open it in a browser\n",
            out.display(),
            stats.frames,
            stats.bodies,
            stats.bytes as f64 / 1e6
        ))?;
    }
    Ok(())
}

fn default_threads(threads: Option<usize>) -> usize {
    threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn run(args: RunArgs) -> Result<(), Failure> {
    let (scene, label) = resolve_scene(&args)?;
    let options = RunOptions {
        engine: args.engine,
        backend: args.play.backend,
        threads: default_threads(args.play.threads),
        seconds: args.seconds,
        progress: !args.play.quiet,
        label,
        parallelism: args.parallelism,
        time_limit: None,
        // On by default with the warp engine; asking for them with the frame engine is an
        // error (`run::check_options`), which always solves and sleeps by islands.
        groups: match args.groups {
            Some(t) => t == Toggle::On,
            None => args.engine == EngineKind::Warp,
        },
        full_window: args.full_window,
        tvht_span: args.tvht_span,
        max_span: args.max_span,
        sleep: args.sleep == Toggle::On,
        group_substep: args.group_substep,
    };
    play(&scene, &options, None, &args.play.outputs())
}

fn resume(args: ResumeArgs) -> Result<(), Failure> {
    let saved = Checkpoint::read(&args.file)?;
    let options = RunOptions {
        engine: saved.state.engine(),
        backend: args.play.backend,
        threads: default_threads(args.play.threads),
        seconds: Some(args.seconds.unwrap_or(saved.seconds)),
        progress: !args.play.quiet,
        label: saved.label.clone(),
        groups: saved.state.groups(),
        sleep: saved.state.sleep(),
        group_substep: saved.state.group_substep(),
        ..RunOptions::default()
    };
    play(&saved.scene, &options, Some(&saved), &args.play.outputs())
}

/// What a run or a resumed run writes.
struct Outputs<'a> {
    out: Option<&'a Path>,
    checksum: bool,
    quiet: bool,
    checkpoint: &'a CheckpointArgs,
}

/// The sink of `--out PATH`, by the file's extension: `.csv` or `.glb`.
fn open_output(path: &Path, scene: &Scene, label: &str) -> Result<Box<dyn FrameSink>, Failure> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let sink: Box<dyn FrameSink> = match ext.as_deref() {
        Some("csv") => {
            Box::new(CsvSink::create(path, scene).map_err(|e| format!("cannot create {e}"))?)
        }
        Some("glb") => {
            Box::new(GlbSink::create(path, scene, label).map_err(|e| format!("cannot create {e}"))?)
        }
        _ => {
            return Err(Failure(format!(
                "--out {}: unsupported output format; the file name must end in .csv or .glb",
                path.display()
            )));
        }
    };
    Ok(sink)
}

/// Runs `scene` (from `resumed` when given) with the sinks `outputs` asks for, then prints the
/// summary and the checksum.
fn play(
    scene: &Scene,
    options: &RunOptions,
    resumed: Option<&Checkpoint>,
    outputs: &Outputs<'_>,
) -> Result<(), Failure> {
    // Everything that can be refused is refused before any output file is created.
    check_options(scene, options)?;
    let mut checkpointer = match &outputs.checkpoint.checkpoint {
        None => None,
        Some(path) => {
            let w = &scene.world;
            let fps = f64::from(w.ticks_per_second) / f64::from(w.frame_ticks);
            let every = outputs
                .checkpoint
                .checkpoint_every
                .map(|s| (s * fps).round().clamp(1.0, MAX_FRAMES as f64) as u64);
            let seconds = options.seconds.unwrap_or(w.seconds);
            Some(Checkpointer::new(
                path,
                scene,
                &options.label,
                seconds,
                every,
                resumed,
            )?)
        }
    };
    let mut out = match outputs.out {
        None => None,
        Some(path) => Some(open_output(path, scene, &options.label)?),
    };
    let mut checksum = outputs.checksum.then(|| match resumed {
        Some(c) => Checksum::resume(scene, c.checksum, c.checksum_frames),
        None => Checksum::new(scene),
    });
    let resume = resumed.map(|c| Resume {
        frame: c.frame,
        state: &c.state,
    });
    let summary = {
        let mut tee = Tee::new();
        if let Some(out) = out.as_mut() {
            tee.push(out.as_mut());
        }
        if let Some(c) = checksum.as_mut() {
            tee.push(c as &mut dyn FrameSink);
        }
        run_scene_with(scene, options, resume, &mut tee, checkpointer.as_mut())?
    };
    if !outputs.quiet {
        print_out(&format!("{summary}\n"))?;
        if let Some(c) = &checkpointer {
            if let Some(frame) = c.last_saved() {
                print_out(&format!(
                    "checkpoint: {} at frame {frame} ({} written)\n",
                    c.path().display(),
                    c.saved()
                ))?;
            }
        }
    }
    if let Some(c) = checksum {
        print_out(&format!("{}\n", c.line()))?;
    }
    Ok(())
}

fn scenes(args: ScenesArgs) -> Result<(), Failure> {
    if let Some(name) = args.export {
        return print_out(&builtin_toml(&name, args.bodies)?);
    }
    let width = builtin_names()
        .iter()
        .map(|b| b.name.len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for b in builtin_names() {
        text.push_str(&format!(
            "{:width$}  {} (default N = {})\n",
            b.name, b.description, b.default_bodies
        ));
    }
    print_out(&text)
}

/// The sweep the flags ask for: `--quick` or the full sweep, with every given flag overriding.
fn sweep_of(args: &BenchArgs) -> Result<Sweep, Failure> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut s = if args.quick {
        Sweep::quick()
    } else {
        Sweep::full(cpus)
    };
    if !args.scenes.is_empty() || !args.sizes.is_empty() {
        let names: Vec<String> = if args.scenes.is_empty() {
            let mut n: Vec<String> = s.cases.iter().map(|c| c.scene.clone()).collect();
            n.dedup();
            n
        } else {
            args.scenes.clone()
        };
        let mut cases = Vec::new();
        for entry in &names {
            let (name, size) = match entry.split_once('=') {
                Some((name, n)) => (name.trim(), Some(parse_bodies(n).map_err(Failure)?)),
                None => (entry.trim(), None),
            };
            let Some(b) = builtin_names().iter().find(|b| b.name == name) else {
                return Err(Failure(format!(
                    "--scenes: unknown built-in scene {name:?} (see `timewarp scenes`)"
                )));
            };
            let sizes: Vec<usize> = match size {
                Some(n) => vec![n],
                None if !args.sizes.is_empty() => args.sizes.clone(),
                None => {
                    let base: Vec<usize> = s
                        .cases
                        .iter()
                        .filter(|c| c.scene == name)
                        .map(|c| c.bodies)
                        .collect();
                    if base.is_empty() {
                        vec![b.default_bodies]
                    } else {
                        base
                    }
                }
            };
            for bodies in sizes {
                let case = Case {
                    scene: name.to_string(),
                    bodies,
                };
                if !cases.contains(&case) {
                    cases.push(case);
                }
            }
        }
        s.cases = cases;
    }
    if !args.threads.is_empty() {
        s.threads = args.threads.clone();
    }
    if !args.backends.is_empty() {
        s.backends = args.backends.clone();
    }
    if !args.engines.is_empty() {
        s.engines = args.engines.clone();
    }
    if let Some(x) = args.seconds {
        s.frame_seconds = x;
    }
    if let Some(x) = args.warp_seconds {
        s.warp_seconds = x;
    }
    if let Some(w) = args.warmup {
        s.warmup = w;
    }
    if let Some(r) = args.repeats {
        s.repeats = r as usize;
    }
    if let Some(t) = args.time_limit {
        s.time_limit = std::time::Duration::from_secs_f64(t);
    }
    if args.no_parallelism {
        s.parallelism = false;
    }
    if s.engines.contains(&EngineKind::Warp) {
        for &b in &s.backends {
            let options = RunOptions {
                engine: EngineKind::Warp,
                backend: b,
                ..RunOptions::default()
            };
            check_options(&builtin("parallel", Some(1))?, &options)?;
        }
    }
    Ok(s)
}

fn chart(args: ChartArgs) -> Result<(), Failure> {
    let mut tables = Vec::new();
    for path in &args.tables {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        tables.push(peer_chart::parse(&text, &path.display().to_string())?);
    }
    peer_chart::chart(&tables, &args.title, &args.out)?;
    print_out(&format!("wrote {}\n", args.out.display()))
}

fn bench(args: BenchArgs) -> Result<(), Failure> {
    if let Some(BenchCommand::Chart(c)) = args.chart {
        return chart(c);
    }
    let sweep = sweep_of(&args)?;
    let machine = Machine::here();
    let start = std::time::Instant::now();
    let quiet = args.quiet;
    let rows = run_sweep(&sweep, |line| {
        if !quiet {
            let _ = writeln!(io::stderr().lock(), "{line}");
        }
    })?;
    let wall = start.elapsed().as_secs_f64();
    let mut text = format!(
        "{}

",
        machine.line()
    );
    text.push_str(&report::markdown(&rows));
    text.push_str(&report::notes(&sweep, &rows));
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", args.out_dir.display()))?;
    let json_path = args.out_dir.join("bench.json");
    std::fs::write(&json_path, report::json(&machine, &sweep, &rows, wall))
        .map_err(|e| format!("cannot write {}: {e}", json_path.display()))?;
    let short = format!(
        "{} CPUs, {}",
        machine.cpus,
        machine.cpu_model.as_deref().unwrap_or(&machine.arch)
    );
    let plots = plot::write_plots(&args.out_dir, &rows, &short)?;
    let mut files = vec![json_path.display().to_string()];
    files.extend(plots.iter().map(|p| p.display().to_string()));
    text.push_str(&format!(
        "
sweep wall time {wall:.1} s; wrote {}\n",
        files.join(", ")
    ));
    print_out(&text)
}

fn dispatch() -> Result<(), Failure> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            return print_out(&e.render().to_string());
        }
        Err(e) => return Err(Failure(one_line_clap_error(&e))),
    };
    match cli.command {
        Some(Command::Run(args)) => run(args),
        Some(Command::Resume(args)) => resume(args),
        Some(Command::Scenes(args)) => scenes(args),
        Some(Command::Bench(args)) => bench(args),
        Some(Command::View(args)) => view(args),
        None => Err(Failure(
            "no command given; use `timewarp run [SCENE]`, `timewarp view FILE`, `timewarp scenes` or `timewarp bench` (see --help)".into(),
        )),
    }
}

fn report(message: &str) {
    let line = message.replace('\n', " ");
    let _ = writeln!(io::stderr().lock(), "error: {line}");
}

/// Runs the command line; every error is one `error:` line and exit status 2.
pub fn main() -> ExitCode {
    // A panic is a bug, but it still gets one line (and exit status 2), not a backtrace dump.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".to_string());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        report(&format!("internal error (a bug in timewarp): {what}{at}"));
    }));
    match std::panic::catch_unwind(dispatch) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(Failure(message))) => {
            report(&message);
            ExitCode::from(EXIT_ERROR)
        }
        Err(_) => ExitCode::from(EXIT_ERROR),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn value_parsers_name_the_value() {
        assert_eq!(parse_bodies("12"), Ok(12));
        assert!(parse_bodies("-3").unwrap_err().contains("got -3"));
        assert!(parse_bodies("0").is_err());
        assert!(parse_bodies("1.5").is_err());
        assert_eq!(parse_threads("4"), Ok(4));
        assert!(parse_threads("0").unwrap_err().contains("got 0"));
        assert!(parse_threads("100000").is_err());
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        for bad in ["0", "-1", "nan", "inf", "x"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scene_arguments_are_paths_or_names() {
        assert!(is_path("x.toml"));
        assert!(is_path("dir/scene"));
        assert!(!is_path("cylinders"));
        assert!(is_path("Cargo.toml"));
    }

    #[test]
    fn clap_errors_fold_into_one_line() {
        let e = Cli::try_parse_from(["timewarp", "run", "--engine", "fast"]).unwrap_err();
        let line = one_line_clap_error(&e);
        assert!(!line.contains('\n'));
        assert!(
            line.contains("'fast'") && line.contains("--engine"),
            "{line}"
        );
        assert!(line.contains("possible values"), "{line}");
    }
}
