"""Image preprocessing on the CPU.

So far: ``resize``, bit-exact with ``PIL.Image.resize`` of Pillow 12.x (horizontal pass, then
vertical) for 8-bit L and RGB images with the box, bilinear, hamming, bicubic and lanczos filters.
Pillow 13 picks the order of the two passes per image, which changes some pixels by one level;
matching it, decode, crop, normalize, batching, the nearest filter and RGBA (Pillow premultiplies
alpha) are still to come.
"""

from __future__ import annotations

from typing import Any, Literal

from . import _core

__all__ = ["resize"]

Filter = Literal["box", "bilinear", "hamming", "bicubic", "lanczos"]


def resize(image: Any, size: tuple[int, int], *, filter: Filter = "bicubic") -> Any:
    """Resize an (H, W) or (H, W, 3) uint8 array to ``size = (width, height)``.

    The result equals ``np.asarray(PIL.Image.fromarray(image).resize(size, filter))`` of Pillow
    12.x byte for byte (``reducing_gap=None``; Pillow's default filter is bicubic too). The GIL is
    released.

    >>> small = resize(np.zeros((480, 640, 3), np.uint8), (224, 168), filter="bilinear")  # doctest: +SKIP
    """
    import numpy as np

    arr = np.asarray(image)
    if arr.dtype != np.uint8:
        raise TypeError(f"resize takes uint8 images, got {arr.dtype}; convert with arr.astype(np.uint8)")
    if arr.ndim == 2:
        (height, width), channels = arr.shape, 1
    elif arr.ndim == 3:
        height, width, channels = arr.shape
    else:
        raise ValueError(f"resize takes an (H, W) or (H, W, C) array, got shape {arr.shape}")
    out_width, out_height = (int(v) for v in size)
    if out_width <= 0 or out_height <= 0:
        raise ValueError(f"size must be two positive integers (width, height), got {size}")
    arr = np.ascontiguousarray(arr)
    out = _core.resize_u8(arr, height, width, channels, out_width, out_height, filter)
    shape = (out_height, out_width) if arr.ndim == 2 else (out_height, out_width, channels)
    return np.frombuffer(out, dtype=np.uint8).reshape(shape)
