"""Pinned and device memory for BlockPool, through CuPy.

The Rust pool calls ``allocate`` once per chunk and keeps the returned owner object alive for as
long as the chunk lives, so each chunk is exactly one CuPy allocation, outside CuPy's own pools.
"""

from __future__ import annotations

from typing import Any

from .errors import DeviceUnavailableError

_INSTALL_HINT = 'install CuPy for your CUDA version: pip install "fastprep[cuda12]" (or "fastprep[cuda13]")'


def _cupy(kind: str) -> Any:
    try:
        import cupy
    except ImportError as exc:
        raise DeviceUnavailableError(
            f'BlockPool(kind="{kind}") needs CuPy, which is not installed; {_INSTALL_HINT}'
        ) from exc
    return cupy


def device_count() -> int:
    """CUDA devices CuPy can see (0 when CuPy or the driver is missing)."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def require(kind: str) -> None:
    """Raise DeviceUnavailableError unless CuPy and a CUDA device are usable."""
    cupy = _cupy(kind)
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CUDARuntimeError when there is no driver
        raise DeviceUnavailableError(
            f'BlockPool(kind="{kind}") needs a CUDA device, but CuPy sees none ({exc}); '
            'use kind="host" on machines without a GPU'
        ) from exc
    if n == 0:
        raise DeviceUnavailableError(
            f'BlockPool(kind="{kind}") needs a CUDA device, but CuPy sees none; '
            'use kind="host" on machines without a GPU'
        )


def allocate(kind: str, nbytes: int) -> tuple[int, Any]:
    """One allocation of ``nbytes``: (address, owner). Freed when the owner is dropped."""
    cupy = _cupy(kind)
    if kind == "pinned":
        mem = cupy.cuda.PinnedMemory(nbytes)
        return int(mem.ptr), mem
    if kind == "cuda":
        mem = cupy.cuda.Memory(nbytes)
        return int(mem.ptr), mem
    raise ValueError(f"allocate() takes kind 'pinned' or 'cuda', got {kind!r}")
