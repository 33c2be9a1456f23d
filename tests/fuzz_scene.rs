//! Fuzz target 1: scene loading. Text in, `timewarp::scene::from_toml_str` out, which must give
//! a valid [`Scene`] or one clear error line, never a panic.
//!
//! Three kinds of input, each a proptest strategy:
//!
//! - **noise**: any string, and strings over TOML's punctuation, keys and digits;
//! - **grammar**: structurally valid TOML scene files whose keys and values are drawn from the
//!   schema (DESIGN.md, "Scene file") mixed with wrong ones: unknown keys, wrong types, arrays of
//!   the wrong length, NaN, infinities, -0, subnormals, numbers past f32's range, huge integers,
//!   grid counts past the body limit;
//! - **mutants**: the seed corpus (`tests/fuzz-corpus/*.toml` and `scenes/*.toml`) with lines
//!   dropped, doubled, swapped, numbers replaced by extreme ones, truncated.
//!
//! The oracle, independent of the loader: a loaded scene satisfies the model's invariants
//! (`scene/model.rs`: finite numbers, positive sizes and masses, unit quaternions, restitution in
//! [0, 1], at least one dynamic body, `frame_ticks` dividing `ticks_per_second`), both engines
//! accept it, and written back as TOML it loads to the same scene; an error is one non-empty
//! line. The seed corpus itself is checked file by file: `ok-*.toml` must load, `bad-*.toml`
//! must be refused. Runs `TIMEWARP_FUZZ_CASES` cases, or for `TIMEWARP_FUZZ_SECONDS` (see
//! `tests/support/fuzz.rs` and the README).

#[path = "support/fuzz.rs"]
mod support;

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use timewarp::frame::{FrameConfig, FrameEngine};
use timewarp::scene::{Scene, Shape, UNIT_TOLERANCE, from_toml_str, parse_toml, to_toml};
use timewarp::warp::rules::Rules;

const REGRESSIONS: &str = "proptest-regressions/fuzz_scene.txt";

