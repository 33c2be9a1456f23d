//! Transfers with a concurrent read-only audit, and transfers against each other.
//!
//! Three accounts hold 300 in total (inline `TWord`s).
//!
//! * `audit_sees_the_exact_total`: one thread makes two transfers (0 -> 1, then 1 -> 2) while
//!   the main thread runs a read-only audit that sums all three accounts *inside* the
//!   transaction and asserts the total there — so an attempt that would see a half-applied
//!   transfer fails the model even if it would later have aborted (opacity).
//! * `concurrent_transfers_conserve_money`: two threads transfer over overlapping pairs
//!   (0 -> 1 and 1 -> 2); both must take effect exactly once (busy locks, validation and
//!   retries included).
//!
//! Negative controls: `--cfg timewarp_stm_broken="no_read_validation"` lets the audit see a
//! torn total (`AUDIT SAW A TORN TOTAL`); `="no_commit_validation"` lets both transfers
//! commit on the balance of account 1 they read before either wrote it, so one of them is
//! lost (`CONCURRENT TRANSFERS LOST AN UPDATE`).
//!
//! (loom note: a model with three threads that all spin — two retrying writers and a
//! retrying audit — exhausts loom's branch budget, so each model has at most two threads that
//! retry; the main thread of the second model only joins.)
#![cfg(loom)]

use loom::thread;
use std::sync::Arc;
use timewarp_stm::{StmError, TWord, Transaction, TxOptions, atomically_with};

/// Never irrevocable: that fallback has its own model (`irrevocable`).
const OPTS: TxOptions = TxOptions {
    read_only: false,
    irrevocable_after: u32::MAX,
};

fn transfer<'a>(
    tx: &mut Transaction<'a>,
    from: &'a TWord<i64>,
    to: &'a TWord<i64>,
    amount: i64,
) -> Result<(), StmError> {
    let a = tx.read(from)?;
    tx.write(from, a - amount)?;
    let b = tx.read(to)?;
    tx.write(to, b + amount)
}

fn accounts() -> Arc<[TWord<i64>; 3]> {
    Arc::new([TWord::new(100i64), TWord::new(100), TWord::new(100)])
}

#[test]
fn audit_sees_the_exact_total() {
    timewarp_loom_tests::model("transfer_audit", || {
        let acc = accounts();
        let a1 = acc.clone();
        let t1 = thread::spawn(move || {
            atomically_with(&OPTS, |tx| transfer(tx, &a1[0], &a1[1], 10));
            atomically_with(&OPTS, |tx| transfer(tx, &a1[1], &a1[2], 20));
        });
        let total = atomically_with(&OPTS.read_only(true), |tx| {
            let mut sum = 0;
            for a in acc.iter() {
                sum += tx.read(a)?;
            }
            assert_eq!(sum, 300, "AUDIT SAW A TORN TOTAL inside a transaction");
            Ok(sum)
        });
        assert_eq!(total, 300);
        t1.join().unwrap();
        let balances: Vec<i64> = acc.iter().map(TWord::load).collect();
        assert_eq!(balances, [90, 90, 120], "AUDITED TRANSFERS LOST AN UPDATE");
    });
}

#[test]
fn concurrent_transfers_conserve_money() {
    timewarp_loom_tests::model("concurrent_transfers", || {
        let acc = accounts();
        let a1 = acc.clone();
        let t1 =
            thread::spawn(move || atomically_with(&OPTS, |tx| transfer(tx, &a1[0], &a1[1], 10)));
        let a2 = acc.clone();
        let t2 =
            thread::spawn(move || atomically_with(&OPTS, |tx| transfer(tx, &a2[1], &a2[2], 20)));
        t1.join().unwrap();
        t2.join().unwrap();
        let balances: Vec<i64> = acc.iter().map(TWord::load).collect();
        assert_eq!(
            balances,
            [90, 90, 120],
            "CONCURRENT TRANSFERS LOST AN UPDATE"
        );
    });
}
