//! Write skew: the classic anomaly of snapshot isolation, which TL2's commit-time validation
//! exists to prevent.
//!
//! `x = y = 0`. T1: "if x == 0 and y == 0, set x = 1"; T2: "if x == 0 and y == 0, set y = 1".
//! Their write sets are disjoint, so only read-set validation can stop both from committing on
//! the same snapshot. Serial orders give (1, 0) or (0, 1); (1, 1) is not serialisable.
//! Negative control: `--cfg timewarp_stm_broken="no_commit_validation"` must produce (1, 1).
#![cfg(loom)]

use loom::thread;
use std::sync::Arc;
use timewarp_stm::{TWord, atomically};

#[test]
fn write_skew_is_impossible() {
    timewarp_loom_tests::model("write_skew", || {
        let vars = Arc::new((TWord::new(0u8), TWord::new(0u8)));
        let v1 = vars.clone();
        let t1 = thread::spawn(move || {
            atomically(|tx| {
                if tx.read(&v1.0)? == 0 && tx.read(&v1.1)? == 0 {
                    tx.write(&v1.0, 1)?;
                }
                Ok(())
            })
        });
        let v2 = vars.clone();
        let t2 = thread::spawn(move || {
            atomically(|tx| {
                if tx.read(&v2.0)? == 0 && tx.read(&v2.1)? == 0 {
                    tx.write(&v2.1, 1)?;
                }
                Ok(())
            })
        });
        t1.join().unwrap();
        t2.join().unwrap();
        let outcome = (vars.0.load(), vars.1.load());
        assert!(
            outcome == (1, 0) || outcome == (0, 1),
            "WRITE SKEW: non-serialisable outcome {outcome:?}"
        );
    });
}
