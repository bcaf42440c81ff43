"""``preprocess(..., device="cuda")``: the batch in three stages. ``plan`` reads the headers,
plans each JPEG (``jpeg_idct.plan_jpeg``) and its scan (``jpeg_entropy.parse_scan``) and decodes
the other files on the CPU; ``upload`` stages the compressed scans, the CPU-decoded coefficients
of the other JPEGs and the pixels of the other files in one pinned block, uploads them and has the
device entropy-decode the scans (``jpeg_entropy``); ``pixels`` runs the DCT stages
(``jpeg_idct``, ``jpeg_fused``), resizes only the crop windows (``resize``) and normalizes
(``normalize``) into the batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from ..errors import DecodeError
from ..image import MAX_IMAGE_PIXELS, Filter, _as_bytes, _limit, _warn_over_limit, decode_batch
from .backend import Backend, _backend
from .pixels import _pixels
from .plan import _Options, _plan
from .streams import run_chunks
from .upload import _upload_and_entropy


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
    opts = _Options.checked(
        resize_shorter, size, crop, mean, std, layout, dtype, filter, draft, num_threads, on_error, entropy
    )
    import numpy as np

    be = backend or _backend()
    xp = be.xp
    blobs = [_as_bytes(d, i) for i, d in enumerate(images)]
    n = len(blobs)
    per = opts.cw * opts.ch * 3
    limit = _limit(max_pixels)
    result = xp.zeros(n * per, dtype=opts.dtype)  # zero where an image fails
    flags = xp.zeros(max(n, 1), dtype="int32")  # the GPU-decoded scans' status words, in order
    scanned: list[int] = []  # the image of each status word
    ok_idx: set[int] = set()
    over: dict[int, tuple[int, int, int]] = {}

    def chunk(lo: int, hi: int) -> None:
        done = _chunk(be, blobs[lo:hi], opts, limit, apply_exif_orientation, on_error, result[lo * per : hi * per])
        ok_idx.update(lo + i for i in done.ok)
        over.update((lo + i, (lo + i, w, h)) for i, w, h in done.over)
        if done.status is not None:
            flags[len(scanned) : len(scanned) + len(done.scans)] = done.status[: len(done.scans)]
            scanned.extend(lo + i for i in done.scans)
        if done.failed is not None and on_error == "raise":
            _warn_over_limit(sorted(over.values()), max_pixels)
            _raise_for(blobs[lo + done.failed], lo + done.failed, max_pixels)

    # Chunks of the batch on two streams, so that one chunk's upload and entropy decoding overlap
    # the previous one's pixel kernels (streams.py); a small batch is one chunk.
    run_chunks(be, n, chunk)
    if scanned:
        # The one read-back of the path, once every chunk is queued: a status word per
        # GPU-decoded scan. The images whose scans the kernels flag (damaged, or what they do not
        # decode as libjpeg-turbo does) are decoded again by the CPU decoder, which has the last
        # word: its pixels, its repair or its DecodeError.
        bits = getattr(xp, "asnumpy", np.asarray)(flags[: len(scanned)])
        flagged = [i for k, i in enumerate(scanned) if bits[k]]
        if flagged:
            redo = _on_cpu(be, blobs, flagged, opts, limit, apply_exif_orientation, result.reshape(n, per))
            ok_idx.difference_update(flagged)
            ok_idx.update(redo.ok)
            for i in flagged:
                over.pop(i, None)
            over.update((i, (i, w, h)) for i, w, h in redo.over)
            if redo.failed is not None and on_error == "raise":
                _warn_over_limit(sorted(over.values()), max_pixels)
                _raise_for(blobs[redo.failed], redo.failed, max_pixels)
    _warn_over_limit(sorted(over.values()), max_pixels)
    shape = (n, 3, opts.ch, opts.cw) if opts.layout == "NCHW" else (n, opts.ch, opts.cw, 3)
    return _finish(result.reshape(shape), sorted(ok_idx), n, on_error)


class _Done(NamedTuple):
    """What a chunk's host side knows once its work is queued (indices in the chunk): the images
    decoded (those of `scans` unless their status words say otherwise), the ones over
    ``MAX_IMAGE_PIXELS`` (index, width, height), the first that failed, the GPU-decoded scans'
    images and the device array of their status words (or None)."""

    ok: list[int]
    over: list[tuple[int, int, int]]
    failed: int | None
    scans: list[int]
    status: Any


def _chunk(
    be: Backend,
    blobs: list[bytes],
    opts: _Options,
    limit: int | None,
    apply_exif_orientation: bool,
    on_error: str,
    out: Any,
    kernels: bool = True,
) -> _Done:
    """The images of `blobs` into `out` (their rows of the batch, zeroed). With
    ``on_error="raise"`` a failure stops it before the pixel stage. ``kernels=False`` decodes
    every file on the CPU."""
    # 1. Plan (host): headers, which decoder takes each file, where everything lies on the device.
    plan = _plan(blobs, opts, limit, apply_exif_orientation, kernels)
    # 2. Upload and entropy decoding: scans decoded on the GPU, other coefficients and pixels
    #    from the CPU; a file libjpeg-turbo refuses is left to the CPU decoder's verdict.
    flat, status = _upload_and_entropy(be, blobs, plan, opts, limit, apply_exif_orientation)
    ok_idx = sorted([*plan.jpegs, *(i for i, a in plan.decoded.items() if a is not None)])
    over = _over_limit(ok_idx, plan.layouts, plan.decoded, plan.cpu_over)
    failed = next((i for i in range(len(blobs)) if i not in ok_idx), None)
    scans = list(plan.scans)  # the order of their status words
    if failed is not None and on_error == "raise":
        return _Done(ok_idx, over, failed, scans, status)
    # 3. Pixels: IDCT and colour, resize of the crop windows, crop and normalize into the batch.
    _pixels(be, plan, opts, flat, ok_idx, out)
    return _Done(ok_idx, over, failed, scans, status)


def _on_cpu(
    be: Backend,
    blobs: list[bytes],
    idx: list[int],
    opts: _Options,
    limit: int | None,
    apply_exif_orientation: bool,
    rows: Any,
) -> _Done:
    """The images `idx` of the batch decoded again, on the CPU, into their `rows` (zero for those
    that fail); indices in the batch."""
    import numpy as np

    xp = be.xp
    per = rows.shape[1]
    sub = [blobs[i] for i in idx]
    out = xp.zeros(len(idx) * per, dtype=rows.dtype)
    done = _chunk(be, sub, opts, limit, apply_exif_orientation, "skip", out, kernels=False)
    rows[xp.asarray(np.asarray(idx))] = out.reshape(len(idx), per)
    failed = next((idx[k] for k in range(len(idx)) if k not in done.ok), None)
    return _Done([idx[k] for k in done.ok], [(idx[k], w, h) for k, w, h in done.over], failed, [], None)


def _raise_for(blob: bytes, index: int, max_pixels: int | None) -> None:
    """Raises the CPU decoder's DecodeError for the failed image `index` of the batch, with its
    index in the batch, as the CPU pipeline says it."""
    try:
        decode_batch([blob], max_pixels=max_pixels)  # raises with the reason
    except DecodeError as e:
        msg = str(e)[len(f"image {e.index}: ") :] if e.index is not None else str(e)
        raise DecodeError(msg, index, e.reason) from None
    raise DecodeError("the GPU path could not decode it, but the CPU decoder did", index, "corrupt")


def _finish(batch: Any, ok_idx: list[int], n: int, on_error: str) -> Any:
    """The batch, with the ``ok`` mask under ``on_error="skip"``."""
    import numpy as np

    if on_error == "skip":
        ok = np.zeros(n, bool)
        ok[ok_idx] = True
        return batch, ok
    return batch


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
