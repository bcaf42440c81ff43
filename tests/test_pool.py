"""BlockPool and Block on host memory: fixed examples and every error, with its message."""

import gc
import re
import threading
import time

import numpy as np
import pytest

import fastprep
from fastprep import BlockPool, PoolExhaustedError


def test_blocks_are_distinct_aligned_writable_buffers():
    pool = BlockPool(1000, 4, alignment=256)
    blocks = [pool.acquire() for _ in range(4)]
    assert len({b.index for b in blocks}) == 4
    assert len({b.address for b in blocks}) == 4
    for i, b in enumerate(blocks):
        assert b.address % 256 == 0
        assert len(b) == b.nbytes == 1000
        arr = np.frombuffer(b, dtype=np.uint8)
        assert arr.flags.writeable and arr.size == 1000
        arr[:] = i
        del arr
    for i, b in enumerate(blocks):
        assert bytes(memoryview(b)) == bytes([i]) * 1000
        b.release()
    assert pool.stats()["in_use"] == 0


def test_frombuffer_is_zero_copy():
    pool = BlockPool(64, 1)
    with pool.acquire() as block:
        a = np.frombuffer(block, dtype=np.uint8)
        b = np.frombuffer(block, dtype=np.uint32)
        a[:4] = [1, 0, 0, 0]
        assert b[0] == 1
        assert a.ctypes.data == block.address
        mv = memoryview(block)
        assert mv.format == "B" and mv.shape == (64,) and not mv.readonly and mv.contiguous
        del a, b, mv


def test_memory_is_reused_not_reallocated():
    pool = BlockPool(4096, 1)
    with pool.acquire() as b:
        first = b.address
    with pool.acquire() as b:
        assert b.address == first


def test_stats_track_every_counter():
    pool = BlockPool(128, 2)
    assert pool.stats() == {
        "block_size": 128,
        "capacity": 2,
        "in_use": 0,
        "high_water": 0,
        "acquires": 0,
        "releases": 0,
        "waits": 0,
        "exhausted": 0,
        "grows": 0,
    }
    a, b = pool.acquire(), pool.acquire()
    assert pool.try_acquire() is None
    with pytest.raises(PoolExhaustedError):
        pool.acquire(timeout=0.01)
    a.release()
    s = pool.stats()
    assert (s["in_use"], s["high_water"], s["acquires"], s["releases"]) == (1, 2, 2, 1)
    assert (s["waits"], s["exhausted"]) == (1, 2)
    b.release()
    assert pool.stats()["in_use"] == 0


def test_context_manager_releases_and_returns_the_block():
    pool = BlockPool(16, 1)
    with pool.acquire() as block:
        assert isinstance(block, fastprep.Block)
        assert pool.stats()["in_use"] == 1
    assert block.released
    assert pool.stats()["in_use"] == 0


def test_context_manager_releases_on_exception():
    pool = BlockPool(16, 1)
    with pytest.raises(KeyError), pool.acquire():
        raise KeyError("boom")
    assert pool.stats()["in_use"] == 0


def test_block_released_when_last_reference_dies():
    pool = BlockPool(16, 1)
    block = pool.acquire()
    arr = np.frombuffer(block, dtype=np.uint8)
    del block
    assert pool.stats()["in_use"] == 1, "the numpy view keeps the block alive"
    del arr
    gc.collect()
    assert pool.stats()["in_use"] == 0


def test_pool_memory_outlives_the_pool_object_while_blocks_live():
    pool = BlockPool(1 << 16, 2)
    block = pool.acquire()
    del pool
    gc.collect()
    arr = np.frombuffer(block, dtype=np.uint8)
    arr[:] = 7
    assert int(arr.sum()) == 7 * (1 << 16)


def test_release_twice_is_a_noop_and_never_corrupts():
    pool = BlockPool(16, 2)
    block = pool.acquire()
    block.release()
    block.release()
    pool.release(block)
    with pool.acquire() as other:
        other.release()  # __exit__ after an explicit release is harmless too
    s = pool.stats()
    assert (s["in_use"], s["acquires"], s["releases"]) == (0, 2, 2)
    got = [pool.acquire(), pool.acquire()]
    assert len({b.index for b in got}) == 2
    assert pool.try_acquire() is None, "a double release must not have freed a block twice"


def test_release_with_open_view_raises_buffer_error():
    pool = BlockPool(32, 1)
    block = pool.acquire()
    view = memoryview(block)
    with pytest.raises(BufferError, match=r"1 view\(s\) of it .* are still open; delete them"):
        block.release()
    assert not block.released and pool.stats()["in_use"] == 1
    arr = np.frombuffer(block, dtype=np.uint8)
    with pytest.raises(BufferError, match=r"2 view\(s\)"):
        pool.release(block)
    view.release()
    del arr
    block.release()
    assert block.released and pool.stats()["in_use"] == 0


def test_with_block_and_open_view_at_exit_raises():
    pool = BlockPool(32, 1)
    with pytest.raises(BufferError, match="still open"), pool.acquire() as block:
        kept = np.frombuffer(block, dtype=np.uint8)
    assert pool.stats()["in_use"] == 1
    del kept
    block.release()
    assert pool.stats()["in_use"] == 0


def test_released_block_cannot_be_viewed():
    pool = BlockPool(32, 1)
    block = pool.acquire()
    block.release()
    with pytest.raises(ValueError, match=r"block 0 was released; acquire a new one"):
        memoryview(block)
    with pytest.raises(ValueError, match="was released"):
        _ = block.address
    with pytest.raises(ValueError, match="was released"), block:
        pass
    assert "released" in repr(block)


