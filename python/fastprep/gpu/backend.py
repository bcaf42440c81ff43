"""What the GPU path needs from an array library, and CuPy's: kernels compiled by NVRTC once per
(device, defines), launched on the current stream; pinned staging blocks from fastprep BlockPools
and asynchronous uploads from them. The tests give the same launch code numpy and a CPU emulation
of the kernels instead (tests/cuda_emu.py)."""

from __future__ import annotations

import threading
from typing import Any, Protocol

from ..errors import DeviceUnavailableError

# Threads per block of the 2-D image kernels (resize, normalize, jpeg_idct).
BLOCK = (32, 8, 1)


class Backend(Protocol):
    """What the launch plan needs from an array library: CuPy on a GPU, numpy in the tests."""

    xp: Any

    def asarray(self, obj: Any) -> Any: ...

    def launch(
        self,
        source: str,
        defines: dict[str, int],
        kernel: str,
        grid: tuple[int, int, int],
        args: tuple[Any, ...],
        block: tuple[int, int, int] = ...,
    ) -> None: ...


class CupyBackend:
    """CuPy: kernels compiled by NVRTC once per (device, defines), launched on the current stream."""

    def __init__(self) -> None:
        try:
            import cupy
        except ImportError as e:
            raise DeviceUnavailableError(
                "gpu_resize needs CuPy: pip install 'fastprep[cuda12]' (or fastprep[cuda13] for CUDA 13)"
            ) from e
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # CUDARuntimeError without a driver
            raise DeviceUnavailableError(f"gpu_resize found no CUDA device ({e})") from e
        if count == 0:
            raise DeviceUnavailableError("gpu_resize found no CUDA device")
        self.xp = cupy
        self._modules: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()
        self._pinned: dict[int, Any] = {}
        self._in_flight: list[tuple[Any, Any]] = []
        self._streams: dict[int, list[Any]] = {}

    def asarray(self, obj: Any) -> Any:
        return self.xp.asarray(obj)

    def staging(self, nbytes: int) -> tuple[Any, Any]:
        """A pinned host buffer of `nbytes` (a numpy view of a block of a fastprep BlockPool of
        kind "pinned", one pool per power-of-two size from 1 MiB), and the function that hands
        the block back once the copy reading it has finished on the current stream: the block
        is kept with a CUDA event and dropped (so returned to its pool) when the event is done."""
        import numpy as np

        from .._core import BlockPool

        self._reap()
        size = max(1 << 20, 1 << (max(nbytes, 1) - 1).bit_length())
        with self._lock:
            pool = self._pinned.get(size)
            if pool is None:
                pool = BlockPool(size, 2, kind="pinned", grow=True, alignment=4096)
                self._pinned[size] = pool
        block: Any = pool.acquire()
        view = np.frombuffer(block, np.uint8, count=max(nbytes, 1))
        held = [block]  # the closure lets go of the block once called

        def release() -> None:
            if held:
                event = self.xp.cuda.get_current_stream().record()
                with self._lock:
                    self._in_flight.append((event, held.pop()))

        del block
        return view, release

    def upload(self, dst: Any, host: Any, start: int, end: int) -> None:
        """dst[start:end] = host[start:end], asynchronous on the current stream (host is pinned)."""
        dst[start:end].set(host[start:end], stream=self.xp.cuda.get_current_stream())

    def fork(self, count: int) -> list[Any]:
        """`count` streams of the current device (non-blocking: no implicit order with the legacy
        default stream; made once per device and kept) that start after the work queued so far
        on the current stream. Calls from several threads may share them: each call's own events
        order its work, the sharing can only make one wait for another, never reorder it."""
        cuda = self.xp.cuda
        ready = cuda.get_current_stream().record()
        with self._lock:
            streams = self._streams.setdefault(self.device_id, [])
            while len(streams) < count:
                streams.append(cuda.Stream(non_blocking=True))
            streams = streams[:count]
        for s in streams:
            s.wait_event(ready)
        return streams

    def stream(self) -> Any:
        """The current stream."""
        return self.xp.cuda.get_current_stream()

    def mark(self) -> Any:
        """An event recorded on the current stream: what was queued on it so far."""
        return self.xp.cuda.get_current_stream().record()

    def wait(self, event: Any) -> None:
        """The current stream waits for `event` (nothing to wait for where it is done)."""
        self.xp.cuda.get_current_stream().wait_event(event)

    def join(self, streams: list[Any]) -> None:
        """The current stream waits for the work queued so far on `streams`."""
        current = self.xp.cuda.get_current_stream()
        for s in streams:
            current.wait_event(s.record())

    def _reap(self) -> None:
        with self._lock:
            self._in_flight = [(e, b) for e, b in self._in_flight if not e.done]

    @property
    def device_id(self) -> int:
        return int(self.xp.cuda.Device().id)

    def launch(
        self,
        source: str,
        defines: dict[str, int],
        kernel: str,
        grid: tuple[int, int, int],
        args: tuple[Any, ...],
        block: tuple[int, int, int] = BLOCK,
    ) -> None:
        cupy = self.xp
        key = (cupy.cuda.Device().id, source, tuple(sorted(defines.items())), kernel)
        fn = self._modules.get(key)
        if fn is None:
            with self._lock:
                module = self._modules.get(key[:3])
                if module is None:
                    preamble = "".join(f"#define {k} {v}\n" for k, v in sorted(defines.items()))
                    module = cupy.RawModule(code=preamble + source, options=("--std=c++17",))
                    self._modules[key[:3]] = module
                fn = module.get_function(kernel)
                max_threads = fn.max_threads_per_block
                if block[0] * block[1] * block[2] > max_threads:
                    raise RuntimeError(
                        f"{kernel} allows {max_threads} threads per block on this device, fewer than {block}"
                    )
                self._modules[key] = fn
        if grid[2] > 65535:
            raise ValueError(f"a batch of {grid[2]} images is over CUDA's 65535 grid z limit; split it")
        fn(grid, block, args)


_BACKEND: CupyBackend | None = None


def _backend() -> CupyBackend:
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = CupyBackend()
    return _BACKEND


def _device_array(be: Backend, obj: Any) -> Any:
    xp = be.xp
    if hasattr(obj, "__cuda_array_interface__") or isinstance(obj, xp.ndarray):
        return be.asarray(obj)
    if hasattr(obj, "__dlpack__") and hasattr(xp, "from_dlpack"):
        return xp.from_dlpack(obj)
    return be.asarray(obj)


def _staging(backend: Backend, nbytes: int) -> tuple[Any, Any]:
    """A host buffer of `nbytes` for the batch's upload and the function that gives it back:
    pinned memory from a fastprep BlockPool where the backend has one, else a numpy array."""
    make = getattr(backend, "staging", None)
    if make is not None:
        return make(nbytes)  # type: ignore[no-any-return]
    import numpy as np

    return np.zeros(max(nbytes, 1), np.uint8), lambda: None


def _upload(backend: Backend, dst: Any, host: Any, start: int, end: int) -> None:
    """dst[start:end] = host[start:end]: asynchronous on the current stream where the backend
    has an upload (CuPy, from pinned memory), else a plain copy."""
    if end <= start:
        return
    put = getattr(backend, "upload", None)
    if put is not None:
        put(dst, host, start, end)
    else:
        dst[start:end] = host[start:end]
