//! The fuzz harness shared by `tests/fuzz_*.rs`: proptest's runner, driven for a number of
//! cases (CI) or for a wall-clock budget (a long run).
//!
//! proptest generates inputs from a strategy, runs the property on each, catches panics as
//! failures, shrinks a failing input to a small one and records its seed in
//! `proptest-regressions/<target>.txt`, which every later run replays first. That is the stable
//! stand-in for a coverage-guided fuzzer (cargo fuzz needs a nightly toolchain).
//!
//! - `TIMEWARP_FUZZ_CASES=N` (or proptest's own `PROPTEST_CASES=N`): run N cases instead of the
//!   target's small CI default.
//! - `TIMEWARP_FUZZ_SECONDS=S`: run batches of cases, each with a fresh random seed, until S
//!   seconds have passed; the count of cases run is printed (use `--nocapture` to see it).

use std::time::{Duration, Instant};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};

fn env_number(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name} must be a whole number, got {v:?}"),
    }
}

/// Runs `test` on inputs drawn from `strategy`: `default_cases` of them, or as the environment
/// says (module docs). `regressions` is the file, relative to the package root, where proptest
/// records failing seeds (a `&'static str`, as proptest wants).
pub fn fuzz<S: Strategy>(
    name: &str,
    regressions: &'static str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let config = |cases: u32| Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(regressions))),
        // Shrinking a failure of the simulation target re-runs both engines per step: bound it.
        max_shrink_iters: 2048,
        ..Config::default()
    };
    let start = Instant::now();
    let run = |cases: u32| {
        let mut runner = TestRunner::new(config(cases));
        if let Err(e) = runner.run(&strategy, &test) {
            panic!("{name}: {e}");
        }
    };
    if let Some(seconds) = env_number("TIMEWARP_FUZZ_SECONDS") {
        let budget = Duration::from_secs(seconds);
        let batch = 64;
        let mut cases = 0u64;
        while start.elapsed() < budget {
            run(batch);
            cases += u64::from(batch);
        }
        eprintln!(
            "{name}: {cases} cases in {:.1} s, no failure",
            start.elapsed().as_secs_f64()
        );
    } else {
        let cases = env_number("TIMEWARP_FUZZ_CASES")
            .or_else(|| env_number("PROPTEST_CASES"))
            .map_or(default_cases, |n| n.min(u64::from(u32::MAX)) as u32);
        run(cases);
        eprintln!(
            "{name}: {cases} cases in {:.1} s, no failure",
            start.elapsed().as_secs_f64()
        );
    }
}
