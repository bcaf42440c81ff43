"""Image preprocessing on the CPU.

- ``decode`` / ``decode_batch``: JPEG (libjpeg-turbo) and PNG bytes to uint8 (H, W, C) arrays with
  pixels identical to Pillow's ``ImageOps.exif_transpose(Image.open(f)).convert(mode)``.
- ``resize`` / ``resize_batch``: bit-exact with ``PIL.Image.resize`` for 8-bit L, RGB and RGBA
  images with every filter (nearest, box, bilinear, hamming, bicubic, lanczos), and with Pillow's
  arithmetic of its other modes (F, I, I;16, "1", P, ...) for float32, int32, uint16 and bool
  images. Pillow 13 changed the order of the two passes for some sizes (which changes bytes), so
  fastprep follows the Pillow installed beside it, or 13 when there is none;
  ``pillow_order(12)`` / ``pillow_order(13)`` chooses explicitly.
"""

from __future__ import annotations

import importlib.metadata
import numbers
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, Literal

from . import _core, _resize_box
from .errors import DecodeError, DecompressionBombWarning

__all__ = ["MAX_IMAGE_PIXELS", "decode", "decode_batch", "pillow_order", "reduce", "resize", "resize_batch"]

Filter = Literal["nearest", "box", "bilinear", "hamming", "bicubic", "lanczos"]
Mode = Literal["RGB", "L", "RGBA", "unchanged"]

#: Pillow's ``Image.MAX_IMAGE_PIXELS`` and the default ``max_pixels``, which behaves as Pillow's
#: ``Image.open``: an image with more pixels decodes with a ``DecompressionBombWarning``, one with
#: more than twice as many is refused (``DecodeError`` with reason ``"too_large"``). Any other
#: ``max_pixels`` is a hard limit (refused above it, no warning); ``None`` is no limit.
MAX_IMAGE_PIXELS: int = _core.DEFAULT_MAX_PIXELS

_BytesLike = bytes | bytearray | memoryview


def pillow_order(major: int | None = None) -> int:
    """The Pillow major version (12 or 13) whose resize results fastprep reproduces; with an
    argument, switches to it for the whole process (the CPU and GPU paths alike).

    Pillow 13 runs the vertical pass first whenever the height shrinks by more than twice as many
    pixels as the width (12.x only for images over 100 times taller than wide); both passes round
    to 8 bits, so the order shows in the bytes. The default follows the installed Pillow, found
    by its metadata without importing it, or 13 when Pillow is not installed.
    """
    if major is not None and major not in (12, 13):
        raise ValueError(f"pillow_order takes 12 or 13, got {major!r}")
    return int(_core.pillow_order(major))


