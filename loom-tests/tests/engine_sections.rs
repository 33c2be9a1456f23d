//! The sync seam's critical sections (`timewarp::sync::Table::section`), the guard of every
//! shared engine structure (seed 000, Section 4, Algorithm 1 and Lemma 1; `DESIGN.md`, "The
//! guard").
//!
//! * `three_lock_sections_never_deadlock`: three threads take the lock backend's section over
//!   the overlapping key sets {0, 1}, {1, 2} and {2, 0}, each *given* in the order that closes a
//!   cycle (0 then 1, 1 then 2, 2 then 0). Algorithm 1 sorts the keys, so in every interleaving
//!   all three finish (loom reports a thread that can never run again as a deadlock), and each
//!   slot is incremented by exactly the two sections that name it. Negative control:
//!   `TIMEWARP_BROKEN=unsorted_locks` (locks taken in the given order) must deadlock.
//! * `crossed_*_sections`: two sections naming the same two keys in opposite orders, one
//!   checking that it never sees the other half done; under each backend (moved here from
//!   `src/sync/table.rs`). Negative control: `TIMEWARP_BROKEN=unguarded_sections` (each
//!   section runs on copies read in one section and written back in another) must lose an
//!   update (`CROSSED SECTIONS LOST AN UPDATE`). `unsorted_locks` deadlocks the lock one too.
//!
//! Preemption bounds: the lock models are explored exhaustively (three-way: 379 executions
//! from bound 10 up, unchanged at 20; crossed: 5); the STM pair at bound 3 (about 2,600
//! executions, a fraction of a second).
#![cfg(all(loom, feature = "engine"))]

use loom::thread;
use std::sync::Arc;
use timewarp::sync::{Backend, Table};

/// LOOM_MAX_PREEMPTIONS of the three-way model (exhaustive: no execution preempts more).
const THREE_WAY_PREEMPTIONS: usize = 10;
/// LOOM_MAX_PREEMPTIONS of the crossed lock pair (exhaustive).
const CROSSED_LOCKS_PREEMPTIONS: usize = 10;
/// LOOM_MAX_PREEMPTIONS of the crossed STM pair.
const CROSSED_STM_PREEMPTIONS: usize = 3;

/// One section over `keys` (in the given order) that adds 1 to each of its slots, checking
/// that the view names exactly the sorted, distinct keys.
fn bump(t: &Table<u32>, keys: [usize; 2]) {
    t.section(&keys, |v| {
        let mut want = keys;
        want.sort_unstable();
        assert_eq!(v.keys(), want, "SECTION VIEW HAS THE WRONG KEYS");
        for k in keys {
            *v.get_mut(k) += 1;
        }
    });
}

#[test]
fn three_lock_sections_never_deadlock() {
    timewarp_loom_tests::model_bounded("three_lock_sections", THREE_WAY_PREEMPTIONS, || {
        let t = Arc::new(Table::new(Backend::Locks, 3, |_| 0u32));
        let handles: Vec<_> = [[0, 1], [1, 2]]
            .into_iter()
            .map(|keys| {
                let t = t.clone();
                thread::spawn(move || bump(&t, keys))
            })
            .collect();
        bump(&t, [2, 0]);
        for h in handles {
            h.join().unwrap();
        }
        let after = t.snapshot();
        assert!(
            after == [2, 2, 2],
            "LOCK SECTIONS LOST AN UPDATE: slots {after:?}, expected [2, 2, 2]"
        );
    });
}

fn crossed_sections(name: &str, backend: Backend, preemptions: usize) {
    timewarp_loom_tests::model_bounded(name, preemptions, move || {
        let t = Arc::new(Table::new(backend, 2, |_| 0u32));
        let t2 = t.clone();
        let h = thread::spawn(move || {
            t2.section(&[1, 0], |v| {
                *v.get_mut(1) += 1;
                *v.get_mut(0) += 1;
            })
        });
        t.section(&[0, 1], |v| {
            let (a, b) = (*v.get(0), *v.get(1));
            assert_eq!(a, b, "SECTION SAW THE OTHER HALF DONE");
            *v.get_mut(0) = a + 10;
            *v.get_mut(1) = b + 10;
        });
        h.join().unwrap();
        let after = t.snapshot();
        assert!(
            after == [11, 11],
            "CROSSED SECTIONS LOST AN UPDATE: {after:?}"
        );
    });
}

#[test]
fn crossed_lock_sections() {
    crossed_sections(
        "crossed_lock_sections",
        Backend::Locks,
        CROSSED_LOCKS_PREEMPTIONS,
    );
}

#[test]
fn crossed_stm_sections() {
    crossed_sections(
        "crossed_stm_sections",
        Backend::Stm,
        CROSSED_STM_PREEMPTIONS,
    );
}
