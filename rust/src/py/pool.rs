//! `fastprep.BlockPool` and `fastprep.Block`.
//!
//! A `Block` is a Python object that owns one block of a pool: it exports the bytes through the
//! buffer protocol (host and pinned memory) or `__cuda_array_interface__` (device memory), counts
//! the views it has exported, and refuses `release()` while any is open. It goes back to the pool
//! on `release()`, at the end of a `with` block, or when its last reference dies.
use crate::pool::{ChunkAllocator, ChunkMemory, MemoryKind, Pool, PoolConfig, RawBlock};
use crate::PoolError;
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one detached wait lasts before Python gets a chance to deliver Ctrl-C.
const WAIT_SLICE: Duration = Duration::from_millis(50);

fn positive(name: &str, value: i64) -> PyResult<usize> {
    usize::try_from(value)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| {
            PyValueError::new_err(format!("{name} must be a positive integer, got {value}"))
        })
}

fn parse_kind(kind: &str) -> PyResult<MemoryKind> {
    match kind {
        "host" => Ok(MemoryKind::Host),
        "pinned" => Ok(MemoryKind::Pinned),
        "cuda" => Ok(MemoryKind::Device),
        other => Err(PyValueError::new_err(format!(
            "kind must be 'host', 'pinned' or 'cuda', got {other:?}"
        ))),
    }
}

/// Pinned and device chunks come from CuPy, through `fastprep._cupy_memory.allocate`, which
/// returns the address and an object that owns the memory (freed when the chunk drops it).
struct CupyAllocator {
    kind: MemoryKind,
}

impl ChunkAllocator for CupyAllocator {
    fn allocate(&self, bytes: usize, alignment: usize) -> Result<ChunkMemory, PoolError> {
        let kind = self.kind.name();
        let fail = |reason: String| PoolError::Alloc {
            bytes,
            kind,
            reason,
        };
        Python::attach(|py| {
            // Over-ask so that `bytes` aligned bytes fit whatever alignment CuPy returns.
            let want = bytes + alignment - 1;
            let (ptr, owner): (usize, Py<PyAny>) = py
                .import("fastprep._cupy_memory")
                .and_then(|m| m.call_method1("allocate", (kind, want)))
                .and_then(|r| r.extract())
                .map_err(|e| fail(e.to_string()))?;
            // SAFETY: `owner` keeps the `want`-byte allocation at `ptr` alive; the chunk holds it.
            unsafe { ChunkMemory::from_owner(ptr, want, alignment, Box::new(owner)) }
                .ok_or_else(|| fail(format!("CuPy returned an unusable address {ptr:#x}")))
        })
    }
}

/// A pool of fixed-size blocks reserved up front.
#[pyclass(name = "BlockPool", module = "fastprep._core", frozen)]
pub struct PyBlockPool {
    pool: Arc<Pool>,
}

#[pymethods]
impl PyBlockPool {
    #[new]
    #[pyo3(signature = (block_size, num_blocks, *, kind = "host", alignment = 64, grow = false, max_blocks = None))]
    fn new(
        py: Python<'_>,
        block_size: i64,
        num_blocks: i64,
        kind: &str,
        alignment: i64,
        grow: bool,
        max_blocks: Option<i64>,
    ) -> PyResult<Self> {
        let kind = parse_kind(kind)?;
        let config = PoolConfig {
            block_size: positive("block_size", block_size)?,
            num_blocks: positive("num_blocks", num_blocks)?,
            alignment: positive("alignment", alignment)?,
            grow,
            max_blocks: max_blocks.map(|m| positive("max_blocks", m)).transpose()?,
            kind,
        };
        let pool = if kind == MemoryKind::Host {
            py.detach(|| Pool::new(config))?
        } else {
            // Fails with DeviceUnavailableError naming what is missing (CuPy, a device).
            py.import("fastprep._cupy_memory")?
                .call_method1("require", (kind.name(),))?;
            Pool::with_allocator(config, Box::new(CupyAllocator { kind }))?
        };
        Ok(Self { pool })
    }

