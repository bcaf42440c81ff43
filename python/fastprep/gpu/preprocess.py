"""``preprocess(..., device="cuda")``: the batch plan and its stages. The host reads the headers,
plans each JPEG (``jpeg_idct.plan_jpeg``) and its scan (``jpeg_entropy.parse_scan``), stages the
compressed scans, the CPU-decoded coefficients of the other JPEGs and the pixels of the other files
in one pinned block and uploads them; the device entropy-decodes the scans (``jpeg_entropy``),
runs the DCT stages (``jpeg_idct``), resizes only the crop windows (``resize``) and normalizes
(``normalize``) into the batch."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

from .. import _core
from ..errors import DecodeError
from ..image import MAX_IMAGE_PIXELS, Filter, _as_bytes, _decode_all, _limit, _warn_over_limit, decode_batch
from . import jpeg_fused
from .backend import Backend, _backend, _staging, _upload
from .jpeg_entropy import EntropyBatch, ScanPlan, decode_scans, parse_scan, plan_batch
from .jpeg_idct import JpegPlan, plan_jpeg, run_jpeg_decode
from .normalize import normalize_table, run_normalize
from .resize import _Image, run_resize


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
    # 1 also where the image is smaller than the target (scale 0: upscaled), as pipeline.rs does
    return next((a for a in (8, 4, 2, 1) if scale >= a), 1)


def _align(n: int, to: int = 256) -> int:
    return -(-n // to) * to


def _plan_jpegs(
    blobs: list[bytes],
    layouts: list[dict[str, Any] | tuple[str, str]],
    draft: bool,
    shorter: int | None,
    size: tuple[int, int] | None,
    entropy: str,
) -> tuple[dict[int, JpegPlan], dict[int, ScanPlan]]:
    """The JPEGs the kernels decode, with their plans (the rest go through the CPU decoder), and
    of those the baseline ones whose scans the GPU entropy-decodes (the others, progressive or
    arithmetic, are entropy-decoded by libjpeg-turbo on the CPU)."""
    plans: dict[int, JpegPlan] = {}
    scans: dict[int, ScanPlan] = {}
    for i, lay in enumerate(layouts):
        if not isinstance(lay, dict):
            continue
        plan = plan_jpeg(lay, _draft_denom(lay, shorter, size) if draft else 1)
        if plan is None:
            continue
        plans[i] = plan
        sp = parse_scan(blobs[i], lay) if entropy == "gpu" else None
        if sp is not None:
            scans[i] = sp
    return plans, scans


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
    plans, scans = _plan_jpegs(blobs, layouts, draft, resize_shorter, size, entropy)
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
    decoded, cpu_over = _cpu_decode(
        blobs, cpu_idx, layouts, draft, resize_shorter, size, limit, apply_exif_orientation, num_threads
    )
    pix_offsets: dict[int, int] = {}
    for i, a in decoded.items():
        if a is not None:
            pix_offsets[i] = staged
            staged += _align(a.size)
    host, release = _staging(be, staged)
    # JPEGs decoded and resized horizontally in one kernel (jpeg_fused): no full-size image.
    fused = {
        i
        for i, plan in plans.items()
        if jpeg_fused.fusable(plan, *_target(plan, layouts[i], resize_shorter, size, cw, ch), filter)
    }
    # The device buffer: the uploaded part (coefficients, scans, then CPU-decoded pixels), then
    # each other decoded JPEG's RGB image (a file refused below leaves a hole).
    rgb_offsets: dict[int, int] = {}
    off = staged
    for i, plan in plans.items():
        if i not in fused:
            rgb_offsets[i] = off
            off += _align(plan.width * plan.height * 3)
    flat = xp.empty(max(off, 1), dtype="uint8")
    late: dict[int, Any] = {}
    refused = _entropy_decode(
        be, blobs, plans, scans, batch, coef_offsets, (gpu_coefs, scan_at), host, flat, num_threads
    )
    if refused:
        for i in refused:  # the CPU decoder has the last word on a file refused here
            del plans[i]
        late, late_over = _cpu_decode(
            blobs, refused, layouts, draft, resize_shorter, size, limit, apply_exif_orientation, 1
        )
        decoded.update(late)
        cpu_over |= late_over
    for i, at in pix_offsets.items():
        a = decoded[i]
        host[at : at + a.size] = a.reshape(-1)
    _upload(be, flat, host, scan_at + (_align(batch.nbytes) if batch else 0), staged)
    release()  # the staging block goes back to its pool once the copies reading it are done
    ok_idx = sorted([*plans, *(i for i, a in decoded.items() if a is not None)])
    _warn_over_limit(_over_limit(ok_idx, layouts, decoded, cpu_over), max_pixels)
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
        fused &= set(plans)
        coefs = flat[:coef_bytes].view(xp.int16)
        if len(fused) < len(plans):
            idx = [i for i in plans if i not in fused]
            run_jpeg_decode(
                be,
                coefs,
                [plans[i] for i in idx],
                [coef_offsets[i] // 2 for i in idx],
                flat,
                [rgb_offsets[i] for i in idx],
            )
        where = {i: rgb_offsets.get(i, 0) if i in plans else pix_offsets[i] for i in ok_idx}
        srcs, targets, windows = _crop_windows(
            ok_idx, plans, layouts, decoded, where, draft, resize_shorter, size, cw, ch
        )
        if fused == set(ok_idx) and all(targets[k][1] != plans[i].oriented_size[1] for k, i in enumerate(ok_idx)):
            # Every image fused and resized vertically too: the vertical pass writes the batch
            # itself, in its dtype (through the normalize table) and layout.
            ok_arr = np.asarray(ok_idx)
            lut = None if dtype == "uint8" else normalize_table(be, mean, std, dtype)
            sy, sx, sc = (cw, 1, cw * ch) if layout == "NCHW" else (cw * 3, 3, 1)
            jpeg_fused.run_fused(
                be,
                coefs,
                [plans[i] for i in ok_idx],
                [coef_offsets[i] // 2 for i in ok_idx],
                targets,
                windows,
                filter,
                result,
                [_Image(int(i) * per, ch, cw, sy, sx, sc) for i in ok_arr],
                lut,
            )
            return _finish(result.reshape(shape), ok_idx, n, on_error)
        crops = xp.empty(len(ok_idx) * per, dtype="uint8")
        outs = [_Image(k * per, ch, cw, cw * 3, 3, 1) for k in range(len(ok_idx))]
        rest = [k for k, i in enumerate(ok_idx) if i not in fused]
        if fused:
            pos = [k for k, i in enumerate(ok_idx) if i in fused]
            jpeg_fused.run_fused(
                be,
                coefs,
                [plans[ok_idx[k]] for k in pos],
                [coef_offsets[ok_idx[k]] // 2 for k in pos],
                [targets[k] for k in pos],
                [windows[k] for k in pos],
                filter,
                crops,
                [outs[k] for k in pos],
            )
        if rest:
            run_resize(
                be,
                flat,
                [srcs[k] for k in rest],
                3,
                "uint8",
                [targets[k] for k in rest],
                [windows[k] for k in rest],
                filter,
                True,
                crops,
                [outs[k] for k in rest],
            )
        if dtype == "uint8":
            packed = crops.reshape(len(ok_idx), ch, cw, 3)
            if layout == "NCHW":
                packed = packed.transpose(0, 3, 1, 2)
            dense = xp.ascontiguousarray(packed).reshape(len(ok_idx), per)
        else:
            dense = run_normalize(be, crops, len(ok_idx), cw, ch, mean, std, dtype, layout)
        if len(ok_idx) == n:
            result = dense.reshape(-1)
        else:
            result = result.reshape(n, per)
            result[xp.asarray(np.asarray(ok_idx))] = dense
    return _finish(result.reshape(shape), ok_idx, n, on_error)


def _finish(batch: Any, ok_idx: list[int], n: int, on_error: str) -> Any:
    """The batch, with the ``ok`` mask under ``on_error="skip"``."""
    import numpy as np

    if on_error == "skip":
        ok = np.zeros(n, bool)
        ok[ok_idx] = True
        return batch, ok
    return batch


def _target(
    plan: JpegPlan,
    layout: dict[str, Any] | tuple[str, str],
    shorter: int | None,
    size: tuple[int, int] | None,
    cw: int,
    ch: int,
) -> tuple[tuple[int, int], tuple[int, int, int, int]]:
    """The resize target and crop window of a kernel-decoded JPEG, from its oriented full-size
    image (as `_crop_windows` computes them; a crop that does not fit is refused there)."""
    assert isinstance(layout, dict)
    swap = plan.orientation >= 5
    fw, fh = (layout["height"], layout["width"]) if swap else (layout["width"], layout["height"])
    tw, th = _resized_size(shorter, size, fw, fh)
    return (tw, th), (round((tw - cw) / 2.0), round((th - ch) / 2.0), min(cw, tw), min(ch, th))


def _crop_windows(
    ok_idx: list[int],
    plans: dict[int, JpegPlan],
    layouts: list[dict[str, Any] | tuple[str, str]],
    decoded: dict[int, Any],
    where: dict[int, int],
    draft: bool,
    shorter: int | None,
    size: tuple[int, int] | None,
    cw: int,
    ch: int,
) -> tuple[list[_Image], list[tuple[int, int]], list[tuple[int, int, int, int]]]:
    """Per decoded image (at byte where[i] of the device buffer): its RGB image, its resize target
    and the centred crop window of that target."""
    srcs, targets, windows = [], [], []
    for i in ok_idx:
        if i in plans:
            lay = layouts[i]
            assert isinstance(lay, dict)
            swap = plans[i].orientation >= 5
            fw, fh = (lay["height"], lay["width"]) if swap else (lay["width"], lay["height"])
            w, h = plans[i].oriented_size
        else:
            h, w = decoded[i].shape[:2]
            fw, fh = _full_size(layouts[i], w, h, draft)
        # The target comes from the full-size image, also after a draft decode (as the CPU
        # pipeline does, so that draft and exact mode crop the same region).
        tw, th = _resized_size(shorter, size, fw, fh)
        if cw > tw or ch > th:
            raise ValueError(f"crop {cw}x{ch} does not fit in the resized {tw}x{th} image {i}")
        windows.append((round((tw - cw) / 2.0), round((th - ch) / 2.0), cw, ch))
        targets.append((tw, th))
        srcs.append(_Image(where[i], h, w, w * 3, 3, 1))
    return srcs, targets, windows


def _entropy_decode(
    be: Backend,
    blobs: list[bytes],
    plans: dict[int, JpegPlan],
    scans: dict[int, ScanPlan],
    batch: EntropyBatch | None,
    coef_offsets: dict[int, int],
    at: tuple[int, int],
    host: Any,
    flat: Any,
    num_threads: int | None,
) -> list[int]:
    """Every planned JPEG's coefficients into flat[coef_offsets[i]:]: the scans of `batch` go up
    (from `host`, at byte at[1] of both buffers) and are decoded on the GPU into the zeroed region
    from byte at[0]; the other JPEGs are entropy-decoded on the CPU into `host` and uploaded chunk
    by chunk meanwhile. Returns the JPEGs refused (by libjpeg-turbo's coefficient reader, or
    flagged by the GPU decoder): the CPU decoder has the last word on those."""
    import numpy as np

    xp = be.xp
    gpu_coefs, scan_at = at
    coef_bytes = scan_at
    status = None
    scan_idx = list(scans)
    if batch is not None:
        # Only the compressed scans go up: the GPU unstuffs and decodes them into coefficients
        # while the CPU entropy-decodes the other JPEGs below.
        for i, src in zip(scan_idx, batch.src_offsets, strict=True):
            sp = scans[i]
            host[scan_at + src : scan_at + src + sp.end - sp.start] = memoryview(blobs[i])[sp.start : sp.end]
        _upload(be, flat, host, scan_at, scan_at + batch.nbytes)
        flat[gpu_coefs:coef_bytes] = 0
        coefs_all = flat[:coef_bytes].view(xp.int16)
        status = decode_scans(be, flat[scan_at : scan_at + batch.nbytes], batch, coefs_all)
    cpu_jpeg = [i for i in plans if i not in scans]
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
        flags = getattr(xp, "asnumpy", np.asarray)(status)
        refused += [i for k, i in enumerate(scan_idx) if flags[k]]
    return refused


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
) -> tuple[dict[int, Any], set[int]]:
    """RGB arrays (None for a failure) of the images the kernels do not decode: in one parallel
    batch, except JPEGs that draft mode decodes at a reduced scale (CMYK and the like); and
    which of them the core found over ``MAX_IMAGE_PIXELS``."""
    import numpy as np

    out: dict[int, Any] = {}
    over: set[int] = set()
    scaled = {}
    for i in idx:
        lay = layouts[i]
        denom = _draft_denom(lay, shorter, size) if draft and isinstance(lay, dict) else 1
        if denom > 1:
            scaled[i] = denom
    plain = [i for i in idx if i not in scaled]
    if plain:
        arrays, _, plain_over = _decode_all(
            [blobs[i] for i in plain], "RGB", apply_exif_orientation, limit, num_threads
        )
        out.update(zip(plain, arrays, strict=True))
        over.update(plain[k] for k, _, _ in plain_over)
    for i, denom in scaled.items():
        try:
            pixels, big = _core.decode_image(blobs[i], "RGB", apply_exif_orientation, limit, denom)
        except DecodeError:
            out[i] = None
            continue
        out[i] = np.asarray(pixels)
        if big:
            over.add(i)
    return out, over


def _over_limit(
    ok_idx: list[int], layouts: list[dict[str, Any] | tuple[str, str]], decoded: dict[int, Any], cpu_over: set[int]
) -> list[tuple[int, int, int]]:
    """(index, oriented width, height) of the images of the batch over ``MAX_IMAGE_PIXELS``: a
    JPEG's flag and size come from its header (``jpeg_layouts``), whichever decoder ran, another
    file's from its CPU decode (at full scale: only JPEGs are drafted)."""
    over = []
    for i in ok_idx:
        lay = layouts[i]
        if isinstance(lay, dict):
            if lay["over_default_max_pixels"]:
                swap = lay["orientation"] >= 5
                over.append((i, lay["height"], lay["width"]) if swap else (i, lay["width"], lay["height"]))
        elif i in cpu_over:
            h, w = decoded[i].shape[:2]
            over.append((i, w, h))
    return over
