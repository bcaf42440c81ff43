"""Pinned and cuda pools.

Without CuPy or a GPU they must fail with a clear error; their bookkeeping (the same Rust code as
host pools) is exercised here on the CPU by standing host memory in for CuPy's allocation. The
real-GPU tests run where CuPy sees a device and are skipped, saying so, elsewhere.
"""

import sys

import numpy as np
import pytest

import fastprep
from fastprep import BlockPool, DeviceUnavailableError
from fastprep import _cupy_memory as cm


def _gpu_present() -> bool:
    return cm.device_count() > 0


@pytest.mark.parametrize("kind", ["pinned", "cuda"])
def test_without_cupy_the_error_names_what_to_install(kind, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    with pytest.raises(DeviceUnavailableError, match=r'needs CuPy.*pip install "fastprep\[cuda12\]"'):
        BlockPool(1024, 2, kind=kind)


@pytest.mark.parametrize("kind", ["pinned", "cuda"])
def test_without_a_device_the_error_says_so(kind, monkeypatch):
    class Runtime:
        @staticmethod
        def getDeviceCount():
            raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    fake = type(sys)("cupy")
    fake.cuda = type(sys)("cupy.cuda")
    fake.cuda.runtime = Runtime
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(DeviceUnavailableError, match=r'needs a CUDA device, but CuPy sees none.*kind="host"'):
        BlockPool(1024, 2, kind=kind)
    assert issubclass(DeviceUnavailableError, RuntimeError)


@pytest.fixture
def host_backed_cupy(monkeypatch):
    """CuPy's allocation replaced by host memory, so kind="pinned"/"cuda" run their real Rust code."""
    calls = []

    def allocate(kind, nbytes):
        buf = np.zeros(nbytes + 3, dtype=np.uint8)[3:]  # deliberately misaligned
        calls.append((kind, nbytes))
        return buf.ctypes.data, buf

    monkeypatch.setattr(cm, "require", lambda kind: None)
    monkeypatch.setattr(cm, "allocate", allocate)
    return calls


def test_cuda_pool_bookkeeping_and_array_interface(host_backed_cupy):
    pool = BlockPool(1000, 3, kind="cuda", alignment=256, grow=True, max_blocks=6)
    assert host_backed_cupy == [("cuda", 3 * 1024 + 255)]
    blocks = [pool.acquire() for _ in range(4)]
    assert len(host_backed_cupy) == 2 and pool.stats()["grows"] == 1
    for b in blocks:
        assert b.kind == "cuda" and b.address % 256 == 0
        cai = b.__cuda_array_interface__
        assert cai == {
            "shape": (1000,),
            "typestr": "|u1",
            "data": (b.address, False),
            "strides": None,
            "stream": None,
            "version": 3,
        }
        with pytest.raises(BufferError, match=r"device memory.*cupy\.asarray\(block\)"):
            memoryview(b)
    assert len({b.address for b in blocks}) == 4
    for b in blocks:
        b.release()
    s = pool.stats()
    assert (s["in_use"], s["capacity"], s["high_water"]) == (0, 6, 4)
    assert repr(pool).startswith("BlockPool(block_size=1000, capacity=6, kind='cuda'")


def test_pinned_pool_is_host_accessible(host_backed_cupy):
    pool = BlockPool(64, 2, kind="pinned")
    with pool.acquire() as block:
        arr = np.frombuffer(block, dtype=np.uint8)
        arr[:] = 9
        assert bytes(memoryview(block)) == b"\x09" * 64
        del arr
        assert not hasattr(block, "__cuda_array_interface__")
    assert pool.kind == "pinned"


def test_failed_growth_is_a_memory_error(host_backed_cupy, monkeypatch):
    pool = BlockPool(64, 1, kind="cuda", grow=True)

    def out_of_memory(kind, nbytes):
        raise RuntimeError("cudaErrorMemoryAllocation: out of memory")

    monkeypatch.setattr(cm, "allocate", out_of_memory)
    _held = pool.acquire()
    with pytest.raises(MemoryError, match=r"could not reserve 64 bytes of cuda memory.*out of memory"):
        pool.acquire()


gpu = pytest.mark.skipif(not _gpu_present(), reason="no CUDA device visible to CuPy (GPU tests run on GPU machines)")


@pytest.mark.gpu
@gpu
def test_real_cuda_pool_roundtrip():
    import cupy as cp

    pool = BlockPool(1 << 20, 4, kind="cuda")
    with pool.acquire() as block:
        arr = cp.asarray(block)
        arr[:] = 5
        assert int(arr.sum()) == 5 * (1 << 20)
        del arr
    assert pool.stats()["in_use"] == 0


@pytest.mark.gpu
@gpu
def test_real_pinned_pool_copies_to_device():
    import cupy as cp

    pool = BlockPool(1 << 16, 2, kind="pinned")
    with pool.acquire() as block:
        host = np.frombuffer(block, dtype=np.float32)
        host[:] = np.arange(host.size, dtype=np.float32)
        dev = cp.asarray(host)
        assert bool((dev == cp.arange(host.size, dtype=cp.float32)).all())
        del host
    assert fastprep.build_info()["gpu"]
