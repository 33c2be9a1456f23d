//! The STM against locks (and against `stm-core`, a second Rust STM): a bank and a hash set,
//! at 1, 2 and 4 threads.
//!
//! * **bank**: N accounts (1024: little contention; 16: heavy contention). 80% of operations
//!   transfer 1 between two random accounts; 20% are audits that read every account and check
//!   the total. Guards: our STM with inline `TWord` accounts (`stm`) and with boxed `TVar`
//!   accounts (`stm-boxed`, to measure the inline fast path), one global `Mutex`, one `Mutex`
//!   per account locked in index order, one global `RwLock`, and `stm-core`.
//! * **set**: a hash set of 4096 possible keys in 256 buckets, 80% lookups, 20% updates (insert
//!   or remove); guards: STM buckets, global `Mutex<HashSet>`, `Mutex` per bucket, global
//!   `RwLock<HashSet>`, `stm-core` buckets.
//!
//! Each case reports the time per operation over all threads (criterion's "elements" are
//! operations), and the STM cases print their abort ratio a / (a + c) to stderr.
//!
//! `cargo bench --bench stm -- --figures` skips criterion and prints the headline figures:
//! single-thread transactions per second on the 1024-account bank for the STM, per-account
//! mutexes and stm-core, and the STM's abort ratio at 2 threads with 1024 and 16 accounts.

use criterion::{BenchmarkId, Criterion, Throughput};
use std::collections::HashSet;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};
use timewarp_stm::{TVar, TWord, TxOptions, atomically, atomically_with, stats};

const INITIAL: i64 = 1_000;
const THREADS: [usize; 3] = [1, 2, 4];

/// xorshift64*: cheap per-thread randomness.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    #[inline]
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// One operation of a workload, given a thread's RNG.
trait Workload: Sync {
    fn op(&self, rng: &mut Rng);
}

/// Runs `ops` operations spread over `threads` threads; returns the wall time.
fn run<W: Workload + ?Sized>(w: &W, threads: usize, ops: u64) -> Duration {
    let per_thread = ops.div_ceil(threads as u64);
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut rng = Rng::new(t as u64 * 7919 + 13);
                for _ in 0..per_thread {
                    w.op(&mut rng);
                }
            });
        }
    });
    start.elapsed()
}

// ---------------------------------------------------------------- bank

/// Picks the operation: `None` for an audit, `Some((from, to))` for a transfer.
#[inline]
fn bank_op(rng: &mut Rng, n: usize, audits: bool) -> Option<(usize, usize)> {
    if audits && rng.below(5) == 0 {
        return None;
    }
    let from = rng.below(n);
    let mut to = rng.below(n - 1);
    if to >= from {
        to += 1;
    }
    Some((from, to))
}

struct StmBank {
    accounts: Vec<TWord<i64>>,
    audits: bool,
}

impl Workload for StmBank {
    fn op(&self, rng: &mut Rng) {
        let n = self.accounts.len();
        match bank_op(rng, n, self.audits) {
            Some((from, to)) => atomically(|tx| {
                tx.modify(&self.accounts[from], |b| b - 1)?;
                tx.modify(&self.accounts[to], |b| b + 1)
            }),
            None => {
                let total = atomically_with(&TxOptions::new().read_only(true), |tx| {
                    let mut sum = 0;
                    for a in &self.accounts {
                        sum += tx.read(a)?;
                    }
                    Ok(sum)
                });
                assert_eq!(total, INITIAL * n as i64);
            }
        }
    }
}

struct StmBoxedBank {
    accounts: Vec<TVar<i64>>,
    audits: bool,
}

impl Workload for StmBoxedBank {
    fn op(&self, rng: &mut Rng) {
        let n = self.accounts.len();
        match bank_op(rng, n, self.audits) {
            Some((from, to)) => atomically(|tx| {
                tx.modify(&self.accounts[from], |b| b - 1)?;
                tx.modify(&self.accounts[to], |b| b + 1)
            }),
            None => {
                let total = atomically_with(&TxOptions::new().read_only(true), |tx| {
                    let mut sum = 0;
                    for a in &self.accounts {
                        sum += tx.read_with(a, |b| *b)?;
                    }
                    Ok(sum)
                });
                assert_eq!(total, INITIAL * n as i64);
            }
        }
    }
}

struct GlobalMutexBank {
    accounts: Mutex<Vec<i64>>,
    audits: bool,
}

