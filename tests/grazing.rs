//! Grazing contacts against the analytic answer (issue #36), on every engine: a sphere flies
//! past another at rest, no gravity, restitution 1, no friction, their centres' paths `b` apart
//! (the impact parameter; both radii 0.3, so they touch iff `b < 0.6`). Two frictionless spheres
//! that meet exchange momentum along the normal of their *first touch*,
//! `n = (sqrt(0.6² - b²), -b) / 0.6` from the mover to the one at rest, so the struck sphere
//! leaves at `(1 + e) m_A / (m_A + m_B) (v · n) n`; a pair that passes by leaves it at rest,
//! exactly. Swept over impact parameters from head-on to 1 mm short of touching and misses from
//! 1 mm to 5 cm, speeds from 1 to 50 m/s, equal and unequal masses.
//!
//! `cargo test --release --test grazing -- --nocapture` prints the table.

use glam::Vec3;
use timewarp::scene::{Scene, Shape};

#[path = "support/bodies.rs"]
mod bodies;
use bodies::*;
#[path = "support/engines.rs"]
#[allow(unused_macros)]
mod engines;
use engines::{Engine, simulate};

const R: f32 = 0.3;
/// Impact parameters that touch (head-on to 1 mm short of a miss) and that miss.
const HITS: [f32; 8] = [0.0, 0.15, 0.3, 0.45, 0.55, 0.59, 0.595, 0.599];
const MISSES: [f32; 4] = [0.601, 0.61, 0.62, 0.65];
const SPEEDS: [f32; 4] = [1.0, 5.0, 15.0, 50.0];
/// (mover, struck) masses in kg.
const MASSES: [(f32, f32); 2] = [(2.0, 2.0), (1.0, 3.0)];

/// One pass: the mover's and the struck sphere's final states.
fn pass(engine: Engine, b: f32, speed: f32, (ma, mb): (f32, f32)) -> [(Vec3, Vec3); 2] {
    let sphere = |p: Vec3, mass: f32| {
        let mut s = body(Shape::Sphere { radius: R }, p, mass);
        s.restitution = 1.0;
        s.friction = 0.0;
        s
    };
    let mut mover = sphere(Vec3::new(-1.0, b, 0.0), ma);
    mover.velocity = Vec3::new(speed, 0.0, 0.0);
    let scene = Scene {
        world: world(Vec3::ZERO),
        bodies: vec![mover, sphere(Vec3::ZERO, mb)],
    };
    // A hit is measured 0.1 s after the impact (the analytic time): later, a slow struck
    // sphere may fall asleep (below 0.05 m/s for 0.5 s), which zeroes its velocity. A miss is
    // measured once the mover is 1 m past.
    let frames = if b < 2.0 * R {
        let along = (4.0 * R * R - b * b).sqrt();
        (60.0 * ((1.0 - along) / speed + 0.1)).ceil() as u64
    } else {
        (60.0 * (2.0 / speed + 0.05)).ceil() as u64
    };
    let last = simulate(&scene, engine, frames).pop().unwrap();
    [0, 1].map(|i| (last[i].velocity, last[i].position))
}

/// The struck sphere's velocity by the analytic answer (zero for a miss).
fn expected(b: f32, speed: f32, (ma, mb): (f32, f32)) -> Vec3 {
    if b >= 2.0 * R {
        return Vec3::ZERO;
    }
    let along = (4.0 * R * R - b * b).sqrt();
    let n = Vec3::new(along, -b, 0.0) / (2.0 * R);
    n * (2.0 * ma / (ma + mb) * speed * n.x)
}

fn sweep(engine: Engine) {
    let mut failures = Vec::new();
    println!("{engine:?}: the struck sphere's speed, expected / measured (m/s)");
    println!(
        "| masses | b (m) | {} |",
        SPEEDS.map(|v| format!("{v} m/s")).join(" | ")
    );
    println!("|---|---|{}", "---|".repeat(SPEEDS.len()));
    for masses in MASSES {
        for b in HITS.into_iter().chain(MISSES) {
            let mut row = format!("| {} / {} | {b} |", masses.0, masses.1);
            for speed in SPEEDS {
                let [(va, _), (vb, pb)] = pass(engine, b, speed, masses);
                let want = expected(b, speed, masses);
                row += &format!(" {:.3} / {:.3} |", want.length(), vb.length());
                let case = format!("{engine:?}, masses {masses:?}, b {b}, {speed} m/s");
                if want == Vec3::ZERO {
                    if vb != Vec3::ZERO || pb != Vec3::ZERO || va != Vec3::new(speed, 0.0, 0.0) {
                        failures.push(format!("{case}: a miss moved them: {va} and {vb}"));
                    }
                    continue;
                }
                let err = (vb - want).length() / want.length();
                let angle = vb.angle_between(want).to_degrees();
                if !(err <= 0.05 && angle <= 2.0) {
                    failures.push(format!(
                        "{case}: struck at {vb}, expected {want} ({:.1}% off, {angle:.2}°)",
                        100.0 * err
                    ));
                }
                let (ma, mb) = masses;
                let p0 = Vec3::new(ma * speed, 0.0, 0.0);
                let p1 = va * ma + vb * mb;
                if (p1 - p0).length() > 1e-5 * p0.length() {
                    failures.push(format!("{case}: momentum {p1}, was {p0}"));
                }
                let e0 = 0.5 * ma * speed * speed;
                let e1 = 0.5 * ma * va.length_squared() + 0.5 * mb * vb.length_squared();
                if (e1 - e0).abs() > 1e-3 * e0 {
                    failures.push(format!("{case}: kinetic energy {e1} J, was {e0} J"));
                }
            }
            println!("{row}");
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} passes wrong:\n{}",
        failures.len(),
        MASSES.len() * (HITS.len() + MISSES.len()) * SPEEDS.len(),
        failures.join("\n")
    );
}

#[test]
fn grazing_passes_in_the_frame_engine() {
    sweep(Engine::Frame);
}

#[test]
fn grazing_passes_in_the_warp_engine() {
    sweep(Engine::Warp);
}

#[test]
fn grazing_passes_in_the_warp_engine_with_contact_groups() {
    sweep(Engine::WarpGroups);
}
