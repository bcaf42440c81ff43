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
    /// The pool's threads, by index, as `map_slots` steers them.
    helpers: std::sync::Arc<[steer::Helper]>,
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
///
/// The pool thread that takes `f` keeps the others off its CPU while `f` runs (`steer`, as
/// `map_slots` does for its caller): the threads it wakes as its parallel iterators split the
/// work then start on another CPU. On a 2-CPU VM the kernel otherwise queued the woken thread
/// behind the waker for a scheduler tick or two in most batches (o200k batches on 2 threads
/// measured 0.8-1.1x one thread at the median, 1.8x only in their best rounds).
pub fn run<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    if threads <= 1 {
        return f();
    }
    let e = pool(threads);
    e.pool.install(|| {
        let _steered = steer::Steered::away_from_current(&e.helpers, rayon::current_thread_index());
        f()
    })
}

/// This process's pool of `threads` threads, started on first use.
fn pool(threads: usize) -> &'static Entry {
    let pid = std::process::id();
    if let Some(e) = POOLS
        .iter()
        .filter_map(entry)
        .find(|e| e.pid == pid && e.threads == threads)
    {
        return e;
    }
    let helpers: std::sync::Arc<[steer::Helper]> =
        (0..threads).map(|_| steer::Helper::default()).collect();
    let seen = std::sync::Arc::clone(&helpers);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("fastprep-{i}"))
        .start_handler(move |i| seen[i].register())
        .build()
        .expect("could not start fastprep's thread pool");
    // Leaked on purpose: other threads may hold a reference, and an entry of a parent process
    // must never be dropped (its threads do not exist here).
    let new = Box::into_raw(Box::new(Entry {
        pid,
        threads,
        pool,
        helpers,
    }));
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
            return unsafe { &*new };
        }
    }
    // Every slot holds a pool of this process: use one, and let the new pool go.
    // SAFETY: `new` was published nowhere, so this is its only owner.
    drop(unsafe { Box::from_raw(new) });
    POOLS
        .iter()
        .filter_map(entry)
        .find(|e| e.pid == pid)
        .expect("a pool of this process")
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
///
/// The calling thread is one of the `threads` (`threads - 1` pool threads help it): it
/// is already running on a CPU, so it starts on the first item at once, where handing the batch
/// to the pool put it to sleep and woke a pool thread that then woke the next. And each helper
/// is woken onto a CPU other than the caller's (`steer`): on a 2-CPU VM the kernel put the
/// woken helper on the caller's busy CPU in about half the batches, where it waited 2-5 ms (a
/// scheduler tick or two) to be moved to the idle one, which made 2 threads 1.3-1.5x one
/// instead of 1.9x.
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
    // Items being worked on: the caller, out of items, waits for this to reach 0 before it
    // blocks (see below).
    let busy = AtomicUsize::new(0);
    let worker = || loop {
        busy.fetch_add(1, Ordering::AcqRel);
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(&i) = order.get(k) else {
            busy.fetch_sub(1, Ordering::AcqRel);
            break;
        };
        let slot = slots[i]
            .lock()
            .expect("slot")
            .take()
            .expect("each slot once");
        let r = f(&items[i], slot);
        *results[i].lock().expect("result") = Some(r);
        busy.fetch_sub(1, Ordering::AcqRel);
    };
    // The pool of `threads`, shared with `run`'s calls (one pool per size keeps a process at
    // `threads` pool threads); `threads - 1` of them are woken, whichever rayon picks.
    let e = pool(threads);
    steer::away_from_caller(&e.helpers, None);
    e.pool.in_place_scope(|s| {
        for h in 0..threads - 1 {
            let (worker, helpers) = (&worker, &e.helpers);
            s.spawn(move |_| {
                steer::release(helpers, rayon::current_thread_index().unwrap_or(h));
                worker();
            });
        }
        worker();
        // The helpers finish their last items (at most one each, the cheapest of the batch):
        // wait for them here, yielding, rather than on the scope's latch, where this thread
        // would sleep, its CPU halt, and a helper's wake-up of it add a VM exit and entry.
        let since = std::time::Instant::now();
        while busy.load(Ordering::Acquire) > 0 && since.elapsed() < TAIL_WAIT {
            std::thread::yield_now();
        }
    });
    steer::release_all(&e.helpers);
    results
        .into_iter()
        .map(|m| m.into_inner().expect("result").expect("every item ran"))
        .collect()
}

/// How long the caller of `map_slots` waits for its helpers' last items before blocking: a few
/// images' time (a 500x375 JPEG takes ~0.65 ms); longer tails block.
const TAIL_WAIT: std::time::Duration = std::time::Duration::from_millis(2);

