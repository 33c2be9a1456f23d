//! The sweep's SVG plots (plotters, SVG backend only):
//!
//! * `speedup.svg`: speedup over 1 thread against threads, one line per scene, size, engine and
//!   backend, with the ideal `y = x`;
//! * `stm_vs_locks.svg`: the warp engine's STM / locks speed ratio (locks' time over the STM's)
//!   against threads, one line per scene and size, with the line `y = 1`;
//! * `time_per_n.svg`: wall seconds per simulated second against the number of bodies (log
//!   y axis, one slot per size on x) at the lowest thread count of the sweep, one line per scene, engine and
//!   backend.
//!
//! A plot with nothing to show (one thread count, one backend, one size) is not written.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::Row;
use crate::run::Backend;

type Series = (String, Vec<(f64, f64)>);

fn label(r: &Row, with_n: bool, with_backend: bool) -> String {
    let mut s = r.config.scene.clone();
    if with_n {
        s.push_str(&format!(" {}", r.dynamic_bodies));
    }
    s.push_str(&format!(" {}", r.config.engine.name()));
    if with_backend && r.config.backend.is_some() {
        s.push_str(&format!(" {}", r.config.backend_name()));
    }
    s
}

/// Groups `(key, x, y)` points into series in first-seen order, each sorted by x.
fn group(points: impl Iterator<Item = (String, f64, f64)>) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for (k, x, y) in points {
        if !(x.is_finite() && y.is_finite()) {
            continue;
        }
        match out.iter_mut().find(|(name, _)| *name == k) {
            Some((_, v)) => v.push((x, y)),
            None => out.push((k, vec![(x, y)])),
        }
    }
    for (_, v) in &mut out {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

fn draw(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    reference: Option<(&str, Vec<(f64, f64)>)>,
    log: bool,
) -> Result<(), String> {
    let all = series
        .iter()
        .flat_map(|(_, v)| v.iter())
        .chain(reference.iter().flat_map(|(_, v)| v.iter()));
    let (mut y0, mut y1) = (f64::MAX, f64::MIN);
    let mut xs: Vec<f64> = Vec::new();
    for &(x, y) in all {
        y0 = y0.min(y);
        y1 = y1.max(y);
        xs.push(x);
    }
    // The x axis is categorical: one evenly spaced slot per x value (thread or body count),
    // labelled with the value itself.
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let slot = |x: f64| SegmentValue::CenterOf(xs.iter().position(|v| *v == x).unwrap_or(0) as i32);
    let to_slots = |pts: &[(f64, f64)]| -> Vec<(SegmentValue<i32>, f64)> {
        pts.iter().map(|&(x, y)| (slot(x), y)).collect()
    };
    let x_label = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => xs
            .get(*i as usize)
            .map(|x| format!("{x:.0}"))
            .unwrap_or_default(),
        SegmentValue::Last => String::new(),
    };
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let colour = |i: usize| Palette99::pick(i).to_rgba();
    macro_rules! plot_on {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_labels(xs.len())
                .x_label_formatter(&x_label)
                .x_desc(x_desc)
                .y_desc(y_desc)
                .draw()
                .map_err(|e| err(&e))?;
            if let Some((name, pts)) = &reference {
                chart
                    .draw_series(LineSeries::new(to_slots(pts), BLACK.mix(0.4)))
                    .map_err(|e| err(&e))?
                    .label(*name)
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
            }
            for (i, (name, pts)) in series.iter().enumerate() {
                let c = colour(i);
                chart
                    .draw_series(LineSeries::new(to_slots(pts), c.stroke_width(2)))
                    .map_err(|e| err(&e))?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                    });
                chart
                    .draw_series(
                        to_slots(pts)
                            .into_iter()
                            .map(|p| Circle::new(p, 3, c.filled())),
                    )
                    .map_err(|e| err(&e))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK.mix(0.3))
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(|e| err(&e))?;
        }};
    }
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70);
    // A segmented range a..b has the slots a..=b.
    let x_range = (0..(xs.len() as i32 - 1).max(1)).into_segmented();
    if log {
        let chart = builder
            .build_cartesian_2d(x_range, (y0 / 2.0..y1 * 2.0).log_scale())
            .map_err(|e| err(&e))?;
        plot_on!(chart);
    } else {
        let chart = builder
            .build_cartesian_2d(x_range, 0.0..y1 * 1.15)
            .map_err(|e| err(&e))?;
        plot_on!(chart);
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Writes the plots into `dir`; returns the files written.
pub fn write_plots(dir: &Path, rows: &[Row], machine: &str) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    let threads: Vec<usize> = {
        let mut t: Vec<usize> = rows.iter().map(|r| r.config.threads).collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    if threads.len() > 1 {
        let series = group(
            rows.iter()
                .filter_map(|r| Some((label(r, true, true), r.config.threads as f64, r.speedup?))),
        );
        let path = dir.join("speedup.svg");
        draw(
            &path,
            &format!("Speedup over 1 thread ({machine})"),
            "threads",
            "speedup",
            &series,
            Some((
                "ideal",
                threads.iter().map(|&t| (t as f64, t as f64)).collect(),
            )),
            false,
        )?;
        written.push(path);
    }
    let ratios = group(
        rows.iter()
            .filter(|r| r.config.backend == Some(Backend::Stm) && !r.at_least())
            .filter_map(|r| {
                let l = rows.iter().find(|l| {
                    l.config.backend == Some(Backend::Locks)
                        && l.config.scene == r.config.scene
                        && l.config.bodies == r.config.bodies
                        && l.config.threads == r.config.threads
                        && !l.at_least()
                })?;
                Some((
                    format!("{} {}", r.config.scene, r.dynamic_bodies),
                    r.config.threads as f64,
                    l.median() / r.median(),
                ))
            }),
    );
    if !ratios.is_empty() {
        let path = dir.join("stm_vs_locks.svg");
        draw(
            &path,
            &format!("Warp engine: STM / locks speed, > 1 = STM faster ({machine})"),
            "threads",
            "locks' time / STM's time",
            &ratios,
            Some(("equal", threads.iter().map(|&t| (t as f64, 1.0)).collect())),
            false,
        )?;
        written.push(path);
    }
    let t0 = threads.first().copied().unwrap_or(1);
    let per_n = group(
        rows.iter()
            .filter(|r| r.config.threads == t0 && !r.at_least())
            .map(|r| (label(r, false, true), r.dynamic_bodies as f64, r.median())),
    );
    if per_n.iter().any(|(_, v)| v.len() > 1) {
        let path = dir.join("time_per_n.svg");
        draw(
            &path,
            &format!("Wall seconds per simulated second, {t0} thread(s) ({machine})"),
            "bodies",
            "wall s / simulated s",
            &per_n,
            None,
            true,
        )?;
        written.push(path);
    }
    Ok(written)
}
