//! The sweep's outputs: the Markdown table (stdout), the checks under it, and the JSON.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Estimate, Row, Sample, Sweep};
use crate::run::{Backend, EngineKind};

/// Where the figures came from (also printed above the table).
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub os: String,
    pub arch: String,
    pub cpus: usize,
    /// `/proc/cpuinfo`'s model name, where there is one.
    pub cpu_model: Option<String>,
    /// `/proc/loadavg` before the sweep.
    pub load_average: Option<String>,
    /// Seconds since the Unix epoch at the start of the sweep.
    pub unix_time: u64,
    pub timewarp_version: String,
    /// Cargo features compiled in (`stm`, `locks`).
    pub features: Vec<String>,
}

impl Machine {
    pub fn here() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        });
        let load_average = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
        Machine {
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            load_average,
            unix_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            timewarp_version: env!("CARGO_PKG_VERSION").into(),
            features: super::compiled_backends()
                .iter()
                .map(|b| b.name().to_string())
                .collect(),
        }
    }

    pub fn line(&self) -> String {
        format!(
            "machine: {} {}, {} CPUs ({}), load average {}; timewarp {} with {}",
            self.os,
            self.arch,
            self.cpus,
            self.cpu_model.as_deref().unwrap_or("model unknown"),
            self.load_average.as_deref().unwrap_or("unknown"),
            self.timewarp_version,
            self.features.join(", ")
        )
    }
}

/// A figure with about three significant digits.
pub fn fig(x: f64) -> String {
    if !x.is_finite() {
        return "inf".into();
    }
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.2e}")
    }
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or("-".into(), f)
}

/// The Markdown table: one line per configuration.
pub fn markdown(rows: &[Row]) -> String {
    let mut t = String::from(
        "| scene | N | engine | backend | T | s / sim s (median) | min - max | RTF | speedup | eff. | rollbacks | rolled-back ticks | STM aborts | read / write set | keys / section | work / span | bound 4 / 8 / 16 / 64 |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let c = &r.config;
        let warp = c.engine == EngineKind::Warp;
        let mark = if r.time_limited() { " †" } else { "" };
        let at_least = if r.at_least() { "> " } else { "" };
        let est = |f: &dyn Fn(&Estimate) -> String| r.estimate.as_ref().map_or("-".into(), f);
        t.push_str(&format!(
            "| {} | {} | {} | {} | {} | {}{}{} | {} - {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            c.scene,
            r.dynamic_bodies,
            c.engine.name(),
            c.backend_name(),
            c.threads,
            at_least,
            fig(r.median()),
            mark,
            fig(r.min()),
            fig(r.max()),
            if r.at_least() { "< " } else { "" },
            fig(r.real_time_factor()),
            opt(r.speedup, |s| format!("{s:.2}")),
            opt(r.efficiency(), |e| format!("{:.0}%", e * 100.0)),
            if warp { fig(r.rollbacks()) } else { "-".into() },
            if warp {
                fig(r.rolled_back_ticks())
            } else {
                "-".into()
            },
            opt(r.stm_abort_ratio(), |a| format!("{:.2}%", a * 100.0)),
            r.stm_sets()
                .map_or("-".into(), |(rs, ws)| format!("{rs:.1} / {ws:.1}")),
            opt(r.keys_per_section(), |k| format!("{k:.1}")),
            est(&|e| fig(e.work_over_span)),
            est(&|e| {
                [4, 8, 16, 64]
                    .map(|p| format!("{:.1}", e.bound(p).unwrap_or(f64::NAN)))
                    .join(" / ")
            }),
        ));
    }
    t
}

/// The lines under the table: what the columns mean, the STM/locks ratios, and the check of the
/// parallelism estimate against the measured 2-thread speedups.
pub fn notes(sweep: &Sweep, rows: &[Row]) -> String {
    let mut t = format!(
        "\ns / sim s: wall seconds per simulated second (frame engine over {} s, warp engine over {} s); \
         median, min and max of {} interleaved runs after {} warm-up round(s). RTF: real-time factor. \
         speedup: over the same configuration at 1 thread; eff.: speedup / threads. \
         STM aborts: conflict aborts / (aborts + commits); read / write set: mean entries per read-write \
         commit. work / span and bounds: parallelism estimate of the configuration's first warm-up run \
         (bound = work / max(work / P, span)). †: stopped at the time limit of {} s \
         (figures from the frames committed by then; a warm-up that hit it is the only run; \
         > X: no frame committed by then, so at least the limit over one frame's simulated time).\n",
        sweep.frame_seconds,
        sweep.warp_seconds,
        sweep.repeats,
        sweep.warmup.max(usize::from(sweep.parallelism)),
        sweep.time_limit.as_secs_f64()
    );
    // STM against locks: speed ratio = locks' time / STM's time (> 1: the STM is faster).
    let mut ratios = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.config.backend == Some(Backend::Stm) && !r.at_least())
    {
        if let Some(l) = rows.iter().find(|l| {
            l.config.backend == Some(Backend::Locks)
                && l.config.scene == r.config.scene
                && l.config.bodies == r.config.bodies
                && l.config.threads == r.config.threads
                && !l.at_least()
        }) {
            ratios.push(format!(
                "{} N={} T={}: {:.2}",
                r.config.scene,
                r.dynamic_bodies,
                r.config.threads,
                l.median() / r.median()
            ));
        }
    }
    if !ratios.is_empty() {
        t.push_str(&format!(
            "\nSTM / locks speed (locks' time over the STM's; > 1: the STM is faster): {}\n",
            ratios.join("; ")
        ));
    }
    let checks = bound_checks(rows);
    if !checks.is_empty() {
        t.push_str("\nParallelism estimate against the measured 2-thread speedup (the bound at 2 workers, from the 1-thread run's task DAG, must not be below it):\n");
        for c in checks {
            t.push_str(&format!("- {c}\n"));
        }
    }
    t
}

