//! A lock-free LIFO free list of block ids (a Treiber stack).
//!
//! The links live beside the blocks, in an `AtomicU32` per block, never inside the block memory, so
//! the list works the same for host, pinned and device memory. The head packs a 32-bit tag with the
//! top id: every successful push or pop bumps the tag, which makes the compare-and-swap immune to
//! ABA (a thread that read a stale `next` fails its CAS because the tag moved on).
//!
//! Performance notes: LIFO order hands back the most recently used (cache-hot) block. A mutex-based
//! `Vec` stack was the alternative; it costs the same uncontended but blocks a thread that is
//! descheduled while holding the lock, and the pool must be usable from Rust worker threads
//! without the GIL serialising them.
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Link value meaning "no next block". Stored ids are `id + 1`, so id `u32::MAX` is never used.
const NIL: u32 = 0;

pub(crate) struct FreeList {
    /// High 32 bits: tag. Low 32 bits: top id + 1, or `NIL` when empty.
    head: CachePadded<AtomicU64>,
}

#[inline]
fn pack(tag: u32, link: u32) -> u64 {
    (u64::from(tag) << 32) | u64::from(link)
}

#[inline]
fn unpack(head: u64) -> (u32, u32) {
    ((head >> 32) as u32, head as u32)
}

impl FreeList {
    pub(crate) fn new() -> Self {
        Self {
            head: CachePadded::new(AtomicU64::new(pack(0, NIL))),
        }
    }

    /// Pops the most recently pushed id. `link(id)` returns the block's link cell.
    ///
    /// `SeqCst` on the head (plain loads and `lock cmpxchg` on x86, so no cost there) lets a
    /// releaser's later load of the waiter count see every waiter whose pop failed.
    #[inline]
    pub(crate) fn pop<'a>(&self, link: impl Fn(u32) -> &'a AtomicU32) -> Option<u32> {
        let mut head = self.head.load(Ordering::SeqCst);
        loop {
            let (tag, top) = unpack(head);
            if top == NIL {
                return None;
            }
            let id = top - 1;
            // May be stale if another thread popped `id` meanwhile; then the tag has moved and
            // the CAS below fails.
            let next = link(id).load(Ordering::Relaxed);
            match self.head.compare_exchange_weak(
                head,
                pack(tag.wrapping_add(1), next),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Some(id),
                Err(current) => head = current,
            }
        }
    }

    /// Pushes the ids `first..=last`, linked in order, with one CAS (a newly grown chunk).
    /// The caller owns all of them: none is in the list or handed out.
    pub(crate) fn push_range<'a>(
        &self,
        first: u32,
        last: u32,
        link: impl Fn(u32) -> &'a AtomicU32,
    ) {
        debug_assert!(first <= last && last < u32::MAX);
        for id in first..last {
            link(id).store(id + 2, Ordering::Relaxed);
        }
        let tail = link(last);
        let mut head = self.head.load(Ordering::SeqCst);
        loop {
            let (tag, top) = unpack(head);
            tail.store(top, Ordering::Relaxed);
            // The successful CAS publishes the link stores above (release semantics).
            match self.head.compare_exchange_weak(
                head,
                pack(tag.wrapping_add(1), first + 1),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    #[inline]
    pub(crate) fn push<'a>(&self, id: u32, link: impl Fn(u32) -> &'a AtomicU32) {
        self.push_range(id, id, link);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn links(n: usize) -> Vec<AtomicU32> {
        (0..n).map(|_| AtomicU32::new(NIL)).collect()
    }

    #[test]
    fn lifo_order_and_empty() {
        let l = links(4);
        let f = FreeList::new();
        assert_eq!(f.pop(|i| &l[i as usize]), None);
        f.push_range(0, 3, |i| &l[i as usize]);
        assert_eq!(f.pop(|i| &l[i as usize]), Some(0));
        f.push(0, |i| &l[i as usize]);
        let got: Vec<_> = std::iter::from_fn(|| f.pop(|i| &l[i as usize])).collect();
        assert_eq!(got, vec![0, 1, 2, 3]);
    }

    #[test]
    fn concurrent_pop_push_never_duplicates() {
        let n = 64;
        let l = links(n);
        let f = FreeList::new();
        f.push_range(0, n as u32 - 1, |i| &l[i as usize]);
        let owned: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        if let Some(id) = f.pop(|i| &l[i as usize]) {
                            assert_eq!(
                                owned[id as usize].swap(1, Ordering::SeqCst),
                                0,
                                "id {id} handed out twice"
                            );
                            owned[id as usize].store(0, Ordering::SeqCst);
                            f.push(id, |i| &l[i as usize]);
                        }
                    }
                });
            }
        });
        let all: HashSet<_> = std::iter::from_fn(|| f.pop(|i| &l[i as usize])).collect();
        assert_eq!(all.len(), n);
    }
}
