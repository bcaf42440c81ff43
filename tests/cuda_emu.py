"""A `fastprep.gpu` backend that runs the CUDA kernels on the CPU: each kernel source compiled by
g++ with tests/cuda/cuda_emulation.h and the launcher's own preamble defines, launched through
ctypes over the same grid the GPU would run, on numpy arrays. `fastprep.gpu_resize(...,
backend=EmuBackend())` thus exercises the real launch plan and the real kernel text without a GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

import fastprep
from fastprep import gpu
from fastprep.kernels import _DEPENDS, kernel_unit

HERE = Path(__file__).parent / "cuda"
HARNESSES = {
    "resize.cu": HERE / "resize_harness.cpp",
    "normalize.cu": HERE / "normalize_harness.cpp",
    "jpeg_idct.cu": HERE / "jpeg_idct_harness.cpp",
    "jpeg_entropy.cu": HERE / "jpeg_entropy_harness.cpp",
    "jpeg_fused.cu": HERE / "jpeg_fused_harness.cpp",
    # the emulation's own check (tests/test_cuda_emulation.py); its kernels live in tests/cuda/
    "emulation_selftest.cu": HERE / "emulation_selftest_harness.cpp",
}
# Headers a harness may include besides the kernel: part of the build's cache key.
HEADERS = ("cuda_emulation.h", "cuda_emulation_fibers.h")
FIBER_HARNESSES = {"jpeg_entropy.cu"}
_CACHE = Path(os.environ.get("FASTPREP_TEST_CACHE", Path(tempfile.gettempdir()) / "fastprep-tests")) / "cuda-emu"
_LOCK = threading.Lock()
_LIBS: dict[str, ctypes.CDLL] = {}


def compile_emulated(name: str, defines: dict[str, int]) -> ctypes.CDLL:
    """The kernel file `name` (from cuda/) with its harness, built once per define set."""
    harness = HARNESSES[name]

    def text(file: str) -> str:
        path = HERE.parent.parent / "cuda" / file
        return (path if path.exists() else HERE / file).read_text()

    # the file and the sources it is compiled after (its harness includes them)
    src = "".join(text(f) for f in (*_DEPENDS.get(name, ()), name))
    headers = "".join((HERE / h).read_text() for h in HEADERS)
    key_text = src + harness.read_text() + headers + repr(sorted(defines.items()))
    key = hashlib.sha256(key_text.encode()).hexdigest()[:16]
    with _LOCK:
        if key in _LIBS:
            return _LIBS[key]
        _CACHE.mkdir(parents=True, exist_ok=True)
        out = _CACHE / f"{Path(name).stem}-{key}.so"
        if not out.exists():
            flags = [f"-D{k}={v}" for k, v in sorted(defines.items())]
            tmp = out.with_suffix(f".{os.getpid()}.tmp")
            cmd = [
                "g++",
                "-O2",
                "-std=c++17",
                "-fno-strict-aliasing",
                "-shared",
                "-fPIC",
                "-Wall",
                "-Wextra",
                "-Werror",
                *flags,
                str(harness),
                "-o",
                str(tmp),
            ]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
            tmp.replace(out)
        lib = ctypes.CDLL(str(out))
        _LIBS[key] = lib
        return lib


class EmuBackend:
    """numpy arrays, kernels run by the CPU emulation."""

    xp = np

    def __init__(self) -> None:
        self.launches: list[tuple[str, dict[str, int], tuple[int, int, int]]] = []

    def asarray(self, obj: Any) -> Any:
        return np.ascontiguousarray(obj)

    def launch(
        self,
        source: str,
        defines: dict[str, int],
        kernel: str,
        grid: tuple[int, int, int],
        args: tuple[Any, ...],
        block: tuple[int, int, int] = gpu.BLOCK,
    ) -> None:
        name = next(n for n in fastprep.kernel_names() if kernel_unit(n) == source)
        lib = compile_emulated(name, defines)
        fn = getattr(lib, f"launch_{kernel}")
        # the exact (fiber) harnesses report a block that cannot progress instead of hanging
        exact = name in FIBER_HARNESSES
        fn.restype = ctypes.c_int if exact else None
        cargs: list[Any] = []
        for a in args:
            if isinstance(a, np.int32):
                cargs.append(ctypes.c_int(int(a)))
            elif isinstance(a, np.int64):
                cargs.append(ctypes.c_longlong(int(a)))
            else:
                assert isinstance(a, np.ndarray) and a.flags.c_contiguous, "buffers must be contiguous arrays"
                cargs.append(ctypes.c_void_p(a.ctypes.data))
        rc = fn(*(ctypes.c_uint(v) for v in (*grid, *block)), *cargs)
        if exact and rc != 0:
            lib.emu_last_error.restype = ctypes.c_char_p
            raise RuntimeError(f"{kernel}: {lib.emu_last_error().decode()}")
        self.launches.append((kernel, dict(defines), grid))