    /// A block, waiting up to `timeout` seconds (None: until one is free) for one to be
    /// released. Raises PoolExhaustedError when the time runs out.
    #[pyo3(signature = (timeout = None))]
    fn acquire(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<PyBlock> {
        if let Some(raw) = self.pool.try_acquire_raw_quiet()? {
            return Ok(PyBlock::new(&self.pool, raw));
        }
        let start = Instant::now();
        let deadline = match timeout {
            None => None,
            Some(t) if t.is_finite() && t >= 0.0 => Some(start + Duration::from_secs_f64(t)),
            Some(t) if t == f64::INFINITY => None,
            Some(t) => {
                return Err(PyValueError::new_err(format!(
                    "timeout must be None or a number of seconds >= 0, got {t}"
                )))
            }
        };
        self.pool.note_wait();
        loop {
            let slice_end = Instant::now() + WAIT_SLICE;
            let until = deadline.map_or(slice_end, |d| d.min(slice_end));
            let pool = &self.pool;
            if let Some(raw) = py.detach(|| pool.wait_until(until)) {
                return Ok(PyBlock::new(&self.pool, raw));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(self.pool.exhausted_error(Some(start.elapsed())).into());
            }
            py.check_signals()?;
        }
    }

    /// A block if one is free now (or the pool may grow), else None.
    fn try_acquire(&self) -> PyResult<Option<PyBlock>> {
        Ok(self
            .pool
            .try_acquire_raw()?
            .map(|raw| PyBlock::new(&self.pool, raw)))
    }

    /// Gives `block` back; the same as `block.release()`, but checks that it came from this pool.
    fn release(&self, block: &Bound<'_, PyBlock>) -> PyResult<()> {
        let block = block.get();
        if !Arc::ptr_eq(&block.pool, &self.pool) {
            return Err(PoolError::ForeignBlock.into());
        }
        block.release()
    }

    /// Counters: block_size, capacity, in_use, high_water, acquires, releases, waits,
    /// exhausted, grows.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.pool.stats();
        let d = PyDict::new(py);
        d.set_item("block_size", s.block_size)?;
        d.set_item("capacity", s.capacity)?;
        d.set_item("in_use", s.in_use)?;
        d.set_item("high_water", s.high_water)?;
        d.set_item("acquires", s.acquires)?;
        d.set_item("releases", s.releases)?;
        d.set_item("waits", s.waits)?;
        d.set_item("exhausted", s.exhausted)?;
        d.set_item("grows", s.grows)?;
        Ok(d)
    }

    #[getter]
    fn block_size(&self) -> usize {
        self.pool.block_size()
    }

    #[getter]
    fn capacity(&self) -> usize {
        self.pool.capacity()
    }

    #[getter]
    fn kind(&self) -> &'static str {
        self.pool.kind().name()
    }

    #[getter]
    fn alignment(&self) -> usize {
        self.pool.config().alignment
    }

    #[getter]
    fn grow(&self) -> bool {
        self.pool.config().grow
    }

    #[getter]
    fn max_blocks(&self) -> Option<usize> {
        self.pool.config().max_blocks
    }

    /// Bytes reserved by all chunks (blocks rounded up to the alignment).
    #[getter]
    fn reserved_bytes(&self) -> usize {
        self.pool.reserved_bytes()
    }

    fn __repr__(&self) -> String {
        let s = self.pool.stats();
        format!(
            "BlockPool(block_size={}, capacity={}, kind='{}', alignment={}, grow={}, in_use={})",
            s.block_size,
            s.capacity,
            self.pool.kind().name(),
            self.pool.config().alignment,
            if self.pool.config().grow {
                "True"
            } else {
                "False"
            },
            s.in_use
        )
    }
}

/// The buffer format of a block: unsigned bytes.
static FORMAT: &CStr = c"B";

const LIVE: u8 = 0;
const RELEASING: u8 = 1;
const RELEASED: u8 = 2;

/// One block of a BlockPool.
#[pyclass(name = "Block", module = "fastprep._core", frozen)]
pub struct PyBlock {
    pool: Arc<Pool>,
    id: u32,
    ptr: usize,
    /// `[len]` for `Py_buffer.shape`; `[1]` for its strides. Must live as long as the object.
    shape: [isize; 1],
    strides: [isize; 1],
    state: AtomicU8,
    exports: AtomicUsize,
}

