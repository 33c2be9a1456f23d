//! Committed frames of a warp run, and their bits for exact comparison (shared by
//! `tests/warp.rs` and `tests/warp_groups.rs`).
#![allow(dead_code)]

use timewarp::dynamics::BodyState;
use timewarp::scene::Scene;
use timewarp::warp::{Tick, WarpConfig, WarpControl, WarpStart, WarpStats, run_warp_from_with};

/// Every state's bits, frame by frame.
pub fn bits(frames: &[Vec<BodyState>]) -> Vec<Vec<[u32; 13]>> {
    frames
        .iter()
        .map(|f| f.iter().map(|s| s.to_array().map(f32::to_bits)).collect())
        .collect()
}

/// The committed frames of a warp run of `scene` to tick `end` (checked to come in order).
pub fn warp_frames(
    scene: &Scene,
    config: WarpConfig,
    end: Tick,
) -> (Vec<Vec<BodyState>>, WarpStats) {
    warp_frames_with(scene, config, end, WarpControl::default())
}

/// The same, under the run's optional `control` (profiling, a deadline, islands).
pub fn warp_frames_with(
    scene: &Scene,
    config: WarpConfig,
    end: Tick,
    control: WarpControl,
) -> (Vec<Vec<BodyState>>, WarpStats) {
    let ft = u64::from(scene.world.frame_ticks);
    let mut frames = Vec::new();
    let stats = run_warp_from_with(
        scene,
        config,
        WarpStart::default(),
        end,
        &mut |t, states, _| {
            assert_eq!(t, frames.len() as u64 * ft, "frames out of order");
            frames.push(states.to_vec());
            Ok(())
        },
        control,
    )
    .unwrap_or_else(|e| panic!("{config:?}: {e}"));
    (frames, stats)
}