def _installed_pillow_major() -> int:
    try:
        major = int(importlib.metadata.version("pillow").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return 13
    return 12 if major <= 12 else 13


pillow_order(_installed_pillow_major())


def _as_bytes(data: Any, index: int | None = None) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    where = "" if index is None else f" (image {index})"
    raise TypeError(
        f"decode takes the encoded file as bytes, bytearray or memoryview{where}, got "
        f"{type(data).__name__}; read files with open(path, 'rb').read()"
    )


def _as_encoded(data: Any, index: int) -> bytes | bytearray | memoryview:
    """For the batch calls: a bytearray or a contiguous byte memoryview (a slice of a tar shard or
    a record file in memory, an mmap) goes to Rust as it is, read in place; other views are
    copied."""
    if isinstance(data, bytes | bytearray):
        return data
    if isinstance(data, memoryview) and data.c_contiguous and data.format == "B":
        return data
    return _as_bytes(data, index)


def decode(
    data: _BytesLike,
    *,
    mode: Mode = "RGB",
    apply_exif_orientation: bool = True,
    max_pixels: int | None = MAX_IMAGE_PIXELS,
) -> Any:
    """Decode a JPEG or PNG file to a uint8 numpy array of shape (H, W, C).

    C is 3 for ``mode="RGB"``, 1 for ``"L"``, 4 for ``"RGBA"``; ``"unchanged"`` keeps the file's
    own channels (L 1, LA 2, RGB 3, RGBA 4 or CMYK 4; palettes expand to RGB, or RGBA with tRNS).
    The pixels equal ``np.asarray(ImageOps.exif_transpose(Image.open(f)).convert(mode))`` of
    Pillow (libjpeg-turbo's ISLOW IDCT and fancy upsampling; Pillow's own mode conversions, e.g.
    16-bit grayscale PNGs clamp to 255 as Pillow's "I;16" -> "L" does). The GIL is released.

    Raises ``fastprep.errors.DecodeError`` (with ``.reason``) for empty, truncated, corrupt or
    unsupported data and for images over ``max_pixels`` (None: no limit). The default,
    ``MAX_IMAGE_PIXELS``, is Pillow's pair: over it the image decodes with a
    ``fastprep.DecompressionBombWarning``, over twice it is refused; another value is a hard limit.
    """
    import numpy as np

    pixels, over = _core.decode_image(_as_bytes(data), mode, apply_exif_orientation, _limit(max_pixels), 1)
    arr = np.asarray(pixels)
    if over and max_pixels == MAX_IMAGE_PIXELS:
        h, w = arr.shape[:2]
        _bomb_warning(f"an image of {w}x{h} = {w * h} pixels")
    return arr


def decode_batch(
    items: Sequence[_BytesLike],
    *,
    mode: Mode = "RGB",
    apply_exif_orientation: bool = True,
    max_pixels: int | None = MAX_IMAGE_PIXELS,
    num_threads: int | None = None,
    on_error: Literal["raise", "skip"] = "raise",
) -> list[Any]:
    """Decode many files in parallel (``num_threads``, else ``FASTPREP_NUM_THREADS``, else the
    CPU count), GIL released. Returns one array per input, in order.

    Every image is decoded even when some fail. ``on_error="raise"`` then raises ``DecodeError`` for
    the first failed index (its message lists how many others failed; ``.errors`` holds them all);
    ``on_error="skip"`` puts None in place of each failed image. ``max_pixels`` as in ``decode``
    (one ``DecompressionBombWarning`` per call, naming the first image over ``MAX_IMAGE_PIXELS``).
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    blobs = [_as_encoded(d, i) for i, d in enumerate(items)]
    out, errors, over = _decode_all(blobs, mode, apply_exif_orientation, _limit(max_pixels), num_threads)
    _warn_over_limit(over, max_pixels)
    if errors and on_error == "raise":
        first = errors[0]
        if len(errors) > 1:
            more = ", ".join(str(e.index) for e in errors[1:6]) + (", ..." if len(errors) > 6 else "")
            first.args = (f"{first.args[0]} (and {len(errors) - 1} more failed: {more})",)
        first.errors = errors
        raise first
    return out


def _limit(max_pixels: int | None) -> int | None:
    """The limit the core enforces for a caller's ``max_pixels``, checked positive."""
    if max_pixels is not None and int(max_pixels) <= 0:
        raise ValueError(f"max_pixels must be positive or None (no limit), got {max_pixels}")
    return _hard_limit(max_pixels)


def _hard_limit(max_pixels: int | None) -> int | None:
    """``max_pixels`` itself, but twice the default for the default: Pillow refuses only there
    (``DecompressionBombError``) and warns above the default (``_warn_over_limit``)."""
    if max_pixels is None:
        return None
    return 2 * MAX_IMAGE_PIXELS if max_pixels == MAX_IMAGE_PIXELS else int(max_pixels)


def _decode_all(
    blobs: list[Any], mode: str, apply_exif_orientation: bool, limit: int | None, num_threads: int | None
) -> tuple[list[Any], list[DecodeError], list[tuple[int, int, int]]]:
    """``decode_batch``'s work under the core's ``limit``: one array per input (None where it
    failed), the failures, and ``(index, width, height)`` of each image over ``MAX_IMAGE_PIXELS``."""
    import numpy as np

    results, over = _core.decode_images(blobs, mode, apply_exif_orientation, limit, num_threads)
    out: list[Any] = []
    errors: list[DecodeError] = []
    for i, r in enumerate(results):
        if isinstance(r, tuple):
            reason, message = r
            errors.append(DecodeError(message, i, reason))
            out.append(None)
        else:
            out.append(np.asarray(r))
    return out, errors, over


def _warn_over_limit(over: Sequence[tuple[int, int, int]], max_pixels: int | None) -> None:
    """With the default limit, the warning for the images of one call that the core found over
    ``MAX_IMAGE_PIXELS``: ``over`` holds their ``(index, width, height)`` in index order, from
    that call's own results (so a call never warns for an image another thread decodes)."""
    if over and max_pixels == MAX_IMAGE_PIXELS:
        i, w, h = over[0]
        _bomb_warning(f"{len(over)} image(s) of the batch, the first (index {i}) {w}x{h} = {w * h} pixels")


def _bomb_warning(what: str) -> None:
    warnings.warn(
        DecompressionBombWarning(
            f"{what} over MAX_IMAGE_PIXELS ({MAX_IMAGE_PIXELS}): decoded, as Pillow decodes (and warns) up to "
            f"twice that, which is refused; could be a decompression bomb. Pass max_pixels=None if the "
            f"files are trusted, or max_pixels=N to refuse images over N"
        ),
        stacklevel=_caller_stacklevel(),
    )


_PACKAGE_DIR = os.path.dirname(__file__) + os.sep


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in the function calling this one name
    the first frame outside fastprep: the user's line, however deep in fastprep the warning is
    made (``preprocess`` runs a pipeline, ``ImageCollate`` runs ``preprocess``). Python 3.12's
    ``skip_file_prefixes`` does this; 3.11 has none. Where every frame is fastprep's (a job's
    thread), the outermost one."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def _shape(arr: Any) -> tuple[int, int, int]:
    if arr.ndim == 2:
        return arr.shape[0], arr.shape[1], 1
    if arr.ndim == 3:
        return int(arr.shape[0]), int(arr.shape[1]), int(arr.shape[2])
    raise ValueError(f"resize takes an (H, W) or (H, W, C) array, got shape {arr.shape}")