impl PyBlock {
    fn new(pool: &Arc<Pool>, raw: RawBlock) -> Self {
        Self {
            pool: Arc::clone(pool),
            id: raw.id,
            ptr: raw.ptr as usize,
            // Pool configs are checked to fit in isize.
            shape: [isize::try_from(pool.block_size()).expect("block_size fits in isize")],
            strides: [1],
            state: AtomicU8::new(LIVE),
            exports: AtomicUsize::new(0),
        }
    }

    fn live(&self) -> PyResult<()> {
        if self.state.load(SeqCst) == LIVE {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!(
                "block {} was released; acquire a new one from the pool",
                self.id
            )))
        }
    }
}

impl Drop for PyBlock {
    fn drop(&mut self) {
        // Views hold a reference to this object, so none can be open here.
        if *self.state.get_mut() != RELEASED {
            // SAFETY: acquired in PyBlock::new's caller, not yet released (state says so).
            unsafe { self.pool.release_raw(self.id) }
        }
    }
}

#[pymethods]
impl PyBlock {
    /// Gives the block back to its pool. Releasing again is a no-op; releasing while a
    /// memoryview or numpy array of the block is open raises BufferError.
    fn release(&self) -> PyResult<()> {
        if self
            .state
            .compare_exchange(LIVE, RELEASING, SeqCst, SeqCst)
            .is_err()
        {
            return Ok(());
        }
        let open = self.exports.load(SeqCst);
        if open > 0 {
            self.state.store(LIVE, SeqCst);
            return Err(PyBufferError::new_err(format!(
                "cannot release block {}: {open} view(s) of it (memoryview, numpy array) are still \
                 open; delete them (del array) or let them go out of scope first",
                self.id
            )));
        }
        self.state.store(RELEASED, SeqCst);
        // SAFETY: this object acquired `id`; the state CAS above lets exactly one caller here.
        unsafe { self.pool.release_raw(self.id) };
        Ok(())
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().live()?;
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.release()?;
        Ok(false)
    }

    fn __len__(&self) -> usize {
        self.pool.block_size()
    }

    /// Usable bytes (the pool's block_size).
    #[getter]
    fn nbytes(&self) -> usize {
        self.pool.block_size()
    }

    /// The block's memory address (a device address for kind="cuda").
    #[getter]
    fn address(&self) -> PyResult<usize> {
        self.live()?;
        Ok(self.ptr)
    }

    /// The block's id in its pool.
    #[getter]
    fn index(&self) -> u32 {
        self.id
    }

