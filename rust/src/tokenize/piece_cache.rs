//! Small set-associative caches of tokenized pieces, in front of the vocabulary and the full
//! per-thread cache of the byte-level BPE. Profiling showed the model stage stalled on memory:
//! the vocabulary's table (100k+ entries) and the full cache do not fit in a core's L2, and a hit
//! there reads the table, then the key's tail and the tokens elsewhere. Here a slot is one
//! aligned record holding the key and the tokens, so a hit reads one cache line; text is
//! Zipfian, so most pieces hit.
//!
//! - [`HotCache`]: pieces of up to 16 bytes and up to 3 tokens, 32-byte slots (most pieces).
//! - [`WideCache`]: pieces of up to 32 bytes and up to 6 tokens, 64-byte slots (longer words,
//!   CJK and Arabic runs: 5% of a multilingual corpus's pieces, but a quarter of its bytes, and
//!   each cost ~140 ns through the vocabulary and the full cache).
use super::bytesmap;

/// Appends the first `n` (at most `N`) of `src` to `ids`: a fixed-size copy and a length bump,
/// instead of `extend_from_slice`'s variable-length memcpy call (which showed in profiles).
#[inline]
fn push_ids<const N: usize>(ids: &mut Vec<u32>, src: &[u32; N], n: usize) {
    debug_assert!(n <= N);
    ids.reserve(N);
    // SAFETY: `reserve` made room for N more; the first `n <= N` written ones become the length.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), ids.as_mut_ptr().add(ids.len()), N);
        ids.set_len(ids.len() + n);
    }
}

/// Sets of the hot cache: 65536 sets of two 32-byte slots, 4 MiB.
const HOT_SETS: usize = 1 << 16;
/// Most tokens a hot slot holds.
pub(crate) const HOT_TOKENS: usize = 3;

/// A small two-way set-associative cache of pieces (up to 16 bytes, up to three tokens), in
/// front of the vocabulary and the full cache. Profiling showed the model stage stalled on
/// memory: the vocabulary's table (100k+ entries) and the cache do not fit in a core's L2, and a
/// multi-token hit read the table, then its tokens elsewhere. A hot slot is one 32-byte,
/// aligned record holding the key and the tokens, so a hit reads one cache line; text is
/// Zipfian, so most pieces hit.
pub(crate) struct HotCache {
    sets: Box<[[HotSlot; 2]]>,
}

#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct HotSlot {
    k0: u64,
    k1: u64,
    /// Piece length (bits 0-4; 0: empty slot), token count (bits 5-6), and each token's byte
    /// length minus one (4 bits each from bit 7).
    meta: u32,
    ids: [u32; HOT_TOKENS],
}

const EMPTY_HOT: HotSlot = HotSlot {
    k0: 0,
    k1: 0,
    meta: 0,
    ids: [0; HOT_TOKENS],
};

impl Default for HotCache {
    fn default() -> Self {
        Self {
            sets: vec![[EMPTY_HOT; 2]; HOT_SETS].into_boxed_slice(),
        }
    }
}

impl HotCache {
    #[inline]
    pub(crate) fn set(k0: u64, k1: u64) -> usize {
        (bytesmap::fold(k0 ^ 0x9e37_79b9_7f4a_7c15, k1 ^ 0x2545_f491_4f6c_dd1d) as usize)
            & (HOT_SETS - 1)
    }

    /// Asks the CPU to start loading the set of this key (see `Bpe::prefetch`).
    #[inline]
    pub(crate) fn prefetch(&self, k0: u64, k1: u64) {
        bytesmap::prefetch(&self.sets[Self::set(k0, k1)]);
    }

    /// Pushes the cached tokens of `piece` (1..=16 bytes) and returns true, if cached.
    #[inline]
    pub(crate) fn get(&self, len: usize, k0: u64, k1: u64, out: &mut Vec<(u32, u32)>) -> bool {
        for s in &self.sets[Self::set(k0, k1)] {
            if s.k0 == k0 && s.k1 == k1 && (s.meta & 31) as usize == len {
                let n = ((s.meta >> 5) & 3) as usize;
                for (i, &id) in s.ids[..n].iter().enumerate() {
                    out.push((id, ((s.meta >> (7 + 4 * i)) & 15) + 1));
                }
                return true;
            }
        }
        false
    }

    /// Pushes the cached ids of `piece` (1..=16 bytes) and returns true, if cached.
    #[inline]
    pub(crate) fn get_ids(&self, len: usize, k0: u64, k1: u64, ids: &mut Vec<u32>) -> bool {
        for s in &self.sets[Self::set(k0, k1)] {
            if s.k0 == k0 && s.k1 == k1 && (s.meta & 31) as usize == len {
                let n = ((s.meta >> 5) & 3) as usize;
                push_ids(ids, &s.ids, n);
                return true;
            }
        }
        false
    }

