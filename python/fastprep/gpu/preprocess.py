"""``preprocess(..., device="cuda")``: the batch in three stages. ``plan`` reads the headers,
plans each JPEG (``jpeg_idct.plan_jpeg``) and its scan (``jpeg_entropy.parse_scan``) and decodes
the other files on the CPU; ``upload`` stages the compressed scans, the CPU-decoded coefficients
of the other JPEGs and the pixels of the other files in one pinned block, uploads them and has the
device entropy-decode the scans (``jpeg_entropy``); ``pixels`` runs the DCT stages
(``jpeg_idct``, ``jpeg_fused``), resizes only the crop windows (``resize``) and normalizes
(``normalize``) into the batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ..errors import DecodeError
from ..image import MAX_IMAGE_PIXELS, Filter, _as_bytes, _limit, _warn_over_limit, decode_batch
from .backend import Backend, _backend
from .pixels import _pixels
from .plan import _Options, _plan
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
    be = backend or _backend()
    blobs = [_as_bytes(d, i) for i, d in enumerate(images)]
    limit = _limit(max_pixels)
    # 1. Plan (host): headers, which decoder takes each file, where everything lies on the device.
    plan = _plan(blobs, opts, limit, apply_exif_orientation)
    # 2. Upload and entropy decoding: scans decoded on the GPU, other coefficients and pixels
    #    from the CPU; a file either decoder refuses is left to the CPU decoder's verdict.
    flat = _upload_and_entropy(be, blobs, plan, opts, limit, apply_exif_orientation)
    ok_idx = sorted([*plan.jpegs, *(i for i, a in plan.decoded.items() if a is not None)])
    _warn_over_limit(_over_limit(ok_idx, plan.layouts, plan.decoded, plan.cpu_over), max_pixels)
    failed = [i for i in range(len(blobs)) if i not in ok_idx]
    if failed and on_error == "raise":
        try:
            decode_batch([blobs[failed[0]]], max_pixels=max_pixels)  # raises with the reason
        except DecodeError as e:  # with the image's index in this batch, as the CPU pipeline says it
            msg = str(e)[len(f"image {e.index}: ") :] if e.index is not None else str(e)
            raise DecodeError(msg, failed[0], e.reason) from None
    # 3. Pixels: IDCT and colour, resize of the crop windows, crop and normalize into the batch.
    result = _pixels(be, plan, opts, flat, ok_idx, len(blobs))
    return _finish(result, ok_idx, len(blobs), on_error)


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
