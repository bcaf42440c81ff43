//! The CUDA sources of `cuda/`, embedded at build time (see `rust/build.rs`) so that they travel
//! inside the wheel without a top-level `cuda` package that would clash with NVIDIA's.
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;

include!(concat!(env!("OUT_DIR"), "/kernel_sources.rs"));

/// File names of the embedded kernel sources, e.g. `["normalize.cu"]`.
#[pyfunction]
pub fn kernel_names() -> Vec<&'static str> {
    KERNEL_SOURCES.iter().map(|(name, _)| *name).collect()
}

/// The text of one embedded source; `name` with or without its `.cu` suffix.
#[pyfunction]
pub fn kernel_source(name: &str) -> PyResult<&'static str> {
    KERNEL_SOURCES
        .iter()
        .find(|(file, _)| *file == name || file.strip_suffix(".cu") == Some(name))
        .map(|(_, text)| *text)
        .ok_or_else(|| {
            PyKeyError::new_err(format!(
                "no CUDA kernel source named {name:?}; available: {}",
                kernel_names().join(", ")
            ))
        })
}
