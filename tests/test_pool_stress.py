"""8 Python threads x 50k acquire-write-verify-release, plus Rust threads on the same pool, with
no double hand-out and no deadlock."""

import sys
import threading

import pytest

from fastprep import BlockPool, _core

ITERATIONS = 50_000
THREADS = 8


@pytest.mark.timeout(300)
@pytest.mark.parametrize("grow", [False, True])
def test_python_and_rust_threads_share_one_pool(grow):
    # Fewer blocks than threads, so acquires really contend and wait.
    pool = BlockPool(256, 4, grow=grow, max_blocks=8)
    errors: list[str] = []
    done = [0] * THREADS
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, inside acquire-write-verify
    try:

        def python_worker(t: int) -> None:
            try:
                for i in range(ITERATIONS):
                    with pool.acquire(timeout=60) as block:
                        tag = (t * ITERATIONS + i).to_bytes(8, "little") * 32
                        mv = memoryview(block)
                        mv[:] = tag
                        if mv.tobytes() != tag:
                            errors.append(f"thread {t} iteration {i}: block {block.index} overwritten")
                        mv.release()
                    done[t] += 1
            except Exception as exc:  # reported below, not swallowed
                errors.append(f"thread {t}: {exc!r}")

        rust_result: list[tuple[int, int]] = []
        rust = threading.Thread(target=lambda: rust_result.append(_core._pool_stress(pool, 4, ITERATIONS)))
        threads = [threading.Thread(target=python_worker, args=(t,)) for t in range(THREADS)]
        for th in [rust, *threads]:
            th.start()
        for th in [rust, *threads]:
            th.join(timeout=280)
            assert not th.is_alive(), "deadlock: a worker did not finish"
    finally:
        sys.setswitchinterval(old)

    assert errors == []
    assert done == [ITERATIONS] * THREADS
    assert rust_result == [(4 * ITERATIONS, 0)], "Rust threads saw a block written by another holder"
    s = pool.stats()
    assert s["in_use"] == 0
    assert s["acquires"] == s["releases"] == (THREADS + 4) * ITERATIONS
    assert s["high_water"] <= s["capacity"] <= (8 if grow else 4)


def test_rust_stress_reports_exhaustion_as_an_error():
    pool = BlockPool(64, 1)
    _held = pool.acquire()
    with pytest.raises(MemoryError, match="exhausted"):
        _core._pool_stress(pool, 2, 10, 0.05)
