//! The engines an analytic check runs on, as users run them: the frame engine (stepping at
//! 1/60 s) and the warp engine with contact groups (its default) and without; shared by
//! `tests/physics.rs` and `tests/grazing.rs`.
#![allow(dead_code)]

use timewarp::dynamics::BodyState;
use timewarp::frame::{FrameConfig, FrameEngine};
use timewarp::scene::Scene;
use timewarp::warp::{WarpConfig, run_warp};

/// Which engine an analytic check runs on.
#[derive(Clone, Copy, Debug)]
pub enum Engine {
    Frame,
    /// The warp engine without contact groups (`--groups off`).
    Warp,
    /// The warp engine with contact groups (`--groups on`, the default of `timewarp run`).
    WarpGroups,
}

/// One `#[test]` per engine for an analytic check `fn(Engine)`.
macro_rules! on_every_engine {
    ($check:ident: $frame:ident, $warp:ident, $groups:ident) => {
        #[test]
        fn $frame() {
            $check(Engine::Frame);
        }
        #[test]
        fn $warp() {
            $check(Engine::Warp);
        }
        #[test]
        fn $groups() {
            $check(Engine::WarpGroups);
        }
    };
}

/// Every body's state (scene order, statics included) at frames `0..=frames` (1/60 s apart).
pub fn simulate(scene: &Scene, engine: Engine, frames: u64) -> Vec<Vec<BodyState>> {
    let groups = match engine {
        Engine::Frame => {
            let mut e = FrameEngine::new(
                scene,
                FrameConfig {
                    threads: 1,
                    ..FrameConfig::default()
                },
            );
            let mut out = vec![e.states().to_vec()];
            for _ in 0..frames {
                e.step();
                out.push(e.states().to_vec());
            }
            return out;
        }
        Engine::Warp => false,
        Engine::WarpGroups => true,
    };
    let all: Vec<BodyState> = scene.bodies.iter().map(BodyState::from_desc).collect();
    let dynamic: Vec<usize> = (0..scene.bodies.len())
        .filter(|&i| !scene.bodies[i].is_static)
        .collect();
    let config = WarpConfig {
        threads: 2,
        groups,
        ..WarpConfig::default()
    };
    let ticks = frames * u64::from(scene.world.frame_ticks);
    let mut out = Vec::new();
    run_warp(scene, config, ticks, &mut |_, states| {
        let mut f = all.clone();
        for (&i, s) in dynamic.iter().zip(states) {
            f[i] = *s;
        }
        out.push(f);
        Ok(())
    })
    .unwrap();
    assert_eq!(out.len() as u64, frames + 1);
    out
}
