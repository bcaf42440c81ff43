"""The exact (fiber) mode of the CUDA emulation gives what CUDA defines for the warp operations,
barrier reductions and atomics the entropy kernels use, and reports a warp operation that cannot
complete instead of hanging."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from .cuda_emu import HERE, compile_emulated


def _run(kernel: str, inp: np.ndarray, out_len: int, threads: int) -> tuple[int, np.ndarray]:
    lib = compile_emulated("emulation_selftest.cu", {})
    fn = getattr(lib, f"launch_{kernel}")
    fn.restype = ctypes.c_int
    out = np.full(out_len, -1, np.int32)
    dims = (ctypes.c_uint(v) for v in (1, 1, 1, threads, 1, 1))
    rc = fn(*dims, ctypes.c_void_p(inp.ctypes.data), ctypes.c_void_p(out.ctypes.data))
    return rc, out


def test_warp_operations_match_cuda():
    v = np.random.default_rng(3).integers(0, 1000, 64).astype(np.int32)
    v[40] = 7  # __syncthreads_or sees one
    rc, out = _run("warp_ops", v, 640, 64)
    assert rc == 0
    out = out.reshape(64, 10)
    for t in range(64):
        w0, lane = t - t % 32, t % 32
        warp = v[w0 : w0 + 32]
        assert out[t, 0] == warp[(lane * 7 + 3) & 31]
        assert out[t, 1] == (warp[lane - 3] if lane >= 3 else v[t])  # out of range: own value
        assert out[t, 2] == (warp[lane + 5] if lane + 5 < 32 else v[t])
        assert out[t, 3] == warp[lane ^ 9]
        assert out[t, 4] == np.int32(np.uint32(sum(1 << k for k in range(32) if warp[k] & 1)).view(np.int32))
        assert out[t, 5] == 1
        assert out[t, 6] == int(np.count_nonzero(v & 1))
        assert out[t, 7] == int(v.sum())
        assert out[t, 8] == 1
        assert out[t, 9] == warp[31 - lane]


def test_a_partial_mask_takes_only_its_lanes():
    v = np.arange(100, 164, dtype=np.int32)
    rc, out = _run("partial_warp", v, 64, 64)
    assert rc == 0
    for t in range(64):
        w0, lane = t - t % 32, t % 32
        assert out[t] == (v[w0 + ((lane + 2) & 31)] if lane % 2 == 0 else -1)


def test_a_warp_operation_missing_a_lane_is_reported_not_hung():
    rc, _ = _run("broken_warp", np.arange(32, dtype=np.int32), 32, 32)
    assert rc == -1
    lib = compile_emulated("emulation_selftest.cu", {})
    lib.emu_last_error.restype = ctypes.c_char_p
    assert b"lane 5" in lib.emu_last_error() and b"exited" in lib.emu_last_error()


@pytest.mark.parametrize("name", ["emulation_selftest.cu"])
def test_the_selftest_kernels_are_valid_cuda(name):
    pytest.importorskip("cuda.bindings.nvrtc", reason="the test extra installs cuda-bindings")
    from .test_cuda_nvrtc import ARCHS, _compile

    log, ptx = _compile((HERE / name).read_text(), name, {}, ARCHS[0])
    assert "warning" not in log.lower(), log
    for entry in (b"warp_ops", b"partial_warp", b"broken_warp"):
        assert b".entry " + entry in ptx
