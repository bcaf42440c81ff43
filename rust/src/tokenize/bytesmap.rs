//! A hash map from byte strings to values, laid out for the model's hot lookup ("is this piece a
//! vocabulary token?", one per piece). With `HashMap<Box<[u8]>, V>` every hit dereferences the
//! key's own heap allocation to compare it, a cache miss that profiling showed as ~10% of an
//! encode. Here the first 8 bytes of each key sit in the table entry itself, so keys of up to 8
//! bytes (most tokens) are compared without leaving the table; longer keys keep their tail in one
//! contiguous arena.
use hashbrown::HashTable;
use std::hash::Hasher;

#[derive(Debug, Clone)]
struct Entry<V> {
    head: u64,
    len: u32,
    /// Offset of bytes 8.. in the arena (keys longer than 8 bytes).
    tail: u32,
    value: V,
}

#[derive(Debug, Clone)]
pub struct BytesMap<V> {
    table: HashTable<Entry<V>>,
    arena: Vec<u8>,
}

impl<V> Default for BytesMap<V> {
    fn default() -> Self {
        Self {
            table: HashTable::new(),
            arena: Vec::new(),
        }
    }
}

#[inline]
fn head(key: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    let n = key.len().min(8);
    buf[..n].copy_from_slice(&key[..n]);
    u64::from_le_bytes(buf)
}

#[inline]
fn hash(key: &[u8]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(key);
    h.write_usize(key.len());
    h.finish()
}

impl<V> BytesMap<V> {
    #[inline]
    fn matches(&self, e: &Entry<V>, key: &[u8], h8: u64) -> bool {
        e.len as usize == key.len()
            && e.head == h8
            && (key.len() <= 8
                || self.arena[e.tail as usize..e.tail as usize + key.len() - 8] == key[8..])
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        let h8 = head(key);
        self.table
            .find(hash(key), |e| self.matches(e, key, h8))
            .map(|e| &e.value)
    }

    /// Inserts or replaces. Keys must be shorter than 4 GiB and the arena must stay below 4 GiB.
    pub fn insert(&mut self, key: &[u8], value: V) {
        let h8 = head(key);
        let h = hash(key);
        let arena = &self.arena;
        let found = self.table.find_mut(h, |e| {
            e.len as usize == key.len()
                && e.head == h8
                && (key.len() <= 8
                    || arena[e.tail as usize..e.tail as usize + key.len() - 8] == key[8..])
        });
        if let Some(e) = found {
            e.value = value;
            return;
        }
        let tail = self.arena.len() as u32;
        if key.len() > 8 {
            self.arena.extend_from_slice(&key[8..]);
        }
        let entry = Entry {
            head: h8,
            len: key.len() as u32,
            tail,
            value,
        };
        let arena = &self.arena;
        self.table.insert_unique(h, entry, |e| {
            let mut k = e.head.to_le_bytes()[..(e.len as usize).min(8)].to_vec();
            if e.len > 8 {
                k.extend_from_slice(&arena[e.tail as usize..e.tail as usize + e.len as usize - 8]);
            }
            hash(&k)
        });
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.table.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    pub fn clear(&mut self) {
        self.table.clear();
        self.arena.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_keys() {
        let mut m = BytesMap::default();
        // Lengths 0..23 cross the 8-byte inline head; duplicates check replacement.
        let keys: Vec<Vec<u8>> = (0..300)
            .map(|n| (0..n % 23).map(|i| (i * 31 + n % 50) as u8).collect())
            .collect();
        for (i, k) in keys.iter().enumerate() {
            m.insert(k, i);
        }
        for k in &keys {
            let last = keys.iter().rposition(|x| x == k).unwrap();
            assert_eq!(m.get(k), Some(&last), "{k:?}");
        }
        assert_eq!(m.get(b"not there at all"), None);
        let mut longer = keys[22].clone();
        longer.push(0);
        assert_eq!(m.get(&longer), None);
        assert!(!m.is_empty() && m.len() <= keys.len());
    }
}
