"""``gpu_resize`` and the launch plan of ``cuda/resize.cu``: Pillow's two passes (its order, its
integer weights from the CPU path's own ``_core.resize_tables``) over a ragged batch, one launch per
pass per group of images that take the same passes; plans are kept per geometry."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from .. import _core
from ..errors import DeviceUnavailableError
from ..image import Filter
from ..kernels import kernel_source
from .backend import BLOCK, Backend, _backend, _device_array

DESC_LEN = 15
_DTYPES = {"uint8": 0, "float32": 1, "float16": 2}
# The horizontal pass straight from global memory (0) or through shared memory (1): resize.cu's
# H_SHARED. Both are exact. On the H200 the first shared-memory form was slower (1080p -> 224
# horizontal pass 1.6 ms against 1.0 ms): its taps, ~26 bytes apart per lane, fall on a few banks.
# Both forms have since changed (tap-major weights, word-wise staging) and were not timed on a
# GPU again; the GPU check times both, and the tests run both.
H_SHARED = 0
# resize_hv's horizontal phase: source rows staged in shared memory by 16-byte loads (1, the
# default of resize.cu's HV_STAGE), or taps read from global memory one element a load (0). Both
# are exact and the tests run both; not yet timed on a GPU (the GPU check times both).
HV_STAGE = 1
# Both passes of an image Pillow resizes horizontally first in one launch (resize.cu's resize_hv:
# the intermediate in shared memory, never in device memory), or two launches (False). Both are
# exact; the tests run both, the GPU check times both.
FUSED = True
# resize.cu's RESIZE_SMEM: the shared memory a resize_hv block's intermediate may take.
RESIZE_SMEM = 40960
RDESC_LEN = 20


@functools.lru_cache(maxsize=512)
def _axis(in_size: int, out_size: int, filter: str, fixed: bool, antialias: bool) -> tuple[int, bytes, bytes]:
    return _core.resize_tables(in_size, out_size, filter, fixed, antialias)


class _Image(NamedTuple):
    """One image of the batch as the kernels see it: an element offset and strides into a
    flat buffer. (A named tuple: a call's plan is looked up by its images, so they hash and
    compare at C speed.)"""

    offset: int
    h: int
    w: int
    sy: int
    sx: int
    sc: int


def _vertical_first(h: int, w: int, out_h: int, out_w: int) -> bool:
    # Pillow's pass order (fastprep.pillow_order): the CPU path's own rule, asked, not copied.
    return bool(_core.resize_vertical_first(w, h, out_w, out_h))


@dataclass
class _Pass:
    """One image's part of a pass: the table (source size -> full target size along the axis), the
    size this pass writes, the table index of its first output and the first source row read."""

    table_in: int
    table_out: int
    out_w: int
    out_h: int
    i0: int
    first: int


def _plan_pass(
    srcs: list[_Image], dsts: list[_Image], axis: int, parts: list[_Pass], filter: str, fixed: bool, antialias: bool
) -> tuple[Any, Any, Any, tuple[int, int, int]]:
    """Per-image descriptors, the concatenated tables and the grid of one pass (axis 0:
    horizontal, 1: vertical) over every image."""
    import numpy as np

    tables = [_axis(p.table_in, p.table_out, filter, fixed, antialias) for p in parts]
    kmax = max(t[0] for t in tables)
    wdtype = np.int32 if fixed else np.float64
    desc = np.zeros((len(srcs), DESC_LEN), np.int64)
    bounds, weights = [], []
    tab = 0
    for n, (src, dst, p, (ksize, b, k)) in enumerate(zip(srcs, dsts, parts, tables, strict=True)):
        w = np.frombuffer(k, dtype=wdtype).reshape(-1, ksize)
        if ksize < kmax:  # one row length for the whole batch; the extra weights are never read
            w = np.pad(w, ((0, 0), (0, kmax - ksize)))
        desc[n] = (
            *(src.offset, src.sy, src.sx, src.sc, dst.offset, dst.sy, dst.sx, dst.sc),
            *(p.out_w, p.out_h, p.first, tab, kmax, p.i0, w.shape[0]),
        )
        bounds.append(np.frombuffer(b, dtype=np.int32))
        # tap-major (see resize.cu): a warp's neighbouring outputs read neighbouring words
        weights.append(np.ascontiguousarray(w.T).reshape(-1))
        tab += w.shape[0]
    max_w = max(p.out_w for p in parts)
    max_h = max(p.out_h for p in parts)
    grid = (-(-max_w // BLOCK[0]), -(-max_h // BLOCK[1]), len(srcs))
    return desc, np.concatenate(bounds), np.concatenate(weights), grid


def source_spans(in_size: int, out_size: int, filter: str, antialias: bool, starts: Any, ends: Any) -> tuple[Any, Any]:
    """The source samples [first, last) that outputs starts[i] .. ends[i] - 1 of a pass read (from
    its bounds table), for arrays of ranges: the rows a vertical pass needs the horizontal pass to
    make, a tile's or a strip's source window."""
    import numpy as np

    _, b, _ = _axis(in_size, out_size, filter, True, antialias)
    pairs = np.frombuffer(b, dtype=np.int32).reshape(-1, 2)
    last = np.asarray(ends) - 1
    return pairs[starts, 0], pairs[last, 0] + pairs[last, 1]


def _rows_read(filter: str, antialias: bool, h: int, out_h: int, y0: int, rows: int) -> tuple[int, int]:
    """The source rows [first, last) that output rows y0 .. y0 + rows of the vertical pass read:
    the horizontal pass computes only those (as Pillow and the CPU path do)."""
    first, last = source_spans(h, out_h, filter, antialias, y0, y0 + rows)
    return int(first), int(last)


Window = tuple[int, int, int, int]  # x, y, width, height of the full-size result


def horizontal_part(w: int, h: int, tw: int, th: int, window: Window, filter: str, antialias: bool) -> _Pass:
    """An image's horizontal pass where it comes first: the window's columns over the source rows
    its vertical pass reads (the window's own rows where the height does not change)."""
    x, y, cw, ch = window
    first, last = _rows_read(filter, antialias, h, th, y, ch) if h != th else (y, y + ch)
    return _Pass(w, tw, cw, last - first, x, first)


def vertical_part(h: int, th: int, window: Window) -> _Pass:
    """An image's vertical pass after its horizontal one: the window, from the source's rows."""
    _, y, cw, ch = window
    return _Pass(h, th, cw, ch, y, 0)


def rebase(im: _Image, part: _Pass, h: int) -> _Image:
    """A pass's output as the next pass reads it: with the source's row numbers (its first row,
    ``part.first``, addressed as if row 0 were that many rows above) and height ``h``."""
    return _Image(im.offset - part.first * im.sy, h, im.w, im.sy, im.sx, im.sc)


@dataclass(frozen=True)
class _Launch:
    """One pass of a resize plan: the kernel, its defines and grid, the tables already on the
    device, and where it reads and writes (-1: the input buffer, -2: the output, k >= 0: the
    plan's intermediate k)."""

    kernel: str
    defines: tuple[tuple[str, int], ...]
    grid: tuple[int, int, int]
    desc: Any
    bounds: Any
    weights: Any
    src: int
    dst: int
    # resize_hv's vertical table, bounds and weights (the ones above are the horizontal pass's)
    more: tuple[Any, ...] = ()


class _ResizeJob(NamedTuple):
    """What `run_resize` is asked to do, less the buffers: what its plan depends on."""

    images: tuple[_Image, ...]
    channels: int
    dtype: str
    targets: tuple[tuple[int, int], ...]
    windows: tuple[Window, ...]
    filter: str
    antialias: bool
    out_images: tuple[_Image, ...]


@dataclass(frozen=True)
class _ResizePlan:
    """What a resize call launches, built once per geometry (see `_PLANS`): the copies of images
    whose size does not change, the intermediates (elements, dtype) and the passes."""

    copies: tuple[tuple[_Image, _Image, int, int], ...]
    temps: tuple[tuple[int, str], ...]
    launches: tuple[_Launch, ...]


class PlanCache:
    """Launch plans by (backend kind, device, geometry, filter, ...). Building one costs Python
    work per image and a few small host-to-device copies per pass, far more than the launches
    themselves; a training loop runs the same geometry call after call, so the plan (with its
    tables on the device) is kept. Bounded: ragged batches of ever-new sizes evict the oldest.

    A plan's tables are copied to the device on the stream that built it, and a later call may
    use the plan on another stream (the chunks of one ``preprocess`` call run on two): with a
    backend that has streams, the plan keeps an event recorded after its copies, and each use
    has the current stream wait for it (at once done, after the first use). An evicted plan's
    tables go back to CuPy's pool on the stream that built them, which could hand them out
    while another stream's kernels still read them: so an evicted plan is kept until an event
    recorded then on every stream that used it is done."""

    def __init__(self, size: int) -> None:
        # key -> (plan, its event or None, the streams that used it by handle)
        self._plans: OrderedDict[tuple[Any, ...], tuple[Any, Any, dict[int, Any]]] = OrderedDict()
        self._retired: list[tuple[Any, list[Any]]] = []
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], build: Callable[[], Any], backend: Any = None) -> Any:
        stream = getattr(backend, "stream", None)
        with self._lock:
            hit = self._plans.get(key)
            if hit is not None:
                self._plans.move_to_end(key)
                if stream is not None:
                    s = stream()
                    hit[2].setdefault(s.ptr, s)
        if hit is not None:
            plan, ready, _ = hit
            if ready is not None:
                backend.wait(ready)
            return plan
        plan = build()
        ready = backend.mark() if stream is not None else None
        users = {} if stream is None else {(s := stream()).ptr: s}
        with self._lock:
            self._plans[key] = (plan, ready, users)
            while len(self._plans) > self._size:
                _, (old, _, used) = self._plans.popitem(last=False)
                if used:
                    self._retired.append((old, [u.record() for u in used.values()]))
            self._retired = [(p, evs) for p, evs in self._retired if not all(e.done for e in evs)]
        return plan


