//! Single-thread transfers between `TWord` (or `TVar`) accounts, for instruction counts under
//! `valgrind --tool=callgrind` (repeatable on a shared machine, unlike timings):
//!
//! ```text
//! cargo build --release -p timewarp-stm --example transfers
//! valgrind --tool=callgrind target/release/examples/transfers 100000 word
//! ```
//!
//! It runs the transfers twice, `n` and `2n`; the difference of the two runs' instruction
//! counts over `n` is the cost of one transfer without the set-up.

use std::hint::black_box;
use timewarp_stm::{TVar, TWord, atomically};

const ACCOUNTS: usize = 1024;

/// xorshift64*.
fn next(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn pair(s: &mut u64) -> (usize, usize) {
    let from = (next(s) % ACCOUNTS as u64) as usize;
    let to = (from + 1 + (next(s) % (ACCOUNTS as u64 - 1)) as usize) % ACCOUNTS;
    (from, to)
}

#[inline(never)]
fn words(accounts: &[TWord<i64>], n: u64, s: &mut u64) {
    for _ in 0..n {
        let (from, to) = pair(s);
        atomically(|tx| {
            tx.modify(&accounts[from], |b| b - 1)?;
            tx.modify(&accounts[to], |b| b + 1)
        });
    }
}

#[inline(never)]
fn vars(accounts: &[TVar<i64>], n: u64, s: &mut u64) {
    for _ in 0..n {
        let (from, to) = pair(s);
        atomically(|tx| {
            tx.modify(&accounts[from], |b| b - 1)?;
            tx.modify(&accounts[to], |b| b + 1)
        });
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = match args.next() {
        None => 1_000_000,
        Some(a) => match a.parse() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("bad transfer count {a:?}: expected a positive integer");
                std::process::exit(2);
            }
        },
    };
    let kind = args.next().unwrap_or_else(|| "word".into());
    let mut s = 0x1234_5678_9abc_def1u64;
    let start = std::time::Instant::now();
    match kind.as_str() {
        "word" => {
            let a: Vec<TWord<i64>> = (0..ACCOUNTS).map(|_| TWord::new(1000)).collect();
            words(black_box(&a), n, &mut s);
            assert_eq!(
                a.iter().map(TWord::load).sum::<i64>(),
                1000 * ACCOUNTS as i64
            );
        }
        "var" => {
            let a: Vec<TVar<i64>> = (0..ACCOUNTS).map(|_| TVar::new(1000)).collect();
            vars(black_box(&a), n, &mut s);
            assert_eq!(
                a.iter().map(TVar::load).sum::<i64>(),
                1000 * ACCOUNTS as i64
            );
        }
        other => {
            eprintln!("unknown kind {other:?}: expected `word` or `var`");
            std::process::exit(2);
        }
    }
    let t = start.elapsed().as_secs_f64();
    println!("{kind}: {:.1} ns per transfer", t * 1e9 / n as f64);
}
