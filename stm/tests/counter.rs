//! Counter stress test: increments from many threads are never lost.

mod common;

use common::THREADS;
use timewarp_stm::{TVar, TWord, TxOptions, atomically, atomically_with, stats};

#[test]
fn every_increment_counts() {
    let word = TWord::new(0u64);
    let boxed = TVar::new(0u64);
    let per_thread = 20_000u64;
    let before = stats();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (word, boxed) = (&word, &boxed);
            s.spawn(move || {
                for i in 0..per_thread {
                    if (i + t as u64) % 2 == 0 {
                        atomically(|tx| tx.modify(word, |c| c + 1));
                    } else {
                        // Both counters in one transaction.
                        atomically(|tx| {
                            tx.modify(word, |c| c + 1)?;
                            tx.modify(boxed, |c| c + 1)
                        });
                    }
                }
            });
        }
    });
    let n = THREADS as u64 * per_thread;
    assert_eq!(word.load(), n);
    assert_eq!(boxed.load(), n / 2);
    let d = stats().since(&before);
    assert!(d.commits >= n, "every increment is a commit: {d:?}");
}

#[test]
fn increments_with_forced_irrevocability_count() {
    let c = TWord::new(0u64);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..3_000 {
                    atomically_with(&TxOptions::new().irrevocable_after(1), |tx| {
                        tx.modify(&c, |v| v + 1)
                    });
                }
            });
        }
    });
    assert_eq!(c.load(), THREADS as u64 * 3_000);
}

/// `load_with` borrows the committed value: while writers replace a pair whose halves always
/// sum to zero (one transaction each), every borrowed read sees a pair that sums to zero, and
/// reads of one thread never go back in time.
#[test]
fn load_with_sees_only_committed_values() {
    let pair = TVar::new(vec![0i64, 0]);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let pair = &pair;
            s.spawn(move || {
                let mut last = i64::MIN;
                for i in 0..5_000i64 {
                    if t % 2 == 0 {
                        atomically(|tx| tx.modify(pair, |v| vec![v[0] + 1, -(v[0] + 1)]));
                    }
                    let (a, b) = pair.load_with(|v| (v[0], v[1]));
                    assert_eq!(a + b, 0, "thread {t} read {i}: a torn pair");
                    assert!(a >= last, "thread {t} read {i}: {a} after {last}");
                    last = a;
                }
            });
        }
    });
    let writers = THREADS.div_ceil(2) as i64;
    assert_eq!(pair.load_with(|v| v[0]), writers * 5_000);
}
