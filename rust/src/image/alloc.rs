//! Fallible allocation for every buffer whose size comes from the caller's input (a header's
//! width and height, a requested output size): Rust's `vec!` and `Vec::with_capacity` abort the
//! process when the allocator says no, and a 30 KB PNG can claim 65535 x 65535 pixels. Pillow
//! raises `MemoryError` there; these helpers let every caller return an error instead.
use std::alloc::Layout;

/// An allocation that could not be made: its size in bytes, or None when even the size
/// overflows `usize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocError {
    pub bytes: Option<usize>,
}

impl std::fmt::Display for AllocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.bytes {
            Some(b) => write!(f, "could not allocate {b} bytes"),
            None => write!(f, "the buffer's size overflows the address space"),
        }
    }
}

/// The product of `dims`, or an `AllocError` when it overflows.
pub fn product(dims: &[usize]) -> Result<usize, AllocError> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or(AllocError { bytes: None })
}

/// Types whose all-zero bit pattern is a valid value (the integers and floats used here).
///
/// # Safety
/// Implement only for types for which zeroed memory is a valid, initialised value.
pub unsafe trait Zeroable: Copy {}
// SAFETY: plain integers and IEEE floats: zero bits are 0 / 0.0.
unsafe impl Zeroable for u8 {}
// SAFETY: as above.
unsafe impl Zeroable for i16 {}
// SAFETY: as above.
unsafe impl Zeroable for u16 {}
// SAFETY: as above.
unsafe impl Zeroable for u32 {}
// SAFETY: as above.
unsafe impl Zeroable for i32 {}
// SAFETY: as above.
unsafe impl Zeroable for f32 {}
// SAFETY: as above.
unsafe impl Zeroable for f64 {}
// SAFETY: as above.
unsafe impl Zeroable for usize {}

/// `vec![0; len]`, or an error instead of an abort. Goes through `alloc_zeroed` like `vec!`
/// does, so a large buffer is zeroed lazily by the kernel rather than written here.
pub fn zeroed<T: Zeroable>(len: usize) -> Result<Vec<T>, AllocError> {
    if len == 0 || std::mem::size_of::<T>() == 0 {
        return Ok(Vec::new());
    }
    let layout = Layout::array::<T>(len).map_err(|_| AllocError { bytes: None })?;
    // SAFETY: `layout` has a non-zero size (len > 0 and T is not zero-sized).
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if p.is_null() {
        return Err(AllocError {
            bytes: Some(layout.size()),
        });
    }
    // SAFETY: `p` was allocated by the global allocator with `Layout::array::<T>(len)`, which is
    // what a Vec<T> of capacity `len` uses; all `len` elements are zeroed, a valid T (Zeroable).
    #[allow(clippy::same_length_and_capacity)] // a full, zeroed buffer: length is capacity
    Ok(unsafe { Vec::from_raw_parts(p, len, len) })
}

/// `Vec::with_capacity(len)`, or an error instead of an abort.
pub fn with_capacity<T>(len: usize) -> Result<Vec<T>, AllocError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| AllocError {
        bytes: len.checked_mul(std::mem::size_of::<T>()),
    })?;
    Ok(v)
}

/// Resizes `v` to `len` elements (new ones zero), or an error instead of an abort.
pub fn resize_zeroed<T: Zeroable>(v: &mut Vec<T>, len: usize) -> Result<(), AllocError> {
    if len > v.len() {
        v.try_reserve_exact(len - v.len()).map_err(|_| AllocError {
            bytes: len.checked_mul(std::mem::size_of::<T>()),
        })?;
    }
    // SAFETY: all-zero bits are a valid T (Zeroable); the capacity reserved above means the
    // resize cannot allocate (or abort).
    v.resize(len, unsafe { std::mem::zeroed() });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_sizes_are_errors_not_aborts() {
        assert!(zeroed::<u8>(usize::MAX / 2).is_err());
        assert!(zeroed::<f64>(usize::MAX / 4).is_err());
        assert!(with_capacity::<u64>(usize::MAX / 2).is_err());
        assert_eq!(product(&[usize::MAX, 2]), Err(AllocError { bytes: None }));
        let mut v = vec![1u8; 3];
        assert!(resize_zeroed(&mut v, usize::MAX / 2).is_err());
        resize_zeroed(&mut v, 5).unwrap();
        assert_eq!(v, [1, 1, 1, 0, 0]);
        assert_eq!(zeroed::<i16>(4).unwrap(), [0; 4]);
    }
}