def backend_key(backend: Backend) -> tuple[str, Any]:
    return type(backend).__name__, getattr(backend, "device_id", None)


_PLANS = PlanCache(64)


def run_resize(
    backend: Backend,
    flat: Any,
    images: list[_Image],
    channels: int,
    dtype: str,
    targets: list[tuple[int, int]],
    windows: list[Window],
    filter: str,
    antialias: bool,
    out: Any,
    out_images: list[_Image],
) -> None:
    """Resizes image i of `flat` (a 1-D device buffer) to targets[i] and writes the part
    windows[i] of the result to out_images[i] of `out`. Images taking the same passes share
    launches: at most two kernels per group, whatever the batch size."""
    xp = backend.xp
    job = _ResizeJob(
        tuple(images), channels, dtype, tuple(targets), tuple(windows), filter, antialias, tuple(out_images)
    )
    # the pass order rule the plan asks for (fastprep.pillow_order) is part of the key too
    key = (*backend_key(backend), int(_core.pillow_order(None)), FUSED, job)
    plan: _ResizePlan = _PLANS.get(key, lambda: _plan_resize(backend, job), backend)
    for s_, d_, cw, ch in plan.copies:
        _copy(xp, flat, s_, out, d_, channels, cw, ch)
    temps = [xp.empty(max(n, 1), dtype=t) for n, t in plan.temps]
    source = kernel_source("resize.cu")
    for ln in plan.launches:
        src = flat if ln.src == -1 else temps[ln.src]
        dst = out if ln.dst == -2 else temps[ln.dst]
        # read at each call: the tests switch them (HV_STAGE only matters to resize_hv; 0 for the
        # others keeps their CPU emulation in its fast mode, see tests/cuda/resize_harness.cpp)
        stage = HV_STAGE if ln.kernel == "resize_hv" else 0
        defines = dict(ln.defines, H_SHARED=H_SHARED, HV_STAGE=stage)
        backend.launch(source, defines, ln.kernel, ln.grid, (src, dst, ln.desc, ln.bounds, ln.weights, *ln.more))