/// Where a pool thread may be woken: away from the CPU of the thread that wakes it.
#[cfg(target_os = "linux")]
mod steer {
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
    use std::sync::OnceLock;

    /// A pool thread: its id and the CPUs it may run on (those of the thread that started the
    /// pool), recorded when it starts, and whether it is steered now.
    #[derive(Default)]
    pub struct Helper {
        tid: AtomicI32,
        cpus: OnceLock<libc::cpu_set_t>,
        steered: AtomicBool,
    }

    impl Helper {
        /// Called on the pool thread itself as it starts.
        pub fn register(&self) {
            // SAFETY: plain syscalls on this thread; `set` is a properly sized, zeroed cpu_set_t.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw mut set)
                    == 0
                {
                    let _ = self.cpus.set(set);
                    self.tid.store(libc::gettid(), Ordering::Release);
                }
            }
        }
    }

    /// Lets every helper run anywhere it may but on the calling thread's CPU, until `release`:
    /// the kernel then wakes it on another CPU, idle if one is, instead of queueing it behind
    /// the caller. A helper not started yet, or with no other CPU, is left as it is.
    pub fn away_from_caller(helpers: &[Helper], caller: Option<usize>) {
        // SAFETY: a plain query of this thread's CPU.
        let Some(cpu) = usize::try_from(unsafe { libc::sched_getcpu() })
            .ok()
            .filter(|&c| c < libc::CPU_SETSIZE as usize)
        else {
            return;
        };
        for (i, h) in helpers.iter().enumerate() {
            if caller == Some(i) {
                continue;
            }
            let tid = h.tid.load(Ordering::Acquire);
            let Some(cpus) = h.cpus.get() else { continue };
            let mut set = *cpus;
            // SAFETY: CPU_* read and write a valid cpu_set_t at `cpu` < CPU_SETSIZE;
            // sched_setaffinity only reads `set`.
            unsafe {
                if tid == 0 || !libc::CPU_ISSET(cpu, &set) || libc::CPU_COUNT(&set) < 2 {
                    continue;
                }
                libc::CPU_CLR(cpu, &mut set);
                if libc::sched_setaffinity(
                    tid,
                    std::mem::size_of::<libc::cpu_set_t>(),
                    &raw const set,
                ) == 0
                {
                    h.steered.store(true, Ordering::Release);
                }
            }
        }
    }

    /// The other pool threads kept off the current pool thread's CPU (`away_from_caller`)
    /// until this drops, also when the work panics.
    pub struct Steered<'a>(&'a [Helper]);

    impl<'a> Steered<'a> {
        pub fn away_from_current(helpers: &'a [Helper], me: Option<usize>) -> Self {
            away_from_caller(helpers, me);
            Steered(helpers)
        }
    }

    impl Drop for Steered<'_> {
        fn drop(&mut self) {
            release_all(self.0);
        }
    }

    /// Gives back their CPUs to the helpers still steered (whose jobs another helper ran).
    pub fn release_all(helpers: &[Helper]) {
        for h in helpers {
            if !h.steered.swap(false, Ordering::AcqRel) {
                continue;
            }
            let tid = h.tid.load(Ordering::Acquire);
            if let Some(cpus) = h.cpus.get() {
                // SAFETY: sets a pool thread's affinity to a mask the kernel gave it before.
                unsafe {
                    libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), cpus)
                };
            }
        }
    }

    /// Called by helper `index` once running: gives it back all its CPUs (it stays where it
    /// runs), so that other work on the pool is not kept off the caller's CPU.
    pub fn release(helpers: &[Helper], index: usize) {
        let Some(h) = helpers.get(index) else { return };
        if !h.steered.swap(false, Ordering::AcqRel) {
            return;
        }
        if let Some(cpus) = h.cpus.get() {
            // SAFETY: sets this thread's affinity to a mask the kernel gave it before.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), cpus) };
        }
    }
}

/// Elsewhere the kernel's placement is left as it is.
#[cfg(not(target_os = "linux"))]
mod steer {
    #[derive(Default)]
    pub struct Helper;

    impl Helper {
        pub fn register(&self) {}
    }

    pub fn away_from_caller(_: &[Helper], _: Option<usize>) {}

    pub struct Steered;

    impl Steered {
        pub fn away_from_current(_: &[Helper], _: Option<usize>) -> Self {
            Steered
        }
    }

    pub fn release(_: &[Helper], _: usize) {}

    pub fn release_all(_: &[Helper]) {}
}
