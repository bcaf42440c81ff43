//! A hash map from byte strings to values, laid out for the model's hot lookup ("is this piece a
//! vocabulary token?", once per piece). Profiling showed that lookup's cost is memory latency:
//! with `HashMap<Box<[u8]>, V>` a hit reads the control bytes, the entry and the key's own heap
//! allocation, three dependent cache misses. Here a lookup is one probe into a flat,
//! open-addressed array whose entries hold the first 16 key bytes inline (nearly every token and
//! piece is shorter), so a hit usually touches one cache line; longer keys keep their tail in one
//! contiguous arena. Loads stay at or below one half, so probes are short.
use std::hash::Hasher;

/// `Entry::len` of an empty slot.
const EMPTY: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Entry<V> {
    /// Key bytes 0..8 and 8..16, little-endian, zero-padded.
    k0: u64,
    k1: u64,
    len: u32,
    /// Offset of bytes 16.. in the arena (keys longer than 16 bytes).
    tail: u32,
    value: V,
}

#[derive(Debug, Clone)]
pub struct BytesMap<V> {
    slots: Vec<Entry<V>>,
    arena: Vec<u8>,
    len: usize,
    /// A Bloom filter of the keys: 8 bits per slot, two of them set per key, from the hash's
    /// high bits (the slot comes from its low ones). Most of a first pass's lookups are of keys
    /// that are absent (a many-token piece is no vocabulary token), and each was a miss to
    /// memory in the slots (the cl100k vocabulary's are 8 MiB); the filter (256 KiB) mostly
    /// stays in cache and turns away 97-99% of them (the slots are a third to two thirds full).
    /// A fresh tokenizer's first pass: 60-62 -> 66-68 MB/s (`encode_file`, `FRESH=1`).
    filter: Vec<u64>,
}

impl<V: Copy + Default> Default for BytesMap<V> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            arena: Vec::new(),
            len: 0,
            filter: Vec::new(),
        }
    }
}

/// Filter bits per slot.
const FILTER_BITS_PER_SLOT: usize = 8;

/// The two filter bits of hash `h` in a filter of `bits` bits (a power of two of at least 128).
#[inline]
fn filter_bits(h: u64, bits: usize) -> (usize, usize) {
    let shift = 64 - bits.trailing_zeros();
    (
        (h >> shift) as usize,
        (h >> (shift - 20)) as usize & (bits - 1),
    )
}

/// Up to 8 bytes as a zero-padded little-endian u64, with no call to memcpy (a variable-length
/// copy into a buffer compiles to one, which showed in profiles).
#[inline]
fn load(b: &[u8]) -> u64 {
    let n = b.len();
    if n >= 8 {
        u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
    } else if n >= 4 {
        // Two overlapping 4-byte reads; the shared bytes agree, so OR joins them.
        let lo = u64::from(u32::from_le_bytes(b[..4].try_into().expect("4 bytes")));
        let hi = u64::from(u32::from_le_bytes(b[n - 4..].try_into().expect("4 bytes")));
        lo | (hi << (8 * (n - 4)))
    } else if n > 0 {
        u64::from(b[0])
            | (u64::from(b[n / 2]) << (8 * (n / 2)))
            | (u64::from(b[n - 1]) << (8 * (n - 1)))
    } else {
        0
    }
}

/// Asks the CPU to start loading `r`'s cache line (a hint: lookups in large tables are
/// memory-bound, and prefetching the entries of several keys overlaps their misses).
#[inline]
pub(crate) fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint that never faults; the address is a valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(r).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// A key's first 16 bytes as two zero-padded little-endian words.
#[inline]
pub(crate) fn split(key: &[u8]) -> (u64, u64) {
    if key.len() <= 8 {
        (load(key), 0)
    } else {
        (load(&key[..8]), load(&key[8..key.len().min(16)]))
    }
}

/// `split(&text[s..e])` (`s < e`), without branching on the length when 16 bytes can be read
/// at `s`: two whole-word loads, masked. Piece lengths vary from one piece to the next, and
/// `load`'s length branches mispredicted about once a piece.
/// Always inlined (once a piece; its cold end-of-text case out of line).
#[allow(clippy::inline_always)]
#[inline(always)]
pub(crate) fn split_at(text: &[u8], s: usize, e: usize) -> (u64, u64) {
    debug_assert!(s < e && e <= text.len());
    if s + 16 > text.len() {
        return split_near_end(&text[s..e]);
    }
    let n = (e - s).min(16);
    let w0 = u64::from_le_bytes(text[s..s + 8].try_into().expect("8 bytes"));
    let w1 = u64::from_le_bytes(text[s + 8..s + 16].try_into().expect("8 bytes"));
    // The masks from a table: a variable shift by up to 64 bits took a compare and two
    // conditional moves per word.
    let [m0, m1] = KEEP[n];
    (w0 & m0, w1 & m1)
}

