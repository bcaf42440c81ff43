//! Python ints for token ids, and the `ids` lists built from them.
//!
//! Building `Encoding.ids` was most of a short call, and with the core's speed it became 40% of
//! a batch: one int per token. The ints are made once per id and shared, so a list costs one
//! refcount bump and one store per token. Through the stable C API that is two calls per token
//! (`Py_IncRef`, `PyList_SetItem`: 14% of a `.ids` profile, on top of the stores); where the
//! interpreter lays a list out as CPython does (checked once against a real list, see
//! `ListLayout`), the list is filled by storing into its item array and bumping the refcounts in
//! place, which is what `Py_INCREF` compiles to for a C extension of the 3.11 limited API (the
//! refcount is the first member of `PyObject` in the stable ABI; CPython 3.12+ keep such
//! extensions working). Ids below 257 are CPython's shared small ints, immortal from 3.12, whose
//! refcount only the interpreter may touch: they go through `Py_IncRef`.
use super::threads;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyList;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, PoisonError};

/// Lists of at least this many ids (a long text's, ~250 KB of it) are filled on the pool.
const PARALLEL_LIST_MIN: usize = 1 << 16;

/// A part of a list to fill: the list, its first slot, and the ids to write from there.
type Part<'a> = (&'a Py<PyList>, usize, &'a [u32]);

/// Ids at or below this are CPython's small ints (shared, immortal from 3.12).
const SMALL_INT_MAX: u32 = 256;

/// Where a list keeps its item array: `PyObject_VAR_HEAD` (refcount, type, size) and then the
/// `PyObject **ob_item` pointer, as every CPython from 3.0 has it. Not part of the limited API,
/// so it is read off a real list once per process before it is trusted.
#[derive(Clone, Copy)]
struct ListLayout {
    /// The item pointer's place in the object, in pointer-sized words.
    items_word: usize,
}

impl ListLayout {
    /// The layout, if a list made here has its items where CPython keeps them.
    fn get(py: Python<'_>) -> Option<Self> {
        static LAYOUT: PyOnceLock<Option<ListLayout>> = PyOnceLock::new();
        *LAYOUT.get_or_init(py, || {
            let items_word = 3;
            // SAFETY: C-API calls with the GIL held on objects made here; the read at `items_word`
            // stays inside the list object (a `PyVarObject` plus the item pointer, on every
            // CPython), and the pointer read is only followed once it is non-NULL.
            unsafe {
                let probe = ffi::PyLong_FromLong(123_456_789);
                let list = ffi::PyList_New(2);
                if probe.is_null() || list.is_null() {
                    ffi::PyErr_Clear();
                    ffi::Py_XDECREF(probe);
                    ffi::Py_XDECREF(list);
                    return None;
                }
                ffi::Py_IncRef(probe);
                ffi::PyList_SetItem(list, 1, probe);
                let items = *list.cast::<*const *mut ffi::PyObject>().add(items_word);
                let ok = !items.is_null() && (*items).is_null() && *items.add(1) == probe;
                ffi::Py_DecRef(list);
                ffi::Py_DecRef(probe);
                ok.then_some(ListLayout { items_word })
            }
        })
    }

    /// The item array of `list`, a list of this layout.
    ///
    /// # Safety
    /// `list` is a live list object, and `self` came from `get`.
    unsafe fn items(self, list: *mut ffi::PyObject) -> *mut *mut ffi::PyObject {
        // SAFETY: the caller's contract: a live list, whose item pointer is at `items_word`.
        unsafe { *list.cast::<*mut *mut ffi::PyObject>().add(self.items_word) }
    }
}

/// Adds `n` references to the int `p` of the id `id`.
///
/// # Safety
/// The GIL is held, `p` is a live int, and `id` is its value.
#[inline]
unsafe fn add_refs(p: *mut ffi::PyObject, id: u32, n: usize) {
    // SAFETY: the caller's contract. Past the small ints, the refcount in place (see the
    // module doc): such an int is an ordinary object, and the GIL is held.
    unsafe {
        if id > SMALL_INT_MAX {
            *p.cast::<ffi::Py_ssize_t>() += n as ffi::Py_ssize_t;
        } else {
            for _ in 0..n {
                ffi::Py_IncRef(p);
            }
        }
    }
}

