//! fastprep's rayon pool for batch calls, sized by `num_threads` or `FASTPREP_NUM_THREADS`.
//!
//! Fork safety: a child process after `fork()` has none of the parent's pool threads, so a pool
//! inherited from the parent would wait forever (HF tokenizers' known deadlock). Each pool is tagged
//! with the pid that built it; a process that finds a pool of another pid builds its own. The
//! lookup is one atomic load (no lock that a fork could leave held).
use std::sync::atomic::{AtomicPtr, Ordering};

struct Entry {
    pid: u32,
    threads: usize,
    pool: rayon::ThreadPool,
}

static POOL: AtomicPtr<Entry> = AtomicPtr::new(std::ptr::null_mut());

/// Threads a batch call uses: the argument, else FASTPREP_NUM_THREADS, else the CPU count.
pub fn resolve(num_threads: Option<usize>) -> usize {
    num_threads
        .filter(|&n| n > 0)
        .or_else(|| {
            std::env::var("FASTPREP_NUM_THREADS")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|&n: &usize| n > 0)
        })
        .unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        })
}

/// Runs `f` on a pool of `threads` threads of this process (inline when `threads == 1`).
pub fn run<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    if threads <= 1 {
        return f();
    }
    let pid = std::process::id();
    let cur = POOL.load(Ordering::Acquire);
    // SAFETY: entries are leaked, never freed, so a loaded pointer stays valid.
    if let Some(e) = unsafe { cur.as_ref() } {
        if e.pid == pid && e.threads == threads {
            return e.pool.install(f);
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("fastprep-{i}"))
        .build()
        .expect("could not start fastprep's thread pool");
    // Leaked on purpose: another thread may still be using the previous entry, and an entry of a
    // parent process must never be dropped (its threads do not exist here).
    let entry = Box::leak(Box::new(Entry { pid, threads, pool }));
    POOL.store(entry, Ordering::Release);
    entry.pool.install(f)
}
