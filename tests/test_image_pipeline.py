"""fastprep.preprocess / ImagePipeline against the reference everyone trains with: Pillow
(decode, EXIF transpose, convert, resize with reducing_gap=None, crop) followed by torchvision's
ToTensor + Normalize arithmetic in numpy float32 (torchvision itself is not needed: these are its
operations, in its order). Identical arrays are required, draft mode included (against Pillow's
own draft)."""

from __future__ import annotations

import gc
import io

import numpy as np
import pytest
from PIL import Image, ImageOps

import fastprep
from fastprep.errors import DecodeError

from . import image_data as data

PIL_FILTERS = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC, "box": Image.Resampling.BOX}


def reference(
    blob: bytes,
    *,
    shorter: int | None = 256,
    size: tuple[int, int] | None = None,
    crop: int | tuple[int, int] | None = 224,
    filter: str = "bilinear",
    draft: bool = False,
    layout: str = "NCHW",
    dtype: str = "float32",
) -> np.ndarray:
    im = Image.open(io.BytesIO(blob))
    w, h = ImageOps.exif_transpose(Image.open(io.BytesIO(blob))).size
    if size is not None:
        rw, rh = size
    elif w <= h:
        rw, rh = shorter, int(shorter * h / w)
    else:
        rw, rh = int(shorter * w / h), shorter
    if draft and im.format == "JPEG":
        oriented = ImageOps.exif_transpose(Image.open(io.BytesIO(blob))).size != im.size
        im.draft("RGB", (rh, rw) if oriented and im.size[0] != im.size[1] else (rw, rh))
    im = ImageOps.exif_transpose(im).convert("RGB").resize((rw, rh), PIL_FILTERS[filter])
    if crop is not None:
        cw, ch = (crop, crop) if isinstance(crop, int) else crop
        left, top = round((rw - cw) / 2.0), round((rh - ch) / 2.0)
        im = im.crop((left, top, left + cw, top + ch))
    arr = np.asarray(im)
    if dtype != "uint8":
        x = arr.astype(np.float32) / np.float32(255)
        x = (x - np.asarray(fastprep.IMAGENET_MEAN, np.float32)) / np.asarray(fastprep.IMAGENET_STD, np.float32)
        arr = x.astype(np.float16) if dtype == "float16" else x
    return arr.transpose(2, 0, 1) if layout == "NCHW" else arr


def _blobs(limit: int | None = None) -> list[bytes]:
    items = list(data.jpeg_variants().values()) + [
        v for k, v in data.png_variants().items() if k in ("rgb8", "rgba8-adam7", "pal8-trns", "gray16", "la8")
    ]
    return items[:limit]


def _assert_batch(got: np.ndarray, blobs: list[bytes], **kw: object) -> None:
    bad = []
    for i, b in enumerate(blobs):
        want = reference(b, **kw)  # type: ignore[arg-type]
        if got[i].shape != want.shape or not np.array_equal(got[i], want):
            bad.append(i)
    assert not bad, f"{len(bad)} of {len(blobs)} images differ from the reference: {bad[:10]}"


def test_imagenet_eval_transform_is_exact():
    blobs = _blobs()
    batch = fastprep.preprocess(blobs)
    assert batch.shape == (len(blobs), 3, 224, 224) and batch.dtype == np.float32
    assert batch.flags.c_contiguous
    _assert_batch(batch, blobs)


@pytest.mark.parametrize(("layout", "dtype"), [("NHWC", "float32"), ("NCHW", "float16"), ("NHWC", "uint8")])
def test_layouts_and_dtypes(layout, dtype):
    blobs = _blobs(12)
    batch = fastprep.preprocess(blobs, layout=layout, dtype=dtype)
    assert batch.dtype == np.dtype(dtype)
    _assert_batch(batch, blobs, layout=layout, dtype=dtype)


@pytest.mark.parametrize("filter", ["bicubic", "box"])
def test_other_filters_and_exact_size_without_crop(filter):
    blobs = _blobs(8)
    batch = fastprep.preprocess(blobs, size=(200, 150), crop=None, filter=filter)
    assert batch.shape == (8, 3, 150, 200)
    _assert_batch(batch, blobs, shorter=None, size=(200, 150), crop=None, filter=filter)
    batch = fastprep.preprocess(blobs, resize_shorter=160, crop=(128, 128), filter=filter)
    _assert_batch(batch, blobs, shorter=160, crop=128, filter=filter)


