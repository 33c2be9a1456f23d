//! A growable bit set over `usize` indices, stored as 64-bit words.
//!
//! Box2D v3 (seed 002, "Making persistent islands fast") records edge changes of the narrow phase
//! in one bit array per worker thread, ORs them together after the narrow phase and walks the set
//! bits in ascending order with bit-scan instructions. Bitwise OR is associative, commutative and
//! idempotent, so the merged set — and therefore the order in which the changes are applied — is
//! the same for every partition of the work among threads. No atomics are needed.
//!
//! The island graph also uses it for its set of awake islands and its set of islands flagged for
//! splitting: both are iterated in ascending id order, which is what makes those walks
//! deterministic.

/// A set of `usize` indices. Setting an index beyond the current length grows the set; reading
/// one beyond it reads `false`. Two sets are equal when they hold the same indices, whatever
/// their allocated lengths.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    /// An empty set with room for indices `0..bits` without growing.
    pub fn new(bits: usize) -> Self {
        BitSet {
            words: vec![0; bits.div_ceil(64)],
        }
    }

    /// The number of indices the set can hold without growing (a multiple of 64).
    pub fn capacity(&self) -> usize {
        self.words.len() * 64
    }

    /// Adds `index`, growing the set if needed.
    pub fn set(&mut self, index: usize) {
        let w = index / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (index % 64);
    }

    /// Removes `index` (nothing happens if it is beyond the current length).
    pub fn unset(&mut self, index: usize) {
        if let Some(word) = self.words.get_mut(index / 64) {
            *word &= !(1u64 << (index % 64));
        }
    }

    /// Whether `index` is in the set.
    pub fn get(&self, index: usize) -> bool {
        self.words
            .get(index / 64)
            .is_some_and(|w| w & (1u64 << (index % 64)) != 0)
    }

    /// Removes every index, keeping the allocation.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// Whether the set holds no index.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The number of indices in the set.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// `self |= other`, growing `self` to `other`'s length if needed.
    pub fn union_with(&mut self, other: &BitSet) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= *b;
        }
    }

    /// The indices in the set, ascending.
    pub fn iter_ones(&self) -> Ones<'_> {
        Ones {
            words: &self.words,
            word_index: 0,
            current: self.words.first().copied().unwrap_or(0),
        }
    }
}

impl PartialEq for BitSet {
    fn eq(&self, other: &Self) -> bool {
        let common = self.words.len().min(other.words.len());
        self.words[..common] == other.words[..common]
            && self.words[common..].iter().all(|&w| w == 0)
            && other.words[common..].iter().all(|&w| w == 0)
    }
}

impl Eq for BitSet {}

/// Iterator over the indices of a [`BitSet`], ascending (one trailing-zero count per index).
pub struct Ones<'a> {
    words: &'a [u64],
    word_index: usize,
    current: u64,
}

impl Iterator for Ones<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        loop {
            if self.current != 0 {
                let bit = self.current.trailing_zeros() as usize;
                self.current &= self.current - 1;
                return Some(self.word_index * 64 + bit);
            }
            self.word_index += 1;
            if self.word_index >= self.words.len() {
                return None;
            }
            self.current = self.words[self.word_index];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_iterate_against_sorted_vec() {
        let mut s = BitSet::new(10);
        let mut reference = std::collections::BTreeSet::new();
        let mut x: u64 = 12345;
        for _ in 0..500 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = (x >> 33) as usize % 1000;
            if x & 1 == 0 {
                s.set(i);
                reference.insert(i);
            } else {
                s.unset(i);
                reference.remove(&i);
            }
        }
        let ones: Vec<usize> = s.iter_ones().collect();
        let expected: Vec<usize> = reference.iter().copied().collect();
        assert_eq!(ones, expected);
        assert_eq!(s.count_ones(), expected.len());
        for i in 0..1100 {
            assert_eq!(s.get(i), reference.contains(&i), "index {i}");
        }
    }

    #[test]
    fn union_grows_and_equality_ignores_length() {
        let mut a = BitSet::new(0);
        a.set(3);
        let mut b = BitSet::new(1000);
        b.set(700);
        b.set(64);
        a.union_with(&b);
        assert_eq!(a.iter_ones().collect::<Vec<_>>(), vec![3, 64, 700]);
        let mut c = BitSet::new(5000);
        for i in [3, 64, 700] {
            c.set(i);
        }
        assert_eq!(a, c);
        c.set(4999);
        assert_ne!(a, c);
        c.clear();
        assert!(c.is_empty());
        assert_eq!(c.iter_ones().next(), None);
        assert_eq!(BitSet::default().iter_ones().next(), None);
    }
}
