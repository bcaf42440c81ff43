//! Zero-filled tables on transparent huge pages, for the per-thread piece caches.
//!
//! The hot cache is 16 MiB probed at random, one line per piece. On 4 KiB pages nearly every
//! probe also misses the TLB (a few thousand entries cover a few MiB), so each lookup paid a
//! page walk on top of the cache miss, and `perf annotate` put 30% of the encode loop on the
//! instruction after the set's prefetch. Through `malloc` (which hands out such a table as its own
//! `mmap`, 16 bytes past a page boundary) the kernel never backs the table with huge pages, so
//! on Linux a table here is its own anonymous mapping, 2 MiB-aligned and advised
//! `MADV_HUGEPAGE` before its first touch: under the common `madvise` policy it then faults in
//! as 2 MiB pages, a handful of TLB entries for the whole table. Elsewhere, or where the kernel
//! declines, it is ordinary zeroed memory: same contents, only slower.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Huge page size on x86-64 and most aarch64 Linux kernels.
const HUGE_PAGE: usize = 2 << 20;

/// Types whose all-zero bit pattern is a valid value (a table starts zero-filled).
///
/// # Safety
/// An all-zero `Self` must be a valid, initialized value.
pub(crate) unsafe trait Zeroable: Copy {}

/// A zero-filled boxed slice whose memory is advised for huge pages (see the module docs).
pub(crate) struct HugeTable<T: Zeroable> {
    ptr: NonNull<T>,
    len: usize,
    /// Bytes mapped (Linux mapping) or 0 (allocated through `std::alloc`, or nothing at all).
    mapped: usize,
    /// Start of the mapping, which `ptr` is aligned up from.
    base: *mut u8,
}

// SAFETY: the table owns its elements exclusively, like `Box<[T]>`.
unsafe impl<T: Zeroable + Send> Send for HugeTable<T> {}
// SAFETY: as above; shared access hands out `&[T]` only.
unsafe impl<T: Zeroable + Sync> Sync for HugeTable<T> {}

impl<T: Zeroable> Default for HugeTable<T> {
    fn default() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
            mapped: 0,
            base: std::ptr::null_mut(),
        }
    }
}

impl<T: Zeroable> HugeTable<T> {
    /// `len` zeroed elements.
    pub(crate) fn zeroed(len: usize) -> Self {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .expect("table size overflows");
        if bytes == 0 {
            return Self::default();
        }
        #[cfg(target_os = "linux")]
        if bytes >= HUGE_PAGE && std::mem::align_of::<T>() <= HUGE_PAGE {
            if let Some(t) = Self::map(len, bytes) {
                return t;
            }
        }
        let layout = std::alloc::Layout::array::<T>(len).expect("table size overflows");
        // SAFETY: `layout` has a nonzero size (checked above).
        let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
        let Some(ptr) = NonNull::new(p) else {
            std::alloc::handle_alloc_error(layout)
        };
        Self {
            ptr,
            len,
            mapped: 0,
            base: std::ptr::null_mut(),
        }
    }

    /// A fresh anonymous mapping (zero-filled by the kernel) with room to align the table to a
    /// huge page, advised before anything touches it.
    #[cfg(target_os = "linux")]
    fn map(len: usize, bytes: usize) -> Option<Self> {
        let rounded = bytes.div_ceil(HUGE_PAGE) * HUGE_PAGE;
        let mapped = rounded + HUGE_PAGE;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let base = base.cast::<u8>();
        let start = base.align_offset(HUGE_PAGE);
        // SAFETY: `start < HUGE_PAGE`, so `start + rounded <= mapped`: in the mapping.
        let aligned = unsafe { base.add(start) };
        // SAFETY: a range inside our own mapping. A refusal (a kernel without THP) leaves
        // ordinary pages, which is still correct.
        unsafe { libc::madvise(aligned.cast(), rounded, libc::MADV_HUGEPAGE) };
        Some(Self {
            ptr: NonNull::new(aligned.cast::<T>())?,
            len,
            mapped,
            base,
        })
    }
}

impl<T: Zeroable> Drop for HugeTable<T> {
    fn drop(&mut self) {
        if self.mapped != 0 {
            #[cfg(target_os = "linux")]
            // SAFETY: the mapping made in `map`, unmapped once.
            unsafe {
                libc::munmap(self.base.cast(), self.mapped);
            }
        } else if self.len != 0 {
            let layout = std::alloc::Layout::array::<T>(self.len).expect("checked at allocation");
            // SAFETY: allocated in `zeroed` with this layout.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }
}

impl<T: Zeroable> Deref for HugeTable<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` zero-initialized (hence valid, `T: Zeroable`) elements, or dangling
        // with `len == 0`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> DerefMut for HugeTable<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    #[repr(C, align(64))]
    struct Line([u64; 8]);
    // SAFETY: plain integers.
    unsafe impl Zeroable for Line {}

    #[test]
    fn tables_start_zeroed_and_hold_writes() {
        for len in [0, 1, 1000, (4 << 20) / 64 + 3] {
            let mut t = HugeTable::<Line>::zeroed(len);
            assert_eq!(t.len(), len);
            assert!(t.iter().all(|l| l.0 == [0; 8]));
            if len > 0 {
                t[len - 1].0[7] = 42;
                assert_eq!(t[len - 1].0[7], 42);
                assert_eq!(t.as_ptr() as usize % 64, 0);
            }
        }
    }

    #[test]
    fn big_tables_are_huge_page_aligned_on_linux() {
        let t = HugeTable::<Line>::zeroed((8 << 20) / 64);
        if cfg!(target_os = "linux") {
            assert_eq!(t.as_ptr() as usize % HUGE_PAGE, 0);
        }
    }
}
