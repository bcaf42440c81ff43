"""Encoded images in, one normalized batch out: ``preprocess`` and ``ImagePipeline``.

The transform is torchvision's ImageNet evaluation transform on Pillow images, bit for bit:
``Resize(resize_shorter)`` (Pillow's filter, ``reducing_gap=None``), ``CenterCrop(crop)``,
``ToTensor()``, ``Normalize(mean, std)``. Each image is decoded, resized (only the crop window
is computed) and normalized in Rust on fastprep's thread pool with the GIL released, straight
into one block of a fixed-block pool: no per-image Python objects, and a long run reuses the same
few blocks (the block goes back to the pool when the returned array is garbage collected).

With ``draft=True``, JPEGs whose target is at most half their size are decoded at 1/2, 1/4 or
1/8 scale in the DCT domain (libjpeg's scaled IDCT, what Pillow's ``Image.draft`` does) and then
resized: several times faster, and equal to Pillow's ``draft`` + ``resize``, but not to the exact
mode's pixels: on the test photos the mean difference is 2.2 levels of 255 (P99 15) for 1080p
JPEGs decoded at 1/4 scale, 0.9 (P99 6) for 12 MP ones at 1/8.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Sequence
from typing import Any, Literal

from . import _core
from .errors import DecodeError
from .image import MAX_IMAGE_PIXELS, Filter, _as_encoded, _hard_limit, _warn_over_limit
from .pool import BlockPool

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "STAGES", "ImagePipeline", "preprocess"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: The stages a pipeline times for each image.
STAGES = ("decode", "resize", "crop_normalize")

_DTYPES = {"float32": "<f4", "float16": "<f2", "uint8": "u1"}


def _pair(v: int | tuple[int, int] | None, what: str) -> tuple[int, int] | None:
    if v is None:
        return None
    w, h = (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))
    if w <= 0 or h <= 0:
        raise ValueError(f"{what} must be positive, got {v}")
    return (w, h)


class ImagePipeline:
    """A reusable preprocessing pipeline that keeps per-stage latency statistics.

    >>> pipe = ImagePipeline(resize_shorter=256, crop=224)           # doctest: +SKIP
    >>> batch = pipe([open(p, "rb").read() for p in paths])          # (N, 3, 224, 224) float32
    >>> pipe.stats()["decode"]["p99"]                                 # milliseconds per image

    ``size=(width, height)`` resizes to an exact size instead of ``resize_shorter``. ``crop`` is
    an int or ``(width, height)``; None keeps the resized image (then ``size`` is required).
    ``on_error="skip"`` returns ``(batch, ok)`` where ``ok[i]`` is False for an image that failed
    (its slot is zeros); ``"raise"`` raises ``DecodeError`` naming the first failed index, after
    every image has been processed. ``max_pixels`` as in ``fastprep.decode``: by default a
    ``DecompressionBombWarning`` over ``MAX_IMAGE_PIXELS`` and a refusal over twice it; another
    value is a hard limit, None none.
    """

    def __init__(
        self,
        *,
        resize_shorter: int | None = 256,
        size: tuple[int, int] | None = None,
        crop: int | tuple[int, int] | None = 224,
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        layout: Literal["NCHW", "NHWC"] = "NCHW",
        dtype: Literal["float32", "float16", "uint8"] = "float32",
        filter: Filter = "bilinear",
        draft: bool = False,
        num_threads: int | None = None,
        on_error: Literal["raise", "skip"] = "raise",
        max_pixels: int | None = MAX_IMAGE_PIXELS,
        apply_exif_orientation: bool = True,
        keep_samples: int = 100_000,
    ) -> None:
        if size is not None:
            resize_shorter = None
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        if layout not in ("NCHW", "NHWC"):
            raise ValueError(f"layout must be 'NCHW' or 'NHWC', got {layout!r}")
        if len(mean) != 3 or len(std) != 3 or any(s == 0 for s in std):
            raise ValueError("mean and std need 3 values each (R, G, B), std non-zero")
        self.crop = _pair(crop, "crop")
        self.size = _pair(size, "size")
        self.settings: dict[str, Any] = {
            "shorter": resize_shorter,
            "size": self.size,
            "crop": self.crop,
            "filter": filter,
            "mean": [float(m) for m in mean],
            "std": [float(s) for s in std],
            "layout": layout,
            "dtype": dtype,
            "draft": bool(draft),
            "max_pixels": _hard_limit(max_pixels),
            "apply_exif_orientation": bool(apply_exif_orientation),
        }
        out = self.crop or self.size
        if out is None:
            raise ValueError(
                "images of different shapes cannot share a batch: give crop=..., or an exact size=(width, height)"
            )
        if resize_shorter is not None and (resize_shorter <= 0 or max(out) > resize_shorter):
            raise ValueError(f"crop {out} must fit in the resized shorter side {resize_shorter}")
        self._setup_batches(out, dtype, layout, num_threads, on_error, keep_samples)
        self._max_pixels = max_pixels

    def _setup_batches(
        self, out: tuple[int, int], dtype: str, layout: str, num_threads: int | None, on_error: str, keep_samples: int
    ) -> None:
        """The output, pool and statistics state that every batch pipeline shares."""
        self.out_width, self.out_height = out
        self.dtype = dtype
        self.layout = layout
        self.num_threads = num_threads
        self.on_error = on_error
        itemsize = {"float32": 4, "float16": 2, "uint8": 1}[dtype]
        self.image_bytes = self.out_width * self.out_height * 3 * itemsize
        self._pool: BlockPool | None = None
        self._lock = threading.Lock()
        self._samples: dict[str, collections.deque[float]] = {
            s: collections.deque(maxlen=keep_samples) for s in (*STAGES, "total")
        }
        self._batches: collections.deque[float] = collections.deque(maxlen=keep_samples)

    def _block(self, n: int) -> Any:
        need = max(1, n) * self.image_bytes
        with self._lock:
            if self._pool is None or self._pool.block_size < need:
                # Blocks sized for the largest batch seen; grows by whole blocks when several
                # batches are alive at once. An older, smaller pool lives on in its blocks.
                self._pool = BlockPool(need, 2, grow=True, alignment=4096)
            pool = self._pool
        return pool.acquire()

    def __call__(self, images: Sequence[bytes], *, return_timings: bool = False) -> Any:
        """Preprocess ``images`` (encoded JPEG/PNG bytes) into one batch array.

        Returns the batch; ``(batch, ok)`` with ``on_error="skip"``; and a ``timings`` dict as
        the last element with ``return_timings=True``: seconds per stage summed over the images,
        ``wall`` seconds for the call, and ``per_image`` (N, 3) seconds.
        """
        blobs = [_as_encoded(d, i) for i, d in enumerate(images)]
        block = self._block(len(blobs))
        start = time.perf_counter()
        errors, times, over = _core.preprocess_into(blobs, block, self.settings, self.num_threads)
        wall = time.perf_counter() - start
        _warn_over_limit(over, self._max_pixels)
        batch, ok, timings = self._finish(block, errors, times, wall)
        result: tuple[Any, ...] = (batch, ok) if self.on_error == "skip" else (batch,)
        if return_timings:
            result = (*result, timings)
        return result[0] if len(result) == 1 else result

    def _finish(
        self, block: Any, errors: list[tuple[str, str] | None], times: list[tuple[int, int, int]], wall: float
    ) -> tuple[Any, Any, dict[str, Any]]:
        """The batch array over ``block``, the per-image ok mask and the timings dict of one
        call; records the statistics and raises the first failure with ``on_error="raise"``."""
        import numpy as np

        n = len(errors)
        h, w = self.out_height, self.out_width
        shape = (n, 3, h, w) if self.layout == "NCHW" else (n, h, w, 3)
        batch = np.frombuffer(block, dtype=_DTYPES[self.dtype], count=n * 3 * h * w).reshape(shape)
        del block  # the array's buffer keeps the block; it returns to the pool with the array
        ok = np.fromiter((e is None for e in errors), dtype=bool, count=n)
        per_image = np.asarray(times, dtype=np.float64).reshape(n, 3) / 1e9
        self._record(per_image[ok], wall)
        failed = [DecodeError(e[1], i, e[0]) for i, e in enumerate(errors) if e is not None]
        if failed and self.on_error == "raise":
            first = failed[0]
            if len(failed) > 1:
                first.args = (f"{first.args[0]} (and {len(failed) - 1} more failed)",)
            first.errors = failed
            raise first
        sums = per_image.sum(axis=0)
        timings: dict[str, Any] = {s: float(sums[i]) for i, s in enumerate(STAGES)}
        timings["wall"] = wall
        timings["per_image"] = per_image
        return batch, ok, timings

    def _record(self, per_image: Any, wall: float) -> None:
        with self._lock:
            for row in per_image.tolist():
                for s, v in zip(STAGES, row, strict=True):
                    self._samples[s].append(v)
                self._samples["total"].append(sum(row))
            self._batches.append(wall)

    def stats(self) -> dict[str, dict[str, float]]:
        """Per stage (and ``total`` per image, ``batch`` per call): count, mean, p50, p95, p99 and
        max in milliseconds, over the last ``keep_samples`` images. Percentiles, not averages:
        the tail is what a latency budget is about."""
        import numpy as np

        with self._lock:
            series = {k: np.asarray(v, dtype=np.float64) for k, v in self._samples.items()}
            series["batch"] = np.asarray(self._batches, dtype=np.float64)
        out: dict[str, dict[str, float]] = {}
        for k, v in series.items():
            if v.size == 0:
                out[k] = {"count": 0}
                continue
            p50, p95, p99 = np.percentile(v, [50, 95, 99]) * 1e3
            out[k] = {
                "count": int(v.size),
                "mean": float(v.mean() * 1e3),
                "p50": float(p50),
                "p95": float(p95),
                "p99": float(p99),
                "max": float(v.max() * 1e3),
            }
        return out

    def reset_stats(self) -> None:
        with self._lock:
            for v in self._samples.values():
                v.clear()
            self._batches.clear()

    @property
    def pool(self) -> BlockPool | None:
        """The pool the output batches come from (None before the first call)."""
        return self._pool


_PIPELINES: collections.OrderedDict[tuple[Any, ...], ImagePipeline] = collections.OrderedDict()
_PIPELINES_LOCK = threading.Lock()


def preprocess(
    images: Sequence[bytes], *, device: Literal["cpu", "cuda"] = "cpu", return_timings: bool = False, **settings: Any
) -> Any:
    """``ImagePipeline(**settings)(images)``, reusing one pipeline (and its pool) per settings.
    ``device="cuda"`` makes the same batch on the GPU as a CuPy array (``fastprep.gpu.gpu_preprocess``).

    >>> batch = fastprep.preprocess(blobs, resize_shorter=256, crop=224)   # doctest: +SKIP
    """
    if device == "cuda":
        if return_timings:
            raise ValueError("return_timings is for the CPU pipeline; time GPU work with CUDA events")
        from .gpu import gpu_preprocess

        return gpu_preprocess(images, **settings)
    if device != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in settings.items()))
    with _PIPELINES_LOCK:
        pipe = _PIPELINES.get(key)
        if pipe is None:
            pipe = ImagePipeline(**settings)
            _PIPELINES[key] = pipe
            while len(_PIPELINES) > 16:
                _PIPELINES.popitem(last=False)
        else:
            _PIPELINES.move_to_end(key)
    return pipe(images, return_timings=return_timings)