impl Workload for GlobalMutexBank {
    fn op(&self, rng: &mut Rng) {
        let mut a = self.accounts.lock().unwrap();
        let n = a.len();
        match bank_op(rng, n, self.audits) {
            Some((from, to)) => {
                a[from] -= 1;
                a[to] += 1;
            }
            None => assert_eq!(a.iter().sum::<i64>(), INITIAL * n as i64),
        }
    }
}

struct PerAccountMutexBank {
    accounts: Vec<Mutex<i64>>,
    audits: bool,
}

impl Workload for PerAccountMutexBank {
    fn op(&self, rng: &mut Rng) {
        let n = self.accounts.len();
        match bank_op(rng, n, self.audits) {
            Some((from, to)) => {
                // Index order: deadlock-free.
                let (lo, hi) = (from.min(to), from.max(to));
                let mut l = self.accounts[lo].lock().unwrap();
                let mut h = self.accounts[hi].lock().unwrap();
                if from < to {
                    *l -= 1;
                    *h += 1;
                } else {
                    *h -= 1;
                    *l += 1;
                }
            }
            None => {
                let guards: Vec<_> = self.accounts.iter().map(|m| m.lock().unwrap()).collect();
                assert_eq!(guards.iter().map(|g| **g).sum::<i64>(), INITIAL * n as i64);
            }
        }
    }
}

struct RwLockBank {
    accounts: RwLock<Vec<i64>>,
    audits: bool,
}

impl Workload for RwLockBank {
    fn op(&self, rng: &mut Rng) {
        let n = self.accounts.read().unwrap().len();
        match bank_op(rng, n, self.audits) {
            Some((from, to)) => {
                let mut a = self.accounts.write().unwrap();
                a[from] -= 1;
                a[to] += 1;
            }
            None => {
                let a = self.accounts.read().unwrap();
                assert_eq!(a.iter().sum::<i64>(), INITIAL * n as i64);
            }
        }
    }
}

struct StmCoreBank {
    accounts: Vec<stm_core::TVar<i64>>,
    audits: bool,
}

impl Workload for StmCoreBank {
    fn op(&self, rng: &mut Rng) {
        let n = self.accounts.len();
        match bank_op(rng, n, self.audits) {
            Some((from, to)) => stm_core::atomically(|tx| {
                self.accounts[from].modify(tx, |b| b - 1)?;
                self.accounts[to].modify(tx, |b| b + 1)
            }),
            None => {
                let total = stm_core::atomically(|tx| {
                    let mut sum = 0;
                    for a in &self.accounts {
                        sum += a.read(tx)?;
                    }
                    Ok(sum)
                });
                assert_eq!(total, INITIAL * n as i64);
            }
        }
    }
}

fn banks(n: usize, audits: bool) -> Vec<(&'static str, Box<dyn Workload>)> {
    vec![
        (
            "stm",
            Box::new(StmBank {
                accounts: (0..n).map(|_| TWord::new(INITIAL)).collect(),
                audits,
            }),
        ),
        (
            "stm-boxed",
            Box::new(StmBoxedBank {
                accounts: (0..n).map(|_| TVar::new(INITIAL)).collect(),
                audits,
            }),
        ),
        (
            "mutex-global",
            Box::new(GlobalMutexBank {
                accounts: Mutex::new(vec![INITIAL; n]),
                audits,
            }),
        ),
        (
            "mutex-per-account",
            Box::new(PerAccountMutexBank {
                accounts: (0..n).map(|_| Mutex::new(INITIAL)).collect(),
                audits,
            }),
        ),
        (
            "rwlock",
            Box::new(RwLockBank {
                accounts: RwLock::new(vec![INITIAL; n]),
                audits,
            }),
        ),
        (
            "stm-core",
            Box::new(StmCoreBank {
                accounts: (0..n).map(|_| stm_core::TVar::new(INITIAL)).collect(),
                audits,
            }),
        ),
    ]
}

impl Workload for Box<dyn Workload> {
    fn op(&self, rng: &mut Rng) {
        (**self).op(rng)
    }
}

// ---------------------------------------------------------------- set

const KEYS: usize = 4096;
const BUCKETS: usize = 256;

#[inline]
fn bucket_of(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % BUCKETS
}

/// `(key, update?)`
#[inline]
fn set_op(rng: &mut Rng) -> (u64, bool) {
    (rng.below(KEYS) as u64, rng.below(5) == 0)
}

struct StmSet {
    buckets: Vec<TVar<Vec<u64>>>,
}

