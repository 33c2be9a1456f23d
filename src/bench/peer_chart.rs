//! The `peer/` comparison as a bar chart: `timewarp bench chart PEER.md... --out FILE.svg`.
//!
//! `peer/` (rapier3d beside timewarp's engines, a workspace of its own) prints a Markdown
//! table: a first line that says what ran (`rapier3d 0.36 (serial build, dt = 1/60 s) against
//! timewarp ...: ... warp engine (locks) over 0.5 s); ratio = rapier / timewarp ...`), then
//! `| scene | N | T | rapier | timewarp ENGINE | ratio | ...` with one row per scene, size and
//! thread count. Those files, kept under `docs/bench/<run>/peer-*.md`, are the record; this
//! module reads them back ([`parse`]) and draws their ratios ([`chart`]): one group of bars per
//! row (scene, N, T), one bar per file and timewarp engine, the ratio rapier / timewarp on a
//! log axis with the line of 1 (above it timewarp is faster). So the chart of a run is remade
//! from its files alone, without running rapier again.
//!
//! A figure the table marks with `†` (a run stopped at its time limit) is drawn like the
//! others, and the mark is kept in the bar's label.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::output::AtomicFile;

/// One row of a peer table.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerRow {
    pub scene: String,
    pub bodies: usize,
    pub threads: usize,
    /// rapier's wall seconds per simulated second.
    pub rapier: f64,
    /// Per timewarp engine column: wall seconds per simulated second, whether it stopped at
    /// its time limit, and the ratio rapier / timewarp.
    pub timewarp: Vec<(f64, bool, f64)>,
}

/// A peer table: what ran, and its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerTable {
    /// rapier's build and step, e.g. `serial, dt = 1/60 s`.
    pub rapier: String,
    /// The timewarp engines of the columns, e.g. `warp (locks)`.
    pub engines: Vec<String>,
    pub rows: Vec<PeerRow>,
}

/// The text between `start` and the next `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let len = text[from..].find(end)?;
    Some(&text[from..from + len])
}

/// Reads a table printed by `peer/` (`source` names it in errors).
pub fn parse(text: &str, source: &str) -> Result<PeerTable, String> {
    let fail = |line: usize, m: String| format!("{source}, line {line}: {m}");
    let first = text.lines().next().unwrap_or("");
    if !first.starts_with("rapier3d") {
        return Err(fail(
            1,
            "not a table of peer/ (it begins with \"rapier3d ... against timewarp\")".into(),
        ));
    }
    let build = between(first, "(", " build").unwrap_or("?");
    let dt = between(first, "dt = ", ")").unwrap_or("?");
    let backend = between(first, "warp engine (", ")");
    let mut lines = text
        .lines()
        .enumerate()
        .skip(1)
        .filter(|(_, l)| l.starts_with('|'));
    let (n, header) = lines.next().ok_or_else(|| format!("{source}: no table"))?;
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let head = cells(header);
    if head.len() < 6 || head[..4] != ["scene", "N", "T", "rapier"] || head.len() % 2 != 0 {
        return Err(fail(
            n + 1,
            format!("expected | scene | N | T | rapier | timewarp ENGINE | ratio |, got {header}"),
        ));
    }
    let mut engines = Vec::new();
    for pair in head[4..].chunks(2) {
        let engine = pair[0]
            .strip_prefix("timewarp ")
            .filter(|_| pair[1] == "ratio")
            .ok_or_else(|| fail(n + 1, format!("unexpected columns {pair:?}")))?;
        engines.push(match (engine, backend) {
            ("warp", Some(b)) => format!("warp ({b})"),
            _ => engine.to_string(),
        });
    }
    let mut rows = Vec::new();
    for (n, line) in lines {
        let c = cells(line);
        if c.iter().all(|x| x.chars().all(|ch| ch == '-' || ch == ':')) {
            continue; // the rule under the header
        }
        if c.len() != head.len() {
            return Err(fail(
                n + 1,
                format!("{} cells, expected {}", c.len(), head.len()),
            ));
        }
        let num = |s: &str| -> Result<f64, String> {
            s.trim_end_matches('†')
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| fail(n + 1, format!("{s:?} is not a positive number")))
        };
        let whole = |s: &str| -> Result<usize, String> {
            s.parse()
                .map_err(|_| fail(n + 1, format!("{s:?} is not a whole number")))
        };
        let mut timewarp = Vec::new();
        for pair in c[4..].chunks(2) {
            timewarp.push((num(&pair[0])?, pair[0].ends_with('†'), num(&pair[1])?));
        }
        rows.push(PeerRow {
            scene: c[0].clone(),
            bodies: whole(&c[1])?,
            threads: whole(&c[2])?,
            rapier: num(&c[3])?,
            timewarp,
        });
    }
    if rows.is_empty() {
        return Err(format!("{source}: the table has no rows"));
    }
    Ok(PeerTable {
        rapier: format!("{build}, dt = {dt}"),
        engines,
        rows,
    })
}

