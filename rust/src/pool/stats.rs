//! Counters of a pool and their snapshot.
use crossbeam_utils::CachePadded;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// A snapshot of a pool's counters. Taken while other threads work, the fields are each exact but
/// not necessarily from the same instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStats {
    pub block_size: usize,
    /// Blocks reserved (grows with `grow`).
    pub capacity: usize,
    pub in_use: usize,
    /// The most blocks ever in use at once.
    pub high_water: usize,
    pub acquires: u64,
    pub releases: u64,
    /// Acquires that found the pool empty and had to wait.
    pub waits: u64,
    /// Requests that got no block: `try_acquire` returning nothing, `acquire` timing out.
    pub exhausted: u64,
    /// Chunks added by `grow`.
    pub grows: u64,
}

impl fmt::Display for PoolStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "block_size={} capacity={} in_use={} high_water={} acquires={} releases={} waits={} exhausted={} grows={}",
            self.block_size,
            self.capacity,
            self.in_use,
            self.high_water,
            self.acquires,
            self.releases,
            self.waits,
            self.exhausted,
            self.grows
        )
    }
}

/// The live counters. The hot ones (touched by every acquire/release) share one cache line,
/// away from the free-list head; the rare ones sit on another.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) hot: CachePadded<Hot>,
    pub(crate) waits: AtomicU64,
    pub(crate) exhausted: AtomicU64,
    pub(crate) grows: AtomicU64,
}

#[derive(Default)]
pub(crate) struct Hot {
    pub(crate) acquires: AtomicU64,
    pub(crate) in_use: AtomicUsize,
    pub(crate) high_water: AtomicUsize,
}

impl Counters {
    /// Counts one acquire. Releases are derived (`acquires - in_use`), which saves an atomic
    /// read-modify-write on every release.
    #[inline]
    pub(crate) fn on_acquire(&self) {
        self.hot.acquires.fetch_add(1, Relaxed);
        let now = self.hot.in_use.fetch_add(1, Relaxed) + 1;
        if now > self.hot.high_water.load(Relaxed) {
            self.hot.high_water.fetch_max(now, Relaxed);
        }
    }

    #[inline]
    pub(crate) fn on_release(&self) {
        self.hot.in_use.fetch_sub(1, Relaxed);
    }

    pub(crate) fn snapshot(&self, block_size: usize, capacity: usize) -> PoolStats {
        // Under concurrent traffic the derived `releases` may be off by the operations in flight;
        // at rest every field is exact.
        let in_use = self.hot.in_use.load(Relaxed);
        let acquires = self.hot.acquires.load(Relaxed);
        PoolStats {
            block_size,
            capacity,
            in_use,
            high_water: self.hot.high_water.load(Relaxed),
            acquires,
            releases: acquires.saturating_sub(in_use as u64),
            waits: self.waits.load(Relaxed),
            exhausted: self.exhausted.load(Relaxed),
            grows: self.grows.load(Relaxed),
        }
    }
}
