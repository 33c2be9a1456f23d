//! Memory stays flat in the warp engine, however long the run: states, TVHT entries, contact
//! records and events behind the GVT are reclaimed (the TVHT's sweep and floor, the GVT ring,
//! the entities' trimmed state queues, and crossbeam-epoch for the STM's retired values).
//!
//! The check of issue #4: bouncing with 500 bodies for 120 simulated seconds; the peak resident
//! set at the end is within 10% of the peak at 20 s. It takes long on a small machine, so it is
//! ignored in the default test run:
//!
//! ```sh
//! cargo test --release --all-features --test warp_memory -- --ignored --nocapture
//! TIMEWARP_MEMORY_SECONDS=30 cargo test --release --all-features --test warp_memory -- --ignored --nocapture
//! ```
//!
//! (`TIMEWARP_MEMORY_SECONDS` shortens the run for a quick look; the check then compares the
//! peak at the end with the peak at a sixth of the run.)

use timewarp::scene::builtin;
use timewarp::warp::{WarpConfig, run_warp};

/// The peak resident set (VmHWM) of this process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmHWM line")
}

#[test]
#[ignore = "long: bouncing 500 for 120 simulated seconds (see the module documentation)"]
fn bouncing_500_memory_is_flat_over_120_seconds() {
    let seconds: u64 = std::env::var("TIMEWARP_MEMORY_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let scene = builtin("bouncing", Some(500)).unwrap();
    let tps = u64::from(scene.world.ticks_per_second);
    let early = seconds * tps / 6;
    let end = seconds * tps;
    let mut at_early = None;
    let mut marks = Vec::new();
    let stats = run_warp(&scene, WarpConfig::default(), end, &mut |tick, states| {
        assert!(states.iter().all(|s| s.position.is_finite()));
        if tick == early {
            at_early = Some(peak_rss_kib());
        }
        if tick % (10 * tps) == 0 {
            marks.push((tick / tps, peak_rss_kib()));
        }
        Ok(())
    })
    .unwrap();
    let at_end = peak_rss_kib();
    let at_early = at_early.expect("the run passed the early mark");
    eprintln!(
        "peak RSS (s, KiB): {marks:?}; at {} s {at_early} KiB, at {seconds} s {at_end} KiB",
        seconds / 6
    );
    eprintln!("{stats:?}");
    assert!(
        at_end as f64 <= 1.10 * at_early as f64,
        "peak RSS grew from {at_early} KiB at {} s to {at_end} KiB at {seconds} s",
        seconds / 6
    );
}
