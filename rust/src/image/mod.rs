//! Image preprocessing on the CPU: decoding (`decode`, over libjpeg-turbo and the `png` crate)
//! and Pillow-exact convolution resize (`resize`).
pub mod alloc;
pub mod decode;
mod jpeg;
pub mod jpeg_coeffs;
pub mod orientation;
pub mod pipeline;
mod png;
mod png_idat;
mod png_rewrite;
mod png_sequence;
pub mod reduce;
pub mod resize;
#[cfg(target_arch = "x86_64")]
mod resize_avx2;
pub mod resize_box;
mod resize_kernels;
mod resize_passes;
mod resize_wide;
pub mod train;

pub use decode::{decode, DecodeOptions, Image, Mode, DEFAULT_MAX_PIXELS};
pub use reduce::{reduce_u8, reduce_wide};
pub use resize::{
    resize_region_into, resize_u8, resize_window_u8, resize_window_u8_alpha, Filter, Window,
};
pub use resize_box::{resize_box_u8, resize_box_wide, PreReduce};
pub use resize_wide::{resize_f32, Wide};
