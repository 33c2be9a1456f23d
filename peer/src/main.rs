//! The peer comparison: rapier3d 0.36 against timewarp's engines on the DESIGN.md scenes.
//!
//! Every scene is built by timewarp's own generator (`timewarp::scene::builtin`), so both
//! engines get the same bodies: shape, pose, velocity, mass, friction and restitution (rapier's
//! combine rules are set to timewarp's: restitution the maximum of the two, friction the
//! average, which equals timewarp's geometric mean when both are equal, as in every built-in
//! scene). Planes become rapier half-spaces. rapier steps at dt = 1/60 s with its default
//! solver settings and sleeping on, like timewarp's frame engine (1/60 s, 4 substeps, sleep);
//! `--rapier-hz 960` makes it step at the warp engine's tick, 1/960 s, for a like-for-like
//! reference of the warp engine, which moves every body by substeps of one tick. `--sleep off`
//! turns sleeping off on both sides: every rapier body is built with `can_sleep(false)`, and
//! timewarp's engines run with `--sleep off` (no island or contact group ever sleeps), which
//! measures what an awake pile costs; the report's second line says which.
//!
//! The engines alternate in one run: for every round, case and thread count, rapier, then
//! timewarp's frame engine, then (with `--engines frame,warp`) the warp engine, each from a
//! fresh world, so drift of the machine spreads over all of them; one warm-up round first.
//! Timed: building the world and every step (timewarp's run loop times the same: construction
//! and steps). Printed: median wall seconds per simulated second of each, and the ratio
//! rapier / timewarp (> 1: timewarp is faster).
//!
//! rapier's threads: without the `parallel` feature rapier steps on one thread whatever
//! `--threads` says (the rapier column is then the serial build at every T); with it, each
//! step runs inside a rayon pool of T threads.

use std::time::{Duration, Instant};

/// mimalloc, with timewarp's setting (`timewarp::allocator`), as the `timewarp` binary ships:
/// under glibc's malloc the warp engine ran 1.6-1.9x slower on 2 threads than on 1 here
/// (2026-11-27: its blocks are freed on other threads than the ones that allocated them).
/// rapier runs under the same allocator.
#[global_allocator]
static ALLOCATOR: timewarp::allocator::Allocator = timewarp::allocator::Allocator;

use clap::Parser;
use rapier3d::prelude::*;
use timewarp::bench::{Config, median, run_once};
use timewarp::run::{Backend, EngineKind};
use timewarp::scene::{Scene, Shape, builtin};

#[derive(Parser, Debug)]
#[command(about = "rapier3d 0.36 against timewarp on the DESIGN.md scenes")]
struct Args {
    /// Cases, comma-separated NAME=N
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "parallel=500,parallel=2000,cylinders=500,cylinders=2000,bouncing=500,bouncing=2000,pyramids=10010"
    )]
    scenes: Vec<String>,
    /// Simulated seconds per run (rapier and the frame engine)
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Thread counts
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Timed rounds (after one warm-up round)
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// timewarp engines to run beside rapier
    #[arg(long, value_delimiter = ',', value_enum, default_value = "frame")]
    engines: Vec<EngineKind>,
    /// Simulated seconds of a warp-engine run
    #[arg(long, default_value_t = 0.1)]
    warp_seconds: f64,
    /// Wall seconds after which a timewarp run stops
    #[arg(long, default_value_t = 60.0)]
    time_limit: f64,
    /// rapier's steps per simulated second (its dt is the inverse): 60 like timewarp's frame
    /// engine, or 960 to step as finely as the warp engine's ticks
    #[arg(long, default_value_t = 60)]
    rapier_hz: u32,
    /// The warp engine's guard
    #[arg(long, value_enum, default_value = "stm")]
    backend: Backend,
    /// Scenes the warp engine runs with contact groups (its default in `timewarp run`); the
    /// others without (the paper's method, what `timewarp bench` measures)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cylinders,pyramids,avalanche"
    )]
    warp_groups: Vec<String>,
    /// Whether resting bodies fall asleep, on both sides: `off` builds every rapier body with
    /// `can_sleep(false)` and runs timewarp's engines with `--sleep off`
    #[arg(long, value_enum, value_name = "on|off", default_value_t = Sleep::On)]
    sleep: Sleep,
}

/// `--sleep`: whether resting bodies may fall asleep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Sleep {
    On,
    Off,
}

fn v(x: glam_like::V3) -> Vector {
    Vector::new(x.0, x.1, x.2)
}

