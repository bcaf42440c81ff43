//! `Block`: a block owned by Rust code, given back to its pool when dropped.
use super::{Pool, RawBlock};
use std::sync::Arc;

/// One block of a pool, held by one owner. It keeps the pool (and so the memory) alive, and goes
/// back to the free list when dropped, so it cannot be released twice.
pub struct Block {
    pool: Arc<Pool>,
    raw: RawBlock,
}

// SAFETY: a Block is the only handle to its memory region while it lives; moving it to another
// thread moves that exclusive access with it.
unsafe impl Send for Block {}
// SAFETY: `&Block` only allows reads (`as_slice`); writes need `&mut Block`.
unsafe impl Sync for Block {}

impl Block {
    pub(crate) fn from_raw(pool: Arc<Pool>, raw: RawBlock) -> Self {
        Self { pool, raw }
    }

    #[must_use]
    pub fn id(&self) -> u32 {
        self.raw.id
    }

    #[must_use]
    pub fn as_ptr(&self) -> *mut u8 {
        self.raw.ptr
    }

    /// Usable bytes (the pool's `block_size`).
    #[must_use]
    pub fn len(&self) -> usize {
        self.pool.block_size()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        false
    }

    #[must_use]
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// The bytes, for host and pinned pools; `None` for device memory.
    #[must_use]
    pub fn as_slice(&self) -> Option<&[u8]> {
        // SAFETY: the block is ours alone and `len` bytes long; host-accessible by the check.
        self.pool
            .kind()
            .host_accessible()
            .then(|| unsafe { std::slice::from_raw_parts(self.raw.ptr, self.len()) })
    }

    /// The bytes, writable, for host and pinned pools; `None` for device memory.
    #[must_use]
    pub fn as_mut_slice(&mut self) -> Option<&mut [u8]> {
        let len = self.len();
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        self.pool
            .kind()
            .host_accessible()
            .then(|| unsafe { std::slice::from_raw_parts_mut(self.raw.ptr, len) })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: acquired from this pool by the constructor's caller; Drop runs once.
        unsafe { self.pool.release_raw(self.raw.id) }
    }
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Block(id={}, ptr={:p}, len={})",
            self.raw.id,
            self.raw.ptr,
            self.len()
        )
    }
}
