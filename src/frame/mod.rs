//! The frame-centric baseline engine (DESIGN.md, "The two engines": frame).
//!
//! TEMPORARY: replaced by the physics branch. This stand-in only lets the command line, the
//! output sinks and their tests run on the `cli` branch: it has the agreed API and integrates
//! free flight (gravity, constant angular velocity) tick by tick, with no contacts at all.

use glam::{Quat, Vec3};

use crate::dynamics::BodyState;
use crate::scene::Scene;

// TEMPORARY: replaced by the physics branch
/// How the frame engine runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameConfig {
    pub threads: usize,
    pub substeps: u32,
    pub sleep: bool,
}

impl Default for FrameConfig {
    fn default() -> Self {
        FrameConfig {
            threads: 1,
            substeps: 1,
            sleep: true,
        }
    }
}

// TEMPORARY: replaced by the physics branch
/// Figures about a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub frames: u64,
    pub contacts_max: usize,
    pub islands_awake_last: usize,
    pub islands_sleeping_last: usize,
    pub island_links: u64,
    pub island_splits: u64,
}

// TEMPORARY: replaced by the physics branch
/// Free flight only: every dynamic body follows gravity, statics stay put.
pub struct FrameEngine {
    states: Vec<BodyState>,
    is_static: Vec<bool>,
    gravity: Vec3,
    tick_seconds: f32,
    frame_ticks: u32,
    frame_seconds: f64,
    frame: u64,
}

impl FrameEngine {
    pub fn new(scene: &Scene, config: FrameConfig) -> Self {
        Self::new_free_flight(scene, config)
    }

    /// As `new`, or why the engine could not start (the physics branch's engine has this too).
    pub fn try_new(scene: &Scene, config: FrameConfig) -> Result<Self, String> {
        Ok(Self::new_free_flight(scene, config))
    }

    fn new_free_flight(scene: &Scene, _config: FrameConfig) -> Self {
        let w = &scene.world;
        FrameEngine {
            states: scene
                .bodies
                .iter()
                .map(|b| BodyState {
                    position: b.position,
                    rotation: b.rotation,
                    velocity: b.velocity,
                    angular_velocity: b.angular_velocity,
                })
                .collect(),
            is_static: scene.bodies.iter().map(|b| b.is_static).collect(),
            gravity: w.gravity,
            tick_seconds: 1.0 / w.ticks_per_second as f32,
            frame_ticks: w.frame_ticks,
            frame_seconds: f64::from(w.frame_ticks) / f64::from(w.ticks_per_second),
            frame: 0,
        }
    }

    pub fn states(&self) -> &[BodyState] {
        &self.states
    }

    pub fn frame(&self) -> u64 {
        self.frame
    }

    pub fn time(&self) -> f64 {
        self.frame as f64 * self.frame_seconds
    }

    pub fn step(&mut self) {
        let dt = self.tick_seconds;
        for (s, &fixed) in self.states.iter_mut().zip(&self.is_static) {
            if fixed {
                continue;
            }
            for _ in 0..self.frame_ticks {
                s.velocity += self.gravity * dt;
                s.position += s.velocity * dt;
                s.rotation =
                    (Quat::from_scaled_axis(s.angular_velocity * dt) * s.rotation).normalize();
            }
        }
        self.frame += 1;
    }

    pub fn stats(&self) -> EngineStats {
        EngineStats {
            frames: self.frame,
            ..EngineStats::default()
        }
    }
}
