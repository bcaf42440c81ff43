//! fastprep's rayon pool for batch calls, sized by `num_threads`, `FASTPREP_NUM_THREADS`, or the
//! CPUs the process is given (`OMP_NUM_THREADS`, affinity, cgroup quota): see `resolve`.
//!
//! Fork safety: a child process after `fork()` has none of the parent's pool threads, so a pool
//! inherited from the parent would wait forever (HF tokenizers' known deadlock). Each pool is tagged
//! with the pid that built it; a process that finds a pool of another pid builds its own. The
//! lookup is a few atomic loads (no lock that a fork could leave held).
use std::sync::atomic::{AtomicPtr, Ordering};

struct Entry {
    pid: u32,
    threads: usize,
    pool: rayon::ThreadPool,
}

/// One pool per (process, thread count) in use, so that calls alternating `num_threads` reuse
/// their pools instead of starting new threads each time. Bounded: past `SLOTS` sizes, a call
/// runs on an existing pool of this process.
const SLOTS: usize = 8;
static POOLS: [AtomicPtr<Entry>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

fn entry(slot: &AtomicPtr<Entry>) -> Option<&'static Entry> {
    // SAFETY: entries are leaked, never freed, so a loaded pointer stays valid.
    unsafe { slot.load(Ordering::Acquire).as_ref() }
}

/// Threads a batch call uses: the argument, else `FASTPREP_NUM_THREADS`, else the CPUs this
/// process may use (`cpus`).
pub fn resolve(num_threads: Option<usize>) -> usize {
    num_threads
        .filter(|&n| n > 0)
        .or_else(|| env_count("FASTPREP_NUM_THREADS"))
        .unwrap_or_else(cpus)
}

fn env_count(name: &str) -> Option<usize> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
}

/// The CPUs this process may use, read once: `OMP_NUM_THREADS` where set (Ray, Dask, Slurm and
/// torch's launchers set it to each worker's share), capped by `available_parallelism`, which on
/// Linux already takes the scheduler affinity mask and the cgroup CPU quota into account. Without
/// this, 4 Ray workers on 2 CPUs would each start 2 threads. (`available_parallelism` reads
/// cgroup files, ~30 us, which made every small batch call cost that much before it was cached.)
fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| {
        let machine = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        env_count("OMP_NUM_THREADS").map_or(machine, |omp| omp.min(machine))
    })
}

/// Runs `f` on a pool of `threads` threads of this process (inline when `threads == 1`).
pub fn run<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    if threads <= 1 {
        return f();
    }
    let pid = std::process::id();
    if let Some(e) = POOLS
        .iter()
        .filter_map(entry)
        .find(|e| e.pid == pid && e.threads == threads)
    {
        return e.pool.install(f);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("fastprep-{i}"))
        .build()
        .expect("could not start fastprep's thread pool");
    // Leaked on purpose: other threads may hold a reference, and an entry of a parent process
    // must never be dropped (its threads do not exist here).
    let new = Box::into_raw(Box::new(Entry { pid, threads, pool }));
    for slot in &POOLS {
        let cur = slot.load(Ordering::Acquire);
        // A free slot, or one left by the parent process before a fork.
        // SAFETY: as in `entry`.
        let reusable = unsafe { cur.as_ref() }.is_none_or(|e| e.pid != pid);
        if reusable
            && slot
                .compare_exchange(cur, new, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // SAFETY: `new` was just leaked from a Box and is never freed.
            return unsafe { &*new }.pool.install(f);
        }
    }
    // Every slot holds a pool of this process: run there, and let the new pool go.
    // SAFETY: `new` was published nowhere, so this is its only owner.
    drop(unsafe { Box::from_raw(new) });
    let e = POOLS
        .iter()
        .filter_map(entry)
        .find(|e| e.pid == pid)
        .expect("a pool of this process");
    e.pool.install(f)
}

/// `f` over `items`, on `threads` threads, in order. With one thread it runs sequentially on the
/// caller's thread: rayon's parallel iterators outside `run` would use rayon's global pool (all
/// cores), which is not what `num_threads=1` asks for.
pub fn map<T: Sync, R: Send>(
    threads: usize,
    items: &[T],
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    use rayon::prelude::*;
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    run(threads, || items.par_iter().map(f).collect())
}

/// `f` over `items` each paired with its own `chunk`-byte slice of `out`, like `map`, results
/// in order. On several threads the items start largest first by `cost` (an estimate), each
/// taken by whichever thread is free: the batch then ends on its cheapest items, so the threads
/// finish together. (rayon's halving splits, fine for even work, left a thread idle while the
/// other finished a slow image, about 3% of a 16-image batch on 2 cores.)
pub fn map_slots<T: Sync, R: Send>(
    threads: usize,
    items: &[T],
    out: &mut [u8],
    chunk: usize,
    cost: impl Fn(&T) -> usize,
    f: impl Fn(&T, &mut [u8]) -> R + Sync + Send,
) -> Vec<R> {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Mutex;
    let chunk = chunk.max(1);
    if threads <= 1 {
        return items
            .iter()
            .zip(out.chunks_mut(chunk))
            .map(|(t, s)| f(t, s))
            .collect();
    }
    let slots: Vec<Mutex<Option<&mut [u8]>>> =
        out.chunks_mut(chunk).map(|s| Mutex::new(Some(s))).collect();
    let n = items.len().min(slots.len());
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&items[i])));
    let results: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let worker = || loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(&i) = order.get(k) else { break };
        let slot = slots[i]
            .lock()
            .expect("slot")
            .take()
            .expect("each slot once");
        let r = f(&items[i], slot);
        *results[i].lock().expect("result") = Some(r);
    };
    run(threads, || {
        rayon::scope(|s| {
            for _ in 1..threads {
                s.spawn(|_| worker());
            }
            worker();
        });
    });
    results
        .into_iter()
        .map(|m| m.into_inner().expect("result").expect("every item ran"))
        .collect()
}