/// A new list of `n` NULL slots.
fn new_list(py: Python<'_>, n: usize) -> PyResult<Bound<'_, PyList>> {
    let n = ffi::Py_ssize_t::try_from(n).expect("length fits");
    // SAFETY: a new list of `n` NULL slots, or NULL with an exception set. A list dropped with
    // slots still NULL (an error part way) is allowed.
    unsafe {
        let list = ffi::PyList_New(n);
        if list.is_null() {
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, list).cast_into_unchecked::<PyList>())
    }
}

/// Python ints for token ids, made once per id and shared.
///
/// A slot is a bare pointer (8 bytes; the ints themselves are owned by `owned`): the slot table
/// is read once per token at random, and profiles of `.ids` showed two thirds of its own time
/// waiting on that read when slots were 16-byte `OnceLock`s. Half the size keeps twice as many
/// of the (frequent, low) ids in L2.
pub struct IntCache {
    slots: Box<[AtomicPtr<ffi::PyObject>]>,
    /// The ints the slots point at, kept alive here (and released with the GIL's rules when the
    /// cache is dropped). Appended only when an id is first seen.
    owned: Mutex<Vec<Py<PyAny>>>,
}

impl IntCache {
    pub fn new(n: usize) -> Self {
        Self {
            slots: (0..n)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            owned: Mutex::new(Vec::new()),
        }
    }

    /// A new reference to the int `id`.
    #[inline]
    fn get(&self, py: Python<'_>, id: u32) -> *mut ffi::PyObject {
        if id as usize >= self.slots.len() {
            return id.into_pyobject(py).expect("int").into_ptr();
        }
        let p = self.borrowed(py, id);
        // SAFETY: `p` points at an int that `owned` keeps alive for as long as `self`; the GIL
        // is held (`py`).
        unsafe { ffi::Py_IncRef(p) };
        p
    }

    /// The int of `id` (< the slot count), made if it is not yet: a borrowed pointer, alive
    /// as long as `self`.
    #[inline]
    fn borrowed(&self, py: Python<'_>, id: u32) -> *mut ffi::PyObject {
        let slot = &self.slots[id as usize];
        let p = slot.load(Ordering::Acquire);
        if p.is_null() {
            return self.make(py, slot, id);
        }
        p
    }

    #[cold]
    #[inline(never)]
    fn make(&self, py: Python<'_>, slot: &AtomicPtr<ffi::PyObject>, id: u32) -> *mut ffi::PyObject {
        let mut owned = self.owned.lock().unwrap_or_else(PoisonError::into_inner);
        // Another thread may have made it meanwhile (without a GIL, or before this one took
        // the lock).
        let mut p = slot.load(Ordering::Acquire);
        if p.is_null() {
            let int = id.into_pyobject(py).expect("int").into_any().unbind();
            p = int.as_ptr();
            owned.push(int);
            slot.store(p, Ordering::Release);
        }
        p
    }