fn corpus_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [root.join("tests/fuzz-corpus"), root.join("scenes")] {
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

fn corpus() -> Vec<String> {
    corpus_files()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// The model's invariants, checked from the outside (an independent statement of
/// `scene/model.rs`'s promise), or what breaks them.
fn check_scene(s: &Scene) -> Result<(), String> {
    let w = &s.world;
    if w.ticks_per_second < 1 || w.frame_ticks < 1 || w.window < 1 {
        return Err(format!("world tick counts {w:?}"));
    }
    if w.ticks_per_second % w.frame_ticks != 0 {
        return Err(format!("frame_ticks does not divide: {w:?}"));
    }
    if !(w.gravity.is_finite() && w.seconds.is_finite() && w.seconds > 0.0) {
        return Err(format!("world numbers {w:?}"));
    }
    if !s.bodies.iter().any(|b| !b.is_static) {
        return Err("no dynamic body".into());
    }
    for (i, b) in s.bodies.iter().enumerate() {
        let bad = |what: &str| Err(format!("body {i}: {what}: {b:?}"));
        let finite = b.position.is_finite()
            && b.rotation.is_finite()
            && b.velocity.is_finite()
            && b.angular_velocity.is_finite()
            && b.mass.is_finite()
            && b.friction.is_finite();
        if !finite {
            return bad("not finite");
        }
        if (b.rotation.length() - 1.0).abs() > UNIT_TOLERANCE {
            return bad("rotation not unit");
        }
        if !(0.0..=1.0).contains(&b.restitution) || b.friction < 0.0 {
            return bad("material");
        }
        let size_ok = match b.shape {
            Shape::Sphere { radius } => radius > 0.0 && radius.is_finite(),
            Shape::Cuboid { half_extents } => {
                half_extents.min_element() > 0.0 && half_extents.is_finite()
            }
            Shape::Cylinder {
                radius,
                half_height,
            } => radius > 0.0 && half_height > 0.0 && radius.is_finite() && half_height.is_finite(),
            Shape::Plane { normal, offset } => {
                b.is_static && (normal.length() - 1.0).abs() <= UNIT_TOLERANCE && offset.is_finite()
            }
        };
        if !size_ok {
            return bad("shape");
        }
        if b.is_static {
            if b.velocity != glam::Vec3::ZERO && !matches!(b.shape, Shape::Plane { .. }) {
                return bad("a static body moves");
            }
        } else if b.mass <= 0.0 {
            return bad("mass");
        }
    }
    Ok(())
}

/// The property: `text` loads to a valid scene that the engines accept and that round-trips
/// through `to_toml`, or it is refused with one clear line.
fn check_text(text: &str) -> Result<(), TestCaseError> {
    match from_toml_str(text) {
        Err(e) => {
            let m = e.to_string();
            prop_assert!(
                !m.trim().is_empty() && !m.contains('\n'),
                "error is not one line: {m:?}"
            );
        }
        Ok(scene) => {
            check_scene(&scene).map_err(TestCaseError::fail)?;
            if scene.bodies.len() <= 2000 {
                let config = FrameConfig {
                    threads: 1,
                    ..FrameConfig::default()
                };
                if let Err(e) = FrameEngine::try_new(&scene, config) {
                    return Err(TestCaseError::fail(format!("frame engine refused: {e}")));
                }
                if let Err(e) = Rules::new(&scene) {
                    return Err(TestCaseError::fail(format!("warp rules refused: {e}")));
                }
            }
            let description = parse_toml(text).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let written = to_toml(&description);
            match from_toml_str(&written) {
                Ok(again) => prop_assert_eq!(
                    format!("{again:?}"),
                    format!("{scene:?}"),
                    "written back:\n{}",
                    written
                ),
                Err(e) => {
                    return Err(TestCaseError::fail(format!(
                        "written back, it does not load: {e}\n{written}"
                    )));
                }
            }
        }
    }
    Ok(())
}

// ---- strategies -------------------------------------------------------------------------------

const INTERESTING_FLOATS: &[&str] = &[
    "0.0",
    "-0.0",
    "1.0",
    "-1.0",
    "0.5",
    "1e-30",
    "1e-45",
    "1.4e-45",
    "1e-39",
    "3.4e38",
    "3.5e38",
    "1e39",
    "1e300",
    "-1e300",
    "nan",
    "+nan",
    "-nan",
    "inf",
    "+inf",
    "-inf",
    "1e6",
    "-1e6",
    "0.001",
    "1000.0",
    "9.81",
    "-9.81",
    "0.0000001",
    "16777217.0",
];

const INTERESTING_INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "16",
    "-16",
    "4294967295",
    "4294967296",
    "-2147483648",
    "9223372036854775807",
    "-9223372036854775808",
    "0x10",
    "0o7",
    "0b11",
    "1_000",
];

fn number() -> BoxedStrategy<String> {
    prop_oneof![
        4 => (-100.0f64..100.0).prop_map(|x| format!("{x:?}")),
        2 => (0.001f64..5.0).prop_map(|x| format!("{x:?}")),
        2 => prop::sample::select(INTERESTING_FLOATS).prop_map(str::to_string),
        2 => prop::sample::select(INTERESTING_INTS).prop_map(str::to_string),
    ]
    .boxed()
}

fn numbers(len: std::ops::RangeInclusive<usize>) -> BoxedStrategy<String> {
    prop::collection::vec(number(), len)
        .prop_map(|v| format!("[{}]", v.join(", ")))
        .boxed()
}

/// Any TOML value, mostly of the wrong kind for whatever key it lands on.
fn any_value() -> BoxedStrategy<String> {
    prop_oneof![
        number(),
        numbers(0..=5),
        prop::sample::select(&["true", "false"][..]).prop_map(str::to_string),
        prop::sample::select(
            &[
                "\"sphere\"",
                "\"box\"",
                "\"cylinder\"",
                "\"plane\"",
                "\"blob\"",
                "\"\"",
                "'Sphere'",
                "\"\\u00e9\"",
                "[[1, 2], [3]]",
                "{ x = 1 }",
                "1979-05-27T07:32:00Z",
                "[]",
            ][..]
        )
        .prop_map(str::to_string),
    ]
    .boxed()
}

/// A plausible value for `key` (valid most of the time), or any value.
fn value_for(key: &'static str) -> BoxedStrategy<String> {
    let plausible = value_for_valid(key);
    // Grid counts never take arbitrary values: an array of small integers could be a valid
    // grid of millions of bodies, which is a test of memory, not of the loader.
    if key == "count" {
        return plausible;
    }
    prop_oneof![3 => plausible, 1 => any_value()].boxed()
}

/// A plausible value for `key`.
fn value_for_valid(key: &'static str) -> BoxedStrategy<String> {
    match key {
        "shape" => {
            prop::sample::select(&["\"sphere\"", "\"box\"", "\"cylinder\"", "\"plane\""][..])
                .prop_map(str::to_string)
                .boxed()
        }
        "radius" | "half_height" | "mass" | "density" | "jitter" => {
            (0.01f64..3.0).prop_map(|x| format!("{x:?}")).boxed()
        }
        "restitution" | "friction" => (0.0f64..=1.0).prop_map(|x| format!("{x:?}")).boxed(),
        "half_extents" => prop::collection::vec(0.01f64..3.0, 3)
            .prop_map(|v| format!("[{}, {}, {}]", v[0], v[1], v[2]))
            .boxed(),
        "position" | "velocity" | "angular_velocity" | "normal" | "gravity" | "origin"
        | "spacing" => prop::collection::vec(-10.0f64..10.0, 3)
            .prop_map(|v| format!("[{}, {}, {}]", v[0], v[1], v[2]))
            .boxed(),
        "rotation" => prop::collection::vec(-1.0f64..1.0, 4)
            .prop_map(|v| {
                let n = v.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-9);
                format!("[{}, {}, {}, {}]", v[0] / n, v[1] / n, v[2] / n, v[3] / n)
            })
            .boxed(),
        "offset" => (-5.0f64..5.0).prop_map(|x| format!("{x:?}")).boxed(),
        "static" => prop::sample::select(&["true", "false"][..])
            .prop_map(str::to_string)
            .boxed(),
        // Counts stay small or go past the body limit: never a valid scene of millions.
        "count" => prop::collection::vec(
            prop::sample::select(
                &["1", "2", "3", "0", "-1", "10000001", "9223372036854775807"][..],
            ),
            3,
        )
        .prop_map(|v| format!("[{}]", v.join(", ")))
        .boxed(),
        "seed" => prop::sample::select(INTERESTING_INTS)
            .prop_map(str::to_string)
            .boxed(),
        "ticks_per_second" => prop::sample::select(&["960", "60", "240", "1", "0", "-5", "7"][..])
            .prop_map(str::to_string)
            .boxed(),
        "frame_ticks" => prop::sample::select(&["16", "1", "4", "0", "7", "961"][..])
            .prop_map(str::to_string)
            .boxed(),
        "window" => prop::sample::select(&["256", "1", "0", "-1", "4294967296"][..])
            .prop_map(str::to_string)
            .boxed(),
        "seconds" => {
            prop::sample::select(&["10.0", "0.5", "0.0", "-1.0", "nan", "inf", "1e300"][..])
                .prop_map(str::to_string)
                .boxed()
        }
        _ => any_value(),
    }
}