/// One bar series: its label and its ratio per case.
type Bars = (String, Vec<Option<(f64, bool)>>);

/// The cases (scene, N, T) of `tables` in first-seen order, and a series per table and engine.
fn series(tables: &[PeerTable]) -> (Vec<(String, usize, usize)>, Vec<Bars>) {
    let mut cases: Vec<(String, usize, usize)> = Vec::new();
    for r in tables.iter().flat_map(|t| &t.rows) {
        let key = (r.scene.clone(), r.bodies, r.threads);
        if !cases.contains(&key) {
            cases.push(key);
        }
    }
    let mut out = Vec::new();
    for t in tables {
        for (e, engine) in t.engines.iter().enumerate() {
            let values = cases
                .iter()
                .map(|(s, n, th)| {
                    t.rows
                        .iter()
                        .find(|r| (&r.scene, r.bodies, r.threads) == (s, *n, *th))
                        .map(|r| (r.timewarp[e].2, r.timewarp[e].1))
                })
                .collect();
            out.push((format!("rapier ({}) / timewarp {engine}", t.rapier), values));
        }
    }
    (cases, out)
}

/// Draws the ratios of `tables` as an SVG bar chart titled `title` (see the module docs);
/// the file is written atomically.
pub fn chart(tables: &[PeerTable], title: &str, out: &Path) -> Result<(), String> {
    let (cases, bars) = series(tables);
    if cases.is_empty() || bars.is_empty() {
        return Err("nothing to draw".into());
    }
    let values = bars.iter().flat_map(|b| b.1.iter().flatten().map(|v| v.0));
    let (lo, hi) = values.fold((1.0f64, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    // Whole decades around the values and 1 (a hair wider, so that plotters' tick search,
    // which starts at the first power of ten at or above the bottom, does not round past it).
    let (y0, y1) = (
        10f64.powf((lo.log10() - 0.05).floor()) * 0.999,
        10f64.powf((hi.log10() + 0.05).ceil()) * 1.001,
    );
    let width = (160 + cases.len() * (24 * bars.len() + 30)).max(700) as u32;
    let mut svg = String::new();
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", out.display());
    {
        let root = SVGBackend::with_string(&mut svg, (width, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(15)
            .margin_right(25)
            .x_label_area_size(52)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..cases.len() as f64, (y0..y1).log_scale())
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("rapier time / timewarp time (> 1: timewarp faster)")
            .y_labels(20)
            .y_label_formatter(&|y| format!("{}", (y * 1000.0).round() / 1000.0))
            .draw()
            .map_err(|e| err(&e))?;
        let gap = 0.18;
        let w = (1.0 - 2.0 * gap) / bars.len() as f64;
        for (b, (label, values)) in bars.iter().enumerate() {
            let colour = Palette99::pick(b).to_rgba();
            let rects = values.iter().enumerate().filter_map(|(i, v)| {
                let (v, _) = (*v)?;
                let x = i as f64 + gap + b as f64 * w;
                Some(Rectangle::new(
                    [(x, y0), (x + w * 0.92, v)],
                    colour.filled(),
                ))
            });
            chart
                .draw_series(rects)
                .map_err(|e| err(&e))?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled())
                });
            let text = values.iter().enumerate().filter_map(|(i, v)| {
                let (v, limited) = (*v)?;
                let x = i as f64 + gap + (b as f64 + 0.46) * w;
                Some(Text::new(
                    format!("{v:.2}{}", if limited { "†" } else { "" }),
                    (x, v),
                    ("sans-serif", 10)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Center, VPos::Bottom)),
                ))
            });
            chart.draw_series(text).map_err(|e| err(&e))?;
        }
        chart
            .draw_series(LineSeries::new(
                [(0.0, 1.0), (cases.len() as f64, 1.0)],
                BLACK.mix(0.6).stroke_width(1),
            ))
            .map_err(|e| err(&e))?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| err(&e))?;
        // Under each group: N and T; under each run of one scene: its name.
        let area = chart.plotting_area();
        let below = |x: f64, dy: i32| {
            let (px, py) = area.map_coordinate(&(x, y0));
            (px, py + dy)
        };
        let small = ("sans-serif", 11)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        let bold = ("sans-serif", 13)
            .into_font()
            .style(FontStyle::Bold)
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        for (i, (_, n, t)) in cases.iter().enumerate() {
            root.draw(&Text::new(
                format!("N={n}, T={t}"),
                below(i as f64 + 0.5, 6),
                small.clone(),
            ))
            .map_err(|e| err(&e))?;
        }
        let mut start = 0;
        for i in 1..=cases.len() {
            if i == cases.len() || cases[i].0 != cases[start].0 {
                root.draw(&Text::new(
                    cases[start].0.clone(),
                    below((start + i) as f64 / 2.0, 24),
                    bold.clone(),
                ))
                .map_err(|e| err(&e))?;
                start = i;
            }
        }
        root.present().map_err(|e| err(&e))?;
    }
    let mut file = AtomicFile::create(out).map_err(|e| format!("cannot create {e}"))?;
    file.write_all(svg.as_bytes())
        .and_then(|()| file.commit())
        .map_err(|e| format!("cannot write {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "rapier3d 0.36 (serial build, dt = 1/60 s) against timewarp 0.1.0: wall seconds per simulated second, median of 3 rounds (rapier and frame engine over 0.5 s, warp engine (locks) over 0.5 s); ratio = rapier / timewarp (> 1: timewarp faster)

| scene | N | T | rapier | timewarp warp | ratio |
|---|---|---|---|---|---|
| parallel | 500 | 1 | 0.0126 | 0.0893 | 0.14 |
| bouncing | 2000 | 2 | 0.2242 | 0.6053 † | 0.37 |
";

    #[test]
    fn reads_a_peer_table() {
        let t = parse(TABLE, "p.md").unwrap();
        assert_eq!(t.rapier, "serial, dt = 1/60 s");
        assert_eq!(t.engines, vec!["warp (locks)".to_string()]);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(
            t.rows[1],
            PeerRow {
                scene: "bouncing".into(),
                bodies: 2000,
                threads: 2,
                rapier: 0.2242,
                timewarp: vec![(0.6053, true, 0.37)],
            }
        );
        let two = TABLE
            .replace(
                "| timewarp warp | ratio |",
                "| timewarp frame | ratio | timewarp warp | ratio |",
            )
            .replace(
                "|---|---|---|---|---|---|",
                "|---|---|---|---|---|---|---|---|",
            )
            .replace("| 0.0893 | 0.14 |", "| 0.01 | 1.26 | 0.0893 | 0.14 |")
            .replace("| 0.6053 † | 0.37 |", "| 0.2 | 1.12 | 0.6053 † | 0.37 |");
        let t2 = parse(&two, "p.md").unwrap();
        assert_eq!(
            t2.engines,
            vec!["frame".to_string(), "warp (locks)".to_string()]
        );
        assert_eq!(
            t2.rows[0].timewarp,
            vec![(0.01, false, 1.26), (0.0893, false, 0.14)]
        );
    }

    #[test]
    fn refuses_other_text_with_its_line() {
        for (text, want) in [
            ("hello", "p.md, line 1: not a table of peer/"),
            ("rapier3d x\n\nno table", "p.md: no table"),
            ("rapier3d x\n| a | b |", "p.md, line 2: expected | scene"),
            (
                "rapier3d x\n| scene | N | T | rapier | timewarp warp | ratio |\n| p | 5 | 1 | x | 1 | 1 |",
                "p.md, line 3: \"x\" is not a positive number",
            ),
            (
                "rapier3d x\n| scene | N | T | rapier | timewarp warp | ratio |\n| p | 5 | 1 |",
                "p.md, line 3: 3 cells, expected 6",
            ),
        ] {
            let e = parse(text, "p.md").unwrap_err();
            assert!(e.starts_with(want), "{e:?} does not start with {want:?}");
        }
    }

    #[test]
    fn draws_a_bar_per_case_and_series_with_its_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("peer.svg");
        let a = parse(TABLE, "a.md").unwrap();
        let b = parse(
            &TABLE.replace("1/60", "1/960").replace("0.14", "1.91"),
            "b.md",
        )
        .unwrap();
        chart(&[a, b], "rapier3d against timewarp", &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        for text in [
            "rapier3d against timewarp",
            "0.14",
            "1.91",
            "0.37†",
            "N=500, T=1",
            "N=2000, T=2",
            "parallel",
            "bouncing",
            "rapier (serial, dt = 1/60 s) / timewarp warp (locks)",
            "rapier (serial, dt = 1/960 s) / timewarp warp (locks)",
        ] {
            assert!(svg.contains(text), "the chart lacks {text:?}");
        }
        // Per series (table), a bar for each of its 2 cases and a swatch in the legend, in
        // the series' colour.
        for series in 0..2 {
            let c = Palette99::pick(series).to_rgba();
            let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
            assert_eq!(svg.matches(&fill).count(), 3, "{fill}");
        }
    }
}
