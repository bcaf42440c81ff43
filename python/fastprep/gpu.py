"""GPU image preprocessing through CuPy: ``gpu_resize`` and ``preprocess(device="cuda")``.

The kernels are the CUDA sources of the repository's ``cuda/`` (shipped inside the extension),
compiled at run time by CuPy's NVRTC once per device and parameter set, then cached. The resize
weights come from the CPU path's own code (``fastprep._core.resize_tables``), so the GPU result
equals ``fastprep.resize``, and so Pillow's, byte for byte for uint8. JPEGs are decoded from
their quantized DCT coefficients (entropy-decoded on the CPU by libjpeg-turbo) by kernels that
follow libjpeg-turbo's integer IDCT and upsampling exactly (``cuda/jpeg_idct.cu``), so
``preprocess(device="cuda")`` equals the CPU pipeline too.

Everything runs on the caller's current CuPy stream; the result is a CuPy array (DLPack-exportable,
so ``torch.from_dlpack(out)`` shares it). Nothing goes back to the host.

The launch plan (tables, per-image descriptors, grids, the order of the passes) is built here
independently of the array library, so the tests run the very same plan through a CPU emulation
of the kernels (tests/cuda_emu.py) on machines without a GPU.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

from . import _core
from .errors import DecodeError, DeviceUnavailableError
from .gpu_entropy import ScanPlan, decode_scans, parse_scan, plan_batch
from .image import MAX_IMAGE_PIXELS, Filter, _as_bytes, _limit, decode_batch
from .kernels import kernel_source

__all__ = ["gpu_preprocess", "gpu_resize"]

DESC_LEN = 15
BLOCK = (32, 8, 1)
_DTYPES = {"uint8": 0, "float32": 1, "float16": 2}
# The horizontal pass straight from global memory (0) or through shared memory (1): resize.cu's
# H_SHARED. Both are exact. On the H200 the first shared-memory form was slower (1080p -> 224
# horizontal pass 1.6 ms against 1.0 ms): its taps, ~26 bytes apart per lane, fall on a few banks.
# Both forms have since changed (tap-major weights, word-wise staging) and were not timed on a
# GPU again; the GPU check times both, and the tests run both.
H_SHARED = 0


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


def _rows_read(filter: str, antialias: bool, h: int, out_h: int, y0: int, rows: int) -> tuple[int, int]:
    """The source rows [first, last) that output rows y0 .. y0 + rows of the vertical pass read:
    the horizontal pass computes only those (as Pillow and the CPU path do)."""
    import numpy as np

    _, b, _ = _axis(h, out_h, filter, True, antialias)
    pairs = np.frombuffer(b, dtype=np.int32).reshape(-1, 2)
    return int(pairs[y0, 0]), int(pairs[y0 + rows - 1, 0] + pairs[y0 + rows - 1, 1])


Window = tuple[int, int, int, int]  # x, y, width, height of the full-size result


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


# Plans by (backend kind, device, geometry, filter, ...). Building one costs Python work per image
# and three small host-to-device copies per pass, far more than the launches themselves; a
# training loop resizes the same geometry call after call, so the plan (with its tables on the
# device) is kept. Bounded: ragged batches of ever-new sizes evict the oldest.
_PLANS: OrderedDict[tuple[Any, ...], _ResizePlan] = OrderedDict()
_PLANS_MAX = 64
_PLANS_LOCK = threading.Lock()


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
    key = (type(backend).__name__, getattr(backend, "device_id", None), int(_core.pillow_order(None)), job)
    with _PLANS_LOCK:
        plan = _PLANS.get(key)
        if plan is not None:
            _PLANS.move_to_end(key)
    if plan is None:
        plan = _plan_resize(backend, job)
        with _PLANS_LOCK:
            _PLANS[key] = plan
            while len(_PLANS) > _PLANS_MAX:
                _PLANS.popitem(last=False)
    for s_, d_, cw, ch in plan.copies:
        _copy(xp, flat, s_, out, d_, channels, cw, ch)
    temps = [xp.empty(max(n, 1), dtype=t) for n, t in plan.temps]
    source = kernel_source("resize.cu")
    for ln in plan.launches:
        src = flat if ln.src == -1 else temps[ln.src]
        dst = out if ln.dst == -2 else temps[ln.dst]
        defines = dict(ln.defines, H_SHARED=H_SHARED)  # read at each call: the tests switch it
        backend.launch(source, defines, ln.kernel, ln.grid, (src, dst, ln.desc, ln.bounds, ln.weights))


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
                rows = [
                    _rows_read(filter, antialias, s_.h, th, y, ch) if need_v else (y, y + ch)
                    for s_, (_, th), (_, y, _, ch) in zip(srcs, tgts, wins, strict=True)
                ]
                passes.append(
                    (
                        0,
                        [
                            _Pass(s_.w, tw, cw, last - first, x, first)
                            for s_, (tw, _), (x, _, cw, _), (first, last) in zip(srcs, tgts, wins, rows, strict=True)
                        ],
                    )
                )
            if need_v:
                passes.append(
                    (
                        1,
                        [
                            _Pass(s_.h, th, cw, ch, y, 0)
                            for s_, (_, th), (_, y, cw, ch) in zip(srcs, tgts, wins, strict=True)
                        ],
                    )
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
            desc, bounds, weights, grid = _plan_pass(cur_imgs, nxt_imgs, axis, parts, filter, fixed, antialias)
            defines = {
                "CHANNELS": channels,
                "SRC_DTYPE": src_code,
                "DST_DTYPE": dst_code,
                "PREMUL_IN": int(premul and p == 0),
                "UNPREMUL_OUT": int(premul and last),
            }
            kernel = "resize_horizontal" if axis == 0 else "resize_vertical"
            launches.append(
                _Launch(
                    kernel,
                    tuple(sorted(defines.items())),
                    grid,
                    backend.asarray(desc),
                    backend.asarray(bounds),
                    backend.asarray(weights),
                    cur,
                    nxt,
                )
            )
            # The next pass reads this one's output with the source's row numbers: rows that
            # start at source row `first` are addressed as if row 0 were `first` rows above, and
            # after a horizontal pass the image keeps the source's height for the vertical table.
            cur = nxt
            cur_imgs = [
                _Image(im.offset - part.first * im.sy, src.h if axis == 0 else im.h, im.w, im.sy, im.sx, im.sc)
                for im, part, src in zip(nxt_imgs, parts, srcs, strict=True)
            ]
    return _ResizePlan(tuple(copies), tuple(temps), tuple(launches))


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


# --- JPEG: DCT stages on the GPU -------------------------------------------------------------

PDESC_LEN = 8
IDESC_LEN = 32
MAX_GRID_Z = 65535
C_LEN = 7
# (swap axes, flip x, flip y) of EXIF orientations 1-8, as fastprep's CPU path applies them.
_ORIENT = {
    1: (False, False, False),
    2: (False, True, False),
    3: (False, True, True),
    4: (False, False, True),
    5: (True, False, False),
    6: (True, False, True),
    7: (True, True, True),
    8: (True, True, False),
}


@dataclass
class _Plane:
    """One component as libjpeg-turbo decodes it at a given scale."""

    wb: int  # blocks per row and block rows (libjpeg's width_in_blocks / height_in_blocks)
    hb: int
    scale: int  # DCT_scaled_size: 8, 4, 2 or 1
    dw: int  # downsampled_width / downsampled_height: the real samples
    dh: int
    mode: int  # 0 full size, 1 replicate, 2 h2v1 fancy, 3 h1v2 fancy, 4 h2v2 fancy
    hx: int
    vy: int
    quant: bytes


@dataclass
class JpegPlan:
    """How one JPEG decodes on the GPU at 1/denom scale: its planes and its output size."""

    width: int  # the decoded (scaled) image, before orientation
    height: int
    denom: int
    orientation: int
    planes: list[_Plane]

    @property
    def coefficients(self) -> int:
        return sum(p.wb * p.hb * 64 for p in self.planes)

    @property
    def oriented_size(self) -> tuple[int, int]:
        """(width, height) of the decoded image after EXIF orientation."""
        return (self.height, self.width) if _ORIENT[self.orientation][0] else (self.width, self.height)


def plan_jpeg(layout: dict[str, Any], denom: int = 1) -> JpegPlan | None:
    """libjpeg-turbo's decoding set-up for one file (jdmaster.c jpeg_calc_output_dimensions and
    jdsample.c jinit_upsampler): per component the DCT scale, the real sample size and the
    upsampler. None for what the kernels do not decode (CMYK, RGB-coded files, odd samplings,
    progressive files libjpeg-turbo block-smooths): those go through the CPU decoder."""
    if layout["color_space"] not in ("gray", "ycbcr") or denom not in (1, 2, 4, 8) or layout["block_smoothing"]:
        return None
    w, h, max_h, max_v = layout["width"], layout["height"], layout["max_h"], layout["max_v"]
    min_s = 8 // denom
    fancy = min_s > 1  # do_fancy: fancy upsampling is off at 1/8
    planes = []
    for _id, ch, cv, wb, hb, quant in layout["components"]:
        # Chroma is scaled up in the IDCT where the sampling ratio allows (jdmaster.c), so that
        # the upsampler has less to do.
        s = min_s
        while s < 8 and (max_h * min_s) % (ch * s * 2) == 0 and (max_v * min_s) % (cv * s * 2) == 0:
            s *= 2
        dw = -(-w * ch * s // (max_h * 8))
        dh = -(-h * cv * s // (max_v * 8))
        h_in, v_in = ch * s // min_s, cv * s // min_s
        hx, vy = 1, 1
        if h_in == max_h and v_in == max_v:
            mode = 0
        elif h_in * 2 == max_h and v_in == max_v and fancy and dw > 2:
            mode = 2
        elif h_in == max_h and v_in * 2 == max_v and fancy:
            mode = 3
        elif h_in * 2 == max_h and v_in * 2 == max_v and fancy and dw > 2:
            mode = 4
        elif max_h % h_in == 0 and max_v % v_in == 0:
            mode, hx, vy = 1, max_h // h_in, max_v // v_in
        else:
            return None
        planes.append(_Plane(wb, hb, s, dw, dh, mode, hx, vy, quant))
    return JpegPlan(-(-w // denom), -(-h // denom), denom, layout["orientation"], planes)


def _affine(plan: JpegPlan, offset: int) -> tuple[int, int, int]:
    """(byte offset of decoded pixel (0, 0), byte step per x, per y) in the oriented RGB image
    packed at `offset`: the CPU path's `orient` (output (ox, oy) reads source (sx, sy)) inverted."""
    swap, fx, fy = _ORIENT[plan.orientation]
    w, h = plan.width, plan.height
    ow = h if swap else w
    ax, ay = (ow * 3, 3) if swap else (3, ow * 3)  # byte steps of the source's x and y axes
    base = offset
    if fx:
        base += (w - 1) * ax
        ax = -ax
    if fy:
        base += (h - 1) * ay
        ay = -ay
    return base, ax, ay


