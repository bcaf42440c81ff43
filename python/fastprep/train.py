"""Training transforms, fused: ``TrainPipeline``.

One call turns encoded JPEG/PNG bytes into a normalized batch through torchvision's v2 training
transform on Pillow images: ``RandomResizedCrop(size, scale, ratio)`` (Pillow's resize of the
crop, antialiased), ``RandomHorizontalFlip(flip_p)``, ``ToImage()``, ``ToDtype(float32,
scale=True)`` and ``Normalize(mean, std)``. Each image is decoded (a JPEG only over the crop),
cropped, resized, flipped and normalized in Rust on fastprep's thread pool with the GIL released,
into one block of a fixed-block pool.

Given the same parameters, the pixels are torchvision's bit for bit; the parameters are drawn
with torchvision's algorithm from fastprep's own generator (a SplitMix64 stream per image, keyed
by the seed, the call's step and the image's index: independent of the thread count) and are
returned, so they can be logged or replayed (``params=``) through torchvision.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any, Literal

from . import _core
from .image import MAX_IMAGE_PIXELS, Filter, _as_encoded, _hard_limit, _warn_over_limit
from .pipeline import _DTYPES, IMAGENET_MEAN, IMAGENET_STD, ImagePipeline

__all__ = ["PARAM_COLUMNS", "TrainPipeline"]

#: The columns of the parameters a ``TrainPipeline`` call returns, one row per image.
PARAM_COLUMNS = ("top", "left", "height", "width", "flipped")


def _range(v: Sequence[float], what: str) -> tuple[float, float]:
    lo, hi = (float(x) for x in v)
    if not (0 < lo <= hi < float("inf")):
        raise ValueError(f"{what} must be (min, max) with 0 < min <= max, got {tuple(v)}")
    return (lo, hi)


class TrainPipeline(ImagePipeline):
    """torchvision's training transform as one fused, multi-threaded call, with the sampled
    parameters returned.

    >>> pipe = TrainPipeline(224, seed=0)                          # doctest: +SKIP
    >>> batch, params = pipe(blobs)      # (N, 3, 224, 224) float32, (N, 5) int64
    >>> top, left, height, width, flipped = params[0]

    ``size`` is an int or ``(height, width)``, as in torchvision's ``RandomResizedCrop``.
    ``scale``, ``ratio`` and ``flip_p`` are torchvision's. ``seed`` makes the parameters
    reproducible: call ``k`` of a pipeline (counted from 0, or ``step=k``) draws the same
    parameters for the same batch size whatever ``num_threads`` is; None seeds from the OS. In
    ``DataLoader`` workers give each worker its own seed (e.g. ``seed + worker_id``) or pass
    ``step=`` per batch, or every worker draws the same crops. The normalization is v2's
    ``ToDtype(scale=True)`` (``x * float32(1/255)``), which differs in the last bit from v1's
    ``ToTensor`` (``x / 255``) for some values. ``on_error="skip"`` adds an ``ok`` mask (a failed
    image's slot is zeros and its parameter row -1s); ``"raise"`` raises ``DecodeError`` naming
    the first failed index after every image has been processed. ``apply_exif_orientation``
    (default True, as ``ImagePipeline``) crops the EXIF-oriented image, as
    ``ImageOps.exif_transpose`` would; torchvision's ``ImageFolder`` loader does not apply it.
    ``max_pixels`` as in ``ImagePipeline`` (by default Pillow's warning and refusal pair).
    """

    def __init__(
        self,
        size: int | tuple[int, int] = 224,
        *,
        scale: Sequence[float] = (0.08, 1.0),
        ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
        flip_p: float = 0.5,
        seed: int | None = None,
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        layout: Literal["NCHW", "NHWC"] = "NCHW",
        dtype: Literal["float32", "float16", "uint8"] = "float32",
        filter: Filter = "bilinear",
        num_threads: int | None = None,
        on_error: Literal["raise", "skip"] = "raise",
        max_pixels: int | None = MAX_IMAGE_PIXELS,
        apply_exif_orientation: bool = True,
        keep_samples: int = 100_000,
    ) -> None:
        h, w = (size, size) if isinstance(size, int) else (int(size[0]), int(size[1]))
        if h <= 0 or w <= 0:
            raise ValueError(f"size must be positive, got {size}")
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        if layout not in ("NCHW", "NHWC"):
            raise ValueError(f"layout must be 'NCHW' or 'NHWC', got {layout!r}")
        if len(mean) != 3 or len(std) != 3 or any(s == 0 for s in std):
            raise ValueError("mean and std need 3 values each (R, G, B), std non-zero")
        if not 0.0 <= float(flip_p) <= 1.0:
            raise ValueError(f"flip_p must be in [0, 1], got {flip_p}")
        if seed is None:
            seed = random.SystemRandom().getrandbits(64)
        if not 0 <= int(seed) < 2**64:
            raise ValueError(f"seed must be in [0, 2**64), got {seed}")
        self.seed = int(seed)
        #: The step of the next call (its parameters' stream); each call without ``step=`` adds one.
        self.step = 0
        self.settings: dict[str, Any] = {
            "size": (w, h),
            "scale": _range(scale, "scale"),
            "ratio": _range(ratio, "ratio"),
            "flip_p": float(flip_p),
            "filter": filter,
            "mean": [float(m) for m in mean],
            "std": [float(s) for s in std],
            "layout": layout,
            "dtype": dtype,
            "max_pixels": _hard_limit(max_pixels),
            "apply_exif_orientation": bool(apply_exif_orientation),
        }
        self._setup_batches((w, h), dtype, layout, num_threads, on_error, keep_samples)
        self._max_pixels = max_pixels

    def __call__(
        self,
        images: Sequence[bytes],
        *,
        params: Any = None,
        step: int | None = None,
        return_timings: bool = False,
    ) -> Any:
        """Transform ``images`` (encoded JPEG/PNG bytes) into one batch.

        Returns ``(batch, params)``: ``params`` is an (N, 5) int64 array of ``PARAM_COLUMNS``
        (top, left, height, width, flipped) in the oriented image's pixels, torchvision's
        ``resized_crop`` arguments. ``(batch, params, ok)`` with ``on_error="skip"``; a
        ``timings`` dict last with ``return_timings=True`` (as ``ImagePipeline``).
        ``params=`` (N rows of the same columns) replays given parameters instead of drawing;
        ``step=`` draws the stream of that step instead of the next one.
        """
        import numpy as np

        blobs = [_as_encoded(d, i) for i, d in enumerate(images)]
        given = None
        if params is not None:
            rows = np.asarray(params)
            if rows.shape != (len(blobs), 5) or not np.issubdtype(rows.dtype, np.integer) or (rows < 0).any():
                raise ValueError(
                    f"params must be {len(blobs)} rows of 5 non-negative ints {PARAM_COLUMNS}, "
                    f"got shape {rows.shape} of {rows.dtype}"
                )
            given = [tuple(r) for r in rows.tolist()]
        with self._lock:
            if step is None:
                step, self.step = self.step, self.step + 1
        if not 0 <= step < 2**64:
            raise ValueError(f"step must be in [0, 2**64), got {step}")
        block = self._block(len(blobs))
        start = time.perf_counter()
        errors, times, used, over = _core.train_preprocess_into(
            blobs, block, self.settings, self.seed, step, given, self.num_threads
        )
        wall = time.perf_counter() - start
        _warn_over_limit(over, self._max_pixels)
        batch, ok, timings = self._finish(block, errors, times, wall)
        out_params = np.asarray(used, dtype=np.int64).reshape(len(blobs), 5)
        result: tuple[Any, ...] = (batch, out_params)
        if self.on_error == "skip":
            result = (*result, ok)
        if return_timings:
            result = (*result, timings)
        return result