def _size(size: tuple[int, int]) -> tuple[int, int]:
    out_width, out_height = (int(v) for v in size)
    if out_width <= 0 or out_height <= 0:
        raise ValueError(f"size must be two positive integers (width, height), got {size}")
    return out_width, out_height


_MODES_U8 = {1: ("L", "P"), 2: ("LA", "La"), 3: ("RGB", "YCbCr"), 4: ("RGBA", "RGBX", "CMYK", "RGBa")}
# Pillow's 16-bit modes; a big-endian uint16 array is I;16B, as in Image.fromarray
_MODES_U16 = ("I;16", "I;16L", "I;16B", "I;16N")
# Modes Pillow resizes with NEAREST whatever the filter asked (and never reduces)
_NEAREST_ONLY = ("1", "P")


def _resize_mode(arr: Any, channels: int, mode: str | None) -> str:
    """The Pillow mode `arr` is resized as: given, or the natural one for its dtype and channels."""
    import numpy as np

    if arr.dtype == np.float32:
        natural: tuple[str, ...] = ("F",)
    elif arr.dtype == np.bool_:
        natural = ("1",)
    elif arr.dtype == np.uint8:
        natural = _MODES_U8.get(channels, ())
    elif arr.dtype == np.int32:
        natural = ("I",)
    elif arr.dtype.kind == "u" and arr.dtype.itemsize == 2:
        natural = ("I;16B", "I;16", "I;16L", "I;16N") if arr.dtype.byteorder == ">" else _MODES_U16
    else:
        raise TypeError(
            f"resize takes uint8, uint16, int32, float32 or bool images, got {arr.dtype}; convert "
            "with arr.astype(np.int32) or arr.astype(np.float32)"
        )
    if not natural:
        raise ValueError(f"resize takes 1 (L), 2 (LA), 3 (RGB) or 4 (RGBA) channels of uint8, got {channels}")
    if mode is None:
        return natural[0]
    if mode not in natural:
        raise ValueError(f"mode {mode!r} does not fit a {arr.dtype} image of {channels} channels; use one of {natural}")
    return mode


