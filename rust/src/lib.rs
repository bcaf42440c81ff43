//! fastprep's Rust core: the fixed-block memory pool today; the tokenizer and the image pipeline
//! build on it. Everything here is plain Rust; the PyO3 bindings live in `py/` behind the `python`
//! feature, so `cargo test` exercises the core with no Python involved.

pub mod build_info;
pub mod error;
pub mod image;
pub mod parquet;
pub mod pool;
pub mod records;
pub mod tokenize;

#[cfg(feature = "python")]
mod py;

pub use error::{ImageError, PoolError, TokenizeError};
pub use pool::{Block, ChunkAllocator, ChunkMemory, MemoryKind, Pool, PoolConfig, PoolStats};