def test_foreign_block_is_refused():
    a, b = BlockPool(16, 1), BlockPool(16, 1)
    block = a.acquire()
    with pytest.raises(ValueError, match="belongs to another BlockPool"):
        b.release(block)
    assert a.stats()["in_use"] == 1 and b.stats()["in_use"] == 0
    a.release(block)
    assert a.stats()["in_use"] == 0


def test_release_takes_only_blocks():
    with pytest.raises(TypeError):
        BlockPool(16, 1).release(bytearray(16))


def test_exhausted_error_message_carries_stats():
    pool = BlockPool(4096, 2)
    held = [pool.acquire(), pool.acquire()]
    t0 = time.perf_counter()
    with pytest.raises(PoolExhaustedError) as info:
        pool.acquire(timeout=0.1)
    assert time.perf_counter() - t0 >= 0.09
    msg = str(info.value)
    assert re.search(r"all 2 blocks of 4096 bytes are in use after waiting 0\.1\d\d s", msg), msg
    assert "grow=True" in msg and "capacity=2 in_use=2" in msg and "waits=1" in msg
    assert isinstance(info.value, MemoryError) and isinstance(info.value, fastprep.FastprepError)
    del held


def test_acquire_timeout_zero_fails_at_once():
    pool = BlockPool(8, 1)
    _held = pool.acquire()
    with pytest.raises(PoolExhaustedError):
        pool.acquire(timeout=0)


def test_acquire_waits_for_a_release_from_another_thread():
    pool = BlockPool(8, 1)
    held = pool.acquire()
    timer = threading.Timer(0.05, held.release)
    timer.start()
    t0 = time.perf_counter()
    block = pool.acquire(timeout=10)
    assert 0.03 < time.perf_counter() - t0 < 5
    assert block.index == held.index
    assert pool.stats()["waits"] == 1
    timer.join()


def test_acquire_without_timeout_waits_until_release():
    pool = BlockPool(8, 1)
    held = pool.acquire()
    threading.Timer(0.05, held.release).start()
    with pool.acquire() as block:
        assert block.index == 0


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
def test_bad_timeout(bad):
    pool = BlockPool(8, 1)
    _held = pool.acquire()
    with pytest.raises(ValueError, match="timeout must be None or a number of seconds >= 0"):
        pool.acquire(timeout=bad)


def test_grow_adds_whole_chunks():
    pool = BlockPool(256, 3, grow=True)
    held = [pool.acquire(timeout=0) for _ in range(7)]
    s = pool.stats()
    assert (s["capacity"], s["grows"], s["in_use"]) == (9, 2, 7)
    assert pool.reserved_bytes == 9 * 256
    assert len({b.address for b in held}) == 7
    del held
    assert pool.stats()["in_use"] == 0 and pool.capacity == 9


def test_grow_respects_max_blocks():
    pool = BlockPool(64, 2, grow=True, max_blocks=4)
    held = [pool.acquire() for _ in range(4)]
    assert pool.try_acquire() is None
    with pytest.raises(PoolExhaustedError, match="all 4 blocks"):
        pool.acquire(timeout=0.01)
    del held


def test_alignment_rounds_the_stride():
    pool = BlockPool(100, 3, alignment=4096)
    addrs = sorted(pool.acquire().address for _ in range(1))
    assert addrs[0] % 4096 == 0
    assert pool.reserved_bytes == 3 * 4096


@pytest.mark.parametrize(
    ("kwargs", "exc", "needle"),
    [
        ({"block_size": 0, "num_blocks": 1}, ValueError, "block_size must be a positive integer, got 0"),
        ({"block_size": -5, "num_blocks": 1}, ValueError, "block_size must be a positive integer, got -5"),
        ({"block_size": 8, "num_blocks": 0}, ValueError, "num_blocks must be a positive integer"),
        ({"block_size": 8, "num_blocks": 1, "alignment": 3}, ValueError, "alignment must be a power of two"),
        ({"block_size": 8, "num_blocks": 1, "alignment": 0}, ValueError, "alignment must be a positive"),
        (
            {"block_size": 8, "num_blocks": 1, "kind": "gpu"},
            ValueError,
            "kind must be 'host', 'pinned' or 'cuda'",
        ),
        ({"block_size": 2**62, "num_blocks": 4}, ValueError, "do not fit in the address space"),
        ({"block_size": 8, "num_blocks": 4, "grow": True, "max_blocks": 2}, ValueError, "max_blocks"),
        (
            {"block_size": 2**44, "num_blocks": 1},
            MemoryError,
            "could not reserve 17592186044416 bytes of host",
        ),
    ],
)
def test_bad_configs_have_clear_errors(kwargs, exc, needle):
    with pytest.raises(exc, match=re.escape(needle)):
        BlockPool(**kwargs)


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        BlockPool(8, 1, "host")


def test_properties_and_repr():
    pool = BlockPool(512, 2, alignment=128, grow=True, max_blocks=8)
    assert (pool.block_size, pool.capacity, pool.kind, pool.alignment, pool.grow, pool.max_blocks) == (
        512,
        2,
        "host",
        128,
        True,
        8,
    )
    assert repr(pool) == "BlockPool(block_size=512, capacity=2, kind='host', alignment=128, grow=True, in_use=0)"
    block = pool.acquire()
    assert re.fullmatch(r"<fastprep\.Block index=\d+ nbytes=512 kind='host' address=0x[0-9a-f]+>", repr(block))
    assert block.kind == "host" and block.exports == 0


def test_host_block_has_no_cuda_array_interface():
    block = BlockPool(8, 1).acquire()
    assert not hasattr(block, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="use memoryview"):
        _ = block.__cuda_array_interface__
