//! The workload's only source of variety: SplitMix64 seeded by the caller, plus the few draws
//! the stories need. No clock, no OS randomness — the same seed gives the same log.

/// A small, fast, seeded generator (SplitMix64).
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    state: u64,
}

const WORDS: [&str; 48] = [
    "agent",
    "plan",
    "search",
    "result",
    "draft",
    "review",
    "summary",
    "report",
    "customer",
    "invoice",
    "deploy",
    "metrics",
    "latency",
    "budget",
    "schedule",
    "release",
    "notes",
    "meeting",
    "follow",
    "up",
    "ticket",
    "issue",
    "analysis",
    "trend",
    "weekly",
    "daily",
    "compare",
    "options",
    "recommend",
    "risk",
    "owner",
    "deadline",
    "table",
    "chart",
    "query",
    "source",
    "cite",
    "verify",
    "translate",
    "email",
    "reply",
    "outline",
    "section",
    "figure",
    "test",
    "fix",
    "refactor",
    "explain",
];

impl Rng {
    /// A generator for `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Self { state: seed ^ 0x5851_f42d_4c95_7f2d }
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high` (`low` when the range is empty).
    pub(crate) fn range(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            return low;
        }
        low + self.next_u64() % (high - low + 1)
    }

    /// Uniform index below `n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next_u64() % n as u64) as usize }
    }

    /// True with probability `percent` / 100.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// One of `items` (None when empty).
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() { None } else { items.get(self.below(items.len())) }
    }

    /// An index drawn with the given weights.
    pub(crate) fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut roll = self.range(1, total.max(1));
        for (i, w) in weights.iter().enumerate() {
            if roll <= *w {
                return i;
            }
            roll -= w;
        }
        weights.len().saturating_sub(1)
    }

    /// A sentence of `min..=max` words.
    pub(crate) fn words(&mut self, min: u64, max: u64) -> String {
        let n = self.range(min, max);
        let mut s = String::with_capacity(n as usize * 8);
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(WORDS[self.below(WORDS.len())]);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn the_same_seed_gives_the_same_draws() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            assert!((3..=5).contains(&r.range(3, 5)));
        }
        assert_eq!(r.weighted(&[0, 5, 0]), 1);
    }
}