def resize(
    image: Any,
    size: tuple[int, int],
    *,
    filter: Filter = "bicubic",
    mode: str | None = None,
    box: tuple[float, float, float, float] | None = None,
    reducing_gap: float | None = None,
) -> Any:
    """Resize an (H, W) or (H, W, C) array to ``size = (width, height)``.

    The result is exactly ``np.asarray(PIL.Image.fromarray(image, mode).resize(size, filter))`` of
    Pillow 12.2+ (Pillow's default filter is bicubic too), where ``mode`` is Pillow's mode of the
    array, by default the natural one: uint8 with 1 channel "L", 2 "LA", 3 "RGB", 4 "RGBA";
    float32 "F", int32 "I", uint16 "I;16" ("I;16B" for a big-endian array), each of any number
    of channels resized as one image of that mode; bool "1". RGBA and LA are resized
    premultiplied by alpha, as Pillow does (RGBa, La); 4 channels that are not RGBA
    (``mode="RGBX"``, ``"CMYK"``, or an already premultiplied ``"RGBa"``, ``"La"``) are not.
    Modes "1" and "P" (palette indices, uint8) are always resized with nearest, as Pillow does.
    ``mode="I;16B"`` and ``"I;16N"`` give what Pillow gives on a little-endian machine, whose
    16-bit resampling reads those two with their bytes swapped. A source with no pixels gives
    zeros, as Pillow's. The GIL is released.

    ``box = (x0, y0, x1, y1)`` (floats) resizes that region of the source, and ``reducing_gap``
    first reduces by an integer factor (see ``reduce``), both exactly as ``Image.resize`` does
    (and with its checks: a box outside the image or of negative size, or a gap under 1.0,
    raise ValueError).

    >>> small = resize(np.zeros((480, 640, 3), np.uint8), (224, 168), filter="bilinear")  # doctest: +SKIP
    >>> cmyk = resize(cmyk_pixels, (100, 100), mode="CMYK")  # doctest: +SKIP
    """
    import numpy as np

    arr = np.asarray(image)
    height, width, channels = _shape(arr)
    out_width, out_height = _size(size)
    mode = _resize_mode(arr, channels, mode)
    arr = np.ascontiguousarray(arr)
    # the box path has Pillow's I and I;16 arithmetic and its zeros for a source with no pixels
    if box is not None or reducing_gap is not None or mode in ("I", *_MODES_U16) or 0 in (height, width):
        _resize_box.check_gap(reducing_gap)
        out = _resize_with_box(
            arr.reshape(height, width, channels), mode, (out_width, out_height), filter, box, reducing_gap
        )
        return out[..., 0] if arr.ndim == 2 else out
    if mode == "F":
        raw = _core.resize_f32(arr, height, width, channels, out_width, out_height, filter)
        out = np.frombuffer(raw, dtype=np.float32).reshape(out_height, out_width, channels)
    elif mode in _NEAREST_ONLY:
        # Pillow: Image.resize of a "1" or "P" image always uses NEAREST
        as_u8 = arr.view(np.uint8).reshape(height, width, channels)
        out = np.asarray(_core.resize_u8(as_u8, height, width, channels, out_width, out_height, "nearest"))
        out = out != 0 if mode == "1" else out
    elif mode in ("LA", "La"):
        # Pillow resizes LA as La (L premultiplied by A), which is RGBa's arithmetic on one colour
        # channel: run it as (L, L, L, A) and keep L and A; "La" is already premultiplied
        rgba = np.ascontiguousarray(arr.reshape(height, width, 2)[..., [0, 0, 0, 1]])
        out = np.asarray(_core.resize_u8(rgba, height, width, 4, out_width, out_height, filter, None, mode == "LA"))[
            ..., [0, 3]
        ]
    else:
        premultiply = mode == "RGBA"
        out = np.asarray(
            _core.resize_u8(arr, height, width, channels, out_width, out_height, filter, None, premultiply)
        )
    return out[..., 0] if arr.ndim == 2 else out


