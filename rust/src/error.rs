//! Typed errors of the core. Each message says what happened and what to do next; the Python
//! bindings map every variant to a `fastprep.errors` class in one place (`py/errors.rs`).
use crate::pool::PoolStats;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// No free block within the time allowed.
    #[error(
        "BlockPool exhausted: all {} blocks of {} bytes are in use{}; release blocks sooner \
         (`with pool.acquire() as block:`), create the pool with more blocks, or pass grow=True \
         [stats: {stats}]",
        stats.capacity,
        stats.block_size,
        waited.map_or_else(String::new, |w| format!(" after waiting {:.3} s", w.as_secs_f64()))
    )]
    Exhausted {
        stats: PoolStats,
        waited: Option<Duration>,
    },

    /// Constructor arguments that cannot make a pool.
    #[error("invalid BlockPool configuration: {0}")]
    InvalidConfig(String),

    /// The memory reservation itself failed.
    #[error("could not reserve {bytes} bytes of {kind} memory for BlockPool: {reason}")]
    Alloc {
        bytes: usize,
        kind: &'static str,
        reason: String,
    },

    /// A block handed to a pool that did not give it out.
    #[error(
        "this block belongs to another BlockPool; release it with block.release() or through \
         the pool that gave it out"
    )]
    ForeignBlock,
}

/// Errors of the tokenizer: loading a file, and encoding with settings that cannot be met.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenizeError {
    /// A component fastprep does not implement: refused at load time so that output is never
    /// silently different from `tokenizers`.
    #[error(
        "unsupported tokenizer component {component} at {path}; fastprep refuses it rather than \
         tokenize differently from HF tokenizers (use tokenizers.Tokenizer for this file)"
    )]
    Unsupported { component: String, path: String },

    /// A file that is not a valid tokenizer description.
    #[error("invalid tokenizer at {path}: {reason}")]
    Invalid { path: String, reason: String },

    #[error("{0}")]
    Io(String),

    /// Settings that make an encoding impossible (truncation shorter than the special tokens...).
    #[error("{0}")]
    Encode(String),
}

impl TokenizeError {
    pub(crate) fn invalid(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            path: path.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn unsupported(component: impl Into<String>, path: impl Into<String>) -> Self {
        Self::Unsupported {
            component: component.into(),
            path: path.into(),
        }
    }
}

/// Errors of the image pipeline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    InvalidSize(String),
    /// A buffer the sizes ask for could not be allocated (Python: `MemoryError`, as Pillow).
    #[error("{0}")]
    NoMemory(String),
}

/// Why one encoded image could not be decoded. Batch calls pair it with the image's index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("empty input: there are no bytes to decode")]
    Empty,
    #[error(
        "not a JPEG or PNG file (it starts with {0}); fastprep decodes JPEG and PNG, so convert \
         other formats first"
    )]
    UnknownFormat(String),
    #[error("truncated {0} file: {1}; the data ends before the image does (an interrupted download or write?)")]
    Truncated(&'static str, String),
    #[error("corrupt {0} file: {1}")]
    Corrupt(&'static str, String),
    #[error("unsupported {0}: {1}")]
    Unsupported(&'static str, String),
    #[error(
        "image of {width}x{height} = {pixels} pixels is over the limit of {limit} pixels (by \
         default twice Pillow's MAX_IMAGE_PIXELS, where Pillow refuses too: a decompression \
         bomb?); pass a larger max_pixels, or None, if the file is trusted"
    )]
    TooLarge {
        width: usize,
        height: usize,
        pixels: u64,
        limit: u64,
    },
    #[error("{0}")]
    Resources(String),
    /// The image's buffers could not be allocated (its header may claim an absurd size).
    #[error(
        "{0}: more memory than could be allocated; the file's header may claim a size it does \
         not hold, or pass max_pixels to refuse such images up front"
    )]
    NoMemory(String),
}

impl DecodeError {
    /// A short machine-readable reason, kept stable for `DecodeError.reason` in Python.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Empty => "empty",
            Self::UnknownFormat(_) => "unknown_format",
            Self::Truncated(..) => "truncated",
            Self::Corrupt(..) => "corrupt",
            Self::Unsupported(..) => "unsupported",
            Self::TooLarge { .. } | Self::NoMemory(_) => "too_large",
            Self::Resources(_) => "resources",
        }
    }
}
