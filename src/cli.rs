//! The `timewarp` command line (DESIGN.md, "Command line (contract)").
//!
//! ```text
//! timewarp run [SCENE] [--bodies N] [--seconds S] [--engine warp|frame] [--threads T]
//!              [--backend stm|locks] [--out FILE] [--checksum] [--quiet]
//!              [--checkpoint FILE [--checkpoint-every S]]
//! timewarp resume FILE [--seconds S] [--threads T] [--backend stm|locks] [--out FILE]
//!              [--checksum] [--quiet] [--checkpoint FILE [--checkpoint-every S]]
//! timewarp scenes [--export NAME [--bodies N]]
//! ```
//!
//! `SCENE` is a path when it ends in `.toml`, contains a path separator or names an existing
//! file, and a built-in name otherwise; without one, `run` plays `cylinders` (200 spheres,
//! 10 s). `--bodies` resizes a built-in (an error for files), `--seconds` overrides
//! `world.seconds`. `run` prints the summary on stdout (not with `--quiet`, which also hides the
//! progress bar) and then, with `--checksum`, the line `checksum: <16 hex digits>`.
//! `scenes` lists the built-ins; `scenes --export NAME` prints one as a scene file.
//!
//! `--checkpoint FILE` saves the run's state at its last frame (and with `--checkpoint-every S`
//! every `S` simulated seconds too); `resume FILE` continues such a run to `--seconds` in all
//! (default: the length of the run that wrote it), with the checkpoint's scene and engine, any
//! thread count and backend; its `--checksum` covers the frames before the checkpoint too, so it
//! equals the uninterrupted run's, and its `--out` holds the frames after the checkpoint (see
//! `checkpoint.rs` in the library).
//!
//! Every failure — a bad flag, a bad scene, an output that cannot be written, even a bug that
//! panics — ends as exactly one line `error: ...` on stderr and exit status 2. clap's own
//! multi-line messages are folded into one line. A closed stdout (`timewarp scenes | head -1`)
//! is not an error: output stops quietly.

use std::io::{self, Write};
use std::path::{MAIN_SEPARATOR, Path, PathBuf};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};

use timewarp::checkpoint::{Checkpoint, Checkpointer};
use timewarp::output::{Checksum, CsvSink, FrameSink, Tee};
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
    about = "A parallel rigid-body physics engine: object-centric timewarp on a TL2 STM or ordered locks"
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
    /// Engine: the timewarp engine or the frame-centric baseline
    #[arg(long, value_enum, default_value_t = EngineKind::Frame)]
    engine: EngineKind,
    /// Worker threads (default: the available parallelism)
    #[arg(long, value_name = "T", allow_negative_numbers = true, value_parser = parse_threads)]
    threads: Option<usize>,
    /// What guards the shared structures of the warp engine
    #[arg(long, value_enum, default_value_t = Backend::Stm)]
    backend: Backend,
    /// Write the committed frames to FILE (.csv)
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print `checksum: <16 hex digits>`, a hash of every committed frame's bits
    #[arg(long)]
    checksum: bool,
    /// No progress bar and no summary
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    checkpoint: CheckpointArgs,
}

#[derive(Args, Debug)]
struct CheckpointArgs {
    /// Save the run's state at its last frame to FILE (atomically), for `timewarp resume`
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
    /// Worker threads (default: the available parallelism)
    #[arg(long, value_name = "T", allow_negative_numbers = true, value_parser = parse_threads)]
    threads: Option<usize>,
    /// What guards the shared structures of the warp engine
    #[arg(long, value_enum, default_value_t = Backend::Stm)]
    backend: Backend,
    /// Write the resumed frames (those after the checkpoint) to FILE (.csv)
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print `checksum: <16 hex digits>` of every committed frame, those before the checkpoint included
    #[arg(long)]
    checksum: bool,
    /// No progress bar and no summary
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    checkpoint: CheckpointArgs,
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
    let name = args.scene.as_deref().unwrap_or(DEFAULT_SCENE);
    if is_path(name) {
        if args.bodies.is_some() {
            return Err(Failure(format!(
                "--bodies applies to built-in scenes only; the scene file {name} gives its own bodies"
            )));
        }
        Ok((load(Path::new(name))?, name.to_string()))
    } else {
        Ok((builtin(name, args.bodies)?, name.to_string()))
    }
}

fn default_threads(threads: Option<usize>) -> usize {
    threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn run(args: RunArgs) -> Result<(), Failure> {
    let (scene, label) = resolve_scene(&args)?;
    let options = RunOptions {
        engine: args.engine,
        backend: args.backend,
        threads: default_threads(args.threads),
        seconds: args.seconds,
        progress: !args.quiet,
        label,
    };
    let outputs = Outputs {
        out: args.out.as_deref(),
        checksum: args.checksum,
        quiet: args.quiet,
        checkpoint: &args.checkpoint,
    };
    play(&scene, &options, None, &outputs)
}

fn resume(args: ResumeArgs) -> Result<(), Failure> {
    let saved = Checkpoint::read(&args.file)?;
    let options = RunOptions {
        engine: saved.state.engine(),
        backend: args.backend,
        threads: default_threads(args.threads),
        seconds: Some(args.seconds.unwrap_or(saved.seconds)),
        progress: !args.quiet,
        label: saved.label.clone(),
    };
    let outputs = Outputs {
        out: args.out.as_deref(),
        checksum: args.checksum,
        quiet: args.quiet,
        checkpoint: &args.checkpoint,
    };
    play(&saved.scene, &options, Some(&saved), &outputs)
}

/// What a run or a resumed run writes.
struct Outputs<'a> {
    out: Option<&'a Path>,
    checksum: bool,
    quiet: bool,
    checkpoint: &'a CheckpointArgs,
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
    let mut csv = match outputs.out {
        None => None,
        Some(path) => {
            let is_csv = path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
            if !is_csv {
                return Err(Failure(format!(
                    "--out {}: unsupported output format; only .csv files can be written",
                    path.display()
                )));
            }
            Some(CsvSink::create(path, scene).map_err(|e| format!("cannot create {e}"))?)
        }
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
        if let Some(csv) = csv.as_mut() {
            tee.push(csv as &mut dyn FrameSink);
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
        None => Err(Failure(
            "no command given; use `timewarp run [SCENE]` or `timewarp scenes` (see --help)".into(),
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
