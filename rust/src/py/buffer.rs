//! `PixelBuffer`: pixels owned by Rust, exported through the buffer protocol so that
//! `numpy.asarray(buf)` is an (H, W, C) uint8 array over the same memory, with no copy. The array
//! keeps the buffer alive; the memory is freed when both are gone.
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use std::ffi::{c_int, c_void, CStr};

static FORMAT: &CStr = c"B";

#[pyclass(module = "fastprep._core", frozen)]
pub struct PixelBuffer {
    // A raw allocation rather than a Box: numpy writes through the exported pointer while Rust
    // holds only `&self`, which a Box's unique ownership would forbid.
    ptr: *mut u8,
    len: usize,
    shape: [isize; 3],
    strides: [isize; 3],
}

impl PixelBuffer {
    pub fn new(data: Vec<u8>, height: usize, width: usize, channels: usize) -> Self {
        debug_assert_eq!(data.len(), height * width * channels);
        let (h, w, c) = (height as isize, width as isize, channels as isize);
        let len = data.len();
        let ptr = Box::into_raw(data.into_boxed_slice()).cast::<u8>();
        Self {
            ptr,
            len,
            shape: [h, w, c],
            strides: [w * c, c, 1],
        }
    }
}

impl Drop for PixelBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` come from the Box leaked in `new`; freed once, here, when no
        // view can be open (views hold a reference to this object).
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
    }
}

// SAFETY: the object owns its allocation; concurrent writes through views are the Python
// program's business, as for any writable buffer (bytearray, numpy).
unsafe impl Send for PixelBuffer {}
unsafe impl Sync for PixelBuffer {}

#[pymethods]
impl PixelBuffer {
    /// (height, width, channels).
    #[getter]
    fn shape(&self) -> (isize, isize, isize) {
        (self.shape[0], self.shape[1], self.shape[2])
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
            (*view).ndim = 3;
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
