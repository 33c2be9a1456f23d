//! The floor under the warp engine: what moving every body by substeps of one tick costs when
//! nothing else is done.
//!
//! The warp engine (issue #4; Koenig, Karamouzas and Guy, seed 000) moves each body by substeps
//! of one tick, 1/960 s in the built-in scenes, and the TVHT asks at every tick which boxes meet.
//! So whatever else it does, each body at each tick is advanced by the rules (`Rules::advance`:
//! its flight from its anchor, with no kicks here), its swept box is made (`Rules::aabb`, what the TVHT
//! hashes), and its pre-event state is kept until the GVT passes (a state queue, here a buffer
//! of 64 states per body, reused). This example times exactly that, with no TVHT, no GVT, no
//! contact, no message and no scheduling, in three layers (advance; advance and box; advance,
//! box and stored state), on one thread and on two threads that each take half of the bodies
//! and never meet: the best any design that keeps one-tick substeps can do on this machine, to
//! set beside the engine's figures and rapier3d's (`peer/`). A fourth column times the floor of
//! the span design that replaced it (issue #31): per body and span of 256 ticks, its sweep, its
//! box and its test against the static bodies, and its state at the span's frame ticks.
//!
//! ```sh
//! cargo run --release --example floor                      # the issue's scenes at 500 and 2000
//! cargo run --release --example floor -- bouncing=500 parallel=8000
//! ```
//!
//! Printed: medians of 7 of wall seconds per simulated second (960 ticks), and nanoseconds per
//! body-tick on one thread. The bodies fly free, so the scene only sets their number and their
//! shapes: a tick's work is the same for every scene of spheres.

use std::time::Instant;

use timewarp::bench::median;
use timewarp::dynamics::BodyState;
use timewarp::scene::builtin;
use timewarp::warp::rules::{Anchor, Rules};

/// How much of a tick's work to do.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Layer {
    Advance,
    AdvanceBox,
    AdvanceBoxState,
    /// Not a tick's work: a span's (see [`spans`]).
    Spans,
}

const LAYERS: [(Layer, &str); 4] = [
    (Layer::Advance, "advance"),
    (Layer::AdvanceBox, "+ box"),
    (Layer::AdvanceBoxState, "+ stored state"),
    (Layer::Spans, "spans of 256 ticks"),
];

/// The ticks of a span in the `spans` layer: the built-in window, as far as the engine's spans
/// fly (issue #31).
const SPAN: u64 = 256;

/// The floor under spans (issue #31): bodies `lo..hi` over `ticks` ticks in spans of [`SPAN`]
/// ticks, each flown from its anchor: per span its sweep and box (`Rules::span`,
/// `Rules::span_aabb`, what the TVHT's span record holds) and the test against the static
/// bodies (`Rules::span_clear_of_statics`), and its state at each frame tick of the span
/// (`Rules::flight`: what the GVT buffer keeps for output). No TVHT, GVT, contact or scheduling.
fn spans(rules: &Rules, lo: usize, hi: usize, ticks: u64, frame_ticks: u64) -> f32 {
    let mut sum = 0.0f32;
    for i in lo..hi {
        let a = Anchor::at(0, rules.initial[i]);
        let mut from = 1;
        while from <= ticks {
            let to = (from + SPAN - 1).min(ticks);
            let sweep = rules.span(i, &a, from, to);
            sum += rules.span_aabb(&sweep).min.x
                + f32::from(u8::from(rules.span_clear_of_statics(&sweep)));
            let mut t = from.div_ceil(frame_ticks) * frame_ticks;
            while t <= to {
                sum += rules.flight(&a, t).position.x;
                t += frame_ticks;
            }
            from = to + 1;
        }
    }
    sum
}

/// States kept per body before the buffer is reused (the engine's turns are up to 64 ticks).
const QUEUE: usize = 64;
const ROUNDS: usize = 7;

/// Bodies `lo..hi` of `rules` over `ticks` ticks; returns a sum that depends on every box, so
/// that nothing is optimised away.
fn fly(rules: &Rules, lo: usize, hi: usize, (ticks, frame_ticks): (u64, u64), layer: Layer) -> f32 {
    if layer == Layer::Spans {
        return spans(rules, lo, hi, ticks, frame_ticks);
    }
    let mut sum = 0.0f32;
    let mut states: Vec<BodyState> = rules.initial[lo..hi].to_vec();
    let anchors: Vec<Anchor> = states.iter().map(|&s| Anchor::at(0, s)).collect();
    let mut queues: Vec<Vec<BodyState>> = (lo..hi).map(|_| Vec::with_capacity(QUEUE)).collect();
    for k in 0..ticks {
        for (j, (s, q)) in states.iter_mut().zip(queues.iter_mut()).enumerate() {
            (_, *s) = rules.advance(&anchors[j], s, k, &mut []);
            if layer >= Layer::AdvanceBox {
                sum += rules.aabb(lo + j, s).min.x;
            } else {
                sum += s.position.x + s.rotation.w;
            }
            if layer >= Layer::AdvanceBoxState {
                if q.len() == QUEUE {
                    q.clear();
                }
                q.push(*s);
            }
        }
    }
    sum
}

fn main() -> Result<(), String> {
    let mut cases: Vec<String> = std::env::args().skip(1).collect();
    if cases.is_empty() {
        for s in ["parallel", "cylinders", "bouncing"] {
            for n in [500, 2000] {
                cases.push(format!("{s}={n}"));
            }
        }
    }
    println!(
        "wall seconds per simulated second (960 ticks), medians of {ROUNDS}; 1 thread / 2 threads, \
         ns per body-tick on 1 thread\n"
    );
    let names: Vec<&str> = LAYERS.iter().map(|&(_, name)| name).collect();
    println!("| scene | N | {} |", names.join(" | "));
    println!("|---|---|{}", "---|".repeat(LAYERS.len()));
    for case in &cases {
        let (name, n) = case
            .split_once('=')
            .ok_or_else(|| format!("expected NAME=N, got {case}"))?;
        let n: usize = n.parse().map_err(|e| format!("{case}: {e}"))?;
        let scene = builtin(name, Some(n)).map_err(|e| e.to_string())?;
        let rules = Rules::new(&scene)?;
        let bodies = rules.bodies();
        let ticks = u64::from(scene.world.ticks_per_second);
        let run = (ticks, u64::from(scene.world.frame_ticks));
        let mut line = format!("| {name} | {bodies} |");
        for (layer, _) in LAYERS {
            let (mut one, mut two) = (Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                let t = Instant::now();
                std::hint::black_box(fly(&rules, 0, bodies, run, layer));
                one.push(t.elapsed().as_secs_f64());
                let t = Instant::now();
                std::thread::scope(|sc| {
                    let a = sc.spawn(|| fly(&rules, 0, bodies / 2, run, layer));
                    let b = fly(&rules, bodies / 2, bodies, run, layer);
                    std::hint::black_box(a.join().expect("no panic") + b);
                });
                two.push(t.elapsed().as_secs_f64());
            }
            // One simulated second: the medians are already per simulated second.
            let (one, two) = (median(&mut one), median(&mut two));
            line.push_str(&format!(
                " {one:.4} / {two:.4} ({:.0} ns) |",
                one * 1e9 / (bodies as f64 * ticks as f64)
            ));
        }
        println!("{line}");
    }
    Ok(())
}
