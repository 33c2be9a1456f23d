//! Memory stays flat in the warp engine, however long the run: states, TVHT entries, contact
//! records and events behind the GVT are reclaimed (the TVHT's sweep and floor, the GVT ring,
//! the entities' trimmed state queues, and crossbeam-epoch for the STM's retired values).
//!
//! The check of issue #4: bouncing with 500 bodies for 120 simulated seconds. Two bounds, from
//! the early mark (20 s) to the end:
//!
//! * the **live heap**, the bytes the program holds (this binary counts its allocations),
//!   sampled at every committed frame: its median over the second half of the run (60 s to
//!   120 s) within 10% of its median over the 20 s around the early mark (10 s to 30 s). This
//!   is the leak check: a program that holds more and more moves it by all it holds, an
//!   allocator does not. (Long spans: under load the lead is raised 50-200 times a run, and a
//!   stretch of a few seconds with a raised lead holds a few MiB more; 10-second spans moved
//!   by up to 14% with no leak.)
//! * the **peak resident set**, at most twice its value at the early mark. It also counts
//!   what the allocator keeps: the pages of the heap's transient peaks, which it keeps for the
//!   rest of the run (`src/allocator.rs`), and its own steps of 7-8 MiB, with the heap flat
//!   either way. A 10% bound on it failed about one run in nine on the quiet machine; on this
//!   2-core machine loaded by other builds (load 6-13, the lead raised 20-277 times a run) it
//!   grew by up to 35% in 20 runs whose heap's median moved by -1.8% to +2.3% (2026-11-27).
//!   The bound is the backstop for a leak the heap's count cannot see (the allocator's own):
//!   about 12 KiB a frame breaks it.
//!
//! Two negative controls run the same check with a leak on purpose (at every committed frame,
//! in the frame callback below: nothing of it is in the engine, so it costs a normal run
//! nothing): 1 KiB a frame (about 4 MiB between the middles of the two spans, a quarter of the
//! heap, and some 8% of the resident set by the end) must fail the heap's bound, 32 KiB a frame
//! (about 190 MiB) the resident set's. All of them take
//! long on a small machine, so they are ignored in the default test run (`scripts/long-checks.sh`
//! runs every ignored test):
//!
//! ```sh
//! cargo test --release --all-features --test warp_memory -- --ignored --nocapture bouncing_500
//! TIMEWARP_MEMORY_SECONDS=30 cargo test --release --all-features --test warp_memory -- --ignored --nocapture bouncing_500_memory
//! ```
//!
//! (`TIMEWARP_MEMORY_SECONDS` shortens the run for a quick look; the early mark stays where it
//! is if the run still passes it, else moves to the middle of the run; `TIMEWARP_MEMORY_THREADS`
//! sets the number of workers, to compare. Every `TIMEWARP_MEMORY_MARK` simulated seconds, 10
//! by default, the run prints its peak resident set and the live heap over the 10 s since the
//! mark before: its median, least and most at the frames, and its most between them.)
//!
//! The long run of issue #8, bouncing with 2000 bodies for 600 simulated seconds on 64 workers
//! (no deadlock, no livelock, flat memory: the same bounds from 60 s to 600 s):
//!
//! ```sh
//! cargo test --release --all-features --test warp_memory -- --ignored --nocapture bouncing_2000
//! ```

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};
use timewarp::allocator::Allocator;
use timewarp::scene::builtin;
use timewarp::warp::{WarpConfig, run_warp};

