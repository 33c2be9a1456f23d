//! `timewarp bench chart` (issue #34): the bar chart of the rapier3d comparison is remade from
//! `peer/`'s tables alone, byte for byte the chart in `docs/` (so the command that docs give
//! reproduces it), and bad input is one error line.

#[path = "support/cli.rs"]
mod cli;
use cli::{fails, ok};

/// The chart linked from the README's results table, and the command that made it.
const RUN: &str = "docs/bench/dev-2core-2026-11-27d";
const TITLE: &str =
    "rapier3d 0.36 against timewarp's warp engine (locks), 2-core VM, 2026-11-27 (2c0e15e)";

#[test]
fn the_committed_chart_is_remade_from_its_tables() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("peer.svg");
    let tables = [
        root.join(RUN).join("peer-60-locks.md"),
        root.join(RUN).join("peer-960-locks.md"),
    ];
    let said = ok(
        &[
            "bench",
            "chart",
            tables[0].to_str().unwrap(),
            tables[1].to_str().unwrap(),
            "--title",
            TITLE,
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(said.starts_with("wrote "), "{said}");
    let made = std::fs::read_to_string(&out).unwrap();
    let committed = std::fs::read_to_string(root.join(RUN).join("peer.svg")).unwrap();
    assert!(
        made == committed,
        "{RUN}/peer.svg is not what `timewarp bench chart` makes of its tables: regenerate it"
    );
    // Every ratio of the tables is on it.
    for table in &tables {
        let text = std::fs::read_to_string(table).unwrap();
        for row in text
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| scene"))
        {
            let ratio = row.trim_end_matches(" |").rsplit("| ").next().unwrap();
            assert!(made.contains(&format!(">\n{ratio}\n<")), "{ratio} of {row}");
        }
    }
}

#[test]
fn bad_tables_are_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("notes.md"), "# notes\n").unwrap();
    let line = fails(&["bench", "chart", "missing.md", "--out", "c.svg"], d);
    assert!(line.contains("cannot read missing.md"), "{line}");
    let line = fails(&["bench", "chart", "notes.md", "--out", "c.svg"], d);
    assert!(
        line.contains("notes.md, line 1: not a table of peer/"),
        "{line}"
    );
    let line = fails(&["bench", "chart", "notes.md"], d);
    assert!(line.contains("--out"), "{line}");
    assert!(!d.join("c.svg").exists());
}
