//! The only PyO3 code of the crate: the private extension module `fastprep._core`.
//! Each binding converts Python values to owned Rust data, runs the work with the thread detached
//! from the interpreter where it can take long, and maps core errors in `errors.rs`.

mod buffer;
mod encoded;
mod encoding;
mod errors;
mod image;
mod image_box;
mod image_train;
mod info;
mod ints;
mod kernels;
mod lines;
mod pool;
mod text;
mod threads;
mod token_cache;
mod token_shard;
mod tokenize;

use pyo3::prelude::*;

// gil_used stays at its default: the abi3 wheel does not load on free-threaded builds anyway.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("build_profile", crate::build_info::PROFILE)?;
    m.add_class::<pool::PyBlockPool>()?;
    m.add_class::<pool::PyBlock>()?;
    m.add_class::<tokenize::PyTokenizer>()?;
    m.add_class::<encoding::PyEncoding>()?;
    m.add_class::<token_shard::TokenShardWriter>()?;
    m.add_function(wrap_pyfunction!(pool::pool_stress, m)?)?;
    m.add_function(wrap_pyfunction!(info::build_info, m)?)?;
    m.add_function(wrap_pyfunction!(token_cache::set_token_cache_cap, m)?)?;
    m.add_function(wrap_pyfunction!(token_cache::token_cache_cap, m)?)?;
    m.add_function(wrap_pyfunction!(token_cache::token_cache_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(image::resize_u8, m)?)?;
    m.add_function(wrap_pyfunction!(image::resize_f32, m)?)?;
    m.add_function(wrap_pyfunction!(image::resize_batch_u8, m)?)?;
    m.add_function(wrap_pyfunction!(image::resize_tables, m)?)?;
    m.add_function(wrap_pyfunction!(image::pillow_order, m)?)?;
    m.add_function(wrap_pyfunction!(image::resize_vertical_first, m)?)?;
    m.add_function(wrap_pyfunction!(image::normalize_table, m)?)?;
    m.add_function(wrap_pyfunction!(image_box::resize_box_u8, m)?)?;
    m.add_function(wrap_pyfunction!(image_box::resize_box_wide, m)?)?;
    m.add_function(wrap_pyfunction!(image_box::reduce_u8, m)?)?;
    m.add_function(wrap_pyfunction!(image_box::reduce_wide, m)?)?;
    m.add_class::<buffer::OwnedBuffer>()?;
    m.add_function(wrap_pyfunction!(image::decode_image, m)?)?;
    m.add_function(wrap_pyfunction!(image::decode_images, m)?)?;
    m.add_function(wrap_pyfunction!(image::preprocess_into, m)?)?;
    m.add_function(wrap_pyfunction!(image_train::train_preprocess_into, m)?)?;
    m.add_function(wrap_pyfunction!(image::jpeg_layouts, m)?)?;
    m.add_function(wrap_pyfunction!(image::jpeg_coefficients_into, m)?)?;
    m.add("DEFAULT_MAX_PIXELS", crate::image::DEFAULT_MAX_PIXELS)?;
    m.add_function(wrap_pyfunction!(lines::line_spans, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::kernel_names, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::kernel_source, m)?)?;
    Ok(())
}