/// The binary's allocator (mimalloc, see `src/main.rs`, with the settings of
/// `src/allocator.rs`), counting the bytes the program holds,
/// so that the run measures what `timewarp run` does. The resident set also counts
/// what the allocator keeps for itself (arenas, fragments): the live count tells a program
/// that holds more and more (a leak, garbage not reclaimed) from an allocator that does.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The most [`LIVE`] has been since the last mark took it: the heap's transient peaks, which
/// a sample at each mark misses and the resident set does not.
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Notes that the program holds `now` bytes.
fn note_live(now: usize) {
    if now > PEAK.load(Ordering::Relaxed) {
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed to the binary's `Allocator` with the caller's own arguments, so
// its guarantees are ours; the counter is only arithmetic on the sizes of the layouts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, which is `Allocator::alloc`'s.
        let p = unsafe { Allocator.alloc(layout) };
        if !p.is_null() {
            note_live(LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc`/`realloc` above, that is from `Allocator`, with
        // `layout`.
        unsafe { Allocator.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`; `new_size` is the caller's, valid for `Allocator::realloc`.
        let p = unsafe { Allocator.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            note_live(LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The bytes the program holds now, in MiB.
fn live_mib() -> usize {
    LIVE.load(Ordering::Relaxed) >> 20
}

/// The most bytes the program held since the last call, in MiB.
fn peak_live_mib() -> usize {
    PEAK.swap(LIVE.load(Ordering::Relaxed), Ordering::Relaxed) >> 20
}

/// The line `key` (`VmHWM:`, `VmRSS:`) of this process's status, in KiB.
fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("a {key} line"))
}

/// The peak resident set (VmHWM) of this process, in KiB.
fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:")
}

/// Retired STM values crossbeam-epoch has not freed yet (`timewarp_stm::reclaim`).
#[cfg(feature = "stm")]
fn stm_backlog() -> isize {
    timewarp_stm::reclaim::backlog()
}

#[cfg(not(feature = "stm"))]
fn stm_backlog() -> isize {
    0
}

/// The environment variable `name` as a number, or `default` when it is unset or not one.
fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The live heap over a span of the run, sampled at every committed frame, in bytes: the
/// median sample, and the least and the most.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Heap {
    median: usize,
    min: usize,
    max: usize,
}

impl Heap {
    /// Of the samples `(tick, bytes)` whose tick is in `from..to`.
    fn over(samples: &[(u64, usize)], from: u64, to: u64) -> Heap {
        let mut v: Vec<usize> = samples
            .iter()
            .filter(|(t, _)| (from..to).contains(t))
            .map(|&(_, b)| b)
            .collect();
        assert!(
            !v.is_empty(),
            "no sample of the live heap in ticks {from}..{to}"
        );
        v.sort_unstable();
        Heap {
            median: v[v.len() / 2],
            min: v[0],
            max: v[v.len() - 1],
        }
    }
}

/// How much the live heap may grow: the program's own bytes (what it allocated and has not
/// freed), its median over the second half of the run against its median over the 20
/// simulated seconds around the early mark. Medians over long spans, so that the stretches
/// with a raised lead ([`timewarp::warp::lead`]), which hold a few MiB more for a few seconds,
/// do not move them; a leak moves them by all it leaked.
const HEAP_GROWTH: f64 = 0.10;
/// How much the peak resident set may grow from the early mark to the end (see the module
/// documentation: it keeps the pages of the heap's transient peaks).
const RSS_GROWTH: f64 = 1.0;

/// Runs bouncing with `bodies` for `seconds` (or `TIMEWARP_MEMORY_SECONDS`) on `threads`
/// workers and checks the live heap against [`HEAP_GROWTH`] and the peak RSS at the end
/// against [`RSS_GROWTH`] of its value at `early_s` (scaled with the run when the seconds are
/// overridden; a shortened run's spans may overlap: a quick look); every committed state
/// finite. `leak` bytes are leaked at every committed frame (0 but in the negative controls
/// below, which show that the checks catch a leak).
fn flat_memory(bodies: usize, seconds: u64, threads: usize, early_s: u64, leak: usize) {
    // The binary's allocator settings (`src/allocator.rs`), so that this measures what
    // `timewarp run` does.
    timewarp::allocator::configure();
    let seconds_run = env_or("TIMEWARP_MEMORY_SECONDS", seconds);
    let mark_s = env_or("TIMEWARP_MEMORY_MARK", 10u64).max(1);
    // A shortened run keeps the early mark if it still falls inside it, else takes its middle.
    let early_s = if early_s < seconds_run {
        early_s
    } else {
        (seconds_run / 2).max(1)
    };
    let scene = builtin("bouncing", Some(bodies)).unwrap();
    let tps = u64::from(scene.world.ticks_per_second);
    let end = seconds_run * tps;
    let mut at_early = None;
    let mut samples: Vec<(u64, usize)> = Vec::with_capacity((end / 16 + 1) as usize);
    let mut stretch = 0;
    let mut leaked: Vec<Vec<u8>> = Vec::new();
    let threads = env_or("TIMEWARP_MEMORY_THREADS", threads);
    let config = WarpConfig {
        threads,
        ..WarpConfig::default()
    };
    let stats = run_warp(&scene, config, end, &mut |tick, states| {
        assert!(
            states
                .iter()
                .all(|s| s.position.is_finite() && s.velocity.is_finite())
        );
        if leak > 0 {
            // Touched, so that it is resident too.
            leaked.push(vec![0x5a; leak]);
        }
        samples.push((tick, LIVE.load(Ordering::Relaxed)));
        if tick == early_s * tps {
            at_early = Some(peak_rss_kib());
        }
        if tick > 0 && tick % (mark_s * tps) == 0 {
            let heap = Heap::over(&samples[stretch..], 0, tick + 1);
            stretch = samples.len();
            eprintln!(
                "at {} s: peak RSS {} MiB, RSS {} MiB, live heap {} MiB now, over the last {mark_s} \
                 s median {} MiB, least {} MiB, most {} MiB (at most {} MiB between frames), STM \
                 values awaiting reclamation {}",
                tick / tps,
                peak_rss_kib() >> 10,
                status_kib("VmRSS:") >> 10,
                live_mib(),
                heap.median >> 20,
                heap.min >> 20,
                heap.max >> 20,
                peak_live_mib(),
                stm_backlog()
            );
        }
        Ok(())
    })
    .unwrap();
    let at_early = at_early.expect("the run passed the early mark");
    let at_end = peak_rss_kib();
    let early_from = early_s.saturating_sub(mark_s);
    let early_to = early_s + mark_s;
    let heap_early = Heap::over(&samples, early_from * tps, early_to * tps);
    let heap_late = Heap::over(&samples, end / 2, end + 1);
    eprintln!(
        "bouncing {bodies}, {threads} threads, leaking {leak} bytes a frame: live heap's median \
         {} bytes from {early_from} s to {early_to} s, {} bytes from {} s to {seconds_run} s; peak \
         RSS {at_early} KiB at {early_s} s, {at_end} KiB at the end",
        heap_early.median,
        heap_late.median,
        seconds_run / 2
    );
    eprintln!("{stats:?}");
    drop(leaked);
    let mut failures = Vec::new();
    if heap_late.median as f64 > (1.0 + HEAP_GROWTH) * heap_early.median as f64 {
        failures.push(format!(
            "LIVE HEAP GREW: its median from {} bytes over {early_from} s to {early_to} s to {} \
             bytes over {} s to {seconds_run} s (more than {}%)",
            heap_early.median,
            heap_late.median,
            seconds_run / 2,
            HEAP_GROWTH * 100.0
        ));
    }
    if at_end as f64 > (1.0 + RSS_GROWTH) * at_early as f64 {
        failures.push(format!(
            "PEAK RSS GREW from {at_early} KiB at {early_s} s to {at_end} KiB at {seconds_run} s \
             (more than {}%)",
            RSS_GROWTH * 100.0
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("; "));
}

#[test]
#[ignore = "long: bouncing 500 for 120 simulated seconds (see the module documentation)"]
fn bouncing_500_memory_is_flat_over_120_seconds() {
    flat_memory(500, 120, 2, 20, 0);
}

/// Negative control of the check above: the same run leaking 1 KiB at every committed frame
/// (7,200 frames: about 6 MiB from 20 s to 120 s) must fail the live heap's bound.
#[test]
#[ignore = "long: bouncing 500 for 120 simulated seconds, leaking on purpose"]
#[should_panic(expected = "LIVE HEAP GREW")]
fn bouncing_500_leaking_1_kib_a_frame_fails_the_heap_check() {
    flat_memory(500, 120, 2, 20, 1 << 10);
}

/// Negative control of the resident set's bound: leaking 32 KiB at every committed frame
/// (about 190 MiB from 20 s to 120 s) must fail it (and the heap's).
#[test]
#[ignore = "long: bouncing 500 for 120 simulated seconds, leaking on purpose"]
#[should_panic(expected = "PEAK RSS GREW")]
fn bouncing_500_leaking_32_kib_a_frame_fails_the_resident_set_check() {
    flat_memory(500, 120, 2, 20, 32 << 10);
}

/// Issue #8's long run: bouncing with 2000 bodies for 600 simulated seconds on 64 workers (on
/// a 2-core machine): it must finish (no deadlock, no livelock: the GVT reaches the end) with
/// flat memory (the live heap and the peak resident set at 600 s within their bounds of those
/// at 60 s).
#[test]
#[ignore = "very long: bouncing 2000 for 600 simulated seconds on 64 workers"]
fn bouncing_2000_on_64_workers_runs_600_seconds_with_flat_memory() {
    flat_memory(2000, 600, 64, 60, 0);
}
