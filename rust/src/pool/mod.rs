//! The fixed-block memory pool.
//!
//! A pool reserves its memory up front in one chunk and cuts it into blocks of one size. Blocks are
//! never split or merged, so there is no external fragmentation by construction: a service that
//! takes and returns blocks for hours keeps the footprint it had after warm-up. With `grow`, an
//! exhausted pool adds another whole chunk of the same number of blocks (up to `max_blocks`).
//!
//! Acquire and release are O(1) and lock-free (see `freelist`); a mutex and condition variable are
//! touched only when a caller has to wait for a block or a chunk is added.
//!
//! Block ids are `chunk << shift | index`, with `1 << shift` the next power of two at or above the
//! blocks per chunk, so finding a block's chunk is a shift, not a division.

mod block;
mod freelist;
mod memory;
mod stats;

pub use block::Block;
pub use memory::{ChunkAllocator, ChunkMemory, HostAllocator, MemoryKind};
pub use stats::PoolStats;

use crate::error::PoolError;
use freelist::FreeList;
use stats::Counters;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Instant;

/// Most chunks a growing pool may add (and the size of its lock-free chunk table).
pub const MAX_CHUNKS: usize = 1024;
/// Most blocks in one chunk; keeps ids within 32 bits together with `MAX_CHUNKS`.
pub const MAX_BLOCKS_PER_CHUNK: usize = 1 << 22;
/// Largest accepted alignment (2 MiB, a huge page).
pub const MAX_ALIGNMENT: usize = 1 << 21;

/// How to build a pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Usable bytes per block.
    pub block_size: usize,
    /// Blocks in the first chunk, and in each chunk added by `grow`.
    pub num_blocks: usize,
    /// Every block starts on a multiple of this (a power of two).
    pub alignment: usize,
    /// Add a chunk instead of failing when all blocks are in use.
    pub grow: bool,
    /// With `grow`, the most blocks the pool may reach (`None`: up to `MAX_CHUNKS` chunks).
    pub max_blocks: Option<usize>,
    pub kind: MemoryKind,
}

impl PoolConfig {
    #[must_use]
    pub fn host(block_size: usize, num_blocks: usize) -> Self {
        Self {
            block_size,
            num_blocks,
            alignment: 64,
            grow: false,
            max_blocks: None,
            kind: MemoryKind::Host,
        }
    }
}

/// A block that was taken from the free list: its id and address. Owned by exactly one holder,
/// which must give it back with `Pool::release_raw` exactly once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawBlock {
    pub id: u32,
    pub ptr: *mut u8,
}

// SAFETY: a RawBlock is an id and an address; whoever holds it owns the block exclusively, on
// whichever thread that is.
unsafe impl Send for RawBlock {}

struct Chunk {
    mem: ChunkMemory,
    /// Free-list links, one per block (see `freelist`).
    links: Box<[AtomicU32]>,
    /// Debug builds track which blocks are out, to catch a double hand-out or double release.
    #[cfg(debug_assertions)]
    out: Box<[std::sync::atomic::AtomicBool]>,
}

pub struct Pool {
    block_size: usize,
    /// Distance between block starts: `block_size` rounded up to the alignment.
    stride: usize,
    blocks_per_chunk: usize,
    shift: u32,
    max_chunks: usize,
    config: PoolConfig,
    chunks: Box<[OnceLock<Chunk>]>,
    num_chunks: AtomicUsize,
    free: FreeList,
    counters: Counters,
    allocator: Box<dyn ChunkAllocator>,
    grow_lock: Mutex<()>,
    waiters: AtomicUsize,
    wait_lock: Mutex<()>,
    wait_cond: Condvar,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pool({:?}, {})", self.config, self.stats())
    }
}

impl Pool {
    /// A host-memory pool.
    pub fn new(config: PoolConfig) -> Result<Arc<Self>, PoolError> {
        Self::with_allocator(config, Box::new(HostAllocator))
    }

