"""``resize(box=..., reducing_gap=...)`` and ``reduce``: Pillow's Python-level steps of
``Image.resize`` and ``Image.reduce`` (argument checks, the reducing_gap factor and boxes, the
(1, 1) crop), run here with Python's float arithmetic so the numbers handed to the Rust core are
the ones Pillow hands to its C code."""

from __future__ import annotations

import math
import operator
from typing import Any

from . import _core

# Pillow's _filters_support (Image.py) for the filters fastprep has.
_SUPPORT = {"box": 0.5, "bilinear": 1.0, "hamming": 1.0, "bicubic": 2.0, "lanczos": 3.0}


def full_box(box: Any, width: int, height: int) -> tuple[float, float, float, float]:
    if box is None:
        return (0, 0, width, height)
    values = tuple(box)
    if len(values) != 4:
        raise TypeError(f"box must be 4 numbers (x0, y0, x1, y1), got {box!r}")
    return tuple(_as_float(v) for v in values)  # type: ignore[return-value]


def _as_float(v: Any) -> float:
    # Pillow parses box with PyArg "f": numbers (__float__ or __index__), never strings.
    if not (hasattr(type(v), "__float__") or hasattr(type(v), "__index__")) or isinstance(v, (str, bytes)):
        raise TypeError(f"box coordinates must be numbers, got {v!r}")
    return float(v)


def check_gap(reducing_gap: float | None) -> None:
    if reducing_gap is not None and reducing_gap < 1.0:
        raise ValueError(f"reducing_gap must be 1.0 or greater, got {reducing_gap}")


def plan(
    size: tuple[int, int],
    box: tuple[float, float, float, float],
    filter: str,
    reducing_gap: float | None,
    width: int,
    height: int,
) -> tuple[tuple[float, float, float, float], Any]:
    """Pillow's reducing_gap step: the ``((fx, fy), reduce_box)`` to run first (None for no
    reduce) and the box of the resize after it."""
    if reducing_gap is None or filter == "nearest":
        return box, None
    factor_x = int((box[2] - box[0]) / size[0] / reducing_gap) or 1
    factor_y = int((box[3] - box[1]) / size[1] / reducing_gap) or 1
    if factor_x <= 1 and factor_y <= 1:
        return box, None
    # Image._get_safe_box: the box grown by what the filter reads around it.
    support = _SUPPORT[filter] - 0.5
    sx = support * (box[2] - box[0]) / size[0]
    sy = support * (box[3] - box[1]) / size[1]
    rb = (
        max(0, int(box[0] - sx)),
        max(0, int(box[1] - sy)),
        min(width, math.ceil(box[2] + sx)),
        min(height, math.ceil(box[3] + sy)),
    )
    if rb[0] < 0 or rb[1] < 0 or rb[2] <= rb[0] or rb[3] <= rb[1]:
        raise ValueError(f"box can't be empty, got {box}")
    new_box = (
        (box[0] - rb[0]) / factor_x,
        (box[1] - rb[1]) / factor_y,
        (box[2] - rb[0]) / factor_x,
        (box[3] - rb[1]) / factor_y,
    )
    return new_box, ((factor_x, factor_y), rb)


def factors(factor: Any) -> tuple[int, int]:
    pair = tuple(factor) if isinstance(factor, (list, tuple)) else (factor, factor)
    if len(pair) != 2:
        raise TypeError(f"factor must be an int or a tuple of two ints, got {factor!r}")
    return operator.index(pair[0]), operator.index(pair[1])


def int_box(box: Any, width: int, height: int) -> tuple[int, int, int, int]:
    """Pillow's ``_reduce`` argument checks (ints; the C messages)."""
    values = (0, 0, width, height) if box is None else tuple(operator.index(v) for v in box)
    if len(values) != 4:
        raise TypeError(f"box must be 4 ints (x0, y0, x1, y1), got {box!r}")
    x0, y0, x1, y1 = values
    if x0 < 0 or y0 < 0:
        raise ValueError(f"box offset can't be negative, got {values}")
    if x1 > width or y1 > height:
        raise ValueError(f"box can't exceed original image size ({width}x{height}), got {values}")
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"box can't be empty, got {values}")
    return x0, y0, x1, y1


def crop(arr: Any, box: Any) -> Any:
    """``Image.crop(box)`` (what ``reduce`` by (1, 1) returns): rounded coordinates, zeros
    outside the image."""
    import numpy as np

    if box is None:
        return arr.copy()
    x0, y0, x1, y1 = box
    if x1 < x0:
        raise ValueError("Coordinate 'right' is less than 'left'")
    if y1 < y0:
        raise ValueError("Coordinate 'lower' is less than 'upper'")
    x0, y0, x1, y1 = (round(v) for v in (x0, y0, x1, y1))
    out = np.zeros((y1 - y0, x1 - x0, *arr.shape[2:]), arr.dtype)
    h, w = arr.shape[:2]
    sx0, sy0, sx1, sy1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    if sx1 > sx0 and sy1 > sy0:
        out[sy0 - y0 : sy1 - y0, sx0 - x0 : sx1 - x0] = arr[sy0:sy1, sx0:sx1]
    return out


def reduce_array(arr: Any, mode: str, factor: tuple[int, int], box: tuple[int, int, int, int]) -> Any:
    """Runs the core reduce on a contiguous (H, W, C) array of Pillow mode ``mode``."""
    import numpy as np

    height, width, channels = arr.shape
    if mode in ("F", "I"):
        raw, w, h = _core.reduce_wide(arr, mode, height, width, channels, factor, box)
        return np.frombuffer(raw, dtype=arr.dtype).reshape(h, w, channels)
    if mode in ("LA", "La"):
        rgba = np.ascontiguousarray(arr[..., [0, 0, 0, 1]])
        return np.asarray(_core.reduce_u8(rgba, height, width, 4, factor, box, mode == "LA"))[..., [0, 3]]
    return np.asarray(_core.reduce_u8(arr, height, width, channels, factor, box, mode == "RGBA"))
