"""Image preprocessing, side by side: encoded JPEG/PNG bytes -> 224x224 normalized float32 NCHW
(torchvision's ImageNet eval transform), per image on one thread and per batch, against Pillow
(open, convert, resize, crop, numpy normalize), Pillow with draft, OpenCV (imdecode, resize with
INTER_LINEAR / INTER_AREA, IMREAD_REDUCED_COLOR_2/4/8) and simplejpeg; decode alone; resize alone.

Every fastprep benchmark first asserts its output against Pillow's (exact mode: identical).
Compare ratios within one run: ``pytest benches/bench_image.py --benchmark-group-by=group``.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from PIL import Image

import fastprep
from tests import image_data as data

cv2 = pytest.importorskip("cv2")
simplejpeg = pytest.importorskip("simplejpeg")


def _turbojpeg() -> object | None:
    """PyTurboJPEG over the system's libturbojpeg (Debian's libturbojpeg0; scripts/build_deps.sh
    installs it where it may). Without the library the peer is left out of the run, by name."""
    try:
        from turbojpeg import TurboJPEG

        return TurboJPEG()
    except (ImportError, OSError, RuntimeError):
        return None


TURBOJPEG = _turbojpeg()
cv2.setNumThreads(1)

MEAN = np.asarray(fastprep.IMAGENET_MEAN, np.float32)
STD = np.asarray(fastprep.IMAGENET_STD, np.float32)
SIZES = {"640x480": (640, 480), "1080p": (1920, 1080), "4032x3024": (4032, 3024)}


def _set(size: str, kind: str) -> list[bytes]:
    base = data.photos()["china.jpg"]
    w, h = SIZES[size]
    img = data.scaled(base, (w, h))
    if kind == "png":
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, "PNG", compress_level=6)
        return [buf.getvalue()]
    # baseline and progressive, 4:2:0 and 4:4:4, the set the image goals are stated on
    return [
        data.jpeg(img, quality=90, subsampling=2),
        data.jpeg(img, quality=90, subsampling=0),
        data.jpeg(img, quality=85, subsampling=2, progressive=True),
        data.jpeg(np.ascontiguousarray(img[:, ::-1]), quality=80, subsampling=0, progressive=True),
    ]


def _target(w: int, h: int) -> tuple[int, int]:
    return (256, int(256 * h / w)) if w <= h else (int(256 * w / h), 256)


def _finish(rgb: np.ndarray, rw: int, rh: int) -> np.ndarray:
    top, left = round((rh - 224) / 2.0), round((rw - 224) / 2.0)
    x = rgb[top : top + 224, left : left + 224].astype(np.float32) / np.float32(255)
    return ((x - MEAN) / STD).transpose(2, 0, 1)


def pillow_pipeline(blob: bytes, draft: bool = False) -> np.ndarray:
    im = Image.open(io.BytesIO(blob))
    rw, rh = _target(*im.size)
    if draft:
        im.draft("RGB", (rw, rh))
    im = im.convert("RGB").resize((rw, rh), Image.Resampling.BILINEAR)
    return _finish(np.asarray(im), rw, rh)


def opencv_pipeline(blob: bytes, interpolation: int, reduced: int = 1) -> np.ndarray:
    flags = {
        1: cv2.IMREAD_COLOR,
        2: cv2.IMREAD_REDUCED_COLOR_2,
        4: cv2.IMREAD_REDUCED_COLOR_4,
        8: cv2.IMREAD_REDUCED_COLOR_8,
    }
    bgr = cv2.imdecode(np.frombuffer(blob, np.uint8), flags[reduced])
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    h, w = rgb.shape[:2]
    rw, rh = _target(w * reduced, h * reduced)
    return _finish(cv2.resize(rgb, (rw, rh), interpolation=interpolation), rw, rh)


def simplejpeg_pipeline(blob: bytes, min_factor: float = 1) -> np.ndarray:
    hdr = simplejpeg.decode_jpeg_header(blob)
    rw, rh = _target(hdr[1], hdr[0])
    rgb = simplejpeg.decode_jpeg(blob, min_height=rh, min_width=rw, min_factor=min_factor)
    return _finish(cv2.resize(rgb, (rw, rh), interpolation=cv2.INTER_AREA), rw, rh)


def turbojpeg_pipeline(blob: bytes) -> np.ndarray:
    """PyTurboJPEG's DCT-scaled decode (the largest 1/2^k that stays above the target) + INTER_AREA."""
    w, h, _, _ = TURBOJPEG.decode_header(blob)  # type: ignore[attr-defined]
    rw, rh = _target(w, h)
    k = _reduction(blob)
    rgb = TURBOJPEG.decode(blob, pixel_format=0, scaling_factor=(1, k))  # type: ignore[attr-defined]
    return _finish(cv2.resize(rgb, (rw, rh), interpolation=cv2.INTER_AREA), rw, rh)


