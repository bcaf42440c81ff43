"""GPU image preprocessing through CuPy: ``gpu_resize``.

The kernels are the CUDA sources of the repository's ``cuda/`` (shipped inside the extension),
compiled at run time by CuPy's NVRTC once per device and parameter set, then cached. The resize
weights come from the CPU path's own code (``fastprep._core.resize_tables``), so the GPU result
equals ``fastprep.resize``, and so Pillow's, byte for byte for uint8.

Everything runs on the caller's current CuPy stream; the result is a CuPy array (DLPack-exportable,
so ``torch.from_dlpack(out)`` shares it). Nothing goes back to the host.

The launch plan (tables, per-image descriptors, grids, the order of the passes) is built here
independently of the array library, so the tests run the very same plan through a CPU emulation
of the kernels (tests/cuda_emu.py) on machines without a GPU.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from . import _core
from .errors import DeviceUnavailableError
from .image import Filter
from .kernels import kernel_source

__all__ = ["gpu_resize"]

DESC_LEN = 14
BLOCK = (32, 8, 1)
_DTYPES = {"uint8": 0, "float32": 1, "float16": 2}


class Backend(Protocol):
    """What the launch plan needs from an array library: CuPy on a GPU, numpy in the tests."""

    xp: Any

    def asarray(self, obj: Any) -> Any: ...

    def launch(
        self, source: str, defines: dict[str, int], kernel: str, grid: tuple[int, int, int], args: tuple[Any, ...]
    ) -> None: ...


@functools.lru_cache(maxsize=512)
def _axis(in_size: int, out_size: int, filter: str, fixed: bool, antialias: bool) -> tuple[int, bytes, bytes]:
    return _core.resize_tables(in_size, out_size, filter, fixed, antialias)


@dataclass
class _Image:
    """One image of the batch as the kernels see it: an element offset and strides into a
    flat buffer."""

    offset: int
    h: int
    w: int
    sy: int
    sx: int
    sc: int


def _tall_first(h: int, w: int, out_h: int) -> bool:
    # Pillow 12.2+: images more than 100x taller than wide shrink vertically first.
    return h > w * 100 and out_h < h


def _plan_pass(
    srcs: list[_Image],
    dsts: list[_Image],
    axis: int,
    sizes: list[tuple[int, int]],
    firsts: list[int],
    filter: str,
    fixed: bool,
    antialias: bool,
) -> tuple[Any, Any, Any, tuple[int, int, int]]:
    """Per-image descriptors, the concatenated tables and the grid of one pass (axis 0:
    horizontal, 1: vertical) over every image; `sizes` are this pass's output sizes."""
    import numpy as np

    tables = []
    for src, (out_w, out_h) in zip(srcs, sizes, strict=True):
        in_size, out_size = (src.w, out_w) if axis == 0 else (src.h, out_h)
        tables.append(_axis(in_size, out_size, filter, fixed, antialias))
    kmax = max(t[0] for t in tables)
    wdtype = np.int32 if fixed else np.float64
    desc = np.zeros((len(srcs), DESC_LEN), np.int64)
    bounds, weights = [], []
    tab = 0
    for n, (src, dst, (out_w, out_h), first, (ksize, b, k)) in enumerate(
        zip(srcs, dsts, sizes, firsts, tables, strict=True)
    ):
        w = np.frombuffer(k, dtype=wdtype).reshape(-1, ksize)
        if ksize < kmax:  # one row length for the whole batch; the extra weights are never read
            w = np.pad(w, ((0, 0), (0, kmax - ksize)))
        desc[n] = (
            src.offset,
            src.sy,
            src.sx,
            src.sc,
            dst.offset,
            dst.sy,
            dst.sx,
            dst.sc,
            out_w,
            out_h,
            first,
            tab,
            kmax,
            0,
        )
        bounds.append(np.frombuffer(b, dtype=np.int32))
        weights.append(w)
        tab += w.shape[0]
    max_w = max(w for w, _ in sizes)
    max_h = max(h for _, h in sizes)
    grid = (-(-max_w // BLOCK[0]), -(-max_h // BLOCK[1]), len(srcs))
    return desc, np.concatenate(bounds), np.ascontiguousarray(np.concatenate(weights).reshape(-1)), grid


def _first_rows(filter: str, antialias: bool, h: int, out_h: int) -> tuple[int, int]:
    """The source rows [first, last) the vertical pass reads: the horizontal pass does only those."""
    import numpy as np

    _, b, _ = _axis(h, out_h, filter, True, antialias)
    pairs = np.frombuffer(b, dtype=np.int32).reshape(-1, 2)
    return int(pairs[0, 0]), int(pairs[-1, 0] + pairs[-1, 1])


def run_resize(
    backend: Backend,
    flat: Any,
    images: list[_Image],
    channels: int,
    dtype: str,
    size: tuple[int, int],
    filter: str,
    antialias: bool,
    out: Any,
    out_images: list[_Image],
) -> None:
    """Resizes each image of `flat` (a 1-D device buffer) into `out` (another), both described
    per image by element offsets and strides. Launches at most two kernels per pass order."""
    xp = backend.xp
    out_w, out_h = size
    source = kernel_source("resize.cu")
    code = _DTYPES[dtype]
    fixed = code == 0
    premul = channels == 4 and fixed and filter != "nearest"
    # Images that take the same passes in the same order share launches; a pass Pillow would
    # skip (the size does not change along that axis) is skipped here too.
    groups: dict[tuple[str, bool, bool], list[int]] = {}
    for i, im in enumerate(images):
        order = "vh" if _tall_first(im.h, im.w, out_h) else "hv"
        groups.setdefault((order, im.w != out_w, im.h != out_h), []).append(i)
    for (order, need_h, need_v), idx in groups.items():
        srcs = [images[i] for i in idx]
        dsts = [out_images[i] for i in idx]
        if not need_h and not need_v:
            for s_, d_ in zip(srcs, dsts, strict=True):
                _copy(xp, flat, s_, out, d_, channels)
            continue
        passes: list[tuple[int, list[tuple[int, int]], list[int]]] = []  # (axis, sizes, firsts)
        if order == "hv":
            if need_h:
                rows = [_first_rows(filter, antialias, s_.h, out_h) if need_v else (0, s_.h) for s_ in srcs]
                passes.append((0, [(out_w, last - first) for first, last in rows], [first for first, _ in rows]))
            if need_v:
                passes.append((1, [(out_w if need_h else s_.w, out_h) for s_ in srcs], [0] * len(srcs)))
        else:
            passes.append((1, [(s_.w, out_h) for s_ in srcs], [0] * len(srcs)))
            if need_h:
                passes.append((0, [(out_w, out_h)] * len(srcs), [0] * len(srcs)))
        cur, cur_imgs = flat, srcs
        for p, (axis, sizes, firsts) in enumerate(passes):
            last = p == len(passes) - 1
            if last:
                nxt, nxt_imgs = out, dsts
                dst_code = code
            else:  # an intermediate image per input, packed HWC; float16 keeps float32 here
                tmp_dtype = "uint8" if fixed else "float32"
                offs, tmp_imgs = 0, []
                for w_, h_ in sizes:
                    tmp_imgs.append(_Image(offs, h_, w_, w_ * channels, channels, 1))
                    offs += w_ * h_ * channels
                nxt = xp.empty(max(offs, 1), dtype=tmp_dtype)
                nxt_imgs = tmp_imgs
                dst_code = _DTYPES[tmp_dtype]
            src_code = code if p == 0 else (0 if fixed else 1)
            desc, bounds, weights, grid = _plan_pass(cur_imgs, nxt_imgs, axis, sizes, firsts, filter, fixed, antialias)
            defines = {
                "CHANNELS": channels,
                "SRC_DTYPE": src_code,
                "DST_DTYPE": dst_code,
                "PREMUL_IN": int(premul and p == 0),
                "UNPREMUL_OUT": int(premul and last),
            }
            kernel = "resize_horizontal" if axis == 0 else "resize_vertical"
            args = (cur, nxt, backend.asarray(desc), backend.asarray(bounds), backend.asarray(weights))
            backend.launch(source, defines, kernel, grid, args)
            # The next pass reads this one's output with the source's row numbers: an image whose
            # rows start at source row `first` is addressed as if row 0 were `first` rows above,
            # and after a horizontal pass it keeps the source's height for the vertical weights.
            cur = nxt
            cur_imgs = [
                _Image(im.offset - f * im.sy, src.h if axis == 0 else im.h, im.w, im.sy, im.sx, im.sc)
                for im, f, src in zip(nxt_imgs, firsts, srcs, strict=True)
            ]


def _copy(xp: Any, flat: Any, s: _Image, out: Any, d: _Image, channels: int) -> None:
    idx_y = xp.arange(s.h)[:, None, None]
    idx_x = xp.arange(s.w)[None, :, None]
    idx_c = xp.arange(channels)[None, None, :]
    out[d.offset + idx_y * d.sy + idx_x * d.sx + idx_c * d.sc] = flat[
        s.offset + idx_y * s.sy + idx_x * s.sx + idx_c * s.sc
    ]


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

    def asarray(self, obj: Any) -> Any:
        return self.xp.asarray(obj)

    def launch(
        self, source: str, defines: dict[str, int], kernel: str, grid: tuple[int, int, int], args: tuple[Any, ...]
    ) -> None:
        cupy = self.xp
        key = (cupy.cuda.Device().id, source, tuple(sorted(defines.items())))
        with self._lock:
            module = self._modules.get(key)
            if module is None:
                preamble = "".join(f"#define {k} {v}\n" for k, v in sorted(defines.items()))
                module = cupy.RawModule(code=preamble + source, options=("--std=c++14",))
                self._modules[key] = module
        fn = module.get_function(kernel)
        max_threads = fn.max_threads_per_block
        if BLOCK[0] * BLOCK[1] * BLOCK[2] > max_threads:
            raise RuntimeError(f"{kernel} allows {max_threads} threads per block on this device, fewer than {BLOCK}")
        if grid[2] > 65535:
            raise ValueError(f"a batch of {grid[2]} images is over CUDA's 65535 grid z limit; split it")
        fn(grid, BLOCK, args)


_BACKEND: CupyBackend | None = None


def _backend() -> CupyBackend:
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = CupyBackend()
    return _BACKEND


def gpu_resize(
    batch: Any,
    size: tuple[int, int],
    *,
    filter: Filter = "bilinear",
    antialias: bool = True,
    layout: Literal["NHWC", "NCHW"] = "NHWC",
    backend: Backend | None = None,
) -> Any:
    """Resize a batch of images on the GPU to ``size = (width, height)``.

    ``batch``: a CuPy array (N, H, W, C) (``layout="NHWC"``) or (N, C, H, W) (``"NCHW"``) of
    uint8, float16 or float32, anything with ``__cuda_array_interface__`` or ``__dlpack__`` (a
    torch CUDA tensor), or a list of (H, W, C) / (C, H, W) images of different sizes (one launch
    per pass for the whole ragged batch). Returns a CuPy array (N, height, width, C) or
    (N, C, height, width) of the input's dtype, computed on the current stream.

    uint8 results equal ``fastprep.resize`` (and so ``PIL.Image.resize``) exactly, RGBA through
    Pillow's premultiplication; float32 equals Pillow's mode "F" arithmetic per channel; float16 is
    resized as float32 and rounded once. ``antialias=False`` keeps the filter's support from
    widening when shrinking (plain interpolation; Pillow always antialiases).
    """
    be = backend or _backend()
    xp = be.xp
    if layout not in ("NHWC", "NCHW"):
        raise ValueError(f"layout must be 'NHWC' or 'NCHW', got {layout!r}")
    out_w, out_h = (int(v) for v in size)
    if out_w <= 0 or out_h <= 0:
        raise ValueError(f"size must be two positive integers (width, height), got {size}")
    arrays = [_device_array(be, a) for a in batch] if isinstance(batch, Sequence) else None
    if arrays is None:
        whole = _device_array(be, batch)
        if whole.ndim != 4:
            raise ValueError(
                f"gpu_resize takes an (N, H, W, C) or (N, C, H, W) array or a list of images, got shape {whole.shape}"
            )
        arrays = [whole[i] for i in range(whole.shape[0])]
    if not arrays:
        raise ValueError("gpu_resize got an empty batch")
    dtypes = {str(a.dtype) for a in arrays}
    if len(dtypes) != 1 or next(iter(dtypes)) not in _DTYPES:
        raise TypeError(f"gpu_resize takes uint8, float16 or float32 images of one dtype, got {sorted(dtypes)}")
    dtype = next(iter(dtypes))
    images, parts, offset = [], [], 0
    channels = None
    for i, a in enumerate(arrays):
        if a.ndim != 3:
            raise ValueError(f"image {i} has shape {a.shape}; each image must be 3-D ({layout[1:]})")
        a = xp.ascontiguousarray(a)
        if layout == "NHWC":
            h, w, c = a.shape
            images.append(_Image(offset, h, w, w * c, c, 1))
        else:
            c, h, w = a.shape
            images.append(_Image(offset, h, w, w, 1, h * w))
        if channels not in (None, c):
            raise ValueError(f"image {i} has {c} channels, the others {channels}")
        channels = c
        if h <= 0 or w <= 0:
            raise ValueError(f"image {i} is empty ({a.shape})")
        parts.append(a.reshape(-1))
        offset += a.size
    assert channels is not None
    if dtype == "uint8" and channels not in (1, 3, 4):
        raise ValueError(f"uint8 images need 1, 3 or 4 channels (L, RGB, RGBA), got {channels}")
    flat = xp.concatenate(parts) if len(parts) > 1 else parts[0]
    n = len(images)
    per = out_w * out_h * channels
    if layout == "NHWC":
        outs = [_Image(i * per, out_h, out_w, out_w * channels, channels, 1) for i in range(n)]
        shape = (n, out_h, out_w, channels)
    else:
        outs = [_Image(i * per, out_h, out_w, out_w, 1, out_w * out_h) for i in range(n)]
        shape = (n, channels, out_h, out_w)
    out = xp.empty(n * per, dtype=dtype)
    run_resize(be, flat, images, channels, dtype, (out_w, out_h), filter, antialias, out, outs)
    return out.reshape(shape)


def _device_array(be: Backend, obj: Any) -> Any:
    xp = be.xp
    if hasattr(obj, "__cuda_array_interface__") or isinstance(obj, xp.ndarray):
        return be.asarray(obj)
    if hasattr(obj, "__dlpack__") and hasattr(xp, "from_dlpack"):
        return xp.from_dlpack(obj)
    return be.asarray(obj)
