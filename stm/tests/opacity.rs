//! Opacity: no attempt, not even one that will abort, ever observes a broken invariant.
//!
//! Writers keep `x + y == TOTAL` while moving amounts between them (and between a `TVar` pair
//! with the same invariant). Checkers read both inside every attempt — read-write checkers
//! also write, so many of their attempts abort — and count every attempt that saw a sum other
//! than `TOTAL`. Under TL2's read validation that count must be zero; if reads were not
//! validated (the `no_read_validation` negative control of the loom models) it would not be.

mod common;

use common::{Rng, THREADS};
use std::sync::atomic::{AtomicU64, Ordering};
use timewarp_stm::{TVar, TWord, atomically, atomically_read_only, thread_stats};

const TOTAL: i64 = 1_000_000;

#[test]
fn no_attempt_sees_a_broken_invariant() {
    let (x, y) = (TWord::new(TOTAL / 2), TWord::new(TOTAL / 2));
    let (p, q) = (TVar::new(TOTAL / 2), TVar::new(TOTAL / 2));
    let scratch = TWord::new(0u64);
    let violations = AtomicU64::new(0);
    let attempts = AtomicU64::new(0);
    let checker_aborts = AtomicU64::new(0);
    let (x, y, p, q, scratch) = (&x, &y, &p, &q, &scratch);
    let (violations, attempts, checker_aborts) = (&violations, &attempts, &checker_aborts);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                let mut rng = Rng::new(t as u64 + 99);
                let before = thread_stats();
                for i in 0..30_000 {
                    let d = rng.below(1_000) as i64 - 500;
                    match (t % 4, i % 2) {
                        (0, _) | (1, 0) => atomically(|tx| {
                            let a = tx.read(x)?;
                            tx.write(x, a - d)?;
                            let b = tx.read(y)?;
                            tx.write(y, b + d)?;
                            let c = tx.read(p)?;
                            tx.write(p, c + d)?;
                            tx.modify(q, |e| e - d)
                        }),
                        (2, _) | (1, 1) => atomically(|tx| {
                            // Read-write checker: reads both pairs, writes scratch.
                            attempts.fetch_add(1, Ordering::Relaxed);
                            let a = tx.read(x)?;
                            let c = tx.read(p)?;
                            let b = tx.read(y)?;
                            let e = tx.read(q)?;
                            if a + b != TOTAL || c + e != TOTAL {
                                violations.fetch_add(1, Ordering::Relaxed);
                            }
                            tx.modify(scratch, |v| v + 1)
                        }),
                        _ => atomically_read_only(|tx| {
                            attempts.fetch_add(1, Ordering::Relaxed);
                            let a = tx.read(x)?;
                            let c = tx.read(p)?;
                            let b = tx.read(y)?;
                            let e = tx.read(q)?;
                            if a + b != TOTAL || c + e != TOTAL {
                                violations.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(())
                        }),
                    }
                }
                if t % 4 >= 2 {
                    checker_aborts.fetch_add(
                        thread_stats().since(&before).conflict_aborts(),
                        Ordering::Relaxed,
                    );
                }
            });
        }
    });
    assert_eq!(
        violations.load(Ordering::Relaxed),
        0,
        "an attempt saw x + y != TOTAL"
    );
    assert_eq!(x.load() + y.load(), TOTAL);
    assert_eq!(p.load() + q.load(), TOTAL);
    // The check covered doomed attempts too (otherwise it would prove little).
    println!(
        "checker attempts {}, of which aborted {}",
        attempts.load(Ordering::Relaxed),
        checker_aborts.load(Ordering::Relaxed)
    );
    assert!(attempts.load(Ordering::Relaxed) > 0);
}
