//! Bounded exponential back-off with jitter, between the attempts of a transaction.
//!
//! Two transactions that conflicted and retry at once tend to conflict again. After the
//! `n`-th conflict an attempt waits a random number of steps in `1..=2^min(n, 10)` (jitter
//! breaks the symmetry; the cap bounds the delay). Short waits spin; once the wait grows the
//! thread yields the processor instead, because with more threads than cores (the normal case
//! for the engine's stress tests, and any time the OS preempts) the transaction we conflict
//! with may not be running at all. Under loom the back-off is a single yield: loom only needs
//! to know that the thread is waiting.

#[cfg(not(loom))]
use crate::primitive::spin_loop;
use crate::primitive::yield_now;

/// The largest exponent of the back-off window.
#[cfg(not(loom))]
const MAX_STEP: u32 = 10;
/// From this step on the thread yields instead of spinning.
#[cfg(not(loom))]
const YIELD_STEP: u32 = 4;

/// The back-off state of one `atomically` call.
pub(crate) struct Backoff {
    step: u32,
    #[cfg(not(loom))]
    rng: u64,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff {
            step: 0,
            #[cfg(not(loom))]
            rng: 0,
        }
    }

    /// How many times [`Backoff::pause`] has run.
    #[cfg(test)]
    pub(crate) fn step(&self) -> u32 {
        self.step
    }

    #[cfg(not(loom))]
    fn next_random(&mut self) -> u64 {
        if self.rng == 0 {
            // Seed from this frame's address and the thread id: distinct per thread, cheap,
            // and only needed on the (rare) abort path.
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(&raw const *self as usize);
            self.rng = h.finish() | 1;
        }
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Waits before the next attempt; each call waits (on average) twice as long as the last,
    /// up to the cap.
    #[cfg(not(loom))]
    pub(crate) fn pause(&mut self) {
        let window = 1u64 << self.step.min(MAX_STEP);
        let n = 1 + self.next_random() % window;
        if self.step < YIELD_STEP {
            for _ in 0..n * 8 {
                spin_loop();
            }
        } else {
            for _ in 0..n.div_ceil(64) {
                yield_now();
            }
        }
        self.step += 1;
    }

    #[cfg(loom)]
    pub(crate) fn pause(&mut self) {
        yield_now();
        self.step += 1;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn pauses_are_counted_and_bounded() {
        let mut b = Backoff::new();
        let t = std::time::Instant::now();
        for _ in 0..20 {
            b.pause();
        }
        assert_eq!(b.step(), 20);
        // At the cap a pause is at most 16 yields; 20 pauses must not take long.
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
        let mut a = Backoff::new();
        let draws: Vec<u64> = (0..8).map(|_| a.next_random()).collect();
        assert!(draws.windows(2).any(|w| w[0] != w[1]), "jitter must vary");
    }
}