impl Workload for StmSet {
    fn op(&self, rng: &mut Rng) {
        let (key, update) = set_op(rng);
        let b = &self.buckets[bucket_of(key)];
        if update {
            atomically(|tx| {
                let mut v = tx.read(b)?;
                match v.iter().position(|&k| k == key) {
                    Some(i) => {
                        v.swap_remove(i);
                    }
                    None => v.push(key),
                }
                tx.write(b, v)
            });
        } else {
            let found = atomically_with(&TxOptions::new().read_only(true), |tx| {
                tx.read_with(b, |v| v.contains(&key))
            });
            std::hint::black_box(found);
        }
    }
}

struct GlobalMutexSet(Mutex<HashSet<u64>>);

impl Workload for GlobalMutexSet {
    fn op(&self, rng: &mut Rng) {
        let (key, update) = set_op(rng);
        let mut s = self.0.lock().unwrap();
        if update {
            if !s.remove(&key) {
                s.insert(key);
            }
        } else {
            std::hint::black_box(s.contains(&key));
        }
    }
}

struct BucketMutexSet(Vec<Mutex<Vec<u64>>>);

impl Workload for BucketMutexSet {
    fn op(&self, rng: &mut Rng) {
        let (key, update) = set_op(rng);
        let mut v = self.0[bucket_of(key)].lock().unwrap();
        if update {
            match v.iter().position(|&k| k == key) {
                Some(i) => {
                    v.swap_remove(i);
                }
                None => v.push(key),
            }
        } else {
            std::hint::black_box(v.contains(&key));
        }
    }
}

struct RwLockSet(RwLock<HashSet<u64>>);

impl Workload for RwLockSet {
    fn op(&self, rng: &mut Rng) {
        let (key, update) = set_op(rng);
        if update {
            let mut s = self.0.write().unwrap();
            if !s.remove(&key) {
                s.insert(key);
            }
        } else {
            std::hint::black_box(self.0.read().unwrap().contains(&key));
        }
    }
}

struct StmCoreSet(Vec<stm_core::TVar<Vec<u64>>>);

impl Workload for StmCoreSet {
    fn op(&self, rng: &mut Rng) {
        let (key, update) = set_op(rng);
        let b = &self.0[bucket_of(key)];
        if update {
            stm_core::atomically(|tx| {
                let mut v = b.read(tx)?;
                match v.iter().position(|&k| k == key) {
                    Some(i) => {
                        v.swap_remove(i);
                    }
                    None => v.push(key),
                }
                b.write(tx, v)
            });
        } else {
            let found = stm_core::atomically(|tx| Ok(b.read(tx)?.contains(&key)));
            std::hint::black_box(found);
        }
    }
}

fn sets() -> Vec<(&'static str, Box<dyn Workload>)> {
    // Start half full: every even key.
    let evens = || (0..KEYS as u64).step_by(2);
    let mut buckets = vec![Vec::new(); BUCKETS];
    for k in evens() {
        buckets[bucket_of(k)].push(k);
    }
    vec![
        (
            "stm",
            Box::new(StmSet {
                buckets: buckets.iter().map(|b| TVar::new(b.clone())).collect(),
            }),
        ),
        (
            "mutex-global",
            Box::new(GlobalMutexSet(Mutex::new(evens().collect()))),
        ),
        (
            "mutex-per-bucket",
            Box::new(BucketMutexSet(
                buckets.iter().map(|b| Mutex::new(b.clone())).collect(),
            )),
        ),
        (
            "rwlock",
            Box::new(RwLockSet(RwLock::new(evens().collect()))),
        ),
        (
            "stm-core",
            Box::new(StmCoreSet(
                buckets
                    .iter()
                    .map(|b| stm_core::TVar::new(b.clone()))
                    .collect(),
            )),
        ),
    ]
}

// ---------------------------------------------------------------- criterion

