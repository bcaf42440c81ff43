//! `OwnedBuffer`: bytes owned by Rust, exported through the buffer protocol with no copy:
//! decoded pixels, where `numpy.asarray(buf)` is an (H, W, C) uint8 array over the same memory,
//! and flat outputs (token ids, Parquet pages) that `numpy.frombuffer` reads and a file's `write`
//! takes as they are. The array (or view) keeps the buffer alive; the memory is freed when both
//! are gone.
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::ffi::{c_int, c_void, CStr};

static FORMAT: &CStr = c"B";

#[pyclass(module = "fastprep._core", frozen)]
pub struct OwnedBuffer {
    // A raw allocation rather than a Box: numpy writes through the exported pointer while Rust
    // holds only `&self`, which a Box's unique ownership would forbid.
    ptr: *mut u8,
    len: usize,
    capacity: usize,
    /// The Vec's element: `u8`, or `u32` for ids (whose memory is aligned for them).
    words: bool,
    ndim: usize,
    shape: [isize; 3],
    strides: [isize; 3],
}

impl OwnedBuffer {
    /// An image's pixels, (height, width, channels).
    pub fn new(data: Vec<u8>, height: usize, width: usize, channels: usize) -> Self {
        debug_assert_eq!(data.len(), height * width * channels);
        let (h, w, c) = (height as isize, width as isize, channels as isize);
        Self::with_shape(data, 3, [h, w, c], [w * c, c, 1])
    }

    /// Flat bytes (one dimension).
    pub fn flat(data: Vec<u8>) -> Self {
        let n = data.len() as isize;
        Self::with_shape(data, 1, [n, 0, 0], [1, 0, 0])
    }

    /// 32-bit words as their little-endian bytes (one dimension), aligned for `u32` (an empty
    /// Vec<u8>'s pointer is not), so that `numpy.frombuffer(buf, "<u4")` can go back to Rust
    /// as `u32`s.
    pub fn flat_words(data: Vec<u32>) -> Self {
        let mut data = std::mem::ManuallyDrop::new(data);
        for w in data.iter_mut() {
            *w = w.to_le();
        }
        let n = data.len() * 4;
        let parts = (data.as_mut_ptr().cast::<u8>(), n, data.capacity());
        Self::from_parts(parts, true, 1, [n as isize, 0, 0], [1, 0, 0])
    }

    fn with_shape(data: Vec<u8>, ndim: usize, shape: [isize; 3], strides: [isize; 3]) -> Self {
        // The Vec's parts, not a boxed slice: shrinking a Vec to its length may copy it (a
        // Parquet row group's bytes are sized by a bound, not exactly).
        let mut data = std::mem::ManuallyDrop::new(data);
        let parts = (data.as_mut_ptr(), data.len(), data.capacity());
        Self::from_parts(parts, false, ndim, shape, strides)
    }

    /// `(ptr, len in bytes, capacity in elements)` of a Vec given up to this object, of `u32`
    /// where `words`, else of `u8` (`Drop` rebuilds it).
    fn from_parts(
        (ptr, len, capacity): (*mut u8, usize, usize),
        words: bool,
        ndim: usize,
        shape: [isize; 3],
        strides: [isize; 3],
    ) -> Self {
        Self {
            ptr,
            len,
            capacity,
            words,
            ndim,
            shape,
            strides,
        }
    }
}

impl Drop for OwnedBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr`, `len` (bytes) and `capacity` (elements) are the parts of the Vec taken
        // apart in `with_shape` or `flat_words`, of the element `words` says; rebuilt once, here,
        // when no view can be open (views hold a reference to this object).
        unsafe {
            if self.words {
                #[allow(clippy::cast_ptr_alignment)] // the pointer of a Vec<u32> (`flat_words`)
                drop(Vec::from_raw_parts(
                    self.ptr.cast::<u32>(),
                    self.len / 4,
                    self.capacity,
                ));
            } else {
                drop(Vec::from_raw_parts(self.ptr, self.len, self.capacity));
            }
        }
    }
}

// SAFETY: the object owns its allocation; concurrent writes through views are the Python
// program's business, as for any writable buffer (bytearray, numpy).
unsafe impl Send for OwnedBuffer {}
unsafe impl Sync for OwnedBuffer {}

#[pymethods]
impl OwnedBuffer {
    /// (height, width, channels) for pixels, (bytes,) for flat data.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape[..self.ndim])
    }

    fn __len__(&self) -> usize {
        self.len
    }

    #[allow(clippy::needless_pass_by_value)] // PyO3 hands the receiver over by value
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("Py_buffer view is NULL"));
        }
        let this = slf.get();
        // SAFETY: `view` is non-null and ours to fill (CPython's getbuffer contract). The data,
        // `shape` and `strides` live in this frozen object, which `obj` keeps alive with the view.
        // The memory is handed out writable: numpy arrays of decoded images are normally mutable,
        // and nothing in Rust reads it after construction.
        unsafe {
            (*view).buf = this.ptr.cast::<c_void>();
            (*view).obj = slf.clone().into_any().into_ptr();
            (*view).len = this.len as isize;
            (*view).itemsize = 1;
            (*view).readonly = 0;
            (*view).ndim = this.ndim as c_int;
            (*view).format = if flags & pyo3::ffi::PyBUF_FORMAT == pyo3::ffi::PyBUF_FORMAT {
                FORMAT.as_ptr().cast_mut()
            } else {
                std::ptr::null_mut()
            };
            (*view).shape = if flags & pyo3::ffi::PyBUF_ND == pyo3::ffi::PyBUF_ND {
                this.shape.as_ptr().cast_mut()
            } else {
                std::ptr::null_mut()
            };
            (*view).strides = if flags & pyo3::ffi::PyBUF_STRIDES == pyo3::ffi::PyBUF_STRIDES {
                this.strides.as_ptr().cast_mut()
            } else {
                std::ptr::null_mut()
            };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = std::ptr::null_mut();
        }
        Ok(())
    }
}
