//! A read-only transaction against a committing writer, on the boxed `TVar` path.
//!
//! The writer commits `x = y = 1` and then `x = y = 2` (two transactions); the reader, a
//! read-only transaction with no read set and no commit-time validation, reads `x` then `y` and
//! asserts inside the attempt that they are equal. Only per-read validation (lock bit, version
//! <= rv, re-check) protects it. Negative control: `no_read_validation`.
#![cfg(loom)]

use loom::thread;
use std::sync::Arc;
use timewarp_stm::{TVar, atomically, atomically_read_only};

#[test]
fn read_only_never_sees_half_a_commit() {
    timewarp_loom_tests::model("readonly_vs_writer", || {
        let vars = Arc::new((TVar::new(0u32), TVar::new(0u32)));
        let w = vars.clone();
        let writer = thread::spawn(move || {
            for v in 1..=2u32 {
                atomically(|tx| {
                    tx.write(&w.0, v)?;
                    tx.write(&w.1, v)
                });
            }
        });
        let (x, y) = atomically_read_only(|tx| {
            let x = tx.read(&vars.0)?;
            let y = tx.read(&vars.1)?;
            assert_eq!(x, y, "READ-ONLY TRANSACTION SAW HALF A COMMIT");
            Ok((x, y))
        });
        assert!(x == y && x <= 2);
        writer.join().unwrap();
        assert_eq!((vars.0.load(), vars.1.load()), (2, 2));
    });
}

/// The same against a read-write reader, which keeps a read set and so may *extend* its
/// snapshot when it meets a newer version: the extension must first check that nothing it
/// read has changed. Negative control: `no_extension_validation` extends blindly.
#[test]
fn read_write_never_sees_half_a_commit() {
    timewarp_loom_tests::model("readwrite_vs_writer", || {
        let vars = Arc::new((TVar::new(0u32), TVar::new(0u32), TVar::new(0u32)));
        let w = vars.clone();
        let writer = thread::spawn(move || {
            atomically(|tx| {
                tx.write(&w.0, 1)?;
                tx.write(&w.1, 1)
            });
        });
        let (x, y) = atomically(|tx| {
            let x = tx.read(&vars.0)?;
            let y = tx.read(&vars.1)?;
            assert_eq!(x, y, "READ-WRITE TRANSACTION SAW HALF A COMMIT");
            tx.write(&vars.2, x + y)?;
            Ok((x, y))
        });
        assert!(x == y && x <= 1);
        writer.join().unwrap();
        assert_eq!(vars.2.load(), 2 * x);
    });
}