def test_exif_orientation_is_applied():
    arr = data.photos()["flower.jpg"][:300, :400]
    blobs = [data.jpeg_with_orientation(arr, o) for o in range(1, 9)]
    _assert_batch(fastprep.preprocess(blobs, resize_shorter=160, crop=128), blobs, shorter=160, crop=128)


@pytest.mark.parametrize("draft", [False, True], ids=["exact", "draft"])
@pytest.mark.parametrize("subsampling", [0, 1, 2], ids=["444", "422", "420"])
def test_partial_decode_of_the_crop_region_is_exact(subsampling, draft):
    """Only the part of a JPEG that the crop reads is decoded (libjpeg-turbo's partial decoding,
    widened by an iMCU so chroma upsampling at its edges is as in a full decode). Off-centre and
    non-square crops, every EXIF orientation (the region is mapped back to stored coordinates)
    and draft scales must still give Pillow's pixels."""
    arr = data.scaled(data.photos()["flower.jpg"], (1203, 797))
    blobs = [data.jpeg_with_orientation(arr, o, subsampling=subsampling) for o in range(1, 9)]
    for shorter, crop in ((256, 224), (200, (96, 180)), (300, (280, 64)), (100, (30, 30))):
        got = fastprep.preprocess(blobs, resize_shorter=shorter, crop=crop, draft=draft)
        _assert_batch(got, blobs, shorter=shorter, crop=crop, draft=draft)


@pytest.mark.parametrize("draft", [False, True], ids=["exact", "draft"])
def test_portrait_images_resized_vertically_first_with_partial_decode(draft):
    """A portrait image over twice as tall as wide shrinks vertically first under Pillow 13's pass
    order; the partial decode of the crop's region must still give Pillow's pixels."""
    arr = data.scaled(data.photos()["china.jpg"], (400, 1000))
    blobs = [data.jpeg(arr, quality=85, subsampling=2), data.jpeg_with_orientation(arr[:400, :], 6)]
    for shorter, crop in ((256, 224), (100, (80, 60))):
        got = fastprep.preprocess(blobs, resize_shorter=shorter, crop=crop, draft=draft)
        _assert_batch(got, blobs, shorter=shorter, crop=crop, draft=draft)


@pytest.mark.parametrize("keep", [1, 3, 6])
def test_progressive_files_libjpeg_block_smooths_are_decoded_whole(keep):
    """A progressive file whose low frequencies never got full precision (its later scans cut) is
    block-smoothed by libjpeg-turbo over neighbouring blocks, which a partial decode would take
    for the image's edge: such files are decoded whole, and match Pillow."""
    blobs = []
    for name in ("flower-prog-444", "china-prog-420"):
        blob = data.jpeg_variants()[name]
        starts = [i for i in range(len(blob) - 1) if blob[i] == 0xFF and blob[i + 1] == 0xDA]
        blobs.append(blob[: starts[keep]] + b"\xff\xd9")
    for draft in (False, True):
        got = fastprep.preprocess(blobs, resize_shorter=200, crop=(120, 90), draft=draft)
        _assert_batch(got, blobs, shorter=200, crop=(120, 90), draft=draft)


def test_draft_matches_pillow_draft_and_is_close_to_exact():
    blobs = [v for k, v in data.jpeg_variants().items() if "china-" in k and "x" in k.split("-")[1]]
    blobs += [data.jpeg_variants()["china-q75-420"]]  # 640x427: no draft scale applies
    draft = fastprep.preprocess(blobs, draft=True)
    _assert_batch(draft, blobs, draft=True)
    exact = fastprep.preprocess(blobs)
    assert np.array_equal(draft[-1], exact[-1])
    diff = np.abs(draft[:-1] - exact[:-1]) * np.asarray(fastprep.IMAGENET_STD, np.float32)[:, None, None] * 255
    assert 0 < diff.mean() < 3  # levels: a different but close image


