//! The one mapping from core errors to the exceptions of `fastprep.errors`.
use crate::error::PoolError;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::PyErr;

pyo3::import_exception!(fastprep.errors, PoolExhaustedError);
pyo3::import_exception!(fastprep.errors, UnsupportedTokenizerError);
pyo3::import_exception!(fastprep.errors, TokenizerFileError);
pyo3::import_exception!(fastprep.errors, TokenizeError);

impl From<PoolError> for PyErr {
    fn from(err: PoolError) -> Self {
        let msg = err.to_string();
        match err {
            PoolError::Exhausted { .. } => PoolExhaustedError::new_err(msg),
            PoolError::InvalidConfig(_) | PoolError::ForeignBlock => PyValueError::new_err(msg),
            PoolError::Alloc { .. } => PyMemoryError::new_err(msg),
        }
    }
}
