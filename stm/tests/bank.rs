//! Bank stress test: concurrent transfers never create or destroy money, and read-only audits
//! running at the same time always see the exact total (opacity + serialisability).

mod common;

use common::{Rng, THREADS};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use timewarp_stm::{
    TVar, TWord, TxOptions, Var, atomically_read_only, atomically_with, stats, thread_stats,
};

const INITIAL: i64 = 1_000;

/// Runs `THREADS` transfer threads and 4 audit threads over `accounts`; returns the number of
/// audits done. `read`/`total` abstract over TWord and TVar accounts.
fn run_bank<V>(accounts: &[V], transfers_per_thread: usize, options: TxOptions)
where
    V: Var<Value = i64> + Sync,
{
    let n = accounts.len() as u64;
    let expected = INITIAL * accounts.len() as i64;
    let before = stats();
    let done = AtomicBool::new(false);
    let audits = AtomicU64::new(0);
    let inconsistent_attempts = AtomicU64::new(0);
    let (done, audits, inconsistent_attempts) = (&done, &audits, &inconsistent_attempts);
    std::thread::scope(|s| {
        let mut workers = Vec::new();
        for t in 0..THREADS {
            workers.push(s.spawn(move || {
                let mut rng = Rng::new(t as u64 + 1);
                let mut moved = 0i64;
                for _ in 0..transfers_per_thread {
                    let from = rng.below(n) as usize;
                    let to = rng.below(n) as usize;
                    let amount = rng.below(50) as i64 + 1;
                    let ok = atomically_with(&options, |tx| {
                        let a = tx.read(&accounts[from])?;
                        if a < amount || from == to {
                            return Ok(false);
                        }
                        tx.write(&accounts[from], a - amount)?;
                        let b = tx.read(&accounts[to])?;
                        tx.write(&accounts[to], b + amount)?;
                        Ok(true)
                    });
                    if ok {
                        moved += amount;
                    }
                }
                moved
            }));
        }
        for _ in 0..4 {
            s.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let total = atomically_read_only(|tx| {
                        let mut sum = 0;
                        for a in accounts {
                            let v = tx.read(a)?;
                            if v < 0 {
                                // Test-only side effect: counts attempts that saw a broken state.
                                inconsistent_attempts.fetch_add(1, Ordering::Relaxed);
                            }
                            sum += v;
                        }
                        if sum != expected {
                            inconsistent_attempts.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(sum)
                    });
                    assert_eq!(total, expected, "an audit saw money created or destroyed");
                    audits.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let moved: i64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        done.store(true, Ordering::Relaxed);
        assert!(moved > 0, "some transfers must have happened");
    });
    assert_eq!(inconsistent_attempts.load(Ordering::Relaxed), 0);
    assert!(audits.load(Ordering::Relaxed) > 0);
    let final_total: i64 = accounts
        .iter()
        .map(|a| atomically_read_only(|tx| tx.read(a)))
        .sum();
    assert_eq!(final_total, expected);
    let d = stats().since(&before);
    println!(
        "{} accounts: {} commits, abort ratio {:.4}, irrevocable {}, audits {}",
        accounts.len(),
        d.commits,
        d.abort_ratio(),
        d.irrevocable_commits,
        audits.load(Ordering::Relaxed)
    );
}

#[test]
fn bank_of_words_conserves_money() {
    let accounts: Vec<TWord<i64>> = (0..64).map(|_| TWord::new(INITIAL)).collect();
    run_bank(&accounts, 20_000, TxOptions::default());
}

#[test]
fn bank_of_boxed_values_conserves_money() {
    let accounts: Vec<TVar<i64>> = (0..64).map(|_| TVar::new(INITIAL)).collect();
    run_bank(&accounts, 20_000, TxOptions::default());
}

#[test]
fn hot_bank_with_quick_irrevocability_conserves_money() {
    // Four accounts and 16 threads: heavy contention; irrevocable after 2 conflicts, so
    // irrevocable and normal commits interleave constantly.
    let accounts: Vec<TWord<i64>> = (0..4).map(|_| TWord::new(INITIAL)).collect();
    run_bank(&accounts, 10_000, TxOptions::new().irrevocable_after(2));
}

#[test]
fn irrevocable_and_normal_transfers_mix() {
    // Every third transfer of each thread is forced irrevocable from its first attempt.
    let accounts: Vec<TVar<i64>> = (0..8).map(|_| TVar::new(INITIAL)).collect();
    let accounts = &accounts;
    let per_thread = 3_000;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                let before = thread_stats();
                let mut rng = Rng::new(100 + t as u64);
                let mut forced = 0;
                for i in 0..per_thread {
                    let (from, to) = (rng.below(8) as usize, rng.below(8) as usize);
                    let options = if i % 3 == 0 {
                        forced += 1;
                        TxOptions::new().irrevocable_after(0)
                    } else {
                        TxOptions::new()
                    };
                    let irrevocable = atomically_with(&options, |tx| {
                        let a = tx.read(&accounts[from])?;
                        tx.write(&accounts[from], a - 1)?;
                        let b = tx.read(&accounts[to])?;
                        tx.write(&accounts[to], b + 1)?;
                        Ok(tx.is_irrevocable())
                    });
                    if i % 3 == 0 {
                        assert!(irrevocable);
                    }
                }
                let d = thread_stats().since(&before);
                assert_eq!(d.commits, per_thread);
                assert!(d.irrevocable_commits >= forced);
            });
        }
    });
    let total: i64 = accounts.iter().map(TVar::load).sum();
    assert_eq!(total, INITIAL * 8);
}
