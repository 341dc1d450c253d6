//! A fast, non-cryptographic hasher for the parser's id maps (keys are message ids and
//! positions from one input; no attacker gains anything by colliding them beyond slowing their
//! own parse, and the default SipHash was a visible share of the profile).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash (rustc's hasher): one multiply-rotate per word, plus a finaliser.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    /// FxHash's low bits depend only on the low input bits (ids that differ in a late byte
    /// would share buckets), so the state goes through splitmix64's finaliser.
    #[inline]
    fn finish(&self) -> u64 {
        let mut z = self.hash;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A `HashMap` with [`FxHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A `HashSet` with [`FxHasher`].
pub(crate) type FastSet<T> = HashSet<T, BuildHasherDefault<FxHasher>>;

/// A set of message positions that stays inline (no allocation, no hashing) while it holds
/// a few members, as nearly every set of candidates or visited steps does, and becomes a
/// [`FastSet`] once it grows.
#[derive(Default)]
pub(crate) struct SmallSet {
    inline: [u32; SmallSet::INLINE],
    len: usize,
    large: Option<FastSet<u32>>,
}

impl SmallSet {
    const INLINE: usize = 8;

    /// Is `v` in the set?
    pub(crate) fn contains(&self, v: u32) -> bool {
        match &self.large {
            Some(set) => set.contains(&v),
            None => self.inline[..self.len].contains(&v),
        }
    }

    /// Add `v`; `false` if it was already there.
    pub(crate) fn insert(&mut self, v: u32) -> bool {
        if let Some(set) = &mut self.large {
            return set.insert(v);
        }
        if self.inline[..self.len].contains(&v) {
            return false;
        }
        if self.len == Self::INLINE {
            let mut set: FastSet<u32> = FastSet::with_capacity_and_hasher(2 * Self::INLINE, Default::default());
            set.extend(self.inline.iter().copied());
            set.insert(v);
            self.large = Some(set);
            return true;
        }
        self.inline[self.len] = v;
        self.len += 1;
        true
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        match &self.large {
            Some(set) => set.len(),
            None => self.len,
        }
    }
}

impl FromIterator<u32> for SmallSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> SmallSet {
        let mut set = SmallSet::default();
        for v in iter {
            set.insert(v);
        }
        set
    }
}
