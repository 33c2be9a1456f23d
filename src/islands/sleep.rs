//! Sleep per island (seed 002, "Sleeping and waking"; Box2D v3's body finalisation and
//! `b2TrySleepIsland`).
//!
//! Every awake dynamic body carries a sleep timer: when its linear speed is at most
//! `linear_threshold` and its angular speed at most `angular_threshold`, the timer advances by
//! the step; otherwise it is reset to zero. An island falls asleep when the smallest timer of its
//! bodies has reached `time_to_sleep` — sleep is decided per island, never per body, or resting
//! bodies would sink into sleeping ones — unless the island is flagged for splitting: Box2D
//! splits a sleepy island before it lets it sleep, so that the pieces can sleep (or stay awake)
//! on their own. Waking (a touch, [`IslandGraph::wake`]) resets the timers of the whole island.
//!
//! The update walks the body lists of the awake islands only, in ascending island id order: its
//! cost is O(awake bodies) — a sleeping world costs nothing but the walk of an empty bit set —
//! and it is deterministic.

use glam::Vec3;

use super::error::IslandError;
use super::graph::{IslandGraph, IslandId, NONE};

/// When bodies count as resting and how long before their island sleeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SleepConfig {
    /// Linear speed (m/s) at or below which a body is resting. Box2D: 0.05 m/s.
    pub linear_threshold: f32,
    /// Angular speed (rad/s) at or below which a body is resting. Default 2 degrees per second.
    pub angular_threshold: f32,
    /// Seconds every body of an island must rest before the island sleeps. Box2D: 0.5 s.
    /// `f32::INFINITY` disables sleep.
    pub time_to_sleep: f32,
}

impl Default for SleepConfig {
    fn default() -> Self {
        SleepConfig {
            linear_threshold: 0.05,
            angular_threshold: 2.0f32.to_radians(),
            time_to_sleep: 0.5,
        }
    }
}

impl SleepConfig {
    /// Checks that the thresholds are finite and non-negative and `time_to_sleep` is positive
    /// (infinity allowed).
    pub fn validate(&self) -> Result<(), IslandError> {
        for (name, v) in [
            ("linear_threshold", self.linear_threshold),
            ("angular_threshold", self.angular_threshold),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(IslandError::BadConfig(format!(
                    "{name} = {v} must be finite and >= 0"
                )));
            }
        }
        if self.time_to_sleep.is_nan() || self.time_to_sleep <= 0.0 {
            return Err(IslandError::BadConfig(format!(
                "time_to_sleep = {} must be > 0",
                self.time_to_sleep
            )));
        }
        Ok(())
    }
}

impl IslandGraph {
    /// The sleep configuration in use.
    pub fn sleep_config(&self) -> SleepConfig {
        self.config
    }

    /// Replaces the sleep configuration (checked first).
    pub fn set_sleep_config(&mut self, config: SleepConfig) -> Result<(), IslandError> {
        config.validate()?;
        self.config = config;
        Ok(())
    }

    /// One step of sleep bookkeeping, after the awake islands were solved: advances or resets
    /// the timer of every awake dynamic body from its velocity (`linear[b]`, `angular[b]`,
    /// indexed by body id; entries of static and sleeping bodies are not read), records each
    /// awake island's minimum timer, and puts to sleep every awake island
    /// whose minimum reached `time_to_sleep` and that is not flagged for splitting. Returns the
    /// islands put to sleep, ascending. Nothing changes when an argument is bad.
    pub fn update_sleep(
        &mut self,
        dt: f32,
        linear: &[Vec3],
        angular: &[Vec3],
    ) -> Result<Vec<IslandId>, IslandError> {
        let n = self.body_count();
        if !(dt.is_finite() && dt > 0.0) {
            return Err(IslandError::NonFinite {
                what: "time step (must be > 0)",
                index: 0,
            });
        }
        for (what, s) in [("linear velocity", linear), ("angular velocity", angular)] {
            if s.len() != n {
                return Err(IslandError::BadLength {
                    what,
                    expected: n,
                    got: s.len(),
                });
            }
        }
        // Pass 1, read only: the velocities of awake bodies must be finite (so that nothing
        // changes on bad input). Sleeping and static bodies are not read at all, so the cost
        // is O(awake bodies), as with Box2D's awake body set.
        for i in self.awake.iter_ones() {
            let mut b = self.islands[i].head_body;
            while b != NONE {
                let k = b as usize;
                if !linear[k].is_finite() {
                    return Err(IslandError::NonFinite {
                        what: "linear velocity",
                        index: k,
                    });
                }
                if !angular[k].is_finite() {
                    return Err(IslandError::NonFinite {
                        what: "angular velocity",
                        index: k,
                    });
                }
                b = self.body_next[k];
            }
        }
        // Pass 2: timers, per-island minimum, sleepy islands.
        let lin2 = self.config.linear_threshold * self.config.linear_threshold;
        let ang2 = self.config.angular_threshold * self.config.angular_threshold;
        let tts = self.config.time_to_sleep;
        let mut sleepy = Vec::new();
        for i in self.awake.iter_ones() {
            let mut min = f32::INFINITY;
            let mut b = self.islands[i].head_body;
            while b != NONE {
                let k = b as usize;
                let t = if linear[k].length_squared() <= lin2 && angular[k].length_squared() <= ang2
                {
                    self.sleep_time[k] + dt
                } else {
                    0.0
                };
                self.sleep_time[k] = t;
                min = min.min(t);
                b = self.body_next[k];
            }
            let isl = &mut self.islands[i];
            isl.min_sleep_time = min;
            if min >= tts && isl.remove_count == 0 {
                sleepy.push(IslandId(i as u32));
            }
        }
        for i in &sleepy {
            self.awake.unset(i.index());
        }
        Ok(sleepy)
    }

    /// Whether an island is sleepy: its bodies' minimum sleep timer (as of the last update)
    /// reached `time_to_sleep`.
    pub fn is_sleepy(&self, island: IslandId) -> Result<bool, IslandError> {
        self.check_island(island)?;
        Ok(self.islands[island.index()].min_sleep_time >= self.config.time_to_sleep)
    }
}