/// timewarp's glam and rapier's glam may be different versions: pass plain floats.
mod glam_like {
    pub struct V3(pub f32, pub f32, pub f32);
}

fn v3(a: [f32; 3]) -> glam_like::V3 {
    glam_like::V3(a[0], a[1], a[2])
}

/// A rapier world holding `scene`'s bodies, whose dynamic bodies may sleep if `sleep`.
fn rapier_world(scene: &Scene, hz: u32, sleep: bool) -> PhysicsWorld {
    let mut w = PhysicsWorld {
        gravity: v(v3(scene.world.gravity.to_array())),
        ..PhysicsWorld::default()
    };
    w.integration_parameters.dt = 1.0 / hz as f32;
    for b in &scene.bodies {
        let collider = match b.shape {
            Shape::Sphere { radius } => ColliderBuilder::ball(radius),
            Shape::Cuboid { half_extents: e } => ColliderBuilder::cuboid(e.x, e.y, e.z),
            Shape::Cylinder {
                radius,
                half_height,
            } => ColliderBuilder::cylinder(half_height, radius),
            Shape::Plane { normal, offset } => {
                ColliderBuilder::new(SharedShape::halfspace(v(v3(normal.to_array()))))
                    .translation(v(v3((normal * offset).to_array())))
            }
        }
        .friction(b.friction)
        .friction_combine_rule(CoefficientCombineRule::Average)
        .restitution(b.restitution)
        .restitution_combine_rule(CoefficientCombineRule::Max);
        // Planes carry their pose on the collider; other bodies on the body.
        let (axis, angle) = b.rotation.to_axis_angle();
        let rb = if b.is_static {
            RigidBodyBuilder::fixed()
        } else {
            RigidBodyBuilder::dynamic()
                .linvel(v(v3(b.velocity.to_array())))
                .angvel(v(v3(b.angular_velocity.to_array())))
                .can_sleep(sleep)
        };
        let rb = if matches!(b.shape, Shape::Plane { .. }) {
            rb
        } else {
            rb.translation(v(v3(b.position.to_array())))
                .rotation(v(v3((axis * angle).to_array())))
        };
        let collider = if b.is_static {
            collider
        } else {
            collider.mass(b.mass)
        };
        let body = w.bodies.insert(rb);
        w.colliders
            .insert_with_parent(collider, body, &mut w.bodies);
    }
    w
}

/// Wall seconds per simulated second of one rapier run (world construction and every step) at
/// `hz` steps per simulated second, its bodies allowed to sleep if `sleep`.
fn run_rapier(scene: &Scene, seconds: f64, hz: u32, sleep: bool, pool: &rayon::ThreadPool) -> f64 {
    let steps = (seconds * hz as f64).round().max(1.0) as usize;
    let start = Instant::now();
    let mut w = rapier_world(scene, hz, sleep);
    pool.install(|| {
        for _ in 0..steps {
            w.step();
        }
    });
    std::hint::black_box(&w.bodies);
    start.elapsed().as_secs_f64() / (steps as f64 / hz as f64)
}

struct Cell {
    scene: String,
    bodies: usize,
    dynamic: usize,
    threads: usize,
    rapier: Vec<f64>,
    timewarp: Vec<(EngineKind, Vec<f64>, bool)>,
}