#[cold]
#[inline(never)]
fn split_near_end(key: &[u8]) -> (u64, u64) {
    split(key)
}

/// `KEEP[n]`: the masks that keep the first `n` of 16 bytes, as two little-endian words.
const KEEP: [[u64; 2]; 17] = {
    let mut t = [[0u64; 2]; 17];
    let mut n = 1;
    while n <= 16 {
        let bits = 8 * n as u32;
        t[n] = if bits <= 64 {
            [u64::MAX >> (64 - bits), 0]
        } else {
            [u64::MAX, u64::MAX >> (128 - bits)]
        };
        n += 1;
    }
    t
};

/// A 64x64->128 multiply folded to 64 bits: a fast, well-mixing hash step.
#[inline]
pub(crate) fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// The hash of a key from its first 16 bytes (`k0`, `k1`), its length and its bytes past 16.
#[inline]
fn hash(k0: u64, k1: u64, len: usize, tail: &[u8]) -> u64 {
    let mut extra = len as u64;
    if !tail.is_empty() {
        let mut h = rustc_hash::FxHasher::default();
        h.write(tail);
        extra ^= h.finish();
    }
    fold(
        k0 ^ 0x243f_6a88_85a3_08d3,
        k1 ^ extra ^ 0x1319_8a2e_0370_7344,
    )
}

#[inline]
fn tail(key: &[u8]) -> &[u8] {
    key.get(16..).unwrap_or(&[])
}

impl<V: Copy + Default> BytesMap<V> {
    #[inline]
    fn matches(&self, e: &Entry<V>, key: &[u8], k0: u64, k1: u64) -> bool {
        e.k0 == k0
            && e.k1 == k1
            && e.len as usize == key.len()
            && (key.len() <= 16
                || self.arena[e.tail as usize..e.tail as usize + key.len() - 16] == key[16..])
    }

    #[inline]
    fn filter_has(&self, h: u64) -> bool {
        let (a, b) = filter_bits(h, self.filter.len() * 64);
        (self.filter[a / 64] >> (a % 64)) & (self.filter[b / 64] >> (b % 64)) & 1 != 0
    }

    #[inline]
    fn filter_add(&mut self, h: u64) {
        let (a, b) = filter_bits(h, self.filter.len() * 64);
        self.filter[a / 64] |= 1 << (a % 64);
        self.filter[b / 64] |= 1 << (b % 64);
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        if self.len == 0 {
            return None;
        }
        let (k0, k1) = split(key);
        let h = hash(k0, k1, key.len(), tail(key));
        if !self.filter_has(h) {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            let e = &self.slots[i];
            if e.len == EMPTY {
                return None;
            }
            if self.matches(e, key, k0, k1) {
                return Some(&e.value);
            }
            i = (i + 1) & mask;
        }
    }

    /// Asks the CPU to start loading the slot where `key`'s lookup begins (`get` of a key not in
    /// the cache's few lines ahead of it: one miss to memory otherwise, most of its time).
    #[inline]
    pub fn prefetch_key(&self, key: &[u8]) {
        if self.len == 0 {
            return;
        }
        let (k0, k1) = split(key);
        let i = hash(k0, k1, key.len(), tail(key)) as usize & (self.slots.len() - 1);
        prefetch(&self.slots[i]);
    }