    /// A pool whose chunks come from `allocator` (pinned or device memory, say).
    pub fn with_allocator(
        config: PoolConfig,
        allocator: Box<dyn ChunkAllocator>,
    ) -> Result<Arc<Self>, PoolError> {
        let bad = |m: String| Err(PoolError::InvalidConfig(m));
        let PoolConfig {
            block_size,
            num_blocks,
            alignment,
            ..
        } = config;
        if block_size == 0 {
            return bad("block_size must be at least 1 byte".into());
        }
        if num_blocks == 0 || num_blocks > MAX_BLOCKS_PER_CHUNK {
            return bad(format!(
                "num_blocks must be between 1 and {MAX_BLOCKS_PER_CHUNK}, got {num_blocks}"
            ));
        }
        if !alignment.is_power_of_two() || alignment > MAX_ALIGNMENT {
            return bad(format!(
                "alignment must be a power of two up to {MAX_ALIGNMENT}, got {alignment}"
            ));
        }
        let Some(stride) = block_size.checked_next_multiple_of(alignment) else {
            return bad(format!("block_size {block_size} is too large"));
        };
        if stride
            .checked_mul(num_blocks)
            .is_none_or(|b| b > isize::MAX as usize)
        {
            return bad(format!(
                "{num_blocks} blocks of {block_size} bytes do not fit in the address space"
            ));
        }
        let shift = num_blocks.next_power_of_two().trailing_zeros();
        // Ids must stay below u32::MAX (the free list stores id + 1 in 32 bits).
        let id_limit = ((1usize << 32) - 1) >> shift;
        let mut max_chunks = MAX_CHUNKS.min(id_limit);
        if !config.grow {
            max_chunks = 1;
        } else if let Some(max) = config.max_blocks {
            if max < num_blocks {
                return bad(format!(
                    "max_blocks ({max}) is smaller than num_blocks ({num_blocks})"
                ));
            }
            max_chunks = max_chunks.min(max / num_blocks);
        }
        let pool = Arc::new(Self {
            block_size,
            stride,
            blocks_per_chunk: num_blocks,
            shift,
            max_chunks,
            config,
            chunks: (0..max_chunks).map(|_| OnceLock::new()).collect(),
            num_chunks: AtomicUsize::new(0),
            free: FreeList::new(),
            counters: Counters::default(),
            allocator,
            grow_lock: Mutex::new(()),
            waiters: AtomicUsize::new(0),
            wait_lock: Mutex::new(()),
            wait_cond: Condvar::new(),
        });
        {
            let _guard = pool
                .grow_lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pool.add_chunk()?;
        }
        Ok(pool)
    }

    #[must_use]
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    #[must_use]
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    #[must_use]
    pub fn kind(&self) -> MemoryKind {
        self.config.kind
    }

