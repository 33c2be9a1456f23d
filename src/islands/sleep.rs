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
//! The update walks the body lists of the awake islands only, in ascending island id order, when
//! few bodies are awake: its cost is then O(awake bodies), and a sleeping world costs nothing but
//! the walk of the awake bit set. When more than a quarter of the bodies are awake it makes one
//! flat pass over the body arrays instead (independent loads beat pointer chasing). Both give the
//! same timers and decisions, and both are deterministic.

use glam::Vec3;

use super::error::IslandError;
use super::graph::{IslandGraph, IslandId, NONE};

/// When bodies count as resting and how long before their island sleeps.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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
        self.update_sleep_traversal(dt, linear, angular, None)
    }

    /// [`IslandGraph::update_sleep`] with the traversal forced (`Some(true)`: flat pass over
    /// the body arrays, `Some(false)`: list walk) or chosen by awake fraction (`None`).
    fn update_sleep_traversal(
        &mut self,
        dt: f32,
        linear: &[Vec3],
        angular: &[Vec3],
        force_flat: Option<bool>,
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
        let awake_bodies: usize = self
            .awake
            .iter_ones()
            .map(|i| self.islands[i].body_count as usize)
            .sum();
        // Two traversals giving identical results: walking the awake islands' body lists costs
        // O(awake bodies) but chases pointers; a flat pass over the body arrays costs O(bodies)
        // but its loads are independent. Walk the lists only when few bodies are awake.
        let flat = force_flat.unwrap_or(awake_bodies * 4 > n);
        // A velocity is bad when its squared length is not finite: NaN, infinite, or so large
        // (beyond ~1.8e19 m/s) that the squares overflow. Velocities of sleeping and static
        // bodies are never read. Nothing changes on bad input.
        let check = |k: usize| -> Result<(), IslandError> {
            let lv = linear[k].length_squared();
            let lw = angular[k].length_squared();
            if !lv.is_finite() {
                return Err(IslandError::NonFinite {
                    what: "linear velocity",
                    index: k,
                });
            }
            if !(lv + lw).is_finite() {
                return Err(IslandError::NonFinite {
                    what: "angular velocity",
                    index: k,
                });
            }
            Ok(())
        };
        let lin2 = self.config.linear_threshold * self.config.linear_threshold;
        let ang2 = self.config.angular_threshold * self.config.angular_threshold;
        if flat {
            // One pass writing the new timers into a scratch array and each run of one
            // island's bodies — bodies of an island often follow each other in id order — into
            // one (island, minimum) record. The graph is touched only after the pass found
            // every awake velocity good.
            let mut new_time = std::mem::take(&mut self.scratch_time.0);
            let mut runs = std::mem::take(&mut self.scratch_runs.0);
            new_time.clear();
            runs.clear();
            // Start from a copy of the old timers (kept for sleeping and static bodies), then
            // rewrite each run of consecutive bodies of one awake island with a tight loop.
            new_time.extend_from_slice(&self.sleep_time);
            let mut bad = false;
            let mut k = 0;
            while k < n {
                let i = self.body_island[k];
                let mut end = k + 1;
                while end < n && self.body_island[end] == i {
                    end += 1;
                }
                if i != NONE && self.awake.get(i as usize) {
                    let mut min = f32::INFINITY;
                    let run = new_time[k..end]
                        .iter_mut()
                        .zip(&linear[k..end])
                        .zip(&angular[k..end]);
                    for ((t, v), w) in run {
                        let lv = v.length_squared();
                        let lw = w.length_squared();
                        bad |= !(lv + lw).is_finite();
                        let x = if lv <= lin2 && lw <= ang2 {
                            *t + dt
                        } else {
                            0.0
                        };
                        *t = x;
                        if x < min {
                            min = x;
                        }
                    }
                    runs.push((i, min));
                }
                k = end;
            }
            if bad {
                self.scratch_time.0 = new_time;
                self.scratch_runs.0 = runs;
                for k in 0..n {
                    let i = self.body_island[k];
                    if i != NONE && self.awake.get(i as usize) {
                        check(k)?;
                    }
                }
                unreachable!("a bad velocity was seen but not found again");
            }
            self.scratch_time.0 = std::mem::replace(&mut self.sleep_time, new_time);
            for i in self.awake.iter_ones() {
                self.islands[i].min_sleep_time = f32::INFINITY;
            }
            for &(i, m) in &runs {
                let isl = &mut self.islands[i as usize];
                isl.min_sleep_time = isl.min_sleep_time.min(m);
            }
            self.scratch_runs.0 = runs;
        } else {
            // Pass 1, read only: check the awake velocities. Pass 2: timers and minimum per
            // island, walking the lists.
            for i in self.awake.iter_ones() {
                let mut b = self.islands[i].head_body;
                while b != NONE {
                    check(b as usize)?;
                    b = self.body_next[b as usize];
                }
            }
            for i in self.awake.iter_ones() {
                let mut min = f32::INFINITY;
                let mut b = self.islands[i].head_body;
                while b != NONE {
                    let k = b as usize;
                    let t = if linear[k].length_squared() <= lin2
                        && angular[k].length_squared() <= ang2
                    {
                        self.sleep_time[k] + dt
                    } else {
                        0.0
                    };
                    self.sleep_time[k] = t;
                    min = min.min(t);
                    b = self.body_next[k];
                }
                self.islands[i].min_sleep_time = min;
            }
        }
        // Pass 3: awake islands that may sleep, ascending.
        let tts = self.config.time_to_sleep;
        let sleepy: Vec<IslandId> = self
            .awake
            .iter_ones()
            .filter(|&i| {
                let isl = &self.islands[i];
                isl.min_sleep_time >= tts && isl.remove_count == 0
            })
            .map(|i| IslandId(i as u32))
            .collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The flat pass and the list walk must give identical graphs, errors included.
    #[test]
    fn both_traversals_agree() {
        let mut x: u64 = 7;
        let mut rnd = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as usize
        };
        let n = 400;
        let is_static: Vec<bool> = (0..n).map(|b| b % 23 == 0).collect();
        let mut g = IslandGraph::new(&is_static).unwrap();
        for _ in 0..300 {
            let (a, b) = (rnd() % n, rnd() % n);
            if a != b && !(is_static[a] && is_static[b]) {
                g.link(a, b).unwrap();
            }
        }
        let mut h = g.clone();
        for step in 0..40 {
            let v: Vec<Vec3> = (0..n)
                .map(|_| Vec3::new((rnd() % 100) as f32 * 0.001, 0.0, 0.0))
                .collect();
            let w = vec![Vec3::ZERO; n];
            let a = g.update_sleep_traversal(0.05, &v, &w, Some(true)).unwrap();
            let b = h.update_sleep_traversal(0.05, &v, &w, Some(false)).unwrap();
            assert_eq!(a, b, "step {step}");
            assert!(g == h, "graphs differ at step {step}");
            g.validate().unwrap();
            if step % 9 == 4 {
                let i = g.islands().nth(rnd() % 10).unwrap();
                g.wake(i).unwrap();
                h.wake(i).unwrap();
            }
        }
        assert!(
            g.awake_islands().count() < g.islands().count(),
            "nothing slept"
        );
        let woken = g.islands().next().unwrap();
        g.wake(woken).unwrap();
        h.wake(woken).unwrap();
        let mut bad = vec![Vec3::ZERO; n];
        let k = g.bodies(woken).unwrap().last().unwrap();
        bad[k].y = f32::INFINITY;
        let w = vec![Vec3::ZERO; n];
        let expected = Err(IslandError::NonFinite {
            what: "linear velocity",
            index: k,
        });
        assert_eq!(
            g.update_sleep_traversal(0.05, &bad, &w, Some(true)),
            expected
        );
        assert_eq!(
            h.update_sleep_traversal(0.05, &bad, &w, Some(false)),
            expected
        );
        assert!(g == h);
    }
}
