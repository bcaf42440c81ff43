//! A Python str's text, read in place (no copy into a Rust `String`).
use pyo3::prelude::*;
use pyo3::types::PyString;

/// The UTF-8 text of a Python str, borrowed from the str itself, which this keeps alive. A str is
/// immutable and caches its UTF-8 form once asked for it (`PyUnicode_AsUTF8AndSize`), so the
/// view stays valid for as long as the str lives, GIL held or not. Copying every text into a
/// `String` instead would cost a malloc and a memcpy per text, with the GIL held.
pub struct PyText {
    ptr: *const u8,
    len: usize,
    _str: Py<PyString>,
}

// SAFETY: the view is of immutable bytes owned by the str, which `_str` keeps alive; reading
// them needs no GIL, and `Py` itself is Send + Sync.
unsafe impl Send for PyText {}
// SAFETY: as above (shared reads only).
unsafe impl Sync for PyText {}

impl PyText {
    /// The text of `s`; fails for a str that is not valid text (lone surrogates).
    pub fn new(s: &Bound<'_, PyString>) -> PyResult<Self> {
        let text = s.to_str()?;
        Ok(Self {
            ptr: text.as_ptr(),
            len: text.len(),
            _str: s.clone().unbind(),
        })
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        // SAFETY: `ptr..ptr + len` is the str's cached UTF-8 (valid UTF-8, see `new`), alive
        // while `_str` is.
        unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(self.ptr, self.len)) }
    }
}

impl AsRef<str> for PyText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}
