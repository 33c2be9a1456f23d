//! A concurrent hash set built on the STM, checked against a sequential model.
//!
//! Each thread owns the keys congruent to its index modulo the thread count, so the outcome of
//! every one of its operations is predictable from its own sequential model (a `BTreeSet`),
//! while the buckets — and so the transactions — are shared with every other thread. A size
//! counter updated in the same transactions must always equal the sum of the bucket lengths,
//! which concurrent read-only audits check.

mod common;

use common::{Rng, THREADS};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use timewarp_stm::{StmError, TVar, TWord, Transaction, atomically, atomically_read_only};

struct Set {
    buckets: Vec<TVar<Vec<u64>>>,
    size: TWord<u64>,
}

impl Set {
    fn new(buckets: usize) -> Self {
        Set {
            buckets: (0..buckets).map(|_| TVar::new(Vec::new())).collect(),
            size: TWord::new(0),
        }
    }

    fn bucket(&self, key: u64) -> &TVar<Vec<u64>> {
        &self.buckets[(key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % self.buckets.len()]
    }

    fn contains<'a>(&'a self, tx: &mut Transaction<'a>, key: u64) -> Result<bool, StmError> {
        tx.read_with(self.bucket(key), |b| b.contains(&key))
    }

    fn insert<'a>(&'a self, tx: &mut Transaction<'a>, key: u64) -> Result<bool, StmError> {
        let b = self.bucket(key);
        let mut v = tx.read(b)?;
        if v.contains(&key) {
            return Ok(false);
        }
        v.push(key);
        tx.write(b, v)?;
        tx.modify(&self.size, |s| s + 1)?;
        Ok(true)
    }

    fn remove<'a>(&'a self, tx: &mut Transaction<'a>, key: u64) -> Result<bool, StmError> {
        let b = self.bucket(key);
        let mut v = tx.read(b)?;
        let Some(i) = v.iter().position(|&k| k == key) else {
            return Ok(false);
        };
        v.swap_remove(i);
        tx.write(b, v)?;
        tx.modify(&self.size, |s| s - 1)?;
        Ok(true)
    }
}

#[test]
fn concurrent_set_matches_sequential_models() {
    let set = Set::new(64);
    let keys_per_thread = 40u64;
    let ops = 15_000;
    let done = AtomicBool::new(false);
    let (set, done) = (&set, &done);
    let models: Vec<BTreeSet<u64>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    let mut rng = Rng::new(7 + t as u64);
                    let mut model = BTreeSet::new();
                    for _ in 0..ops {
                        let key = rng.below(keys_per_thread) * THREADS as u64 + t as u64;
                        match rng.below(10) {
                            0..=3 => {
                                let got = atomically(|tx| set.insert(tx, key));
                                assert_eq!(got, model.insert(key), "insert({key})");
                            }
                            4..=6 => {
                                let got = atomically(|tx| set.remove(tx, key));
                                assert_eq!(got, model.remove(&key), "remove({key})");
                            }
                            _ => {
                                let got = atomically_read_only(|tx| set.contains(tx, key));
                                assert_eq!(got, model.contains(&key), "contains({key})");
                            }
                        }
                    }
                    model
                })
            })
            .collect();
        for _ in 0..2 {
            s.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let (size, sum) = atomically_read_only(|tx| {
                        let size = tx.read(&set.size)?;
                        let mut sum = 0;
                        for b in &set.buckets {
                            sum += tx.read_with(b, Vec::len)? as u64;
                        }
                        Ok((size, sum))
                    });
                    assert_eq!(size, sum, "size counter out of step with the buckets");
                }
            });
        }
        let models = workers.into_iter().map(|w| w.join().unwrap()).collect();
        done.store(true, Ordering::Relaxed);
        models
    });
    let expected: BTreeSet<u64> = models.into_iter().flatten().collect();
    let actual: BTreeSet<u64> = set.buckets.iter().flat_map(|b| b.load()).collect();
    assert_eq!(actual, expected);
    assert_eq!(set.size.load(), expected.len() as u64);
    // No key is stored twice.
    let stored: usize = set.buckets.iter().map(|b| b.load().len()).sum();
    assert_eq!(stored, expected.len());
}