fn bench_group(c: &mut Criterion, group: &str, cases: Vec<(&'static str, Box<dyn Workload>)>) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(1));
    for (name, w) in &cases {
        for threads in THREADS {
            let before = stats();
            g.bench_with_input(BenchmarkId::new(*name, threads), &threads, |b, &t| {
                b.iter_custom(|iters| run(w, t, iters))
            });
            if name.starts_with("stm") && *name != "stm-core" {
                let d = stats().since(&before);
                eprintln!(
                    "{group}/{name}/{threads}: abort ratio {:.5} ({} aborts, {} commits, {} irrevocable)",
                    d.abort_ratio(),
                    d.conflict_aborts(),
                    d.commits,
                    d.irrevocable_commits
                );
            }
        }
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_group(c, "bank-1024", banks(1024, true));
    bench_group(c, "bank-16", banks(16, true));
    bench_group(c, "set-20pct-updates", sets());
}

// ---------------------------------------------------------------- headline figures

/// Operations per second of `w` on `threads` threads: the best of `rounds` runs of about
/// 0.1 s each (the best, because on a shared machine other processes only ever slow a run
/// down).
fn ops_per_second<W: Workload + ?Sized>(w: &W, threads: usize, rounds: usize) -> f64 {
    let mut ops = 1_000u64;
    while run(w, threads, ops).as_secs_f64() < 0.02 {
        ops *= 2;
    }
    ops *= 5;
    (0..rounds)
        .map(|_| ops as f64 / run(w, threads, ops).as_secs_f64())
        .fold(0.0, f64::max)
}

/// Read-only audits of every account, nothing else.
struct AuditOnly<'a>(&'a [TWord<i64>]);

impl Workload for AuditOnly<'_> {
    fn op(&self, _rng: &mut Rng) {
        let total = atomically_with(&TxOptions::new().read_only(true), |tx| {
            let mut sum = 0;
            for a in self.0 {
                sum += tx.read(a)?;
            }
            Ok(sum)
        });
        assert_eq!(total, INITIAL * self.0.len() as i64);
    }
}

fn figures() {
    const ROUNDS: usize = 7;
    println!("single thread, bank of 1024 accounts, transactions per second (best of {ROUNDS}):");
    for audits in [false, true] {
        let label = if audits {
            "80% transfers + 20% audits"
        } else {
            "transfers only"
        };
        let cases: Vec<_> = banks(1024, audits)
            .into_iter()
            .filter(|(n, _)| matches!(*n, "stm" | "stm-boxed" | "mutex-per-account" | "stm-core"))
            .collect();
        // Interleave the cases round by round, so that a burst of load elsewhere hits all.
        let mut best = vec![0.0f64; cases.len()];
        for _ in 0..ROUNDS {
            for (i, (_, w)) in cases.iter().enumerate() {
                best[i] = best[i].max(ops_per_second(&**w, 1, 1));
            }
        }
        let get = |n: &str| {
            cases
                .iter()
                .position(|c| c.0 == n)
                .map_or(f64::NAN, |i| best[i])
        };
        for (i, (name, _)) in cases.iter().enumerate() {
            println!("  {label:28} {name:18} {:>14.0} tx/s", best[i]);
        }
        println!(
            "  {label:28} stm / mutex-per-account = {:.2}, stm / stm-core = {:.1}",
            get("stm") / get("mutex-per-account"),
            get("stm") / get("stm-core")
        );
    }
    let accounts: Vec<TWord<i64>> = (0..1024).map(|_| TWord::new(INITIAL)).collect();
    let audits = ops_per_second(&AuditOnly(&accounts), 1, ROUNDS);
    println!(
        "  read-only audit of 1024 TWords: {:.0} audits/s = {:.2} ns per transactional read",
        audits,
        1e9 / (audits * 1024.0)
    );
    println!("abort ratio a/(a+c) of the STM at 2 threads (80% transfers + 20% audits, ~1 s):");
    for n in [1024, 16] {
        let w = StmBank {
            accounts: (0..n).map(|_| TWord::new(INITIAL)).collect(),
            audits: true,
        };
        let before = stats();
        let tps = ops_per_second(&w, 2, 10);
        let d = stats().since(&before);
        println!(
            "  {n:5} accounts: abort ratio {:.5} ({} aborts / {} commits, {} irrevocable, {} extensions), best {tps:.0} tx/s",
            d.abort_ratio(),
            d.conflict_aborts(),
            d.commits,
            d.irrevocable_commits,
            d.extensions
        );
        println!(
            "               aborts: {} read conflict, {} lock busy, {} commit validation, {} irrevocable running",
            d.aborts_read_conflict,
            d.aborts_lock_busy,
            d.aborts_commit_validation,
            d.aborts_irrevocable
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--profile-transfers") {
        // For `perf record`: STM transfers only, one thread, a few seconds.
        let w = banks(1024, false).swap_remove(0).1;
        let t = run(&*w, 1, 20_000_000);
        println!("{:.1} ns per transfer", t.as_secs_f64() * 1e9 / 2e7);
        return;
    }
    if std::env::args().any(|a| a == "--figures") {
        figures();
        return;
    }
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1200))
        .configure_from_args();
    benches(&mut c);
    c.final_summary();
}