/// One line per warp configuration with a 1-thread estimate and a 2-thread measurement.
pub fn bound_checks(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for one in rows
        .iter()
        .filter(|r| r.config.engine == EngineKind::Warp && r.config.threads == 1)
    {
        let Some(est) = &one.estimate else { continue };
        let Some(two) = rows
            .iter()
            .find(|r| r.config.threads == 2 && r.config.same_but_threads(&one.config))
        else {
            continue;
        };
        let Some(measured) = two.speedup else {
            continue;
        };
        let bound = est.bound(2).unwrap_or(f64::NAN);
        out.push(format!(
            "{} N={} warp {}: bound(2) = {:.2} (work/span {}), measured {:.2}: {}",
            one.config.scene,
            one.dynamic_bodies,
            one.config.backend_name(),
            bound,
            fig(est.work_over_span),
            measured,
            if bound >= measured {
                "ok"
            } else {
                "BELOW the measured speedup"
            }
        ));
    }
    out
}

#[derive(Serialize)]
struct JsonRow<'a> {
    scene: &'a str,
    bodies_asked: usize,
    dynamic_bodies: usize,
    engine: &'static str,
    backend: &'static str,
    threads: usize,
    simulated_seconds: f64,
    time_limited: bool,
    wall_per_simulated_second: Summary3,
    real_time_factor: f64,
    speedup: Option<f64>,
    efficiency: Option<f64>,
    rollbacks_median: f64,
    rolled_back_ticks_median: f64,
    events_median: f64,
    stm_abort_ratio: Option<f64>,
    /// Class name to that class's re-run attempts over its attempts (STM rows; see the
    /// module documentation of `bench`).
    stm_abort_ratio_by_class: Option<BTreeMap<&'static str, f64>>,
    stm_read_set_mean: Option<f64>,
    stm_write_set_mean: Option<f64>,
    keys_per_section: Option<f64>,
    parallelism: Option<Estimate>,
    samples: &'a [Sample],
}

#[derive(Serialize)]
struct Summary3 {
    median: f64,
    min: f64,
    max: f64,
}

#[derive(Serialize)]
struct Json<'a> {
    machine: &'a Machine,
    frame_seconds: f64,
    warp_seconds: f64,
    warmup: usize,
    repeats: usize,
    time_limit_seconds: f64,
    wall_seconds: f64,
    rows: Vec<JsonRow<'a>>,
    checks: Vec<String>,
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { -1.0 }
}

/// The sweep as JSON (infinite figures, which JSON cannot hold, are written as -1).
pub fn json(machine: &Machine, sweep: &Sweep, rows: &[Row], wall_seconds: f64) -> String {
    let j = Json {
        machine,
        frame_seconds: sweep.frame_seconds,
        warp_seconds: sweep.warp_seconds,
        warmup: sweep.warmup,
        repeats: sweep.repeats,
        time_limit_seconds: sweep.time_limit.as_secs_f64(),
        wall_seconds,
        rows: rows
            .iter()
            .map(|r| JsonRow {
                scene: &r.config.scene,
                bodies_asked: r.config.bodies,
                dynamic_bodies: r.dynamic_bodies,
                engine: r.config.engine.name(),
                backend: r.config.backend_name(),
                threads: r.config.threads,
                simulated_seconds: r.config.seconds,
                time_limited: r.time_limited(),
                wall_per_simulated_second: Summary3 {
                    median: finite(r.median()),
                    min: finite(r.min()),
                    max: finite(r.max()),
                },
                real_time_factor: finite(r.real_time_factor()),
                speedup: r.speedup,
                efficiency: r.efficiency(),
                rollbacks_median: r.rollbacks(),
                rolled_back_ticks_median: r.rolled_back_ticks(),
                events_median: r.events(),
                stm_abort_ratio: r.stm_abort_ratio(),
                stm_abort_ratio_by_class: r
                    .stm_abort_ratio_by_class()
                    .map(|v| v.into_iter().map(|(c, a)| (c.name(), a)).collect()),
                stm_read_set_mean: r.stm_sets().map(|s| s.0),
                stm_write_set_mean: r.stm_sets().map(|s| s.1),
                keys_per_section: r.keys_per_section(),
                parallelism: r.estimate,
                samples: &r.samples,
            })
            .collect(),
        checks: bound_checks(rows),
    };
    serde_json::to_string_pretty(&j).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_about_three_digits() {
        assert_eq!(fig(0.0), "0");
        assert_eq!(fig(0.012345), "0.012");
        assert_eq!(fig(0.0012345), "1.23e-3");
        assert_eq!(fig(1.2345), "1.23");
        assert_eq!(fig(12.345), "12.3");
        assert_eq!(fig(1234.4), "1234");
        assert_eq!(fig(f64::INFINITY), "inf");
    }
}