const BODY_KEYS: &[&str] = &[
    "shape",
    "radius",
    "half_extents",
    "half_height",
    "normal",
    "offset",
    "position",
    "rotation",
    "velocity",
    "angular_velocity",
    "mass",
    "density",
    "restitution",
    "friction",
    "static",
];
const WORLD_KEYS: &[&str] = &[
    "gravity",
    "ticks_per_second",
    "frame_ticks",
    "window",
    "seconds",
];
const ODD_KEYS: &[&str] = &["radiuss", "colour", "id", "position.x", "\"shape\""];

fn pairs(keys: &'static [&'static str], max: usize) -> BoxedStrategy<String> {
    let key = prop_oneof![19 => prop::sample::select(keys), 1 => prop::sample::select(ODD_KEYS)];
    prop::collection::vec(
        key.prop_flat_map(|k| value_for(k).prop_map(move |v| format!("{k} = {v}\n"))),
        0..=max,
    )
    .prop_map(|lines| first_of_each(&lines.concat()))
    .boxed()
}

/// Keeps the first `key = value` line of each key (a key written twice is a TOML error), so
/// lines put first override the ones after them.
fn first_of_each(lines: &str) -> String {
    let mut seen = std::collections::HashSet::new();
    lines
        .lines()
        .filter(|l| seen.insert(l.split(' ').next().unwrap_or("").to_string()))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A complete, valid entry of each kind: the base that random pairs then override.
fn base_entry() -> BoxedStrategy<String> {
    let v = |k: &'static str| value_for_valid(k);
    prop_oneof![
        (v("radius"), v("position"))
            .prop_map(|(r, p)| format!("shape = \"sphere\"\nradius = {r}\nposition = {p}\n")),
        (v("half_extents"), v("position"), v("rotation")).prop_map(|(h, p, q)| format!(
            "shape = \"box\"\nhalf_extents = {h}\nposition = {p}\nrotation = {q}\n"
        )),
        (v("radius"), v("half_height"), v("velocity")).prop_map(|(r, h, w)| format!(
            "shape = \"cylinder\"\nradius = {r}\nhalf_height = {h}\nvelocity = {w}\n"
        )),
        (v("normal"), v("offset")).prop_map(|(n, o)| format!(
            "shape = \"plane\"\nnormal = {n}\noffset = {o}\nstatic = true\n"
        )),
        Just(String::new()),
    ]
    .boxed()
}

/// A grammar-built scene file: valid entries with a few random fields laid over them.
fn grammar() -> BoxedStrategy<String> {
    let world = prop::option::of(pairs(WORLD_KEYS, 3))
        .prop_map(|p| p.map(|p| format!("[world]\n{p}\n")).unwrap_or_default());
    let defaults = prop::option::weighted(0.3, pairs(BODY_KEYS, 3))
        .prop_map(|p| p.map(|p| format!("[defaults]\n{p}\n")).unwrap_or_default());
    let body = (base_entry(), pairs(BODY_KEYS, 3))
        .prop_map(|(base, p)| format!("[[body]]\n{}\n", first_of_each(&format!("{p}{base}"))));
    let grid_keys: &'static [&'static str] = &[
        "shape",
        "radius",
        "half_extents",
        "count",
        "spacing",
        "origin",
        "jitter",
        "seed",
        "velocity",
        "rotation",
        "static",
        "mass",
    ];
    let grid = (pairs(grid_keys, 3), prop::bool::weighted(0.9)).prop_map(|(p, full)| {
        // A grid needs count, spacing and origin: give them most of the time.
        let base = if full {
            "shape = \"sphere\"\nradius = 0.5\ncount = [2, 1, 2]\nspacing = [1.1, 1.1, 1.1]\n\
             origin = [0.0, 5.0, 0.0]\n"
        } else {
            ""
        };
        format!("[[grid]]\n{}\n", first_of_each(&format!("{p}{base}")))
    });
    let entry = prop_oneof![3 => body, 1 => grid];
    (world, defaults, prop::collection::vec(entry, 0..=5))
        .prop_map(|(w, d, e)| format!("{w}{d}{}", e.concat()))
        .boxed()
}