    /// The list of `ids`. A long one (a long text's) is filled on the pool, as a batch's are.
    pub fn list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        // The length first: `resolve` reads the environment, too much for every short list.
        let threads = if ids.len() >= PARALLEL_LIST_MIN {
            threads::resolve(None)
        } else {
            1
        };
        if threads > 1 {
            let list = Self::empty_lists(py, std::iter::once(ids.len()))?.remove(0);
            let chunk = ids.len().div_ceil(threads * 4);
            let parts: Vec<Part<'_>> = ids
                .chunks(chunk)
                .enumerate()
                .map(|(k, row)| (&list, k * chunk, row))
                .collect();
            self.fill_parts(py, &parts, threads);
            return Ok(list.into_bound(py));
        }
        let list = new_list(py, ids.len())?;
        if let Some(layout) = ListLayout::get(py) {
            // SAFETY: a list no one else has seen, of `ids.len()` NULL slots, each written once
            // with a new reference (`add_refs` on an int `borrowed` keeps alive, or a new int).
            unsafe {
                let items = layout.items(list.as_ptr());
                for (i, &id) in ids.iter().enumerate() {
                    *items.add(i) = if (id as usize) < self.slots.len() {
                        let p = self.borrowed(py, id);
                        add_refs(p, id, 1);
                        p
                    } else {
                        id.into_pyobject(py).expect("int").into_ptr()
                    };
                }
            }
        } else {
            let list = list.clone().unbind();
            self.fill_parts_api(py, &[(&list, 0, ids)]);
        }
        Ok(list)
    }

    /// New lists of `lens` NULL slots each, for `fill`, which they must go through before any
    /// Python code sees them. They stay tracked by the garbage collector, as `PyList_New` made
    /// them: the collections that the call's other allocations start find them empty (a walk
    /// over NULL slots) and move them to an older generation, so the first collection after the
    /// call no longer walks the whole batch's ids in them. They were untracked until `fill`
    /// before, and that first collection walked all 1.58M ids of the test batch every round
    /// (batch + `.ids` on the 5 MB corpus: median 22.9-23.8 -> 20.4-20.9 ms, alternating). A
    /// collection meanwhile can show them to `gc.get_objects()` in a `gc.callbacks` function,
    /// as it can any object under construction (the `gc` docs warn of it); nothing else can.
    pub fn empty_lists(
        py: Python<'_>,
        lens: impl Iterator<Item = usize>,
    ) -> PyResult<Vec<Py<PyList>>> {
        lens.map(|n| Ok(new_list(py, n)?.unbind())).collect()
    }

    /// Fills `lists` (from `empty_lists`, one per row) with the ids of many rows at once (a
    /// batch's `ids`). Token by token, `list` touches the refcount of an int at random in memory
    /// (a cache miss for most of a large batch's ids); here each int gets all the references the
    /// batch takes of it at once, one int after the other, and the lists are then filled with no
    /// refcount to touch (2x faster on the test corpus through the C API, when that was one
    /// `Py_IncRef` call per use). Counting the uses and filling the lists touch no Python object,
    /// so they run on `threads` threads (on one, 6 ms of the 5 MB test batch's 30): the GIL stays
    /// held meanwhile, so no Python code can see the half-filled lists, and only the refcounts
    /// are bumped, here, under it. (Filling and counting in one pass per job, each job then
    /// adding its counts to the refcounts atomically, measured slower here: 38-40 ms against
    /// 28-39 for the batch.) The caller fills the lists last, once every object that holds them
    /// is made: an allocation can start a garbage collection, which walks every young list's
    /// items, and empty slots cost it little (see `empty_lists`).
    pub fn fill(&self, py: Python<'_>, lists: &[Py<PyList>], rows: &[&[u32]], threads: usize) {
        debug_assert_eq!(lists.len(), rows.len());
        let parts: Vec<Part<'_>> = lists.iter().zip(rows).map(|(l, r)| (l, 0, *r)).collect();
        self.fill_parts(py, &parts, threads);
    }

    /// `fill` of parts of lists: each `(list, first, ids)` writes `ids` into the slots of
    /// `list` from `first` on. The parts of one list must not overlap.
    ///
    /// One pass per share of the parts, on the pool: each id's int (if made) stored into its
    /// list slot and its use counted in the share's own table (counting first and filling after
    /// read every id twice: the counting pass was 1-2 ms of the test batch's ~25). Then, with
    /// the GIL (held throughout, so no Python code sees a list before it is full), each int gets
    /// its references in one step, and the rare slots left (an id whose int was not made yet, or
    /// past the cache) are filled.
    fn fill_parts(&self, py: Python<'_>, parts: &[Part<'_>], threads: usize) {
        let Some(layout) = ListLayout::get(py) else {
            return self.fill_parts_api(py, parts);
        };
        let slots = self.slots.len();
        let jobs: Vec<(&[u32], Items)> = parts
            .iter()
            // SAFETY: `list` is a live list of this layout, of at least `first + row.len()`
            // slots.
            .map(|&(list, first, row)| {
                (
                    row,
                    Items(unsafe { layout.items(list.as_ptr()).add(first) }),
                )
            })
            .collect();
        // One share a thread, cut where each has about as many ids as the others.
        let total: usize = parts.iter().map(|p| p.2.len()).sum();
        let per_share = total.div_ceil(threads.max(1)).max(1);
        let mut shares: Vec<&[(&[u32], Items)]> = Vec::with_capacity(threads);
        let (mut start, mut ids) = (0, 0);
        for (k, job) in jobs.iter().enumerate() {
            ids += job.0.len();
            if ids >= per_share || k + 1 == jobs.len() {
                shares.push(&jobs[start..=k]);
                (start, ids) = (k + 1, 0);
            }
        }
        // Per share: the uses of each cached int, and how many slots were left to fill under
        // the GIL (each holding its id, tagged: `id << 1 | 1`, never an object's address).
        let done = threads::map(threads, &shares, |share| {
            let mut uses = vec![0u32; slots];
            let mut left = 0usize;
            for (row, items) in *share {
                for (i, &id) in row.iter().enumerate() {
                    let p = match self.slots.get(id as usize) {
                        Some(slot) => {
                            uses[id as usize] += 1;
                            slot.load(Ordering::Acquire)
                        }
                        None => std::ptr::null_mut(),
                    };
                    let p = if p.is_null() {
                        left += 1;
                        ((id as usize) << 1 | 1) as *mut ffi::PyObject
                    } else {
                        p
                    };
                    // SAFETY: an in-range slot of a list that only this job writes and that
                    // nothing reads until the slots left are filled below (the GIL is held
                    // throughout); an int's address gets the reference counted below.
                    unsafe { *items.0.add(i) = p };
                }
            }
            (uses, left)
        });
        // The first share's table takes the others' counts.
        let lefts: Vec<usize> = done.iter().map(|d| d.1).collect();
        let mut tables = done.into_iter().map(|d| d.0);
        let mut uses = tables.next().unwrap_or_default();
        for more in tables {
            for (u, m) in uses.iter_mut().zip(more) {
                *u += m;
            }
        }
        for (id, &n) in uses.iter().enumerate() {
            if n > 0 {
                // Makes the int if it is not yet (an id new to this cache: its slots left).
                let p = self.borrowed(py, id as u32);
                // SAFETY: a live int (see `borrowed`) of value `id`; the GIL is held.
                unsafe { add_refs(p, id as u32, n as usize) };
            }
        }
        // The slots left (the first batches of a process, and ids past the cache).
        for (share, _) in shares.iter().zip(lefts).filter(|(_, n)| *n > 0) {
            for (row, items) in *share {
                for i in 0..row.len() {
                    // SAFETY: in range of this job's slots, all written above.
                    let slot = unsafe { items.0.add(i) };
                    let tagged = unsafe { *slot } as usize;
                    if tagged & 1 == 1 {
                        let id = (tagged >> 1) as u32;
                        let p = if (id as usize) < slots {
                            // Made above, its references counted.
                            self.slots[id as usize].load(Ordering::Relaxed)
                        } else {
                            id.into_pyobject(py).expect("int").into_ptr()
                        };
                        // SAFETY: as above; `p` is a reference the list takes over.
                        unsafe { *slot = p };
                    }
                }
            }
        }
    }

    /// `fill_parts` through the C API (where the list layout is not CPython's).
    fn fill_parts_api(&self, py: Python<'_>, parts: &[Part<'_>]) {
        for &(list, first, row) in parts {
            for (i, &id) in row.iter().enumerate() {
                // SAFETY: an in-range NULL slot of a new list; `get` gives the reference that
                // PyList_SetItem takes over.
                unsafe {
                    ffi::PyList_SetItem(
                        list.as_ptr(),
                        (first + i) as ffi::Py_ssize_t,
                        self.get(py, id),
                    );
                }
            }
        }
    }
}

/// A list's item array, written by one pool job while the GIL holder waits for the pool.
struct Items(*mut *mut ffi::PyObject);

// SAFETY: each `Items` is written by the one job it belongs to, while the thread that made the
// list holds the GIL and waits for the pool (see `IntCache::lists`).
unsafe impl Send for Items {}
unsafe impl Sync for Items {}
