"""The pool soak: buffers of image-like sizes taken and returned for many cycles, through a
BlockPool and through fresh numpy allocations, with RSS sampled along the way.

Shared by ``python -m fastprep demo`` and ``benches/bench_pool_soak.py``.
"""

from __future__ import annotations

import gc
import os
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from .pool import BlockPool

PAGE = 4096
MIN_BYTES = 150 * 1024  # a small JPEG thumbnail decoded
MAX_BYTES = 6 * 1024 * 1024  # a 2048 x 1024 RGB frame


def rss_bytes() -> int:
    """Resident set size of this process now (Linux /proc; peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def image_sizes(n: int, seed: int = 0) -> Any:
    """``n`` buffer sizes as a decode stage would ask for: log-uniform between 150 KB and 6 MB,
    rounded to whole RGB rows of a 4:3 frame."""
    import numpy as np

    rng = np.random.default_rng(seed)
    raw = np.exp(rng.uniform(np.log(MIN_BYTES), np.log(MAX_BYTES), n))
    width = np.sqrt(raw / 3 * 4 / 3).astype(np.int64)
    height = (raw / 3 / np.maximum(width, 1)).astype(np.int64)
    return np.clip(width * height * 3, MIN_BYTES, MAX_BYTES)


@dataclass
class SoakResult:
    impl: str
    cycles: int
    in_flight: int
    seconds: float
    rss_start: int
    rss_after_warmup: int
    rss_peak: int
    rss_final: int
    alloc_ns_p50: float
    alloc_ns_p95: float
    alloc_ns_p99: float
    samples: list[int] = field(default_factory=list, repr=False)

    @property
    def growth_after_warmup(self) -> float:
        """Relative RSS growth from the end of warm-up to the end of the run."""
        return (self.rss_final - self.rss_after_warmup) / self.rss_after_warmup

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("samples")
        d["growth_after_warmup"] = self.growth_after_warmup
        return d


def soak(impl: str, cycles: int, *, in_flight: int = 8, warmup: float = 0.1, seed: int = 0) -> SoakResult:
    """Run ``cycles`` take-touch-return cycles with ``in_flight`` buffers held at once.

    ``impl`` is ``"pool"`` (one BlockPool of 6 MB blocks) or ``"numpy"`` (``numpy.empty`` each
    time). Each buffer gets one byte written per page over its used size, as a decoder filling it
    would fault every page in. The allocation call alone is timed for the percentiles.
    """
    import numpy as np

    sizes = image_sizes(cycles, seed).tolist()
    held: deque[Any] = deque()
    # Written now, so that its pages are resident before the first RSS sample (np.empty and
    # np.zeros map pages lazily, which would show up as 8 MB of "growth" per 1M cycles).
    alloc_ns = np.ones(cycles, dtype=np.int64)
    samples: list[int] = []
    every = max(1, cycles // 200)
    warm_at = int(cycles * warmup)
    gc.collect()
    rss_start = rss_after_warmup = rss_peak = rss_bytes()
    clock = time.perf_counter_ns
    pool = BlockPool(MAX_BYTES, in_flight + 1) if impl == "pool" else None
    t0 = time.perf_counter()
    for i, size in enumerate(sizes):
        if pool is not None:
            a = clock()
            block = pool.acquire()
            alloc_ns[i] = clock() - a
            view = np.frombuffer(memoryview(block), dtype=np.uint8, count=size)
            view[::PAGE] = i & 0xFF
            del view
            held.append(block)
            if len(held) > in_flight:
                held.popleft().release()
        else:
            a = clock()
            arr = np.empty(size, dtype=np.uint8)
            alloc_ns[i] = clock() - a
            arr[::PAGE] = i & 0xFF
            held.append(arr)
            if len(held) > in_flight:
                held.popleft()
        if i % every == 0:
            rss = rss_bytes()
            samples.append(rss)
            rss_peak = max(rss_peak, rss)
            if i <= warm_at:
                rss_after_warmup = rss
    seconds = time.perf_counter() - t0
    rss_final = rss_bytes()
    rss_peak = max(rss_peak, rss_final)
    for b in held:
        if pool is not None:
            b.release()
    held.clear()
    p50, p95, p99 = np.percentile(alloc_ns, [50, 95, 99]).tolist()
    return SoakResult(
        impl,
        cycles,
        in_flight,
        seconds,
        rss_start,
        rss_after_warmup,
        rss_peak,
        rss_final,
        p50,
        p95,
        p99,
        samples,
    )


def alloc_latency_ns(impl: str, nbytes: int, repeats: int = 20_000) -> dict[str, float]:
    """P50/P95/P99 of one take+return of ``nbytes``, timed in batches of 100 calls to stay above
    the clock's resolution."""
    import numpy as np

    batch = 100
    if impl == "bytearray" and nbytes >= 1 << 20:
        repeats //= 20  # zero-filling megabytes costs ~0.5 ms a call; fewer samples suffice
    out = np.empty(max(10, repeats // batch), dtype=np.float64)
    clock = time.perf_counter_ns
    if impl == "pool":
        pool = BlockPool(nbytes, 4)
        acquire = pool.acquire
        for k in range(out.size):
            a = clock()
            for _ in range(batch):
                acquire().release()
            out[k] = (clock() - a) / batch
    elif impl == "numpy":
        empty, u8 = np.empty, np.uint8
        for k in range(out.size):
            a = clock()
            for _ in range(batch):
                empty(nbytes, u8)
            out[k] = (clock() - a) / batch
    elif impl == "bytearray":
        for k in range(out.size):
            a = clock()
            for _ in range(batch):
                bytearray(nbytes)
            out[k] = (clock() - a) / batch
    else:
        raise ValueError(f"impl must be 'pool', 'numpy' or 'bytearray', got {impl!r}")
    p50, p95, p99 = np.percentile(out, [50, 95, 99]).tolist()
    return {"p50": p50, "p95": p95, "p99": p99}


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