/// One edit of a corpus file.
#[derive(Clone, Debug)]
enum Edit {
    DropLine(usize),
    DoubleLine(usize),
    SwapLines(usize, usize),
    /// Replace the n-th number-like token with this text.
    Number(usize, String),
    InsertLine(usize, String),
    Truncate(usize),
    InsertChar(usize, char),
}

fn edit() -> impl Strategy<Value = Edit> {
    let line = prop_oneof![
        (prop::sample::select(BODY_KEYS), any_value()).prop_map(|(k, v)| format!("{k} = {v}")),
        prop::sample::select(&["[[body]]", "[[grid]]", "[world]", "[defaults]", "[", "="][..])
            .prop_map(str::to_string),
    ];
    prop_oneof![
        1 => any::<usize>().prop_map(Edit::DropLine),
        1 => any::<usize>().prop_map(Edit::DoubleLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
        4 => (any::<usize>(), number()).prop_map(|(n, v)| Edit::Number(n, v)),
        1 => (any::<usize>(), line).prop_map(|(n, l)| Edit::InsertLine(n, l)),
        1 => any::<usize>().prop_map(Edit::Truncate),
        1 => (any::<usize>(), any::<char>()).prop_map(|(n, c)| Edit::InsertChar(n, c)),
    ]
}

fn apply(text: &str, edit: &Edit) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len().max(1);
    match edit {
        Edit::DropLine(i) if !lines.is_empty() => {
            lines.remove(i % n);
        }
        Edit::DoubleLine(i) if !lines.is_empty() => {
            let l = lines[i % n].clone();
            lines.insert(i % n, l);
        }
        Edit::SwapLines(a, b) if !lines.is_empty() => lines.swap(a % n, b % n),
        Edit::InsertLine(i, l) => lines.insert(i % (lines.len() + 1), l.clone()),
        Edit::Number(k, v) => {
            // Number-like tokens: maximal runs of digits, signs, dots and exponents.
            let is_num = |c: char| c.is_ascii_digit() || "+-.eE_".contains(c);
            let mut starts = Vec::new();
            let bytes: Vec<char> = text.chars().collect();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i].is_ascii_digit() && (i == 0 || !is_num(bytes[i - 1])) {
                    let mut j = i;
                    while j < bytes.len() && is_num(bytes[j]) {
                        j += 1;
                    }
                    starts.push((i, j));
                    i = j;
                } else {
                    i += 1;
                }
            }
            if starts.is_empty() {
                return text.to_string();
            }
            let (a, b) = starts[k % starts.len()];
            let mut out: String = bytes[..a].iter().collect();
            out.push_str(v);
            out.extend(&bytes[b..]);
            return out;
        }
        Edit::Truncate(i) => {
            let chars: Vec<char> = text.chars().collect();
            return chars[..i % (chars.len() + 1)].iter().collect();
        }
        Edit::InsertChar(i, c) => {
            let mut chars: Vec<char> = text.chars().collect();
            let at = i % (chars.len() + 1);
            chars.insert(at, *c);
            return chars.into_iter().collect();
        }
        _ => {}
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