def _reduction(blob: bytes) -> int:
    w, h = Image.open(io.BytesIO(blob)).size
    rw, rh = _target(w, h)
    s = min(w // rw, h // rh)
    return next(a for a in (8, 4, 2, 1) if s >= a)


PIPELINES = {
    "fastprep": lambda blobs: fastprep.preprocess(blobs, num_threads=1),
    "fastprep-draft": lambda blobs: fastprep.preprocess(blobs, num_threads=1, draft=True),
    "pillow": lambda blobs: [pillow_pipeline(b) for b in blobs],
    "pillow-draft": lambda blobs: [pillow_pipeline(b, True) for b in blobs],
    "opencv-linear": lambda blobs: [opencv_pipeline(b, cv2.INTER_LINEAR) for b in blobs],
    "opencv-area": lambda blobs: [opencv_pipeline(b, cv2.INTER_AREA) for b in blobs],
    "opencv-reduced-area": lambda blobs: [opencv_pipeline(b, cv2.INTER_AREA, _reduction(b)) for b in blobs],
    "simplejpeg-scaled-area": lambda blobs: [simplejpeg_pipeline(b, 2) for b in blobs],
}
if TURBOJPEG is not None:
    PIPELINES["turbojpeg-scaled-area"] = lambda blobs: [turbojpeg_pipeline(b) for b in blobs]


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("impl", list(PIPELINES))
def test_pipeline_one_thread(benchmark, size, impl):
    blobs = _set(size, "jpeg")
    if impl == "fastprep":  # exact: identical to Pillow's pipeline
        np.testing.assert_array_equal(PIPELINES[impl](blobs), np.stack(PIPELINES["pillow"](blobs)))
    if impl == "fastprep-draft":
        np.testing.assert_array_equal(PIPELINES[impl](blobs), np.stack(PIPELINES["pillow-draft"](blobs)))
    benchmark.group = f"pipeline {size} jpeg, 1 thread, {len(blobs)} images"
    benchmark.extra_info["images"] = len(blobs)
    benchmark(PIPELINES[impl], blobs)


@pytest.mark.parametrize("impl", ["fastprep", "pillow", "opencv-linear"])
def test_pipeline_png(benchmark, impl):
    blobs = _set("1080p", "png")
    if impl == "fastprep":
        np.testing.assert_array_equal(PIPELINES[impl](blobs), np.stack(PIPELINES["pillow"](blobs)))
    benchmark.group = "pipeline 1080p png, 1 thread"
    benchmark(PIPELINES[impl], blobs)


DECODERS = {
    "fastprep": lambda b: fastprep.decode(b),
    "pillow": lambda b: np.asarray(Image.open(io.BytesIO(b)).convert("RGB")),
    "opencv": lambda b: cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR),
    "simplejpeg": lambda b: simplejpeg.decode_jpeg(b),
    "fastprep-scaled-1/4": lambda b: fastprep._core.decode_image(b, "RGB", True, None, 4)[0],
    "opencv-reduced-4": lambda b: cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_REDUCED_COLOR_4),
}
if TURBOJPEG is not None:
    DECODERS["turbojpeg-scaled-1/4"] = lambda b: TURBOJPEG.decode(b, pixel_format=0, scaling_factor=(1, 4))  # type: ignore[attr-defined]


@pytest.mark.parametrize("impl", list(DECODERS))
def test_decode_1080p(benchmark, impl):
    blobs = _set("1080p", "jpeg")
    if impl == "fastprep":
        for b in blobs:
            np.testing.assert_array_equal(DECODERS[impl](b), DECODERS["pillow"](b))
    benchmark.group = "decode 1080p jpeg (2.07 MP each), 1 thread"
    benchmark.extra_info["megapixels"] = 1920 * 1080 * len(blobs) / 1e6
    benchmark(lambda: [DECODERS[impl](b) for b in blobs])


@pytest.mark.parametrize("filter", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("impl", ["fastprep", "pillow"])
def test_resize_1080p_to_455x256(benchmark, impl, filter):
    img = data.scaled(data.photos()["china.jpg"], (1920, 1080))
    pil_img = Image.fromarray(img)
    pil_filter = getattr(Image.Resampling, filter.upper())
    ours = lambda: fastprep.resize(img, (455, 256), filter=filter)  # noqa: E731
    theirs = lambda: pil_img.resize((455, 256), pil_filter)  # noqa: E731
    np.testing.assert_array_equal(ours(), np.asarray(theirs()))
    benchmark.group = f"resize 1920x1080 -> 455x256 {filter}"
    benchmark(ours if impl == "fastprep" else theirs)


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_scaling(benchmark, threads):
    blobs = _set("1080p", "jpeg") * 4
    benchmark.group = f"batch of {len(blobs)} 1080p jpeg -> 224x224 (cores: {os.cpu_count()})"
    benchmark(lambda: fastprep.preprocess(blobs, num_threads=threads))
