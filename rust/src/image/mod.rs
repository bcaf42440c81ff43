//! Image preprocessing on the CPU. So far: Pillow-exact convolution resize (`resize`).
pub mod resize;

pub use resize::{resize_u8, Filter};
