//! `_core.build_info()`: the Rust side of `fastprep.build_info()`.
use crate::build_info as facts;
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pyfunction]
pub fn build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", env!("CARGO_PKG_VERSION"))?;
    d.set_item("build_profile", facts::PROFILE)?;
    d.set_item("rustc", facts::RUSTC_VERSION)?;
    d.set_item("pyo3", facts::PYO3_VERSION)?;
    d.set_item("target", facts::TARGET)?;
    d.set_item("simd_compiled", facts::simd_compiled())?;
    d.set_item("simd_detected", facts::simd_detected())?;
    d.set_item("libjpeg_turbo", "3.1.0")?;
    d.set_item("libjpeg_turbo_simd", facts::JPEG_SIMD)?;
    Ok(d)
}