def pass_launch(
    backend: Backend,
    srcs: list[_Image],
    dsts: list[_Image],
    axis: int,
    parts: list[_Pass],
    filter: str,
    fixed: bool,
    antialias: bool,
    defines: dict[str, int],
    src: int,
    dst: int,
    kernel: str | None = None,
) -> _Launch:
    """One pass (axis 0: horizontal, 1: vertical) over every image as one launch, its tables on
    the device; ``kernel`` defaults to the pass's resize.cu kernel."""
    desc, bounds, weights, grid = _plan_pass(srcs, dsts, axis, parts, filter, fixed, antialias)
    return _Launch(
        kernel or ("resize_horizontal" if axis == 0 else "resize_vertical"),
        tuple(sorted(defines.items())),
        grid,
        backend.asarray(desc),
        backend.asarray(bounds),
        backend.asarray(weights),
        src,
        dst,
    )


def _plan_resize(backend: Backend, job: _ResizeJob) -> _ResizePlan:
    images, channels, dtype, targets, windows, filter, antialias, out_images = job
    code = _DTYPES[dtype]
    fixed = code == 0
    premul = channels == 4 and fixed and filter != "nearest"
    copies: list[tuple[_Image, _Image, int, int]] = []
    temps: list[tuple[int, str]] = []
    launches: list[_Launch] = []
    # A pass Pillow would skip (the size does not change along that axis) is skipped here too.
    groups: dict[tuple[str, bool, bool], list[int]] = {}
    for i, (im, (tw, th)) in enumerate(zip(images, targets, strict=True)):
        order = "vh" if _vertical_first(im.h, im.w, th, tw) else "hv"
        groups.setdefault((order, im.w != tw, im.h != th), []).append(i)
    for (order, need_h, need_v), idx in groups.items():
        srcs = [images[i] for i in idx]
        dsts = [out_images[i] for i in idx]
        tgts = [targets[i] for i in idx]
        wins = [windows[i] for i in idx]
        if not need_h and not need_v:
            for s_, d_, (x, y, cw, ch) in zip(srcs, dsts, wins, strict=True):
                copies.append((_shift(s_, x, y), d_, cw, ch))
            continue
        # (axis, per-image parts, source images of this pass)
        passes: list[tuple[int, list[_Pass]]] = []
        if order == "hv":
            if need_h:
                hparts = [
                    horizontal_part(s_.w, s_.h, tw, th, win, filter, antialias)
                    for s_, (tw, th), win in zip(srcs, tgts, wins, strict=True)
                ]
                passes.append((0, hparts))
            if need_v:
                passes.append(
                    (1, [vertical_part(s_.h, th, win) for s_, (_, th), win in zip(srcs, tgts, wins, strict=True)])
                )
        else:
            passes.append(
                (
                    1,
                    [
                        _Pass(s_.h, th, s_.w if need_h else cw, ch, y, 0)
                        for s_, (_, th), (_, y, cw, ch) in zip(srcs, tgts, wins, strict=True)
                    ],
                )
            )
            if need_h:
                passes.append(
                    (
                        0,
                        [
                            _Pass(s_.w, tw, cw, ch, x, 0)
                            for s_, (tw, _), (x, _, cw, ch) in zip(srcs, tgts, wins, strict=True)
                        ],
                    )
                )
        if FUSED and order == "hv" and need_h and need_v:
            fused = _fused_launch(backend, srcs, dsts, passes, channels, code, premul, filter, antialias)
            if fused is not None:
                launches.append(fused)
                continue
        # A vertical pass straight from the source reads only the window's columns; after a
        # horizontal pass the columns are already the window's.
        cur = -1
        cur_imgs = [_shift(s_, x, 0) if not need_h else s_ for s_, (x, _, _, _) in zip(srcs, wins, strict=True)]
        for p, (axis, parts) in enumerate(passes):
            last = p == len(passes) - 1
            if last:
                nxt, nxt_imgs, dst_code = -2, dsts, code
            else:  # an intermediate image per input, packed HWC; float16 keeps float32 here
                tmp_dtype = "uint8" if fixed else "float32"
                offs, nxt_imgs = 0, []
                for part in parts:
                    nxt_imgs.append(_Image(offs, part.out_h, part.out_w, part.out_w * channels, channels, 1))
                    offs += part.out_w * part.out_h * channels
                nxt = len(temps)
                temps.append((offs, tmp_dtype))
                dst_code = _DTYPES[tmp_dtype]
            src_code = code if p == 0 else (0 if fixed else 1)
            defines = {
                "CHANNELS": channels,
                "SRC_DTYPE": src_code,
                "DST_DTYPE": dst_code,
                "PREMUL_IN": int(premul and p == 0),
                "UNPREMUL_OUT": int(premul and last),
            }
            launches.append(
                pass_launch(backend, cur_imgs, nxt_imgs, axis, parts, filter, fixed, antialias, defines, cur, nxt)
            )
            # The next pass reads this one's output with the source's row numbers: rows that
            # start at source row `first` are addressed as if row 0 were `first` rows above, and
            # after a horizontal pass the image keeps the source's height for the vertical table.
            cur = nxt
            cur_imgs = [
                rebase(im, part, src.h if axis == 0 else im.h)
                for im, part, src in zip(nxt_imgs, parts, srcs, strict=True)
            ]
    return _ResizePlan(tuple(copies), tuple(temps), tuple(launches))