def resize_batch(
    images: Any,
    size: tuple[int, int],
    *,
    filter: Filter = "bicubic",
    num_threads: int | None = None,
    box: Any = None,
) -> Any:
    """Resize many uint8 images (a list of arrays of any sizes, or an (N, H, W[, C]) array) to one
    ``size`` in parallel; returns an (N, height, width[, C]) array. Each image equals
    ``resize(image, size, filter=filter, box=...)``: ``box`` is one ``(x0, y0, x1, y1)`` for
    every image, or a sequence of one box (or None, the whole image) per image."""
    import numpy as np

    arrs = [np.ascontiguousarray(a) for a in images]
    out_width, out_height = _size(size)
    if not arrs:
        return np.zeros((0, out_height, out_width, 3), np.uint8)
    ndim = arrs[0].ndim
    shapes = [_shape(a) for a in arrs]
    if any(a.dtype != np.uint8 for a in arrs) or any(a.ndim != ndim for a in arrs):
        raise TypeError("resize_batch takes uint8 images, all (H, W) or all (H, W, C)")
    if len({s[2] for s in shapes}) != 1:
        raise ValueError("all images of a batch need the same number of channels")
    channels = shapes[0][2]
    boxes = _batch_boxes(box, shapes) if box is not None else None
    out = np.empty((len(arrs), out_height, out_width, channels), np.uint8)
    _core.resize_batch_u8(arrs, shapes, out, out_width, out_height, filter, num_threads, boxes)
    return out[..., 0] if ndim == 2 else out


def _batch_boxes(box: Any, shapes: list[tuple[int, int, int]]) -> list[tuple[float, float, float, float] | None]:
    """One float box per image (None: the whole image, which Pillow resizes without a box)."""
    per_image = list(box)
    if len(per_image) == 4 and all(isinstance(v, numbers.Real) for v in per_image):
        per_image = [box] * len(shapes)
    if len(per_image) != len(shapes):
        raise ValueError(f"box must be one box or one per image ({len(shapes)}), got {len(per_image)}")
    out = []
    for b, (height, width, _) in zip(per_image, shapes, strict=True):
        fbox = _resize_box.full_box(b, width, height)
        out.append(None if fbox == (0, 0, width, height) else fbox)
    return out


