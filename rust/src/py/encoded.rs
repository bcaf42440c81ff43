//! Encoded files as the batch bindings take them: `bytes`, or any C-contiguous buffer of bytes
//! (`bytearray`, `memoryview`, a uint8 numpy array, an `mmap`), read in place: a slice of a
//! larger buffer (a tar shard or a record file in memory) is not copied into a `bytes` first.
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

pub enum Encoded<'py> {
    Bytes(Bound<'py, PyBytes>),
    Buffer(PyBuffer<u8>),
}

impl<'py> Encoded<'py> {
    /// Image `index` of a batch: `bytes` as is, another object through its buffer (which must be
    /// C-contiguous bytes).
    pub fn extract(obj: &Bound<'py, PyAny>, index: usize) -> PyResult<Self> {
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(Self::Bytes(b.clone()));
        }
        let not_bytes = || {
            PyTypeError::new_err(format!(
                "image {index}: the encoded file must be bytes or a C-contiguous buffer of bytes \
                 (bytearray, memoryview), got {}",
                obj.get_type()
                    .name()
                    .map_or_else(|_| "?".to_owned(), |n| n.to_string())
            ))
        };
        let buf = PyBuffer::<u8>::get(obj).map_err(|_| not_bytes())?;
        if !buf.is_c_contiguous() {
            return Err(not_bytes());
        }
        Ok(Self::Buffer(buf))
    }

    pub fn all(items: &[Bound<'py, PyAny>]) -> PyResult<Vec<Self>> {
        items
            .iter()
            .enumerate()
            .map(|(i, o)| Self::extract(o, i))
            .collect()
    }

    /// The bytes, valid while `self` holds the object (and, for a buffer, its export: the memory
    /// cannot move or be resized while exported; a Python thread writing into a bytearray during
    /// the call changes the input, as it would for any reader of the buffer).
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Self::Bytes(b) => b.as_bytes(),
            // SAFETY: the export holds `item_count` contiguous bytes at `buf_ptr` until `buf`
            // drops, which the borrow of `self` outlives.
            Self::Buffer(buf) => unsafe {
                std::slice::from_raw_parts(buf.buf_ptr() as *const u8, buf.item_count())
            },
        }
    }
}