def test_bad_images_are_reported_by_index_and_the_rest_processed():
    blobs = _blobs(6)
    blobs[2] = blobs[2][:300]
    blobs[4] = b"not an image"
    with pytest.raises(DecodeError) as info:
        fastprep.preprocess(blobs)
    assert info.value.index == 2 and [e.index for e in info.value.errors] == [2, 4]
    assert info.value.errors[1].reason == "unknown_format"
    batch, ok = fastprep.preprocess(blobs, on_error="skip")
    assert ok.tolist() == [True, True, False, True, False, True]
    assert not batch[2].any() and not batch[4].any()
    good = [b for i, b in enumerate(blobs) if ok[i]]
    _assert_batch(batch[ok], good)


def test_timings_and_percentile_stats():
    pipe = fastprep.ImagePipeline(resize_shorter=128, crop=112, num_threads=2)
    blobs = _blobs(10)
    for _ in range(3):
        _batch, timings = pipe(blobs, return_timings=True)
    assert set(timings) == {*fastprep.pipeline.STAGES, "wall", "per_image"}
    assert timings["per_image"].shape == (10, 3) and (timings["per_image"] > 0).all()
    assert timings["decode"] > 0 and timings["wall"] > 0
    stats = pipe.stats()
    assert stats["decode"]["count"] == 30 and stats["batch"]["count"] == 3
    for stage in (*fastprep.pipeline.STAGES, "total"):
        s = stats[stage]
        assert 0 < s["p50"] <= s["p95"] <= s["p99"] <= s["max"]
    pipe.reset_stats()
    assert pipe.stats()["total"] == {"count": 0}


def test_batches_come_from_a_pool_and_go_back_to_it():
    pipe = fastprep.ImagePipeline(resize_shorter=64, crop=64)
    blobs = _blobs(4)
    for _ in range(20):
        batch = pipe(blobs)
        del batch
        gc.collect()
    stats = pipe.pool.stats()
    assert stats["acquires"] == 20 and stats["in_use"] == 0 and stats["capacity"] == 2
    kept = [pipe(blobs) for _ in range(3)]  # three alive at once: the pool grows by a block
    assert pipe.pool.stats()["in_use"] == 3
    assert all(np.array_equal(k, kept[0]) for k in kept)


def test_threads_give_identical_batches():
    blobs = _blobs(10)
    one = fastprep.preprocess(blobs, num_threads=1)
    two = fastprep.preprocess(blobs, num_threads=2)
    np.testing.assert_array_equal(one, two)


def test_settings_are_validated():
    with pytest.raises(ValueError, match="crop"):
        fastprep.ImagePipeline(resize_shorter=200, crop=224)
    with pytest.raises(ValueError, match="different shapes"):
        fastprep.ImagePipeline(crop=None)
    with pytest.raises(ValueError, match="dtype"):
        fastprep.ImagePipeline(dtype="float64")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="layout"):
        fastprep.ImagePipeline(layout="CHW")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mean and std"):
        fastprep.ImagePipeline(std=(1.0, 0.0, 1.0))
    with pytest.raises(TypeError, match="image 1"):
        fastprep.preprocess([_blobs(1)[0], "x"])  # type: ignore[list-item]
    assert fastprep.preprocess([]).shape == (0, 3, 224, 224)


def test_one_thread_means_one_core():
    """num_threads=1 must not spill onto rayon's global pool: the CPU time of the call stays close
    to its wall time (a second busy thread would nearly double it)."""
    import resource
    import time

    blobs = [data.jpeg(data.scaled(data.photos()["china.jpg"], (1920, 1080)), quality=90)] * 6

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    for fn in (
        lambda: fastprep.preprocess(blobs, num_threads=1),
        lambda: fastprep.decode_batch(blobs, num_threads=1),
        lambda: fastprep.resize_batch([np.zeros((1080, 1920, 3), np.uint8)] * 6, (455, 256), num_threads=1),
    ):
        fn()
        c0, t0 = cpu(), time.perf_counter()
        fn()
        used, wall = cpu() - c0, time.perf_counter() - t0
        assert used < 1.35 * wall, f"{used:.3f} s of CPU in {wall:.3f} s: more than one core busy"
