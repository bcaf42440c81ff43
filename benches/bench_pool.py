"""Take + return one buffer from Python: BlockPool against numpy.empty and bytearray.

    .venv/bin/pytest benches/bench_pool.py --benchmark-group-by=param:size

Goals: <= 300 ns for the pool, and faster than numpy.empty from 64 KiB up.
"""

import numpy as np
import pytest

from fastprep import BlockPool

SIZES = [1 << 10, 64 << 10, 1 << 20, 16 << 20]


def _pool_impl(size):
    pool = BlockPool(size, 4)
    acquire = pool.acquire

    def run():
        block = acquire()
        block.release()
        return block

    return run, pool


IMPLS = {
    "fastprep.BlockPool": lambda size: _pool_impl(size),
    "numpy.empty": lambda size: ((lambda: np.empty(size, np.uint8)), None),
    "bytearray": lambda size: ((lambda: bytearray(size)), None),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s // 1024}KiB")
@pytest.mark.parametrize("impl", list(IMPLS))
def test_acquire_release(benchmark, impl, size):
    run, pool = IMPLS[impl](size)
    # Correctness first: the buffer has the size asked for and is writable memory.
    buf = run()
    if pool is not None:
        assert buf.released and pool.stats()["in_use"] == 0
        with pool.acquire() as b:
            mv = memoryview(b)
            assert mv.nbytes == size and not mv.readonly
            mv.release()
    else:
        assert memoryview(buf).nbytes == size
    benchmark.group = f"acquire+release {size // 1024} KiB"
    benchmark.extra_info["bytes"] = size
    benchmark(run)
    if pool is not None:
        s = pool.stats()
        assert s["in_use"] == 0 and s["acquires"] == s["releases"]