    /// Blocks reserved so far.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.num_chunks.load(Ordering::Acquire) * self.blocks_per_chunk
    }

    /// Bytes reserved so far (all chunks).
    #[must_use]
    pub fn reserved_bytes(&self) -> usize {
        self.num_chunks.load(Ordering::Acquire) * self.stride * self.blocks_per_chunk
    }

    #[must_use]
    pub fn stats(&self) -> PoolStats {
        self.counters.snapshot(self.block_size, self.capacity())
    }

    /// A block if one is free right now (growing the pool if allowed), else `None`.
    pub fn try_acquire(self: &Arc<Self>) -> Result<Option<Block>, PoolError> {
        Ok(self
            .try_acquire_raw()?
            .map(|raw| Block::from_raw(Arc::clone(self), raw)))
    }

    /// A block, waiting up to `timeout` (`None`: for as long as it takes) for one to be released.
    pub fn acquire(
        self: &Arc<Self>,
        timeout: Option<std::time::Duration>,
    ) -> Result<Block, PoolError> {
        if let Some(raw) = self.try_acquire_raw_quiet()? {
            return Ok(Block::from_raw(Arc::clone(self), raw));
        }
        self.note_wait();
        let start = Instant::now();
        let deadline = timeout.map(|t| start + t);
        loop {
            // Wait in slices so that a `None` timeout needs no special deadline.
            let slice_end = Instant::now() + std::time::Duration::from_millis(100);
            let until = deadline.map_or(slice_end, |d| d.min(slice_end));
            if let Some(raw) = self.wait_until(until) {
                return Ok(Block::from_raw(Arc::clone(self), raw));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(self.exhausted_error(Some(start.elapsed())));
            }
        }
    }

    /// Pops a free block or grows; counts a miss in `exhausted`.
    pub fn try_acquire_raw(&self) -> Result<Option<RawBlock>, PoolError> {
        let got = self.try_acquire_raw_quiet()?;
        if got.is_none() {
            self.counters.exhausted.fetch_add(1, Ordering::Relaxed);
        }
        Ok(got)
    }

    /// Pops a free block or grows, counting nothing on a miss (the caller will wait).
    pub fn try_acquire_raw_quiet(&self) -> Result<Option<RawBlock>, PoolError> {
        if let Some(raw) = self.pop() {
            return Ok(Some(raw));
        }
        if self.config.grow {
            return self.grow();
        }
        Ok(None)
    }

    /// Records that an acquire has to wait (once per acquire, before `wait_until`).
    pub fn note_wait(&self) {
        self.counters.waits.fetch_add(1, Ordering::Relaxed);
    }

    /// The error for an acquire that gave up; counts it in `exhausted`.
    pub fn exhausted_error(&self, waited: Option<std::time::Duration>) -> PoolError {
        self.counters.exhausted.fetch_add(1, Ordering::Relaxed);
        PoolError::Exhausted {
            stats: self.stats(),
            waited,
        }
    }

    /// Blocks the calling thread until a block is free or `deadline` passes. Callers that must
    /// stay interruptible (the Python bindings) call this in short slices.
    pub fn wait_until(&self, deadline: Instant) -> Option<RawBlock> {
        let mut guard = self
            .wait_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Registered before the pop below: a release that lands after that pop fails will see us.
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let got = loop {
            if let Some(raw) = self.pop() {
                break Some(raw);
            }
            let now = Instant::now();
            if now >= deadline {
                break None;
            }
            guard = self
                .wait_cond
                .wait_timeout(guard, deadline - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        };
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        got
    }

    /// Gives a block back.
    ///
    /// # Safety
    /// `id` must come from this pool's `try_acquire_raw*` / `wait_until`, and each acquired id
    /// must be released exactly once, after the last use of its memory.
    #[inline]
    pub unsafe fn release_raw(&self, id: u32) {
        #[cfg(debug_assertions)]
        {
            let was_out = self.chunk(id).out[self.index(id)].swap(false, Ordering::SeqCst);
            assert!(was_out, "block {id} released twice");
        }
        self.counters.on_release();
        self.free.push(id, |i| self.link(i));
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _guard = self
                .wait_lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            self.wait_cond.notify_one();
        }
    }

    /// Address of block `id`.
    #[must_use]
    pub fn block_ptr(&self, id: u32) -> *mut u8 {
        // SAFETY: index < blocks_per_chunk, so the offset stays inside the chunk's reservation.
        unsafe {
            self.chunk(id)
                .mem
                .as_ptr()
                .add(self.index(id) * self.stride)
        }
    }

    #[inline]
    fn pop(&self) -> Option<RawBlock> {
        let id = self.free.pop(|i| self.link(i))?;
        #[cfg(debug_assertions)]
        {
            let was_out = self.chunk(id).out[self.index(id)].swap(true, Ordering::SeqCst);
            assert!(!was_out, "block {id} handed out twice");
        }
        self.counters.on_acquire();
        Some(RawBlock {
            id,
            ptr: self.block_ptr(id),
        })
    }

    #[inline]
    fn index(&self, id: u32) -> usize {
        id as usize & ((1usize << self.shift) - 1)
    }

    #[inline]
    fn chunk(&self, id: u32) -> &Chunk {
        // Ids only come from chunks that were published before their ids entered the free list.
        self.chunks[id as usize >> self.shift]
            .get()
            .expect("block id of an unpublished chunk")
    }

    #[inline]
    fn link(&self, id: u32) -> &AtomicU32 {
        &self.chunk(id).links[self.index(id)]
    }

    /// Adds a chunk after re-checking the free list (another thread may have grown first).
    fn grow(&self) -> Result<Option<RawBlock>, PoolError> {
        let _guard = self
            .grow_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(raw) = self.pop() {
            return Ok(Some(raw));
        }
        if self.num_chunks.load(Ordering::Acquire) >= self.max_chunks {
            return Ok(None);
        }
        self.add_chunk()?;
        self.counters.grows.fetch_add(1, Ordering::Relaxed);
        Ok(self.pop())
    }

    /// Reserves, publishes and frees one chunk. Caller holds `grow_lock`.
    fn add_chunk(&self) -> Result<(), PoolError> {
        let n = self.num_chunks.load(Ordering::Acquire);
        let bytes = self.stride * self.blocks_per_chunk;
        let mem = self.allocator.allocate(bytes, self.config.alignment)?;
        if mem.len() < bytes || mem.as_ptr() as usize % self.config.alignment != 0 {
            return Err(PoolError::Alloc {
                bytes,
                kind: self.config.kind.name(),
                reason: format!(
                    "the allocator returned {} bytes at {:p}, not {bytes} bytes aligned to {}",
                    mem.len(),
                    mem.as_ptr(),
                    self.config.alignment
                ),
            });
        }
        let chunk = Chunk {
            mem,
            links: (0..self.blocks_per_chunk)
                .map(|_| AtomicU32::new(0))
                .collect(),
            #[cfg(debug_assertions)]
            out: (0..self.blocks_per_chunk)
                .map(|_| std::sync::atomic::AtomicBool::new(false))
                .collect(),
        };
        assert!(
            self.chunks[n].set(chunk).is_ok(),
            "chunk slot {n} filled twice"
        );
        self.num_chunks.store(n + 1, Ordering::Release);
        let first = (n << self.shift) as u32;
        self.free
            .push_range(first, first + self.blocks_per_chunk as u32 - 1, |i| {
                self.link(i)
            });
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _guard = self
                .wait_lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            self.wait_cond.notify_all();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
