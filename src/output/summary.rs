//! The end-of-run summary (DESIGN.md, "Command line": simulated seconds, wall seconds,
//! real-time factor, events, rollbacks, STM commits and aborts), plus the engine's own figures.
//!
//! Figures that do not apply to an engine are `None` and print as `n/a`: the frame engine
//! advances every body in lock-step, so it has no events or rollbacks (reported as 0, Mirtich's
//! "RD" baseline, seed 001) and runs no transactions (STM n/a).

use std::fmt;

/// What a run did and how fast.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunSummary {
    /// Built-in name or file path.
    pub scene: String,
    /// `frame` or `warp`.
    pub engine: String,
    pub threads: usize,
    pub bodies: usize,
    pub dynamic_bodies: usize,
    /// Frames stepped (frame 0, the initial state, is not a step).
    pub frames: u64,
    pub simulated_seconds: f64,
    pub wall_seconds: f64,
    pub events: Option<u64>,
    pub rollbacks: Option<u64>,
    pub stm_commits: Option<u64>,
    pub stm_aborts: Option<u64>,
    /// Most contacts in one frame.
    pub contacts_max: usize,
    pub islands_awake_last: usize,
    pub islands_sleeping_last: usize,
    pub island_links: u64,
    pub island_splits: u64,
}

impl RunSummary {
    /// Simulated seconds per wall second (infinite when the run took no measurable time).
    pub fn real_time_factor(&self) -> f64 {
        if self.wall_seconds > 0.0 {
            self.simulated_seconds / self.wall_seconds
        } else {
            f64::INFINITY
        }
    }
}

struct Opt(Option<u64>);

impl fmt::Display for Opt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(v) => write!(f, "{v}"),
            None => f.write_str("n/a"),
        }
    }
}

impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "run: {}, {} bodies ({} dynamic), {} engine, {} thread{}",
            self.scene,
            self.bodies,
            self.dynamic_bodies,
            self.engine,
            self.threads,
            if self.threads == 1 { "" } else { "s" }
        )?;
        writeln!(
            f,
            "simulated {:.3} s ({} frames) in {:.3} s wall: {:.2}x real time",
            self.simulated_seconds,
            self.frames,
            self.wall_seconds,
            self.real_time_factor()
        )?;
        writeln!(
            f,
            "events {}, rollbacks {}, STM commits {}, aborts {}",
            Opt(self.events),
            Opt(self.rollbacks),
            Opt(self.stm_commits),
            Opt(self.stm_aborts)
        )?;
        write!(
            f,
            "contacts max {}, islands in the last frame {} awake and {} asleep, island links {}, splits {}",
            self.contacts_max,
            self.islands_awake_last,
            self.islands_sleeping_last,
            self.island_links,
            self.island_splits
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_every_contract_figure() {
        let s = RunSummary {
            scene: "cylinders".into(),
            engine: "frame".into(),
            threads: 2,
            bodies: 206,
            dynamic_bodies: 200,
            frames: 600,
            simulated_seconds: 10.0,
            wall_seconds: 4.0,
            events: Some(0),
            rollbacks: Some(0),
            ..RunSummary::default()
        };
        assert_eq!(s.real_time_factor(), 2.5);
        let text = s.to_string();
        assert!(text.contains("run: cylinders, 206 bodies (200 dynamic), frame engine, 2 threads"));
        assert!(text.contains("simulated 10.000 s (600 frames) in 4.000 s wall: 2.50x real time"));
        assert!(text.contains("events 0, rollbacks 0, STM commits n/a, aborts n/a"));
        assert_eq!(text.lines().count(), 4);
        let instant = RunSummary::default();
        assert!(instant.real_time_factor().is_infinite());
    }
}