def _resize_with_box(
    arr: Any, mode: str, size: tuple[int, int], filter: str, box: Any, reducing_gap: float | None
) -> Any:
    import numpy as np

    if filter not in ("nearest", "box", "bilinear", "hamming", "bicubic", "lanczos"):
        raise ValueError(
            f"filter must be 'nearest', 'box', 'bilinear', 'hamming', 'bicubic' or 'lanczos', got {filter!r}"
        )
    height, width, channels = arr.shape
    fbox = _resize_box.full_box(box, width, height)
    if size == (width, height) and fbox == (0, 0, width, height):
        return arr.copy()
    if mode in _NEAREST_ONLY:
        filter = "nearest"
    fbox, pre = _resize_box.plan(size, fbox, filter, reducing_gap, width, height)
    out_width, out_height = size
    if mode in ("F", "I", *_MODES_U16):
        samples, wide, swap = _wide_samples(arr, mode)
        raw = _core.resize_box_wide(samples, wide, height, width, channels, out_width, out_height, filter, fbox, pre)
        return _from_wide(raw, arr.dtype, swap).reshape(out_height, out_width, channels)
    if mode in _NEAREST_ONLY:
        as_u8 = np.ascontiguousarray(arr.view(np.uint8))
        raw8 = _core.resize_box_u8(as_u8, height, width, channels, out_width, out_height, filter, fbox, False, pre)
        return np.asarray(raw8) != 0 if mode == "1" else np.asarray(raw8)
    if mode in ("LA", "La"):
        rgba = np.ascontiguousarray(arr[..., [0, 0, 0, 1]])
        out = _core.resize_box_u8(rgba, height, width, 4, out_width, out_height, filter, fbox, mode == "LA", pre)
        return np.asarray(out)[..., [0, 3]]
    premultiply = mode == "RGBA"
    out = _core.resize_box_u8(arr, height, width, channels, out_width, out_height, filter, fbox, premultiply, pre)
    return np.asarray(out)


def _wide_samples(arr: Any, mode: str) -> tuple[Any, str, bool]:
    """The samples Pillow's double-precision resampling reads from ``arr`` as a mode ``mode``
    image, the core's mode for them, and whether the result's bytes must be swapped back.

    Pillow's 16-bit passes read and write every I;16 mode as little-endian, except I;16N, which
    they read as big-endian (on a little-endian machine: both I;16B and I;16N come out swapped).
    """
    import numpy as np

    if mode not in _MODES_U16:
        return arr, mode, False
    samples = arr.view(np.dtype("<u2"))  # the bytes as Pillow holds them
    if mode == "I;16N":
        return samples.byteswap(), "I;16", True
    return samples, "I;16", False


def _from_wide(raw: Any, dtype: Any, swap: bool) -> Any:
    """The core's native-order result as an array of ``dtype`` holding the bytes Pillow holds."""
    import numpy as np

    if dtype.kind != "u" or dtype.itemsize != 2:
        return np.frombuffer(raw, dtype=dtype)
    out = np.frombuffer(raw, dtype=np.dtype("<u2"))
    return (out.byteswap() if swap else out).view(dtype)


def reduce(
    image: Any, factor: int | tuple[int, int], *, box: tuple[int, int, int, int] | None = None, mode: str | None = None
) -> Any:
    """Shrink an (H, W) or (H, W, C) array by an integer ``factor`` (or ``(fx, fy)``), each output
    pixel the average of one block, exactly ``np.asarray(PIL.Image.fromarray(image, mode).reduce(
    factor, box))``: the result is ``ceil(width / fx)`` x ``ceil(height / fy)`` (the last column and
    row average the partial blocks), ``box = (x0, y0, x1, y1)`` (ints) reduces that region, and a
    factor of (1, 1) is ``Image.crop(box)``. Modes as ``resize`` (RGBA and LA through their
    premultiplied forms, as Pillow); mode "1" is refused, as Pillow does. The GIL is released.
    """
    import numpy as np

    arr = np.asarray(image)
    height, width, channels = _shape(arr)
    mode = _resize_mode(arr, channels, mode)
    fx, fy = _resize_box.factors(factor)
    if (fx, fy) == (1, 1):
        return _resize_box.crop(arr, box)
    if fx < 1 or fy < 1:
        raise ValueError(f"scale must be > 0, got factor {(fx, fy)}")
    if mode in _NEAREST_ONLY or mode in _MODES_U16:
        raise ValueError(f"image has wrong mode: reduce does not take mode {mode!r} images, as in Pillow")
    ibox = _resize_box.int_box(box, width, height)
    flat = np.ascontiguousarray(arr).reshape(height, width, channels)
    out = _resize_box.reduce_array(flat, mode, (fx, fy), ibox)
    return out[..., 0] if arr.ndim == 2 else out
