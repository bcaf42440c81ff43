"""The last stage of ``preprocess(device="cuda")``: ``cuda/normalize.cu`` turns the uint8 crops
into the normalized batch (float32 or float16, NCHW or NHWC) through the CPU path's own table of
(v / 255 - mean) / std values, so the results are the same numbers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _core
from ..kernels import kernel_source
from .backend import BLOCK, Backend


def normalize_table(be: Backend, mean: Sequence[float], std: Sequence[float], dtype: str) -> Any:
    """The CPU path's (v / 255 - mean) / std values, 3 x 256 of `dtype`, on the device."""
    import numpy as np

    return be.asarray(np.frombuffer(_core.normalize_table(list(mean), list(std), dtype), dtype=dtype))


def run_normalize(
    be: Backend,
    crops: Any,
    count: int,
    cw: int,
    ch: int,
    mean: Sequence[float],
    std: Sequence[float],
    dtype: str,
    layout: str,
    out: Any = None,
) -> Any:
    """`count` packed HWC uint8 crops of cw x ch in `crops` -> a (count, 3 * cw * ch) array of
    `dtype` in `layout` (`out`, contiguous, where given): one launch for the batch."""
    import numpy as np

    xp = be.xp
    per = cw * ch * 3
    lut = normalize_table(be, mean, std, dtype)
    dense = xp.empty(count * per, dtype=dtype) if out is None else out
    defines = {"OUT_DTYPE": 1 if dtype == "float32" else 2, "OUT_NCHW": int(layout == "NCHW"), "CHANNELS": 3}
    grid = (-(-cw // BLOCK[0]), -(-ch // BLOCK[1]), count)
    i32, i64 = np.int32, np.int64
    args = (crops, dense, lut, i32(ch), i32(cw), i64(cw * 3), i64(per), i32(ch), i32(cw), i32(0), i32(0))
    be.launch(kernel_source("normalize.cu"), defines, "crop_normalize_u8", grid, args)
    return dense.reshape(count, per)