    #[getter]
    fn kind(&self) -> &'static str {
        self.pool.kind().name()
    }

    #[getter]
    fn released(&self) -> bool {
        self.state.load(SeqCst) == RELEASED
    }

    /// Open buffer-protocol views (memoryview, numpy arrays) of this block.
    #[getter]
    fn exports(&self) -> usize {
        self.exports.load(SeqCst)
    }

    /// CUDA Array Interface v3, for kind="cuda": `cupy.asarray(block)` views the block with no
    /// copy (and keeps it alive). Absent for host and pinned blocks.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.pool.kind() != MemoryKind::Device {
            return Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "a {} block has no __cuda_array_interface__; use memoryview(block) or numpy.frombuffer(block)",
                self.pool.kind().name()
            )));
        }
        self.live()?;
        let d = PyDict::new(py);
        d.set_item("shape", (self.pool.block_size(),))?;
        d.set_item("typestr", "|u1")?;
        d.set_item("data", (self.ptr, false))?;
        d.set_item("strides", py.None())?;
        d.set_item("stream", py.None())?;
        d.set_item("version", 3)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let state = match self.state.load(SeqCst) {
            RELEASED => " released",
            _ => "",
        };
        format!(
            "<fastprep.Block index={} nbytes={} kind='{}' address={:#x}{state}>",
            self.id,
            self.pool.block_size(),
            self.pool.kind().name(),
            self.ptr
        )
    }

    #[allow(clippy::needless_pass_by_value)] // PyO3 hands the receiver over by value
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let this = slf.get();
        if !this.pool.kind().host_accessible() {
            return Err(PyBufferError::new_err(
                "a cuda block holds device memory, which the CPU cannot read; view it with \
                 cupy.asarray(block) (through __cuda_array_interface__)",
            ));
        }
        if view.is_null() {
            return Err(PyBufferError::new_err("Py_buffer view is NULL"));
        }
        // Count first, then check the state: release() does the opposite, so one of the two
        // always sees the other.
        this.exports.fetch_add(1, SeqCst);
        if let Err(e) = this.live() {
            this.exports.fetch_sub(1, SeqCst);
            return Err(e);
        }
        // SAFETY: `view` is non-null and ours to fill (CPython's getbuffer contract). `shape` and
        // `strides` point into this object, which `obj` keeps alive as long as the view.
        unsafe {
            (*view).buf = this.ptr as *mut c_void;
            (*view).obj = slf.clone().into_any().into_ptr();
            (*view).len = this.shape[0];
            (*view).itemsize = 1;
            (*view).readonly = 0;
            (*view).ndim = 1;
            (*view).format = if flags & pyo3::ffi::PyBUF_FORMAT == pyo3::ffi::PyBUF_FORMAT {
                FORMAT.as_ptr().cast_mut()
            } else {
                std::ptr::null_mut()
            };
            (*view).shape = if flags & pyo3::ffi::PyBUF_ND == pyo3::ffi::PyBUF_ND {
                this.shape.as_ptr().cast_mut()
            } else {
                std::ptr::null_mut()
            };
            (*view).strides = if flags & pyo3::ffi::PyBUF_STRIDES == pyo3::ffi::PyBUF_STRIDES {
                this.strides.as_ptr().cast_mut()
            } else {
                std::ptr::null_mut()
            };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = std::ptr::null_mut();
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {
        self.exports.fetch_sub(1, SeqCst);
    }
}

/// Test hook: `threads` Rust threads (no GIL) each run `iterations` acquire, write a tag, verify,
/// release cycles on `pool`, alongside whatever Python threads do with it. Returns
/// `(cycles, mismatches)`: a mismatch means another holder wrote into a block this thread held.
#[pyfunction]
#[pyo3(name = "_pool_stress", signature = (pool, threads, iterations, timeout = 60.0))]
pub fn pool_stress(
    py: Python<'_>,
    pool: &Bound<'_, PyBlockPool>,
    threads: usize,
    iterations: usize,
    timeout: f64,
) -> PyResult<(u64, u64)> {
    let pool = Arc::clone(&pool.get().pool);
    if !pool.kind().host_accessible() {
        return Err(PyTypeError::new_err(
            "_pool_stress needs a host or pinned pool",
        ));
    }
    let timeout = Duration::from_secs_f64(timeout);
    let result = py.detach(|| {
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    let pool = Arc::clone(&pool);
                    s.spawn(move || -> Result<(u64, u64), PoolError> {
                        let (mut cycles, mut bad) = (0u64, 0u64);
                        for i in 0..iterations {
                            let mut block = pool.acquire(Some(timeout))?;
                            let tag = (0xFA57_0000_0000_0000u64 | ((t as u64) << 32) | i as u64)
                                .to_le_bytes();
                            let bytes = block.as_mut_slice().expect("host-accessible");
                            let n = bytes.len().min(4096) / 8 * 8;
                            for c in bytes[..n].chunks_exact_mut(8) {
                                c.copy_from_slice(&tag);
                            }
                            std::thread::yield_now();
                            let bytes = block.as_slice().expect("host-accessible");
                            bad += u64::from(!bytes[..n].chunks_exact(8).all(|c| c == tag));
                            cycles += 1;
                        }
                        Ok((cycles, bad))
                    })
                })
                .collect();
            workers.into_iter().try_fold((0, 0), |(c, b), w| {
                let (wc, wb) = w.join().expect("stress worker panicked")?;
                Ok::<_, PoolError>((c + wc, b + wb))
            })
        })
    })?;
    Ok(result)
}