def _tile(filter: str, antialias: bool, h: int, th: int, y: int, ch: int, cw: int, isz: int) -> tuple[int, int] | None:
    """resize_hv's tile (columns, rows) for one image: the tallest whose intermediate (the source
    rows its vertical taps read, times its columns) fits RESIZE_SMEM, 32 columns wide (a warp)
    where that fits; None where not even a one-row tile of one column does."""
    import numpy as np

    for tx in sorted({min(cw, 32), min(cw, 8), 1}, reverse=True):
        for ty in (32, 16, 8, 4, 2, 1):
            y0 = np.arange(0, ch, ty)
            first, last = source_spans(h, th, filter, antialias, y0 + y, np.minimum(y0 + ty, ch) + y)
            rows = last - first
            if int(rows.max()) * tx * isz <= RESIZE_SMEM:
                return tx, ty
    return None


def _fused_launch(
    backend: Backend,
    srcs: list[_Image],
    dsts: list[_Image],
    passes: list[tuple[int, list[_Pass]]],
    channels: int,
    code: int,
    premul: bool,
    filter: str,
    antialias: bool,
) -> _Launch | None:
    """The resize_hv launch of a group's horizontal + vertical passes, or None when an image has
    no tile that fits (the group then takes two launches)."""
    import numpy as np

    (_, hparts), (_, vparts) = passes
    fixed = code == 0
    isz = channels * (1 if fixed else 4)
    tiles = []
    for s_, vp in zip(srcs, vparts, strict=True):
        tile = _tile(filter, antialias, s_.h, vp.table_out, vp.i0, vp.out_h, vp.out_w, isz)
        if tile is None:
            return None
        tiles.append(tile)
    hdesc, hb, hw, _ = _plan_pass(srcs, dsts, 0, hparts, filter, fixed, antialias)
    vdesc, vb, vw, _ = _plan_pass(srcs, dsts, 1, vparts, filter, fixed, antialias)
    rdesc = np.zeros((len(srcs), RDESC_LEN), np.int64)
    rdesc[:, :8] = hdesc[:, :8]  # source and output offsets and strides
    rdesc[:, 8] = [p.out_w for p in vparts]
    rdesc[:, 9] = [p.out_h for p in vparts]
    rdesc[:, 10:14] = hdesc[:, 11:15]  # table, taps per index, first index, table length
    rdesc[:, 14:18] = vdesc[:, 11:15]
    rdesc[:, 18:20] = tiles
    grid = (
        max(-(-p.out_w // t[0]) for p, t in zip(vparts, tiles, strict=True)),
        max(-(-p.out_h // t[1]) for p, t in zip(vparts, tiles, strict=True)),
        len(srcs),
    )
    defines = {
        "CHANNELS": channels,
        "SRC_DTYPE": code,
        "DST_DTYPE": code,
        "PREMUL_IN": int(premul),
        "UNPREMUL_OUT": int(premul),
    }
    # no normalize table here: a one-element stand-in for the kernel's `lut` argument
    lut = backend.asarray(np.zeros(1, {0: np.uint8, 1: np.float32, 2: np.float16}[code]))
    return _Launch(
        "resize_hv",
        tuple(sorted(defines.items())),
        grid,
        backend.asarray(rdesc),
        backend.asarray(hb),
        backend.asarray(hw),
        -1,
        -2,
        (backend.asarray(vb), backend.asarray(vw), lut),
    )


def _shift(im: _Image, x: int, y: int) -> _Image:
    """The same image addressed from pixel (x, y)."""
    return _Image(im.offset + y * im.sy + x * im.sx, im.h - y, im.w - x, im.sy, im.sx, im.sc)


def _copy(xp: Any, flat: Any, s: _Image, out: Any, d: _Image, channels: int, w: int, h: int) -> None:
    idx_y = xp.arange(h)[:, None, None]
    idx_x = xp.arange(w)[None, :, None]
    idx_c = xp.arange(channels)[None, None, :]
    out[d.offset + idx_y * d.sy + idx_x * d.sx + idx_c * d.sc] = flat[
        s.offset + idx_y * s.sy + idx_x * s.sx + idx_c * s.sc
    ]


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
    dense = False
    if isinstance(batch, Sequence):
        arrays = [_device_array(be, a) for a in batch]
    else:
        whole = _device_array(be, batch)
        if whole.ndim != 4:
            raise ValueError(
                f"gpu_resize takes an (N, H, W, C) or (N, C, H, W) array or a list of images, got shape {whole.shape}"
            )
        # A C-contiguous batch is one buffer already: its images are read in place, not copied.
        dense = bool(whole.flags.c_contiguous) and whole.shape[0] > 0
        arrays = [whole] if dense else [whole[i] for i in range(whole.shape[0])]
    if not arrays:
        raise ValueError("gpu_resize got an empty batch")
    dtypes = {str(a.dtype) for a in arrays}
    if len(dtypes) != 1 or next(iter(dtypes)) not in _DTYPES:
        raise TypeError(f"gpu_resize takes uint8, float16 or float32 images of one dtype, got {sorted(dtypes)}")
    dtype = next(iter(dtypes))
    images, parts, offset = [], [], 0
    channels = None
    for i, a in enumerate(arrays):
        count = a.shape[0] if dense else 1  # a dense batch stands for its images
        if a.ndim == 3:
            a = xp.ascontiguousarray(a)
        elif not dense:
            raise ValueError(f"image {i} has shape {a.shape}; each image must be 3-D ({layout[1:]})")
        h, w, c = a.shape[-3:] if layout == "NHWC" else (a.shape[-2], a.shape[-1], a.shape[-3])
        if channels not in (None, c):
            raise ValueError(f"image {i} has {c} channels, the others {channels}")
        channels = c
        if h <= 0 or w <= 0:
            raise ValueError(f"image {i} is empty ({a.shape})")
        for _ in range(count):
            if layout == "NHWC":
                images.append(_Image(offset, h, w, w * c, c, 1))
            else:
                images.append(_Image(offset, h, w, w, 1, h * w))
            offset += h * w * c
        parts.append(a.reshape(-1))
    assert channels is not None
    if dtype == "uint8" and channels not in (1, 3, 4):
        raise ValueError(f"uint8 images need 1, 3 or 4 channels (L, RGB, RGBA), got {channels}")
    flat = xp.concatenate(parts) if len(parts) > 1 else parts[0]
    if dtype == "uint8" and channels == 4 and filter != "nearest" and hasattr(be, "device_id"):
        _check_premultiplied_rgba(be)
    n = len(images)
    per = out_w * out_h * channels
    if layout == "NHWC":
        outs = [_Image(i * per, out_h, out_w, out_w * channels, channels, 1) for i in range(n)]
        shape = (n, out_h, out_w, channels)
    else:
        outs = [_Image(i * per, out_h, out_w, out_w, 1, out_w * out_h) for i in range(n)]
        shape = (n, channels, out_h, out_w)
    out = xp.empty(n * per, dtype=dtype)
    targets = [(out_w, out_h)] * n
    windows = [(0, 0, out_w, out_h)] * n
    run_resize(be, flat, images, channels, dtype, targets, windows, filter, antialias, out, outs)
    return out.reshape(shape)


# Devices (by id) on which RGBA through Pillow's premultiplication was checked against the CPU
# path: True where it matched. On the first real GPU (H200, CUDA 13.0's NVRTC) such images came
# back still premultiplied: that compiler turned the unpremultiply's `alpha != 0 && alpha != 255`
# into a VIMNMX with a predicate output that skipped it (resize.cu now tests the range another
# way, which compiles to plain compares, but no GPU has run that yet). A compiler can do this
# again, so a wrong result is refused rather than returned.
_RGBA_CHECKED: dict[int, bool] = {}


def _check_premultiplied_rgba(be: Any) -> None:
    """Once per device: a small RGBA resize on the GPU against fastprep.resize (one device to
    host copy of 20x15 pixels, at the first RGBA call only)."""
    import numpy as np

    from ..image import resize

    device = be.device_id
    ok = _RGBA_CHECKED.get(device)
    if ok is None:
        _RGBA_CHECKED[device] = True  # the check's own gpu_resize call must not check again
        img = np.random.default_rng(0).integers(0, 256, (1, 37, 53, 4), dtype=np.uint8)
        try:
            asnumpy = getattr(be.xp, "asnumpy", np.asarray)
            got = asnumpy(gpu_resize(be.asarray(img), (20, 15), filter="bilinear", backend=be))
            ok = bool(np.array_equal(got[0], resize(img[0], (20, 15), filter="bilinear")))
        finally:
            _RGBA_CHECKED[device] = bool(ok)
    if not ok:
        raise DeviceUnavailableError(
            "gpu_resize of RGBA uint8 images did not match the CPU path on this device (a one-time "
            "self-check); resize RGBA images with fastprep.resize on the CPU, or drop alpha "
            "(3 channels) or use float32 for the GPU"
        )