    /// An empty map with room for `n` keys before it grows.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        let mut m = Self::default();
        if n > 0 {
            let slots = (n * 3 / 2 + 1).next_power_of_two().max(16);
            m.slots = Self::empty_slots(slots);
            m.filter = vec![0; slots * FILTER_BITS_PER_SLOT / 64];
        }
        m
    }

    /// Inserts or replaces. Keys must be shorter than 4 GiB and the arena must stay below 4 GiB.
    pub fn insert(&mut self, key: &[u8], value: V) {
        if (self.len + 1) * 3 > self.slots.len() * 2 {
            self.grow();
        }
        let (k0, k1) = split(key);
        let mask = self.slots.len() - 1;
        let h = hash(k0, k1, key.len(), tail(key));
        let mut i = h as usize & mask;
        loop {
            if self.slots[i].len == EMPTY {
                break;
            }
            if self.matches(&self.slots[i], key, k0, k1) {
                self.slots[i].value = value;
                return;
            }
            i = (i + 1) & mask;
        }
        let tail = self.arena.len() as u32;
        if key.len() > 16 {
            self.arena.extend_from_slice(&key[16..]);
        }
        self.slots[i] = Entry {
            k0,
            k1,
            len: key.len() as u32,
            tail,
            value,
        };
        self.filter_add(h);
        self.len += 1;
    }

    fn empty_slots(n: usize) -> Vec<Entry<V>> {
        (0..n)
            .map(|_| Entry {
                k0: 0,
                k1: 0,
                len: EMPTY,
                tail: 0,
                value: V::default(),
            })
            .collect()
    }

    /// Doubles the table (16 slots at first) and re-places every entry.
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, Self::empty_slots(n));
        self.filter = vec![0; n * FILTER_BITS_PER_SLOT / 64];
        let mask = n - 1;
        for e in old.into_iter().filter(|e| e.len != EMPTY) {
            let len = e.len as usize;
            let rest = if len > 16 {
                &self.arena[e.tail as usize..e.tail as usize + len - 16]
            } else {
                &[]
            };
            let h = hash(e.k0, e.k1, len, rest);
            let mut i = h as usize & mask;
            while self.slots[i].len != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = e;
            self.filter_add(h);
        }
    }

    /// Bytes held: the table, the keys' tails and the filter.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Entry<V>>()
            + self.arena.capacity()
            + self.filter.capacity() * 8
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the map, keeping its table's size.
    pub fn clear(&mut self) {
        for e in &mut self.slots {
            e.len = EMPTY;
        }
        self.filter.fill(0);
        self.arena.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_at_is_split() {
        let text: Vec<u8> = (0..80u8).map(|i| i.wrapping_mul(37) | 1).collect();
        for s in 0..text.len() {
            for e in s + 1..=text.len() {
                assert_eq!(split_at(&text, s, e), split(&text[s..e]), "{s}..{e}");
            }
        }
    }

    #[test]
    fn short_and_long_keys() {
        let mut m = BytesMap::default();
        // Lengths 0..40 cross the 16 inline key bytes; duplicates check replacement.
        let keys: Vec<Vec<u8>> = (0..300)
            .map(|n| (0..n % 41).map(|i| (i * 31 + n % 50) as u8).collect())
            .collect();
        for (i, k) in keys.iter().enumerate() {
            m.insert(k, i);
        }
        for k in &keys {
            let last = keys.iter().rposition(|x| x == k).unwrap();
            assert_eq!(m.get(k), Some(&last), "{k:?}");
        }
        assert_eq!(m.get(b"not there at all"), None);
        let mut longer = keys[40].clone();
        longer.push(0);
        assert_eq!(m.get(&longer), None);
        assert!(!m.is_empty() && m.len() <= keys.len());
    }

    /// The filter keeps every key through growth and clearing, and turns most absent keys
    /// away before the slots.
    #[test]
    fn filter_holds_every_key_and_rejects_most_others() {
        let mut m = BytesMap::default();
        let key = |i: u32| format!("token {i}").into_bytes();
        for i in 0..50_000 {
            m.insert(&key(i), i);
        }
        assert!((0..50_000).all(|i| m.get(&key(i)) == Some(&i)));
        let passed = (50_000..150_000)
            .filter(|&i| {
                let k = key(i);
                let (k0, k1) = split(&k);
                m.filter_has(hash(k0, k1, k.len(), tail(&k)))
            })
            .count();
        assert!(
            passed < 5_000,
            "{passed} of 100000 absent keys passed the filter"
        );
        assert!((50_000..150_000).all(|i| m.get(&key(i)).is_none()));
        m.clear();
        assert!((0..50_000).all(|i| m.get(&key(i)).is_none()));
        m.insert(&key(7), 7);
        assert_eq!(m.get(&key(7)), Some(&7));
    }

    /// A map made for `n` keys takes them without growing, and answers as one that grew.
    #[test]
    fn with_capacity_holds_its_keys_without_growing() {
        let key = |i: u32| format!("k{i}").repeat(1 + i as usize % 5).into_bytes();
        let mut sized = BytesMap::with_capacity(1000);
        let mut grown = BytesMap::default();
        let slots = sized.slots.len();
        for i in 0..1000 {
            sized.insert(&key(i), i);
            grown.insert(&key(i), i);
        }
        assert_eq!(sized.slots.len(), slots);
        for i in 0..2000 {
            assert_eq!(sized.get(&key(i)), grown.get(&key(i)), "{i}");
        }
        assert!(BytesMap::<u32>::with_capacity(0).get(b"x").is_none());
    }
}
