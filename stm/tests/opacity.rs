//! Opacity: no attempt, not even one that will abort, ever observes a broken invariant.
//!
//! Writers keep `x + y == TOTAL` while moving amounts between them (and between a `TVar` pair
//! with the same invariant). Checkers read both inside every attempt and count every attempt
//! that saw a sum other than `TOTAL`. Under TL2's read validation that count must be zero; if
//! reads were not validated (the `no_read_validation` negative control of the loom models) it
//! would not be.
//!
//! The point is the attempts that abort, so the test counts them: every attempt that reached
//! the check, and every checker transaction (each commits exactly one attempt). The difference
//! is the attempts that ran the check and then aborted, and the test asserts that there were
//! some. Left alone, they are rare (0 or 1 of 300,000 checked attempts in three runs on the
//! 2-core development machine: a read-write checker commits within nanoseconds of its check),
//! so one read-write checker transaction in 256 yields between its check and its write (of a
//! scratch word every checker writes): writers and other checkers commit meanwhile and doom
//! it at commit (about 900 doomed checked attempts a run here, on any number of cores).
//! `a_checker_doomed_after_its_check_ran_it` makes one such attempt on purpose and checks that
//! the counting sees it.

mod common;

use common::{Rng, THREADS};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use timewarp_stm::{
    StmError, TVar, TWord, Transaction, atomically, atomically_read_only, thread_stats,
};

const TOTAL: i64 = 1_000_000;

#[test]
fn no_attempt_sees_a_broken_invariant() {
    let (x, y) = (TWord::new(TOTAL / 2), TWord::new(TOTAL / 2));
    let (p, q) = (TVar::new(TOTAL / 2), TVar::new(TOTAL / 2));
    let scratch = TWord::new(0u64);
    stress(&x, &y, &p, &q, &scratch);
}

/// The body of `no_attempt_sees_a_broken_invariant` (a function, to name the lifetime of the
/// variables that the transactions borrow).
fn stress<'a>(
    x: &'a TWord<i64>,
    y: &'a TWord<i64>,
    p: &'a TVar<i64>,
    q: &'a TVar<i64>,
    scratch: &'a TWord<u64>,
) {
    let violations = AtomicU64::new(0);
    let checked = AtomicU64::new(0);
    let doomed_checked = AtomicU64::new(0);
    let checker_aborts = AtomicU64::new(0);
    let (violations, checked, doomed_checked, checker_aborts) =
        (&violations, &checked, &doomed_checked, &checker_aborts);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                let mut rng = Rng::new(t as u64 + 99);
                let before = thread_stats();
                // This thread's attempts that reached the check, and its checker
                // transactions (each commits exactly one attempt).
                let checks = Cell::new(0u64);
                let mut transactions = 0;
                // Reads both pairs inside an attempt; counts the attempt as checked, and as a
                // violation if either sum is off.
                let check = |tx: &mut Transaction<'a>| -> Result<(), StmError> {
                    let a = tx.read(x)?;
                    let c = tx.read(p)?;
                    let b = tx.read(y)?;
                    let e = tx.read(q)?;
                    checks.set(checks.get() + 1);
                    if a + b != TOTAL || c + e != TOTAL {
                        violations.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                };
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
                        (2, _) | (1, 1) => {
                            atomically(|tx| {
                                // Read-write checker: checks, now and then lets others
                                // commit, writes.
                                check(tx)?;
                                if i % 256 == 1 {
                                    std::thread::yield_now();
                                }
                                tx.modify(scratch, |v| v + 1)
                            });
                            transactions += 1;
                        }
                        _ => {
                            atomically_read_only(check);
                            transactions += 1;
                        }
                    }
                }
                checked.fetch_add(checks.get(), Ordering::Relaxed);
                doomed_checked.fetch_add(checks.get() - transactions, Ordering::Relaxed);
                checker_aborts.fetch_add(
                    if transactions > 0 {
                        thread_stats().since(&before).conflict_aborts()
                    } else {
                        0
                    },
                    Ordering::Relaxed,
                );
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
    let (checked, doomed, aborts) = (
        checked.load(Ordering::Relaxed),
        doomed_checked.load(Ordering::Relaxed),
        checker_aborts.load(Ordering::Relaxed),
    );
    println!(
        "attempts that ran the check {checked}, of which aborted after it {doomed}; \
         conflict aborts of the checker threads {aborts}"
    );
    // The check covered doomed attempts too (otherwise it would prove little): each of them
    // is one of the checker threads' conflict aborts.
    assert!(
        doomed > 0,
        "no attempt that ran the check aborted afterwards"
    );
    assert!(
        doomed <= aborts,
        "{doomed} checked attempts aborted, but the checker threads counted {aborts} aborts"
    );
}

/// The counting of `no_attempt_sees_a_broken_invariant` on one attempt doomed on purpose: a
/// checker reads `x` and `y` and checks them, then waits while a writer commits to both, then
/// writes. Its commit must fail validation (it read `x` before the writer's commit), so it
/// runs twice: two checks, one transaction, one doomed attempt that saw a consistent state.
#[test]
fn a_checker_doomed_after_its_check_ran_it() {
    let (x, y) = (TWord::new(TOTAL / 2), TWord::new(TOTAL / 2));
    let scratch = TWord::new(0u64);
    let (go, wait_go) = mpsc::channel::<()>();
    let (done, wait_done) = mpsc::channel::<()>();
    let (x, y, scratch) = (&x, &y, &scratch);
    std::thread::scope(|s| {
        s.spawn(move || {
            wait_go.recv().expect("the checker's signal");
            atomically(|tx| {
                tx.modify(x, |a| a - 7)?;
                tx.modify(y, |b| b + 7)
            });
            done.send(()).expect("the checker waits");
        });
        let (checks, violations) = (Cell::new(0u64), Cell::new(0u64));
        let before = thread_stats();
        atomically(|tx| {
            let sum = tx.read(x)? + tx.read(y)?;
            checks.set(checks.get() + 1);
            if sum != TOTAL {
                violations.set(violations.get() + 1);
            }
            if checks.get() == 1 {
                go.send(()).expect("the writer waits");
                wait_done.recv().expect("the writer's commit");
            }
            tx.modify(scratch, |v| v + 1)
        });
        // One transaction: every checked attempt but one aborted after its check.
        let doomed = checks.get() - 1;
        let aborts = thread_stats().since(&before).conflict_aborts();
        assert_eq!(
            (checks.get(), doomed, aborts, violations.get()),
            (2, 1, 1, 0),
            "(checked attempts, of them aborted after the check, aborts, violations)"
        );
        assert_eq!((x.load(), scratch.load()), (TOTAL / 2 - 7, 1));
    });
}