    /// Caches the tokens of a piece of `len` (1..=16) bytes, if there are at most three.
    #[inline]
    pub(crate) fn put(&mut self, len: usize, k0: u64, k1: u64, tokens: &[(u32, u32)]) {
        if tokens.is_empty() || tokens.len() > HOT_TOKENS {
            return;
        }
        let mut slot = HotSlot {
            k0,
            k1,
            meta: len as u32 | ((tokens.len() as u32) << 5),
            ids: [0; HOT_TOKENS],
        };
        for (i, &(id, n)) in tokens.iter().enumerate() {
            slot.ids[i] = id;
            slot.meta |= (n - 1) << (7 + 4 * i);
        }
        // The newer entry takes way 0; the older moves to way 1 (evicting the oldest).
        let set = &mut self.sets[Self::set(k0, k1)];
        set[1] = set[0];
        set[0] = slot;
    }

    pub(crate) fn clear(&mut self) {
        self.sets.fill([EMPTY_HOT; 2]);
    }
}

/// Sets of the wide cache: 16384 sets of two 64-byte slots, 2 MiB.
const WIDE_SETS: usize = 1 << 14;
/// Most tokens a wide slot holds.
pub(crate) const WIDE_TOKENS: usize = 6;
/// Longest piece a wide slot holds.
pub(crate) const WIDE_LEN: usize = 32;

/// Two-way set-associative cache of pieces of up to 32 bytes and up to 6 tokens.
pub(crate) struct WideCache {
    sets: Box<[[WideSlot; 2]]>,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct WideSlot {
    /// Key bytes, 8 per word, little-endian, zero-padded.
    k: [u64; 4],
    /// Piece length (bits 0-5; 0: empty slot), token count (bits 6-8), and each token's byte
    /// length minus one (5 bits each from bit 9).
    meta: u64,
    ids: [u32; WIDE_TOKENS],
}

const EMPTY_WIDE: WideSlot = WideSlot {
    k: [0; 4],
    meta: 0,
    ids: [0; WIDE_TOKENS],
};

/// A piece of up to 32 bytes as four zero-padded little-endian words.
#[inline]
pub(crate) fn wide_key(piece: &[u8]) -> [u64; 4] {
    debug_assert!(piece.len() <= WIDE_LEN);
    let (k0, k1) = bytesmap::split(piece);
    if piece.len() <= 16 {
        return [k0, k1, 0, 0];
    }
    let (k2, k3) = bytesmap::split(&piece[16..]);
    [k0, k1, k2, k3]
}

impl Default for WideCache {
    fn default() -> Self {
        Self {
            sets: vec![[EMPTY_WIDE; 2]; WIDE_SETS].into_boxed_slice(),
        }
    }
}

impl WideCache {
    #[inline]
    pub(crate) fn set(len: usize, k: &[u64; 4]) -> usize {
        let h = bytesmap::fold(
            k[0] ^ k[2].rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15,
            k[1] ^ k[3].rotate_left(17) ^ ((len as u64) << 56) ^ 0x2545_f491_4f6c_dd1d,
        );
        h as usize & (WIDE_SETS - 1)
    }

    /// Asks the CPU to start loading the set of this key (see `Bpe::prefetch`).
    #[inline]
    pub(crate) fn prefetch(&self, len: usize, k: &[u64; 4]) {
        bytesmap::prefetch(&self.sets[Self::set(len, k)]);
    }

    #[inline]
    fn find(&self, len: usize, k: &[u64; 4]) -> Option<&WideSlot> {
        self.sets[Self::set(len, k)]
            .iter()
            .find(|s| s.k == *k && (s.meta & 63) as usize == len)
    }

    /// Pushes the cached tokens of a piece of `len` bytes with key `k` and returns true, if cached.
    #[inline]
    pub(crate) fn get(&self, len: usize, k: &[u64; 4], out: &mut Vec<(u32, u32)>) -> bool {
        let Some(s) = self.find(len, k) else {
            return false;
        };
        let n = ((s.meta >> 6) & 7) as usize;
        for (i, &id) in s.ids[..n].iter().enumerate() {
            out.push((id, ((s.meta >> (9 + 5 * i)) & 31) as u32 + 1));
        }
        true
    }

    /// Pushes the cached ids of a piece of `len` bytes with key `k` and returns true, if cached.
    #[inline]
    pub(crate) fn get_ids(&self, len: usize, k: &[u64; 4], ids: &mut Vec<u32>) -> bool {
        let Some(s) = self.find(len, k) else {
            return false;
        };
        push_ids(ids, &s.ids, ((s.meta >> 6) & 7) as usize);
        true
    }

