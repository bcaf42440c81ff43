"""JPEG decoding fused with the horizontal resize pass (``cuda/jpeg_fused.cu``): for the JPEGs of a
batch that the kernels decode with EXIF orientation 1-4 and that Pillow resizes horizontally first,
one launch IDCTs, upsamples and colour-converts each row strip in shared memory and writes only
the horizontally resized crop columns; the vertical pass (``resize.cu``) follows. The full-size
planes and RGB image of the three-kernel path (``jpeg_idct``, ``jpeg_color``, then the resize) are
never written to device memory."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..kernels import kernel_source, kernel_unit
from . import resize
from .backend import Backend
from .jpeg_idct import _ORIENT, JpegPlan
from .resize import (
    DESC_LEN,
    PlanCache,
    _Image,
    _Launch,
    _Pass,
    _plan_pass,
    _vertical_first,
    backend_key,
    horizontal_part,
    pass_launch,
    rebase,
    source_spans,
    vertical_part,
)

FC_LEN = 10
FDESC_LEN = DESC_LEN + 8 + 3 * FC_LEN
# Shared memory a block may use (jpeg_fused.cu's FUSED_SMEM): under the 48 KiB of static shared
# memory every CUDA device gives a block.
FUSED_SMEM = 45056
MAX_GRID_Z = 65535
# Module switch, as resize.H_SHARED: the tests run the batch both ways.
ENABLED = True


def fusable(plan: JpegPlan, target: tuple[int, int], window: tuple[int, int, int, int], filter: str) -> bool:
    """Whether the fused kernel makes this image's horizontal pass: orientations without a
    transposition, a width that changes, Pillow's horizontal pass first, and a tiling whose blocks
    fit in shared memory (an extreme downscale's tap windows may not)."""
    w, h = plan.oriented_size
    tw, th = target
    if not ENABLED or _ORIENT[plan.orientation][0] or w == tw or _vertical_first(h, w, th, tw):
        return False
    return _plan_tiling(plan, target, window, filter)[1] is not None


def _plan_tiling(
    plan: JpegPlan, target: tuple[int, int], window: tuple[int, int, int, int], filter: str
) -> tuple[_Pass, tuple[int, int, int] | None]:
    """The image's horizontal pass (the rows the vertical pass reads) and its tiling."""
    w, h = plan.oriented_size
    part = horizontal_part(w, h, *target, window, filter, True)
    _, flipx, flipy = _ORIENT[plan.orientation]
    tiling = _tiling(
        w, h, flipx, flipy, _geometry(plan), (w, target[0], filter), part.i0, part.out_w, part.first, part.out_h
    )
    return part, tiling


def _geometry(plan: JpegPlan) -> Planes:
    return tuple((p.scale, p.dw, p.dh, p.mode, p.hx, p.vy) for p in plan.planes)


def _axis_range(kind: int, f: int, a: int, b: int, n: int) -> tuple[int, int]:
    # jpeg_fused.cu's axis_range
    if kind == 0:
        return a, b
    if kind == 1:
        return a // f, (b - 1) // f + 1
    return min(max((a >> 1) - 1, 0), n - 1), min(max(((b - 1) >> 1) + 1, 0), n - 1) + 1


def _col_kind(mode: int) -> int:
    return 0 if mode in (0, 3) else 1 if mode == 1 else 2


def _row_kind(mode: int) -> int:
    return 0 if mode in (0, 2) else 1 if mode == 1 else 2


# (scale, dw, dh, mode, hx, vy) per component
Planes = tuple[tuple[int, int, int, int, int, int], ...]


@functools.lru_cache(maxsize=1024)
def _tiling(
    w: int,
    h: int,
    flipx: bool,
    flipy: bool,
    planes: Planes,
    table: tuple[int, int, str],
    i0: int,
    out_w: int,
    first: int,
    out_h: int,
) -> tuple[int, int, int] | None:
    """(columns per block, rows per strip, first strip's row) for one image whose every block
    fits FUSED_SMEM, by the kernel's own window arithmetic, or None (the image then takes the
    three-kernel path). Taller strips come first: a strip IDCTs the chroma rows above and below
    it too, so strips of 32 rows decode 4:2:0 chroma twice, of 16 three times."""

    mcu = max(s * (2 if mode in (3, 4) else vy if mode == 1 else 1) for s, _, _, mode, _, vy in planes)
    last = first + out_h
    for rows in sorted({max(mcu, 32), max(mcu, 16), mcu}, reverse=True):
        # strips aligned to the decoded image's iMCU rows (which flipy counts from the bottom)
        org = first - ((first - (h if flipy else 0)) % rows)
        max_nby = [0] * len(planes)
        max_rows = 0
        for k in range(-(-(last - org) // rows)):  # the strips, as the kernel's grid y
            oy0, oy1 = max(first, org + k * rows), min(last, org + (k + 1) * rows)
            dy0, dy1 = (h - oy1, h - oy0) if flipy else (oy0, oy1)
            max_rows = max(max_rows, oy1 - oy0)
            for c, (s, _, dh, mode, _, vy) in enumerate(planes):
                a, z = _axis_range(_row_kind(mode), vy, dy0, dy1, dh)
                max_nby[c] = max(max_nby[c], (z - 1) // s + 1 - a // s)
        tx = out_w
        while True:
            max_nbx = [0] * len(planes)
            max_span = 0
            for x0 in range(0, out_w, tx):
                x1 = min(x0 + tx, out_w)
                lo, hi = (int(v) for v in source_spans(*table, True, x0 + i0, x1 + i0))
                dx0, dx1 = (w - hi, w - lo) if flipx else (lo, hi)
                max_span = max(max_span, hi - lo)
                for c, (s, dw, _, mode, hx, _) in enumerate(planes):
                    a, z = _axis_range(_col_kind(mode), hx, dx0, dx1, dw)
                    max_nbx[c] = max(max_nbx[c], (z - 1) // s + 1 - a // s)
            need = sum(nx * ny * p[0] * p[0] for nx, ny, p in zip(max_nbx, max_nby, planes, strict=True))
            if need + max_rows * max_span * 3 <= FUSED_SMEM:
                if tx >= min(out_w, 24) or rows == mcu:
                    return tx, rows, org
                break  # too narrow a tile: try shorter strips
            if tx <= 8:
                break
            tx = -(-tx // 2)
    return None


@dataclass(frozen=True)
class _FusedPlan:
    """What `run_fused` launches for one batch geometry, its tables on the device: jpeg_fused_h
    over the images (descriptor chunks of at most MAX_GRID_Z images, writing the intermediate, or
    the output where the height does not change), then the vertical pass over the intermediate."""

    temp: int  # uint8 elements of the intermediate
    grid_xy: tuple[int, int]
    quant: Any
    bounds: Any
    weights: Any
    chunks: tuple[tuple[bool, Any, int], ...]  # (into the output, descriptors, images)
    vertical: _Launch | None


# Fused plans, kept as resize plans are (a training loop decodes the same geometry call after call).
_FUSED_PLANS = PlanCache(64)


def run_fused(
    backend: Backend,
    coefs: Any,
    plans: list[JpegPlan],
    coef_offsets: list[int],
    targets: list[tuple[int, int]],
    windows: list[tuple[int, int, int, int]],
    filter: str,
    out: Any,
    out_images: list[_Image],
    lut: Any = None,
) -> None:
    """Decodes and resizes JPEG k (coefficients at coef_offsets[k] of `coefs`) to targets[k] and
    writes the window windows[k] of it to out_images[k] of `out` (uint8 RGB), as `run_jpeg_decode`
    and `run_resize` would, for images that are `fusable`. With `lut` (a normalize table of
    `out`'s float dtype, from `normalize.normalize_table`) every image must have a vertical pass, which
    writes the table's values for its 8-bit results: the crop, normalize and layout of the batch,
    in the strides of `out_images`."""
    if not plans:
        return
    images = tuple(
        (p.orientation, p.oriented_size, _geometry(p), tuple((q.wb, q.hb, q.quant) for q in p.planes)) for p in plans
    )
    dst_code = 0 if lut is None else resize._DTYPES[str(lut.dtype)]
    geometry = (images, tuple(coef_offsets), tuple(targets), tuple(windows), filter, tuple(out_images), dst_code)
    key = (*backend_key(backend), FUSED_SMEM, geometry)
    plan: _FusedPlan = _FUSED_PLANS.get(
        key, lambda: _plan_fused(backend, plans, coef_offsets, targets, windows, filter, out_images, dst_code), backend
    )
    xp = backend.xp
    inter = xp.empty(max(plan.temp, 1), dtype="uint8")
    for into_out, desc, n in plan.chunks:
        backend.launch(
            kernel_unit("jpeg_fused.cu"),
            {},
            "jpeg_fused_h",
            (*plan.grid_xy, n),
            (coefs, plan.quant, out if into_out else inter, desc, plan.bounds, plan.weights),
        )
    v = plan.vertical
    if v is not None:
        # H_SHARED read at each call (the tests switch it); no resize_hv here (HV_STAGE 0)
        defines = dict(v.defines, H_SHARED=resize.H_SHARED, HV_STAGE=0)
        args = (inter, out, v.desc, v.bounds, v.weights)
        backend.launch(kernel_source("resize.cu"), defines, v.kernel, v.grid, args if lut is None else (*args, lut))


def _plan_fused(
    backend: Backend,
    plans: list[JpegPlan],
    coef_offsets: list[int],
    targets: list[tuple[int, int]],
    windows: list[tuple[int, int, int, int]],
    filter: str,
    out_images: list[_Image],
    dst_code: int,
) -> _FusedPlan:
    import numpy as np

    parts: list[_Pass] = []
    tilings: list[tuple[int, int, int]] = []
    extras: list[np.ndarray] = []
    quant: list[Any] = []
    for k, plan in enumerate(plans):
        part, tiling = _plan_tiling(plan, targets[k], windows[k], filter)
        assert tiling is not None, "run_fused takes fusable images only"
        _, flipx, flipy = _ORIENT[plan.orientation]
        extra = np.zeros(FDESC_LEN - DESC_LEN, np.int64)
        extra[:8] = (part.table_in, plan.oriented_size[1], len(plan.planes), flipx, flipy, *tiling)
        coff = coef_offsets[k]
        for c, p in enumerate(plan.planes):
            at = 8 + c * FC_LEN
            extra[at : at + FC_LEN] = (coff, 64 * len(quant), p.wb, p.hb, p.scale, p.dw, p.dh, p.mode, p.hx, p.vy)
            # libjpeg's ISLOW_MULT_TYPE is a short: a 16-bit table value wraps as it does there.
            quant.append(np.frombuffer(p.quant, np.uint16).view(np.int16).astype(np.int32))
            coff += p.wb * p.hb * 64
        parts.append(part)
        tilings.append(tiling)
        extras.append(extra)
    # The horizontal pass writes an intermediate (the rows the vertical pass reads) or, where the
    # height does not change, the output itself.
    heights = [p.oriented_size[1] for p in plans]
    vertical = [targets[k][1] != heights[k] for k in range(len(plans))]
    assert dst_code == 0 or all(vertical), "a normalize table needs every image's vertical pass"
    dsts: list[_Image] = []
    temp = 0
    for k, part in enumerate(parts):
        if vertical[k]:
            dsts.append(_Image(temp, part.out_h, part.out_w, part.out_w * 3, 3, 1))
            temp += part.out_h * part.out_w * 3
        else:
            dsts.append(out_images[k])
    srcs = [_Image(0, heights[k], part.table_in, part.table_in * 3, 3, 1) for k, part in enumerate(parts)]
    desc, bounds, weights, _ = _plan_pass(srcs, dsts, 0, parts, filter, True, True)
    fdesc = np.concatenate([desc, np.stack(extras)], axis=1)
    chunks = []
    for into_out in (False, True):
        sel = fdesc[np.array(vertical) != into_out]
        for lo in range(0, len(sel), MAX_GRID_Z):
            chunk = sel[lo : lo + MAX_GRID_Z]
            chunks.append((into_out, backend.asarray(chunk), len(chunk)))
    grid_xy = (
        max(-(-p.out_w // t[0]) for p, t in zip(parts, tilings, strict=True)),
        max(-(-(p.first + p.out_h - t[2]) // t[1]) for p, t in zip(parts, tilings, strict=True)),
    )
    # The vertical pass over the intermediates, as run_resize's second pass.
    vk = [k for k in range(len(plans)) if vertical[k]]
    launch = None
    if vk:
        defines = {"CHANNELS": 3, "SRC_DTYPE": 0, "DST_DTYPE": dst_code, "PREMUL_IN": 0, "UNPREMUL_OUT": 0}
        launch = pass_launch(
            backend,
            [rebase(dsts[k], parts[k], heights[k]) for k in vk],
            [out_images[k] for k in vk],
            1,
            [vertical_part(heights[k], targets[k][1], windows[k]) for k in vk],
            filter,
            True,
            True,
            defines,
            0,
            -2,
            "resize_vertical" if dst_code == 0 else "resize_vertical_lut",
        )
    return _FusedPlan(
        temp,
        grid_xy,
        backend.asarray(np.concatenate(quant)),
        backend.asarray(bounds),
        backend.asarray(weights),
        tuple(chunks),
        launch,
    )
