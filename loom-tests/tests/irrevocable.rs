//! The irrevocable fallback against normal commits.
//!
//! An irrevocable transaction (forced from its first attempt) reads `x` and `y`, asserts the
//! invariant `x + y == 10` inside the attempt, and moves 1 from `y` to `x`; a normal
//! transaction concurrently moves 5 the same way. The irrevocable transaction does no read
//! validation at all — it relies on the irrevocable bit stopping every other commit from
//! writing back while it runs — so it must still see a consistent snapshot, and neither update
//! may be lost: the final state is `x = 6`, `y = 4`.
//! Negative control: `no_irrevocable_wait` lets the normal commit write back while the
//! irrevocable transaction runs.
#![cfg(loom)]

use loom::thread;
use std::sync::Arc;
use timewarp_stm::{TWord, TxOptions, atomically, atomically_with};

#[test]
fn irrevocable_transaction_is_never_invalidated() {
    timewarp_loom_tests::model("irrevocable", || {
        let vars = Arc::new((TWord::new(0i64), TWord::new(10i64)));
        let v = vars.clone();
        let normal = thread::spawn(move || {
            atomically(|tx| {
                let x = tx.read(&v.0)?;
                tx.write(&v.0, x + 5)?;
                let y = tx.read(&v.1)?;
                tx.write(&v.1, y - 5)
            })
        });
        let irrevocable = atomically_with(&TxOptions::new().irrevocable_after(0), |tx| {
            let x = tx.read(&vars.0)?;
            let y = tx.read(&vars.1)?;
            assert_eq!(
                x + y,
                10,
                "IRREVOCABLE TRANSACTION SAW AN INCONSISTENT SNAPSHOT"
            );
            tx.write(&vars.0, x + 1)?;
            tx.write(&vars.1, y - 1)?;
            Ok(tx.is_irrevocable())
        });
        assert!(irrevocable);
        normal.join().unwrap();
        assert_eq!(
            (vars.0.load(), vars.1.load()),
            (6, 4),
            "LOST UPDATE next to an irrevocable transaction"
        );
    });
}
