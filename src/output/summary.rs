//! The end-of-run summary (DESIGN.md, "Command line": simulated seconds, wall seconds,
//! real-time factor, events, rollbacks, STM commits and aborts), plus the engine's own figures.
//!
//! Figures that do not apply to an engine are `None` and print as `n/a`: the frame engine
//! advances every body in lock-step, so it has no events or rollbacks (reported as 0, Mirtich's
//! "RD" baseline, seed 001) and runs no transactions (STM n/a).
//!
//! A warp run's STM abort ratio (aborts over aborts and commits, from the STM's own counters)
//! says how much work the STM threw away, not where. When any critical section was re-run, the
//! line goes on to say where, per class of table (`sync::Class`: the TVHT, the GVT buffer, the
//! contact groups' island graph): `STM abort ratio 0.2812 (TVHT 0.31, GVT 0.25, groups 0.02)`,
//! each figure that structure's re-run attempts over its attempts, for the structures that ran
//! sections. These come from the seam's section counters rather than the STM's, which do not
//! know which table a transaction touched; every transaction of a run goes through the seam, so
//! the per-class figures, weighted by attempts, make up the overall one.

use std::fmt;

use crate::sync::ByClass;

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
    /// Frames stepped (frame 0, the initial state, is not a step; a resumed run counts the
    /// frames after its checkpoint).
    pub frames: u64,
    /// The checkpoint's frame, when the run was resumed from one.
    pub resumed_from: Option<u64>,
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
    /// The warp engine's own counters (antievents, rolled-back ticks, TVHT writes, mean
    /// LVT - GVT); `None` for the frame engine, whose island figures print instead.
    pub warp: Option<crate::warp::WarpStats>,
    /// The run stopped at its time limit (`RunOptions::time_limit`) after `frames` frames.
    pub time_limited: bool,
    /// The run had `--sleep off` (`RunOptions::sleep`): nothing slept. The first line says so.
    pub sleep_off: bool,
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

/// Where the re-run sections were: ` (TVHT 0.31, GVT 0.25, groups 0.02)`, each class's re-run
/// attempts over its attempts, for the classes that ran sections in [`sync::Class`] order; empty
/// when no section was re-run (always so under locks).
///
/// [`sync::Class`]: crate::sync::Class
fn retries_by_class(by_class: &ByClass) -> String {
    if by_class.total().retried() == 0 {
        return String::new();
    }
    let parts: Vec<String> = by_class
        .ran()
        .map(|(c, s)| format!("{} {:.2}", c.name(), s.retry_ratio()))
        .collect();
    format!(" ({})", parts.join(", "))
}

impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let resumed = match self.resumed_from {
            Some(k) => format!(" (resumed at frame {k})"),
            None => String::new(),
        };
        writeln!(
            f,
            "run: {}{resumed}, {} bodies ({} dynamic), {} engine, {} thread{}{}",
            self.scene,
            self.bodies,
            self.dynamic_bodies,
            self.engine,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            if self.sleep_off { ", sleep off" } else { "" }
        )?;
        writeln!(
            f,
            "simulated {:.3} s ({} frames) in {:.3} s wall: {:.2}x real time{}",
            self.simulated_seconds,
            self.frames,
            self.wall_seconds,
            self.real_time_factor(),
            if self.time_limited {
                " (stopped at the time limit)"
            } else {
                ""
            }
        )?;
        writeln!(
            f,
            "events {}, rollbacks {}, STM commits {}, aborts {}",
            Opt(self.events),
            Opt(self.rollbacks),
            Opt(self.stm_commits),
            Opt(self.stm_aborts)
        )?;
        match &self.warp {
            Some(w) => {
                let ratio = match (self.stm_commits, self.stm_aborts) {
                    (Some(c), Some(a)) if a + c > 0 => format!("{:.4}", a as f64 / (a + c) as f64),
                    _ => "n/a".to_string(),
                } + &retries_by_class(&w.by_class);
                write!(
                    f,
                    "antievents {}, rolled-back ticks {}, TVHT writes {}, STM abort ratio {}, mean LVT - GVT {:.1} ticks (lead {} of window {} at the end; raised {}, lowered {} times, floor tightened {} times)",
                    w.entities.antievents,
                    w.entities.rolled_back_ticks,
                    w.entities.tvht_writes,
                    ratio,
                    w.mean_lead(),
                    w.lead.lead,
                    w.window,
                    w.lead.raised,
                    w.lead.lowered,
                    w.lead.tightened
                )?;
                let e = &w.entities;
                write!(
                    f,
                    "\nspans {} (mean {:.1} ticks, {} cut by rollbacks; {} glides of groups, mean {:.1} ticks), refinements {} ({} found no contact)",
                    e.spans,
                    e.span_ticks as f64 / e.spans.max(1) as f64,
                    e.span_cuts,
                    e.glides,
                    e.glide_ticks as f64 / e.glides.max(1) as f64,
                    w.refinements,
                    w.refinements - w.refinements_met.min(w.refinements)
                )?;
                if w.groups {
                    write!(
                        f,
                        "\ncontact groups: {} changes ({} fusions, {} fissions; {} made before their tick was committed), {} groups asleep at the end, {} group-ticks stepped asleep in {} naps ({} cut by rollbacks), {} rollbacks across group changes (undoing {} fusions and {} fissions); island management {:.3} s ({:.2}% of the wall time)",
                        w.group_changes,
                        w.fusions,
                        w.fissions,
                        w.speculative_changes,
                        w.sleeping_groups,
                        w.entities.asleep_ticks,
                        w.entities.naps,
                        w.entities.nap_cuts,
                        w.rollbacks_across_changes,
                        w.fusions_undone,
                        w.fissions_undone,
                        w.island_seconds,
                        100.0 * w.island_seconds / self.wall_seconds.max(f64::MIN_POSITIVE)
                    )?;
                }
                if let Some(p) = &w.parallelism {
                    write!(
                        f,
                        "\nparallelism: {} tasks, work {:.3} s, span {:.3} s, work/span {:.1}; speedup bound at 4/8/16/64 workers {:.1}/{:.1}/{:.1}/{:.1} (greedy {:.1}/{:.1}/{:.1}/{:.1})",
                        p.tasks,
                        p.work,
                        p.span,
                        p.ratio(),
                        p.bound(4),
                        p.bound(8),
                        p.bound(16),
                        p.bound(64),
                        p.greedy(4),
                        p.greedy(8),
                        p.greedy(16),
                        p.greedy(64)
                    )?;
                }
                Ok(())
            }
            None => write!(
                f,
                "contacts max {}, islands in the last frame {} awake and {} asleep, island links {}, splits {}",
                self.contacts_max,
                self.islands_awake_last,
                self.islands_sleeping_last,
                self.island_links,
                self.island_splits
            ),
        }
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
        assert!(!text.contains("sleep off"));
        let awake = RunSummary {
            sleep_off: true,
            ..s
        };
        assert!(awake.to_string().starts_with(
            "run: cylinders, 206 bodies (200 dynamic), frame engine, 2 threads, sleep off\n"
        ));
        let instant = RunSummary::default();
        assert!(instant.real_time_factor().is_infinite());
    }

    #[test]
    fn a_warp_run_prints_its_own_counters_instead_of_islands() {
        let s = RunSummary {
            engine: "warp".into(),
            events: Some(12),
            rollbacks: Some(3),
            stm_commits: Some(990),
            stm_aborts: Some(10),
            warp: Some(crate::warp::WarpStats {
                entities: crate::warp::entity::EntityStats {
                    antievents: 4,
                    rolled_back_ticks: 57,
                    tvht_writes: 1000,
                    turns: 4,
                    lead_sum: 49,
                    ..Default::default()
                },
                window: 256,
                lead: crate::warp::lead::LeadStats {
                    lead: 64,
                    raised: 2,
                    lowered: 1,
                    tightened: 1,
                },
                ..Default::default()
            }),
            ..RunSummary::default()
        };
        let text = s.to_string();
        assert!(text.contains("events 12, rollbacks 3, STM commits 990, aborts 10"));
        assert!(text.contains(
            "antievents 4, rolled-back ticks 57, TVHT writes 1000, STM abort ratio 0.0100, mean LVT - GVT 12.2 ticks (lead 64 of window 256 at the end; raised 2, lowered 1 times, floor tightened 1 times)"
        ));
        assert!(!text.contains("islands in the last frame"));
    }

    fn by_class(counts: &[(crate::sync::Class, u64, u64)]) -> ByClass {
        let mut b = ByClass::default();
        for &(c, sections, attempts) in counts {
            let i = crate::sync::Class::ALL
                .iter()
                .position(|&k| k == c)
                .unwrap();
            b.0[i] = crate::sync::ClassStats {
                sections,
                attempts,
                ..Default::default()
            };
        }
        b
    }

    #[test]
    fn retries_are_split_by_class_only_when_some_section_was_retried() {
        use crate::sync::Class::{Groups, Gvt, Other, Tvht};
        assert_eq!(retries_by_class(&ByClass::default()), "");
        // Sections ran, none re-run (the lock backend, or an STM run without conflicts).
        assert_eq!(
            retries_by_class(&by_class(&[(Tvht, 50, 50), (Gvt, 9, 9)])),
            ""
        );
        // In class order, every class that ran (a class with no re-run prints 0.00), and none
        // that did not (Groups).
        assert_eq!(
            retries_by_class(&by_class(&[
                (Other, 10, 10),
                (Gvt, 75, 100),
                (Tvht, 69, 100)
            ])),
            " (TVHT 0.31, GVT 0.25, other 0.00)"
        );
        assert_eq!(
            retries_by_class(&by_class(&[(Groups, 98, 100)])),
            " (groups 0.02)"
        );
    }

    #[test]
    fn the_abort_ratio_says_which_structure_the_aborts_come_from() {
        use crate::sync::Class::{Groups, Gvt, Tvht};
        let s = RunSummary {
            engine: "warp".into(),
            stm_commits: Some(718),
            stm_aborts: Some(282),
            warp: Some(crate::warp::WarpStats {
                by_class: by_class(&[(Tvht, 414, 600), (Gvt, 225, 300), (Groups, 98, 100)]),
                ..Default::default()
            }),
            ..RunSummary::default()
        };
        assert!(
            s.to_string()
                .contains("STM abort ratio 0.2820 (TVHT 0.31, GVT 0.25, groups 0.02), mean LVT"),
            "{s}"
        );
    }
}