fn mutant() -> BoxedStrategy<String> {
    let seeds = corpus();
    (
        prop::sample::select(seeds),
        prop::collection::vec(edit(), 1..=6),
    )
        .prop_map(|(seed, edits)| edits.iter().fold(seed, |t, e| apply(&t, e)))
        .boxed()
}

fn noise() -> BoxedStrategy<String> {
    prop_oneof![
        any::<String>(),
        "[\\[\\]a-z_ =\\.,0-9\"\\n+-]{0,300}",
        prop::collection::vec(any::<u8>(), 0..200)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
    .boxed()
}

// ---- tests ------------------------------------------------------------------------------------

#[test]
fn the_seed_corpus_loads_or_is_refused_as_named() {
    let files = corpus_files();
    let mut ok = 0;
    let mut bad = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        check_text(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let loaded = from_toml_str(&text);
        if name.starts_with("bad-") {
            let e = loaded.err().unwrap_or_else(|| panic!("{name} loaded"));
            eprintln!("{name}: {e}");
            bad += 1;
        } else {
            loaded.unwrap_or_else(|e| panic!("{name}: {e}"));
            ok += 1;
        }
    }
    assert!(ok >= 5 && bad >= 5, "corpus: {ok} good, {bad} bad files");
}

#[test]
fn fuzz_scene_text_noise() {
    support::fuzz("fuzz_scene noise", REGRESSIONS, 200, noise(), |t| {
        check_text(&t)
    });
}

#[test]
fn fuzz_scene_grammar() {
    support::fuzz("fuzz_scene grammar", REGRESSIONS, 200, grammar(), |t| {
        check_text(&t)
    });
}

#[test]
fn fuzz_scene_corpus_mutants() {
    support::fuzz("fuzz_scene mutants", REGRESSIONS, 200, mutant(), |t| {
        check_text(&t)
    });
}

/// The grammar must reach the interesting part of the loader: valid scenes as well as errors.
#[test]
fn the_grammar_makes_valid_and_invalid_scenes() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let s = grammar();
    let (mut ok, mut err) = (0, 0);
    for _ in 0..400 {
        let text = s.new_tree(&mut runner).unwrap().current();
        match from_toml_str(&text) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
    }
    assert!(ok >= 20 && err >= 20, "{ok} valid, {err} invalid of 400");
}
