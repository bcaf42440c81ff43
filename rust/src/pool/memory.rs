//! The memory behind a pool: one reservation per chunk, either host memory allocated here or
//! memory that someone else allocated and owns (pinned and device memory come from CuPy).
use crate::error::PoolError;
use std::alloc::{self, Layout};
use std::any::Any;
use std::ptr::NonNull;

/// What a pool's blocks are made of. Host and pinned memory can be read and written from the
/// CPU; device memory only from a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    Host,
    Pinned,
    Device,
}

impl MemoryKind {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Pinned => "pinned",
            Self::Device => "cuda",
        }
    }

    /// Whether the CPU may dereference the memory.
    #[must_use]
    pub fn host_accessible(self) -> bool {
        !matches!(self, Self::Device)
    }
}

/// One contiguous, aligned reservation. Dropping it frees the memory (through its owner).
pub struct ChunkMemory {
    ptr: NonNull<u8>,
    len: usize,
    _owner: Box<dyn Any + Send + Sync>,
}

// SAFETY: the chunk is a plain reservation of bytes; the pool hands each block to one owner at a
// time, and the owner object is itself Send + Sync.
unsafe impl Send for ChunkMemory {}
// SAFETY: as above; `&ChunkMemory` only exposes the address and the length.
unsafe impl Sync for ChunkMemory {}

impl ChunkMemory {
    /// Wraps memory owned elsewhere: `owner` keeps `[ptr, ptr + len)` alive until it is dropped.
    /// The usable region starts at the first `alignment` boundary at or after `ptr`, so ask the
    /// owner for `bytes + alignment - 1` to be sure of `bytes` aligned bytes.
    ///
    /// # Safety
    /// `ptr .. ptr + len` must be one allocation that stays valid for as long as `owner` lives and
    /// that nothing else uses.
    #[must_use]
    pub unsafe fn from_owner(
        ptr: usize,
        len: usize,
        alignment: usize,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Option<Self> {
        let aligned = ptr.checked_next_multiple_of(alignment)?;
        let skip = aligned - ptr;
        let ptr = NonNull::new(aligned as *mut u8)?;
        Some(Self {
            ptr,
            len: len.checked_sub(skip)?,
            _owner: owner,
        })
    }

    /// One zeroed host allocation of `bytes` aligned to `alignment`. Zeroing is lazy for large
    /// sizes (calloc maps fresh zero pages), so this costs no more than an uninitialised malloc.
    pub fn host(bytes: usize, alignment: usize) -> Result<Self, PoolError> {
        let err = |reason: String| PoolError::Alloc {
            bytes,
            kind: "host",
            reason,
        };
        let layout =
            Layout::from_size_align(bytes.max(1), alignment).map_err(|e| err(e.to_string()))?;
        // SAFETY: layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| err("out of memory".into()))?;
        Ok(Self {
            ptr,
            len: bytes,
            _owner: Box::new(HostAlloc { ptr, layout }),
        })
    }

    #[must_use]
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Frees a host reservation made by `ChunkMemory::host`.
struct HostAlloc {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: HostAlloc only frees its allocation on drop; it is never dereferenced.
unsafe impl Send for HostAlloc {}
// SAFETY: as above.
unsafe impl Sync for HostAlloc {}

impl Drop for HostAlloc {
    fn drop(&mut self) {
        // SAFETY: allocated in `ChunkMemory::host` with this very layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// Makes the chunks of a pool. The host kind uses `ChunkMemory::host`; the Python bindings
/// supply one that allocates pinned or device memory through CuPy.
pub trait ChunkAllocator: Send + Sync {
    fn allocate(&self, bytes: usize, alignment: usize) -> Result<ChunkMemory, PoolError>;
}

/// The allocator of host pools.
pub struct HostAllocator;

impl ChunkAllocator for HostAllocator {
    fn allocate(&self, bytes: usize, alignment: usize) -> Result<ChunkMemory, PoolError> {
        ChunkMemory::host(bytes, alignment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_memory_is_aligned_and_zeroed() {
        for align in [1, 64, 4096] {
            let m = ChunkMemory::host(10_000, align).unwrap();
            assert_eq!(m.as_ptr() as usize % align, 0);
            // SAFETY: m owns 10_000 bytes.
            let s = unsafe { std::slice::from_raw_parts(m.as_ptr(), m.len()) };
            assert!(s.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn from_owner_aligns_up() {
        let backing = vec![0u8; 300];
        let base = backing.as_ptr() as usize;
        // SAFETY: backing outlives the chunk (it is moved into the owner box).
        let m = unsafe { ChunkMemory::from_owner(base, 300, 256, Box::new(backing)) }.unwrap();
        assert_eq!(m.as_ptr() as usize % 256, 0);
        assert_eq!(m.len(), 300 - (m.as_ptr() as usize - base));
    }
}