def run_jpeg_decode(
    backend: Backend, coefs: Any, plans: list[JpegPlan], coef_offsets: list[int], dst: Any, dst_offsets: list[int]
) -> None:
    """Decodes the JPEGs whose coefficients (int16) are at coef_offsets[i] of `coefs` (a device
    array) into packed, oriented RGB at byte dst_offsets[i] of `dst` (uint8): one IDCT launch for
    every component plane of the batch, one upsampling + colour launch for every image."""
    import numpy as np

    xp = backend.xp
    source = kernel_source("jpeg_idct.cu")
    pdesc: list[tuple[int, ...]] = []
    idesc: list[Any] = []
    quant: list[Any] = []
    plane_bytes = 0
    for plan, coff, doff in zip(plans, coef_offsets, dst_offsets, strict=True):
        row = np.zeros(IDESC_LEN, np.int64)
        base, dx, dy = _affine(plan, doff)
        row[:6] = (plan.width, plan.height, len(plan.planes), base, dx, dy)
        for c, p in enumerate(plan.planes):
            pitch = p.wb * p.scale
            pdesc.append((coff, 64 * len(quant), p.wb, p.hb, plane_bytes, pitch, p.scale, 0))
            # libjpeg's ISLOW_MULT_TYPE is a short: a 16-bit table value wraps as it does there.
            quant.append(np.frombuffer(p.quant, np.uint16).view(np.int16).astype(np.int32))
            row[6 + c * C_LEN : 6 + (c + 1) * C_LEN] = (plane_bytes, pitch, p.dw, p.dh, p.mode, p.hx, p.vy)
            coff += p.wb * p.hb * 64
            plane_bytes += pitch * p.hb * p.scale
        idesc.append(row)
    planes = xp.empty(max(plane_bytes, 1), dtype="uint8")
    pd = np.asarray(pdesc, np.int64)
    q = backend.asarray(np.concatenate(quant))
    # Grid z is one plane / one image; CUDA allows 65535, so a larger batch takes more launches.
    for lo in range(0, len(pd), MAX_GRID_Z):
        part = pd[lo : lo + MAX_GRID_Z]
        grid = (-(-int(part[:, 2].max()) // BLOCK[0]), -(-int(part[:, 3].max()) // BLOCK[1]), len(part))
        backend.launch(source, {}, "jpeg_idct", grid, (coefs, q, planes, backend.asarray(part)))
    ides = np.stack(idesc)
    for lo in range(0, len(plans), MAX_GRID_Z):
        sub = plans[lo : lo + MAX_GRID_Z]
        grid = (-(-max(p.width for p in sub) // BLOCK[0]), -(-max(p.height for p in sub) // BLOCK[1]), len(sub))
        backend.launch(source, {}, "jpeg_color", grid, (planes, dst, backend.asarray(ides[lo : lo + MAX_GRID_Z])))


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

    def asarray(self, obj: Any) -> Any:
        return self.xp.asarray(obj)

    def staging(self, nbytes: int) -> tuple[Any, Any]:
        """A pinned host buffer of `nbytes` (a numpy view of a block of a fastprep BlockPool of
        kind "pinned", one pool per power-of-two size from 1 MiB), and the function that hands
        the block back once the copy reading it has finished on the current stream: the block
        is kept with a CUDA event and dropped (so returned to its pool) when the event is done."""
        import numpy as np

        from ._core import BlockPool

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

    from .image import resize

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


def _device_array(be: Backend, obj: Any) -> Any:
    xp = be.xp
    if hasattr(obj, "__cuda_array_interface__") or isinstance(obj, xp.ndarray):
        return be.asarray(obj)
    if hasattr(obj, "__dlpack__") and hasattr(xp, "from_dlpack"):
        return xp.from_dlpack(obj)
    return be.asarray(obj)


def _resized_size(shorter: int | None, size: tuple[int, int] | None, w: int, h: int) -> tuple[int, int]:
    # torchvision's Resize(int): int(size * long / short), as the CPU pipeline (pipeline.rs) does.
    if size is not None:
        return size
    assert shorter is not None
    return (shorter, int(shorter * h / w)) if w <= h else (int(shorter * w / h), shorter)


def _draft_denom(layout: dict[str, Any], shorter: int | None, size: tuple[int, int] | None) -> int:
    """The CPU pipeline's draft scale (pipeline.rs `draft_denominator`, Pillow's `draft`): the
    largest of 8, 4, 2, 1 not above the stored size over the target, the target computed from
    the oriented full-size image and turned back to the stored orientation."""
    sw, sh = layout["width"], layout["height"]
    swapped = layout["orientation"] >= 5
    w, h = (sh, sw) if swapped else (sw, sh)
    rw, rh = _resized_size(shorter, size, w, h)
    tw, th = (rh, rw) if swapped else (rw, rh)
    scale = min(sw // max(tw, 1), sh // max(th, 1))
    return next(a for a in (8, 4, 2, 1) if scale >= a)


def _align(n: int, to: int = 256) -> int:
    return -(-n // to) * to


def gpu_preprocess(
    images: Sequence[bytes],
    *,
    resize_shorter: int | None = 256,
    size: tuple[int, int] | None = None,
    crop: int | tuple[int, int] | None = 224,
    mean: Sequence[float] = (0.485, 0.456, 0.406),
    std: Sequence[float] = (0.229, 0.224, 0.225),
    layout: Literal["NCHW", "NHWC"] = "NCHW",
    dtype: Literal["float32", "float16", "uint8"] = "float32",
    filter: Filter = "bilinear",
    draft: bool = False,
    num_threads: int | None = None,
    on_error: Literal["raise", "skip"] = "raise",
    max_pixels: int | None = MAX_IMAGE_PIXELS,
    apply_exif_orientation: bool = True,
    entropy: Literal["gpu", "cpu"] = "gpu",
    backend: Backend | None = None,
) -> Any:
    """``preprocess(..., device="cuda")``: the same batch as the CPU pipeline, made on the GPU.

    Baseline JPEGs (gray and YCbCr, every sampling, restart intervals, Motion-JPEG frames without
    tables) go up compressed: only their scans (from a pinned BlockPool block, with CuPy) and their
    Huffman tables, and CUDA kernels entropy-decode them (``cuda/jpeg_entropy.cu``), a whole batch in
    one pass. Other JPEGs the kernels decode (progressive, arithmetic) are entropy-decoded on the
    CPU by libjpeg-turbo (Rust threads, GIL released) and their coefficients go up instead
    (``entropy="cpu"`` does that for every JPEG). Kernels then do the dequantization and IDCT (the
    scaled 1/2, 1/4, 1/8 IDCTs with ``draft=True``, as the CPU pipeline's draft mode), chroma
    upsampling, YCbCr to RGB and EXIF orientation, and resize (only the crop window), crop and
    normalize write the batch in place. The coefficients equal libjpeg-turbo's and the kernels follow
    its ISLOW IDCT and fancy upsampling exactly, so the pixels equal the CPU pipeline's. A scan the
    GPU finds damaged is decoded on the CPU, where libjpeg-turbo decides (a ``DecodeError`` for that
    image, or its repair). Other files (PNG, CMYK JPEGs) are decoded on the CPU and travel in the
    same upload. What comes back to the host is one status word per GPU-decoded scan; the batch
    stays on the device. Returns a CuPy array, and with ``on_error="skip"`` an ``ok`` mask too.
    """
    import numpy as np

    be = backend or _backend()
    xp = be.xp
    if size is not None:
        size = (int(size[0]), int(size[1]))
        resize_shorter = None
    cw, ch = (crop, crop) if isinstance(crop, int) else (crop if crop is not None else (0, 0))
    if crop is None:
        if size is None:
            raise ValueError("images of different shapes cannot share a batch: give crop=..., or size=(width, height)")
        cw, ch = size
    if dtype not in ("float32", "float16", "uint8") or layout not in ("NCHW", "NHWC"):
        raise ValueError(f"dtype must be float32, float16 or uint8 and layout NCHW or NHWC, got {dtype!r}, {layout!r}")
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if entropy not in ("gpu", "cpu"):
        raise ValueError(f"entropy must be 'gpu' or 'cpu', got {entropy!r}")
    blobs = [_as_bytes(d, i) for i, d in enumerate(images)]
    n = len(blobs)
    limit = _limit(max_pixels)
    layouts = _core.jpeg_layouts(blobs, limit, apply_exif_orientation, num_threads) if blobs else []
    # The JPEGs the kernels decode, with their plans; the rest go through the CPU decoder.
    plans: dict[int, JpegPlan] = {}
    for i, lay in enumerate(layouts):
        if isinstance(lay, dict):
            denom = _draft_denom(lay, resize_shorter, size) if draft else 1
            plan = plan_jpeg(lay, denom)
            if plan is not None:
                plans[i] = plan
    # Baseline JPEGs are entropy-decoded on the GPU from their compressed scans; the others the
    # kernels decode (progressive, arithmetic, ...) are entropy-decoded by libjpeg-turbo on the CPU.
    scans: dict[int, ScanPlan] = {}
    if entropy == "gpu":
        for i in plans:
            lay = layouts[i]
            assert isinstance(lay, dict)
            sp = parse_scan(blobs[i], lay)
            if sp is not None:
                scans[i] = sp
    # The coefficient region: the CPU-entropy JPEGs' first (uploaded), then the GPU-entropy ones'
    # (zeroed and written on the device).
    cpu_jpeg = [i for i in plans if i not in scans]
    coef_offsets: dict[int, int] = {}
    coef_bytes = 0
    for i in [*cpu_jpeg, *scans]:
        coef_offsets[i] = coef_bytes
        coef_bytes += _align(2 * plans[i].coefficients)
    gpu_coefs = coef_offsets[next(iter(scans))] if scans else coef_bytes
    scan_idx = list(scans)
    batch = None
    if scans:
        lays = [lay for i in scan_idx if isinstance(lay := layouts[i], dict)]
        batch = plan_batch([scans[i] for i in scan_idx], lays, [coef_offsets[i] // 2 for i in scan_idx])
    # The staging buffer: CPU coefficients, the compressed scans, then CPU-decoded pixels.
    scan_at = coef_bytes
    staged = scan_at + (_align(batch.nbytes) if batch else 0)
    # The CPU decodes go first.
    cpu_idx = [i for i in range(n) if i not in plans]
    decoded = _cpu_decode(
        blobs, cpu_idx, layouts, draft, resize_shorter, size, limit, apply_exif_orientation, num_threads
    )
    pix_offsets: dict[int, int] = {}
    for i, a in decoded.items():
        if a is not None:
            pix_offsets[i] = staged
            staged += _align(a.size)
    host, release = _staging(be, staged)
    # The device buffer: the uploaded part (coefficients, scans, then CPU-decoded pixels), then
    # each decoded JPEG's RGB image (a file refused below leaves a hole).
    rgb_offsets: dict[int, int] = {}
    off = staged
    for i, plan in plans.items():
        rgb_offsets[i] = off
        off += _align(plan.width * plan.height * 3)
    flat = xp.empty(max(off, 1), dtype="uint8")
    late: dict[int, Any] = {}
    status = None
    if batch is not None:
        # Only the compressed scans go up: the GPU unstuffs and decodes them into coefficients
        # while the CPU entropy-decodes the other JPEGs below.
        for i, at in zip(scan_idx, batch.src_offsets, strict=True):
            sp = scans[i]
            host[scan_at + at : scan_at + at + sp.end - sp.start] = memoryview(blobs[i])[sp.start : sp.end]
        _upload(be, flat, host, scan_at, scan_at + batch.nbytes)
        flat[gpu_coefs:coef_bytes] = 0
        coefs_all = flat[:coef_bytes].view(xp.int16)
        status = decode_scans(be, flat[scan_at : scan_at + batch.nbytes], batch, coefs_all)
    refused: list[int] = []
    if cpu_jpeg:
        # Entropy decoding in a few chunks, each chunk's coefficients copied to the device
        # (asynchronously, from pinned memory) while the CPU decodes the next one.
        threads = num_threads or os.cpu_count() or 1
        chunks = max(1, min(4, len(cpu_jpeg) // threads))
        step = -(-len(cpu_jpeg) // chunks)
        errors: list[Any] = []
        for lo in range(0, len(cpu_jpeg), step):
            part = cpu_jpeg[lo : lo + step]
            errors += _core.jpeg_coefficients_into(
                [blobs[i] for i in part], [coef_offsets[i] for i in part], host, num_threads
            )
            end = coef_offsets[part[-1]] + _align(2 * plans[part[-1]].coefficients)
            _upload(be, flat, host, coef_offsets[part[0]], end)
        refused = [i for i, e in zip(cpu_jpeg, errors, strict=True) if e is not None]
    if status is not None:
        # The one read-back of the path: a status word per GPU-decoded scan. A scan the kernels
        # flag (damaged, or what they do not decode as libjpeg-turbo does) goes to the CPU.
        import numpy as np

        flags = getattr(xp, "asnumpy", np.asarray)(status)
        refused += [i for k, i in enumerate(scan_idx) if flags[k]]
    if refused:
        for i in refused:  # the CPU decoder has the last word on a file refused here
            del plans[i]
        late = _cpu_decode(blobs, refused, layouts, draft, resize_shorter, size, limit, apply_exif_orientation, 1)
        decoded.update(late)
    for i, at in pix_offsets.items():
        a = decoded[i]
        host[at : at + a.size] = a.reshape(-1)
    _upload(be, flat, host, scan_at + (_align(batch.nbytes) if batch else 0), staged)
    release()  # the staging block goes back to its pool once the copies reading it are done
    ok_idx = sorted([*plans, *(i for i, a in decoded.items() if a is not None)])
    failed = [i for i in range(n) if i not in ok_idx]
    if failed and on_error == "raise":
        try:
            decode_batch([blobs[failed[0]]], max_pixels=max_pixels)  # raises with the reason
        except DecodeError as e:  # with the image's index in this batch, as the CPU pipeline says it
            msg = str(e)[len(f"image {e.index}: ") :] if e.index is not None else str(e)
            raise DecodeError(msg, failed[0], e.reason) from None
    # After them (rarely) the pixels of JPEGs only the CPU decoder could read.
    late_at = off
    for i, a in late.items():
        if a is not None:
            pix_offsets[i] = off
            off += _align(a.size)
    per = cw * ch * 3
    shape = (n, 3, ch, cw) if layout == "NCHW" else (n, ch, cw, 3)
    result = xp.zeros(n * per, dtype=dtype)
    if ok_idx:
        if off > late_at:
            grown = xp.empty(off, dtype="uint8")
            grown[:late_at] = flat[:late_at]
            flat = grown
        for i, a in late.items():
            if a is not None:
                flat[pix_offsets[i] : pix_offsets[i] + a.size] = be.asarray(a.reshape(-1))
        if plans:
            idx = list(plans)
            coefs = flat[:coef_bytes].view(xp.int16)
            run_jpeg_decode(
                be,
                coefs,
                [plans[i] for i in idx],
                [coef_offsets[i] // 2 for i in idx],
                flat,
                [rgb_offsets[i] for i in idx],
            )
        srcs, targets, windows = [], [], []
        for i in ok_idx:
            if i in plans:
                lay = layouts[i]
                assert isinstance(lay, dict)
                swap = plans[i].orientation >= 5
                fw, fh = (lay["height"], lay["width"]) if swap else (lay["width"], lay["height"])
                w, h = plans[i].oriented_size
                start = rgb_offsets[i]
            else:
                h, w = decoded[i].shape[:2]
                fw, fh = _full_size(layouts[i], w, h, draft)
                start = pix_offsets[i]
            # The target comes from the full-size image, also after a draft decode (as the CPU
            # pipeline does, so that draft and exact mode crop the same region).
            tw, th = _resized_size(resize_shorter, size, fw, fh)
            if cw > tw or ch > th:
                raise ValueError(f"crop {cw}x{ch} does not fit in the resized {tw}x{th} image {i}")
            windows.append((round((tw - cw) / 2.0), round((th - ch) / 2.0), cw, ch))
            targets.append((tw, th))
            srcs.append(_Image(start, h, w, w * 3, 3, 1))
        crops = xp.empty(len(ok_idx) * per, dtype="uint8")
        outs = [_Image(k * per, ch, cw, cw * 3, 3, 1) for k in range(len(ok_idx))]
        run_resize(be, flat, srcs, 3, "uint8", targets, windows, filter, True, crops, outs)
        if dtype == "uint8":
            packed = crops.reshape(len(ok_idx), ch, cw, 3)
            if layout == "NCHW":
                packed = packed.transpose(0, 3, 1, 2)
            dense = xp.ascontiguousarray(packed).reshape(len(ok_idx), per)
        else:
            lut = be.asarray(np.frombuffer(_core.normalize_table(list(mean), list(std), dtype), dtype=dtype))
            dense = xp.empty(len(ok_idx) * per, dtype=dtype)
            defines = {"OUT_DTYPE": 1 if dtype == "float32" else 2, "OUT_NCHW": int(layout == "NCHW"), "CHANNELS": 3}
            grid = (-(-cw // BLOCK[0]), -(-ch // BLOCK[1]), len(ok_idx))
            i32, i64 = np.int32, np.int64
            args = (crops, dense, lut, i32(ch), i32(cw), i64(cw * 3), i64(per), i32(ch), i32(cw), i32(0), i32(0))
            be.launch(kernel_source("normalize.cu"), defines, "crop_normalize_u8", grid, args)
            dense = dense.reshape(len(ok_idx), per)
        if len(ok_idx) == n:
            result = dense.reshape(-1)
        else:
            result = result.reshape(n, per)
            result[xp.asarray(np.asarray(ok_idx))] = dense
    batch = result.reshape(shape)
    if on_error == "skip":
        ok = np.zeros(n, bool)
        ok[ok_idx] = True
        return batch, ok
    return batch


def _full_size(layout: dict[str, Any] | tuple[str, str], w: int, h: int, draft: bool) -> tuple[int, int]:
    """The oriented full-size (width, height) of a CPU-decoded image of (w, h): a JPEG decoded
    at a draft scale is as large as its header says."""
    if not draft or not isinstance(layout, dict):
        return w, h
    swap = layout["orientation"] >= 5
    return (layout["height"], layout["width"]) if swap else (layout["width"], layout["height"])


def _cpu_decode(
    blobs: list[bytes],
    idx: list[int],
    layouts: list[dict[str, Any] | tuple[str, str]],
    draft: bool,
    shorter: int | None,
    size: tuple[int, int] | None,
    limit: int | None,
    apply_exif_orientation: bool,
    num_threads: int | None,
) -> dict[int, Any]:
    """RGB arrays (None for a failure) of the images the kernels do not decode: in one parallel
    batch, except JPEGs that draft mode decodes at a reduced scale (CMYK and the like)."""
    import numpy as np

    out: dict[int, Any] = {}
    scaled = {}
    for i in idx:
        lay = layouts[i]
        denom = _draft_denom(lay, shorter, size) if draft and isinstance(lay, dict) else 1
        if denom > 1:
            scaled[i] = denom
    plain = [i for i in idx if i not in scaled]
    if plain:
        arrays = decode_batch(
            [blobs[i] for i in plain], mode="RGB", apply_exif_orientation=apply_exif_orientation,
            max_pixels=limit, num_threads=num_threads, on_error="skip",
        )  # fmt: skip
        out.update(zip(plain, arrays, strict=True))
    for i, denom in scaled.items():
        try:
            out[i] = np.asarray(_core.decode_image(blobs[i], "RGB", apply_exif_orientation, limit, denom))
        except DecodeError:
            out[i] = None
    return out


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
