//! `_core.set_token_cache_cap` / `token_cache_cap` / `token_cache_bytes`: the cap on each
//! thread's byte-level BPE caches (see `tokenize::cache_cap`), and what this thread's hold.
use crate::tokenize::{bpe, cache_cap};
use pyo3::prelude::*;

/// Sets the per-thread cache cap in bytes (`None`: no cap, the built-in sizes).
#[pyfunction]
#[pyo3(signature = (bytes))]
pub fn set_token_cache_cap(bytes: Option<usize>) {
    cache_cap::set_cap_bytes(bytes);
}

/// The per-thread cache cap in bytes, or `None`.
#[pyfunction]
pub fn token_cache_cap() -> Option<usize> {
    cache_cap::cap_bytes()
}

/// Bytes held by the calling thread's BPE caches (all models).
#[pyfunction]
pub fn token_cache_bytes() -> usize {
    bpe::with_scratch(|s| s.cache_bytes())
}