fn main() -> Result<(), String> {
    timewarp::allocator::configure();
    let args = Args::parse();
    if args.rapier_hz == 0 {
        return Err("--rapier-hz: expected a positive number of steps per second, got 0".into());
    }
    let sleep = args.sleep == Sleep::On;
    let build = if cfg!(feature = "parallel") {
        "parallel"
    } else {
        "serial"
    };
    let mut cases = Vec::new();
    for s in &args.scenes {
        let (name, n) = s
            .split_once('=')
            .ok_or_else(|| format!("--scenes: expected NAME=N, got {s}"))?;
        let n: usize = n.parse().map_err(|e| format!("--scenes {s}: {e}"))?;
        cases.push((
            name.to_string(),
            n,
            builtin(name, Some(n)).map_err(|e| e.to_string())?,
        ));
    }
    let pools: Vec<rayon::ThreadPool> = args
        .threads
        .iter()
        .map(|&t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let mut cells: Vec<Cell> = Vec::new();
    for (name, n, scene) in &cases {
        for &t in &args.threads {
            cells.push(Cell {
                scene: name.clone(),
                bodies: *n,
                dynamic: scene.bodies.iter().filter(|b| !b.is_static).count(),
                threads: t,
                rapier: Vec::new(),
                timewarp: args
                    .engines
                    .iter()
                    .map(|&e| (e, Vec::new(), false))
                    .collect(),
            });
        }
    }
    let limit = Duration::from_secs_f64(args.time_limit);
    for round in 0..=args.rounds {
        let timed = round > 0;
        for cell in &mut cells {
            let scene = &cases
                .iter()
                .find(|c| c.0 == cell.scene && c.1 == cell.bodies)
                .expect("case built")
                .2;
            let pool = &pools[args
                .threads
                .iter()
                .position(|&t| t == cell.threads)
                .expect("pool")];
            let r = run_rapier(scene, args.seconds, args.rapier_hz, sleep, pool);
            eprintln!(
                "{} {} N={} T={}: rapier ({build}) {r:.4} s/s",
                if timed { "run" } else { "warm-up" },
                cell.scene,
                cell.dynamic,
                cell.threads
            );
            if timed {
                cell.rapier.push(r);
            }
            for (engine, samples, limited) in &mut cell.timewarp {
                let config = Config {
                    scene: cell.scene.clone(),
                    bodies: cell.bodies,
                    engine: *engine,
                    backend: (*engine == EngineKind::Warp).then_some(args.backend),
                    threads: cell.threads,
                    seconds: match engine {
                        EngineKind::Frame => args.seconds,
                        EngineKind::Warp => args.warp_seconds,
                    },
                    groups: args.warp_groups.contains(&cell.scene),
                    sleep,
                };
                let (s, _) = run_once(scene, &config, limit, false)?;
                eprintln!(
                    "{} {} N={} T={}: timewarp {} {:.4} s/s{}",
                    if timed { "run" } else { "warm-up" },
                    cell.scene,
                    cell.dynamic,
                    cell.threads,
                    engine.name(),
                    s.per_second(),
                    if s.time_limited { " (time limit)" } else { "" }
                );
                *limited |= s.time_limited;
                if timed {
                    samples.push(s.per_second());
                }
            }
        }
    }
    println!(
        "rapier3d 0.36 ({build} build, dt = 1/{} s) against timewarp {}: wall seconds per simulated second, median of {} rounds \
         (rapier and frame engine over {} s, warp engine ({}) over {} s); ratio = rapier / timewarp (> 1: timewarp faster)\n",
        args.rapier_hz,
        env!("CARGO_PKG_VERSION"),
        args.rounds,
        args.seconds,
        args.backend.name(),
        args.warp_seconds
    );
    println!(
        "warp engine with contact groups on: {}; without on the others; sleeping {}\n",
        args.warp_groups.join(", "),
        if sleep {
            "on (rapier's default; timewarp --sleep on)"
        } else {
            "off (rapier bodies can_sleep(false); timewarp --sleep off)"
        }
    );
    let mut head = String::from("| scene | N | T | rapier |");
    let mut rule = String::from("|---|---|---|---|");
    for e in &args.engines {
        head.push_str(&format!(" timewarp {} | ratio |", e.name()));
        rule.push_str("---|---|");
    }
    println!("{head}\n{rule}");
    for c in &cells {
        let r = median(&mut c.rapier.clone());
        let mut line = format!("| {} | {} | {} | {:.4} |", c.scene, c.dynamic, c.threads, r);
        for (_, samples, limited) in &c.timewarp {
            let t = median(&mut samples.clone());
            line.push_str(&format!(
                " {:.4}{} | {:.2} |",
                t,
                if *limited { " †" } else { "" },
                r / t
            ));
        }
        println!("{line}");
    }
    if cells.iter().any(|c| c.timewarp.iter().any(|(_, _, l)| *l)) {
        println!(
            "\n†: a timewarp run stopped at the time limit ({} s); its figure is from the frames committed by then.",
            args.time_limit
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dynamic bodies of `pyramids` 110 asleep after 2 s of rapier at 60 Hz, their bodies
    /// allowed to sleep if `sleep`.
    fn asleep_after_2_s(sleep: bool) -> usize {
        let scene = builtin("pyramids", Some(110)).unwrap();
        let mut w = rapier_world(&scene, 60, sleep);
        for _ in 0..120 {
            w.step();
        }
        w.bodies
            .iter()
            .filter(|(_, b)| b.is_dynamic() && b.is_sleeping())
            .count()
    }

    /// `--sleep off`: no rapier body of the resting pyramids ever sleeps; with it on, they do.
    #[test]
    fn sleep_off_keeps_rapier_bodies_awake() {
        assert_eq!(asleep_after_2_s(false), 0);
        assert!(asleep_after_2_s(true) > 0);
    }
}
