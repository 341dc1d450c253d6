//! A small seeded generator for the clients' choices (xorshift64*): reproducible mixes without
//! a dependency, and no need for cryptographic quality.

/// A seeded pseudo-random sequence.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A sequence for `seed` and `stream` (each client its own).
    pub fn new(seed: u64, stream: u64) -> Self {
        // splitmix64 of the pair, so neighbouring seeds give unrelated sequences; never 0.
        let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Self((z ^ (z >> 31)) | 1)
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_spread() {
        let (mut a, mut b) = (Rng::new(7, 1), Rng::new(7, 1));
        let xs: Vec<u64> = (0..100).map(|_| a.below(10)).collect();
        let ys: Vec<u64> = (0..100).map(|_| b.below(10)).collect();
        assert_eq!(xs, ys);
        assert!((0..10).all(|v| xs.contains(&v)));
        assert_ne!(Rng::new(7, 2).next_u64(), Rng::new(7, 1).next_u64());
    }
}