    /// Caches the tokens of a piece of `len` (1..=32) bytes, if there are at most six.
    #[inline]
    pub(crate) fn put(&mut self, len: usize, k: &[u64; 4], tokens: &[(u32, u32)]) {
        if tokens.is_empty() || tokens.len() > WIDE_TOKENS || len > WIDE_LEN {
            return;
        }
        let mut slot = WideSlot {
            k: *k,
            meta: len as u64 | ((tokens.len() as u64) << 6),
            ids: [0; WIDE_TOKENS],
        };
        for (i, &(id, n)) in tokens.iter().enumerate() {
            slot.ids[i] = id;
            slot.meta |= u64::from(n - 1) << (9 + 5 * i);
        }
        let set = &mut self.sets[Self::set(len, k)];
        set[1] = set[0];
        set[0] = slot;
    }

    pub(crate) fn clear(&mut self) {
        self.sets.fill([EMPTY_WIDE; 2]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_cache_keeps_up_to_three_tokens_and_two_ways() {
        let mut hot = HotCache::default();
        let key = |p: &[u8]| bytesmap::split(p);
        let pieces: [&[u8]; 4] = [b"ab", b" hello", b"0123456789abcdef", b"xyz"];
        let tokens: [&[(u32, u32)]; 4] = [
            &[(7, 2)],
            &[(1, 1), (99_999, 5)],
            &[(5, 16)],
            &[(1, 1), (2, 1), (3, 1)],
        ];
        for (p, t) in pieces.iter().zip(tokens) {
            let (k0, k1) = key(p);
            hot.put(p.len(), k0, k1, t);
            let mut out = vec![];
            assert!(hot.get(p.len(), k0, k1, &mut out));
            assert_eq!(out, t);
        }
        // Four tokens do not fit: not cached.
        let (k0, k1) = key(b"four");
        hot.put(4, k0, k1, &[(1, 1); 4]);
        assert!(!hot.get(4, k0, k1, &mut vec![]));
        // Same first 16 bytes, other length: a miss (keys are zero-padded).
        let (k0, k1) = key(b"ab\0");
        assert!(!hot.get(3, k0, k1, &mut vec![]));
        // Three keys in one set: the oldest is evicted, the two newest stay.
        let mut same_set = Vec::new();
        let want = HotCache::set(key(b"k0").0, key(b"k0").1);
        for i in 0u32.. {
            let p = format!("k{i}").into_bytes();
            let (a, b) = key(&p);
            if HotCache::set(a, b) == want {
                same_set.push(p);
                if same_set.len() == 3 {
                    break;
                }
            }
        }
        for (i, p) in same_set.iter().enumerate() {
            let (a, b) = key(p);
            hot.put(p.len(), a, b, &[(i as u32, p.len() as u32)]);
        }
        let hits: Vec<bool> = same_set
            .iter()
            .map(|p| {
                let (a, b) = key(p);
                hot.get(p.len(), a, b, &mut vec![])
            })
            .collect();
        assert_eq!(hits, [false, true, true]);
    }

    #[test]
    fn wide_cache_keeps_up_to_six_tokens_of_up_to_32_bytes() {
        let mut wide = WideCache::default();
        let pieces: [&[u8]; 4] = [
            "日本語も少し".as_bytes(),
            b"0123456789abcdef0123456789abcdef",
            b"seventeen bytes!!",
            b"ab",
        ];
        let tokens: [&[(u32, u32)]; 4] = [
            &[(1, 3), (2, 3), (3, 6), (100_000, 6)],
            &[(5, 32)],
            &[(1, 1), (2, 1), (3, 5), (4, 5), (5, 4), (6, 1)],
            &[(7, 2)],
        ];
        for (p, t) in pieces.iter().zip(tokens) {
            let k = wide_key(p);
            wide.put(p.len(), &k, t);
            let mut out = vec![];
            assert!(wide.get(p.len(), &k, &mut out), "{p:?}");
            assert_eq!(out, t);
            let mut ids = vec![9];
            assert!(wide.get_ids(p.len(), &k, &mut ids));
            assert_eq!(ids[1..], t.iter().map(|x| x.0).collect::<Vec<_>>()[..]);
        }
        // Seven tokens do not fit, nor do 33 bytes.
        let k = wide_key(b"seven");
        wide.put(5, &k, &[(1, 1); 7]);
        assert!(!wide.get(5, &k, &mut vec![]));
        // Same words, other length: a miss (keys are zero-padded).
        let k = wide_key(b"ab\0");
        assert!(!wide.get(3, &k, &mut vec![]));
        // Keys differing only past byte 16 are told apart.
        let (a, b) = (
            b"0123456789abcdef0123456789abcdeX",
            b"0123456789abcdef0123456789abcdef",
        );
        assert!(!wide.get(32, &wide_key(a), &mut vec![]));
        assert!(wide.get(32, &wide_key(b), &mut vec![]));
    }

    #[test]
    fn push_ids_copies_only_the_count() {
        let mut ids = vec![1, 2];
        push_ids(&mut ids, &[7, 8, 9], 2);
        assert_eq!(ids, [1, 2, 7, 8]);
        push_ids(&mut ids, &[5, 6, 7], 0);
        assert_eq!(ids, [1, 2, 7, 8]);
    }
}
