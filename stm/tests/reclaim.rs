//! Bounded garbage (`timewarp_stm::reclaim`): a thread pinned for long holds back every value
//! retired meanwhile, and the committing threads must neither hang on it nor leave the backlog
//! high once it lets go.
//!
//! Its own test binary, so that no other test's commits move the process-wide count.

#![cfg(not(loom))]

use std::sync::mpsc;
use std::thread;
use timewarp_stm::reclaim::{LIMIT, backlog};
use timewarp_stm::{TVar, atomically};

/// Commits `n` writes of a boxed value, one per transaction.
fn commit_writes(v: &TVar<Vec<u64>>, n: usize) {
    for i in 0..n {
        atomically(|tx| {
            let mut x = tx.read(v)?;
            x[0] = i as u64;
            tx.write(v, x)
        });
    }
}

#[test]
fn a_stalled_epoch_slows_commits_but_never_stops_them_and_the_backlog_drains_after() {
    let v = TVar::new(vec![0u64; 16]);
    let (pinned_tx, pinned_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    // A thread that stays pinned, as one preempted in the middle of an attempt would.
    let stall = thread::spawn(move || {
        let guard = crossbeam_epoch::pin();
        pinned_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        drop(guard);
    });
    pinned_rx.recv().unwrap();
    // Nothing retired from now on can be freed: the writes go on (the wait is bounded) and
    // the backlog passes the limit.
    let writes = 2 * LIMIT as usize;
    commit_writes(&v, writes);
    let held = backlog();
    assert!(
        held > LIMIT,
        "with the epoch held, {writes} commits left a backlog of {held} (limit {LIMIT})"
    );
    release_tx.send(()).unwrap();
    stall.join().unwrap();
    // Once the stall ends, the next commits that flush bring the backlog back under the limit.
    commit_writes(&v, 4 * 64);
    let after = backlog();
    assert!(
        after <= LIMIT,
        "the backlog stayed at {after} after the stall ended (limit {LIMIT}, {held} during it)"
    );
    assert_eq!(atomically(|tx| tx.read(&v))[0], 4 * 64 - 1);
}
