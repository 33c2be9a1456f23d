//! A small seeded pseudo-random generator for scene generation: SplitMix64.
//!
//! Scenes must be a pure function of their description (DESIGN.md, "Determinism is a contract"),
//! so the jitter of a `[[grid]]` and the random velocities of the `bouncing` scene come from this
//! generator, seeded explicitly, never from the operating system. SplitMix64 (Steele, Lea and
//! Flood, "Fast splittable pseudorandom number generators", 2014) is a 64-bit counter passed
//! through a strong bijective mixer: one add, three xor-shifts and two multiplies per number,
//! every seed (zero included) gives a full-period stream, and the output is identical on every
//! platform. It is not cryptographic and need not be.

/// SplitMix64: a counter advanced by the golden-ratio increment, mixed by a bijection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1): the top 24 bits scaled by 2^-24, so every value is exact in f32.
    pub fn next_unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    /// Uniform in [-1, 1).
    pub fn next_signed(&mut self) -> f32 {
        self.next_unit() * 2.0 - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_splitmix64_stream() {
        // First outputs of the reference C implementation (Vigna, splitmix64.c) for seed 0.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(rng.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn unit_values_lie_in_range_and_spread() {
        let mut rng = SplitMix64::new(7);
        let (mut lo, mut hi, mut sum) = (1.0f32, 0.0f32, 0.0f64);
        for _ in 0..10_000 {
            let u = rng.next_unit();
            assert!((0.0..1.0).contains(&u));
            lo = lo.min(u);
            hi = hi.max(u);
            sum += u as f64;
        }
        assert!(lo < 0.01 && hi > 0.99);
        assert!((sum / 10_000.0 - 0.5).abs() < 0.02);
        let s = SplitMix64::new(7).next_signed();
        assert!((-1.0..1.0).contains(&s));
    }
}
