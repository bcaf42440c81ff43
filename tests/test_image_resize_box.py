"""fastprep.resize(box=..., reducing_gap=...) against Pillow's Image.resize, byte for byte: float
boxes over every filter and mode, reducing_gap's reduce-then-resize, and Pillow's argument
checks. Pillow is the reference (the test extra pins it); nothing here restates its arithmetic."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import fastprep

from .image_data import PIL_FILTERS as FILTERS

MODES = ("L", "LA", "RGB", "RGBA", "F", "1")


def _array(mode: str, h: int, w: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + h * 977 + w)
    if mode == "F":
        return rng.normal(0, 300, (h, w)).astype(np.float32)
    if mode == "1":
        return rng.integers(0, 2, (h, w)).astype(bool)
    shape = {"L": (h, w), "LA": (h, w, 2), "RGB": (h, w, 3), "RGBA": (h, w, 4)}[mode]
    a = rng.integers(0, 256, shape, dtype=np.uint8)
    if mode in ("LA", "RGBA"):
        a[..., -1] = rng.choice([0, 1, 128, 254, 255, 77], (h, w))  # alpha edge cases
    return a


def _pillow(a: np.ndarray, mode: str) -> Image.Image:
    return Image.fromarray(a, mode) if mode == "LA" else Image.fromarray(a)


def _same(a: np.ndarray, mode: str, size, f: str, box, gap=None) -> None:
    try:
        ref = np.asarray(_pillow(a, mode).resize(size, FILTERS[f], box, gap))
    except (ValueError, TypeError) as e:  # e.g. reducing_gap's reduce of a zero-height box
        with pytest.raises(type(e)):
            fastprep.resize(a, size, filter=f, box=box, reducing_gap=gap, mode=mode)
        return
    got = fastprep.resize(a, size, filter=f, box=box, reducing_gap=gap, mode=mode)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.shape, ref.shape)
    if ref.dtype == bool:  # Pillow's "1" arrays hold 0 / 255 bytes: compare values
        ref = ref != 0
    assert got.tobytes() == ref.tobytes(), (mode, f, a.shape, size, box, gap)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", FILTERS)
def test_float_boxes_every_filter_and_mode(mode: str, f: str) -> None:
    a = _array(mode, 37, 53)
    boxes = [
        (0.5, 1.25, 40.75, 30.5),
        (10, 5, 11, 6),  # one pixel, stretched
        (3.3, 0, 3.3, 37),  # zero width: Pillow allows it (only negative sizes are errors)
        (0, 0, 53, 37),
        (2, 3, 22, 13),  # integer box of the output's size: Pillow's crop shortcut
        (0.0001, 36.9, 52.9999, 37),
    ]
    for box in boxes:
        for size in ((20, 10), (53, 37), (71, 90), (1, 1)):
            _same(a, mode, size, f, box)


@pytest.mark.parametrize("gap", [1.0, 1.5, 2.0, 2.5, 3.0, 4.5, 8.0])
@pytest.mark.parametrize("mode", ("L", "RGB", "RGBA", "LA", "F"))
def test_reducing_gap(gap: float, mode: str) -> None:
    a = _array(mode, 211, 157)
    for f in FILTERS:
        for size in ((15, 19), (40, 33), (157, 20), (3, 211)):
            _same(a, mode, size, f, None, gap)
            _same(a, mode, size, f, (7.5, 11.25, 150.5, 199.0), gap)


@settings(max_examples=150)
@given(
    st.sampled_from(("L", "RGB", "RGBA", "F", "LA")),
    st.sampled_from(list(FILTERS)),
    st.integers(1, 48),
    st.integers(1, 48),
    st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)),
    st.tuples(st.integers(1, 60), st.integers(1, 60)),
    st.one_of(st.none(), st.floats(1.0, 6.0)),
)
def test_hypothesis_boxes(mode, f, w, h, fr, size, gap) -> None:
    x0, x1 = sorted((fr[0] * w, fr[2] * w))
    y0, y1 = sorted((fr[1] * h, fr[3] * h))
    _same(_array(mode, h, w), mode, size, f, (x0, y0, x1, y1), gap)


def test_tall_images_keep_pillows_pass_order_with_a_box() -> None:
    # Pillow 13 picks the pass order from the whole image's size, not the box's.
    a = _array("RGB", 400, 9)
    for box in ((0.5, 10.5, 8.5, 390.25), (1, 0, 9, 400), (0, 100.5, 9, 101.5)):
        for size in ((5, 7), (9, 40), (12, 3)):
            for f in ("bilinear", "lanczos"):
                _same(a, "RGB", size, f, box)


@pytest.mark.parametrize(
    ("box", "gap"),
    [
        ((-1, 0, 10, 10), None),
        ((0, -0.5, 10, 10), None),
        ((0, 0, 40.5, 10), None),
        ((0, 0, 10, 31), None),
        ((5, 0, 4, 10), None),
        ((0, 6, 10, 5.9), None),
        ((-1, 0, 10, 10), 2.0),
        (None, 0.99),
        (None, 0.0),
    ],
)
def test_invalid_arguments_raise_as_pillow(box, gap) -> None:
    a = _array("RGB", 30, 40)
    with pytest.raises(ValueError) as ref:
        Image.fromarray(a).resize((4, 3), Image.Resampling.BILINEAR, box, gap)
    with pytest.raises(type(ref.value)):
        fastprep.resize(a, (4, 3), filter="bilinear", box=box, reducing_gap=gap)


def test_invalid_types_raise_as_pillow() -> None:
    a = _array("L", 10, 10)
    with pytest.raises(TypeError):
        Image.fromarray(a).resize((4, 3), Image.Resampling.BILINEAR, ("a", 0, 1, 1))
    with pytest.raises(TypeError):
        fastprep.resize(a, (4, 3), filter="bilinear", box=("a", 0, 1, 1))  # type: ignore[arg-type]


def test_pillow_suite_reducing_gap_cases() -> None:
    # Pillow's Tests/test_image_resize.py TestReducingGapResize, re-expressed: a 128x128 RGB image
    # to (52, 34) and (15, 14) at every gap it tries, with and without a box.
    rng = np.random.default_rng(128)
    a = rng.integers(0, 256, (128, 128, 3), dtype=np.uint8)
    for size in ((52, 34), (15, 14)):
        for gap in (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 99.0):
            for box in (None, (1.2, 2.2, 100.5, 120.2)):
                for f in ("box", "bicubic", "lanczos", "nearest"):
                    _same(a, "RGB", size, f, box, gap)


def _photo(h: int = 128, w: int = 128) -> np.ndarray:
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:h, 0:w]
    a = np.stack([xx * 2 % 256, yy * 2 % 256, (xx * yy) % 256], -1).astype(int)
    return np.clip(a + rng.integers(-30, 31, a.shape), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("f", FILTERS)
def test_pillow_suite_wrong_arguments(f: str) -> None:
    # Pillow's Tests/test_image_resample.py TestCoreResampleBox.test_wrong_arguments, re-expressed:
    # the boxes it accepts give Pillow's bytes, the others Pillow's error type and message.
    a = _photo()
    for box in ((0, 0, 128, 128), (20, 20, 128, 128), (20, 20, 20, 100), (20, 20, 100, 20)):
        _same(a, "RGB", (32, 32), f, box)
    with pytest.raises(TypeError):
        fastprep.resize(a, (32, 32), filter=f, box=(128, 128))  # type: ignore[arg-type]
    for box, match in (
        ((-20, 20, 100, 100), "can't be negative"),
        ((20, -20, 100, 100), "can't be negative"),
        ((20.1, 20, 20, 100), "can't be empty"),
        ((20, 20.1, 100, 20), "can't be empty"),
        ((20.1, 20.1, 20, 20), "can't be empty"),
        ((0, 0, 129, 128), "can't exceed"),
        ((0, 0, 128, 129), "can't exceed"),
    ):
        with pytest.raises(ValueError, match=match):
            fastprep.resize(a, (32, 32), filter=f, box=box)


def test_pillow_suite_tiles_passthrough_and_skips() -> None:
    # TestCoreResampleBox.test_tiles / test_passthrough / test_no_passthrough / test_skip_*:
    # every tile, crop-like and one-axis box, compared with Pillow byte for byte.
    a = _photo(120, 160)
    dst = (67, 50)
    scale = (160 / dst[0], 120 / dst[1])
    for tiles in ((3, 3), (9, 7)):
        xs = [round(dst[0] / tiles[0] * i) for i in range(tiles[0] + 1)]
        ys = [round(dst[1] / tiles[1] * i) for i in range(tiles[1] + 1)]
        for y0, y1 in itertools.pairwise(ys):
            for x0, x1 in itertools.pairwise(xs):
                box = (x0 * scale[0], y0 * scale[1], x1 * scale[0], y1 * scale[1])
                _same(a, "RGB", (x1 - x0, y1 - y0), "bicubic", box)
    for mode in ("RGB", "RGBA", "L"):
        img = _array(mode, 100, 128)
        for size, box in (
            ((40, 50), (0, 0, 40, 50)),
            ((40, 50), (10, 20, 50, 70)),
            ((40, 50), (0.4, 10.4, 40.4, 60.4)),
            ((40, 50), (10, 20, 50, 90)),  # skip horizontal
            ((40, 50), (10, 20, 90, 70)),  # skip vertical
        ):
            for f in ("nearest", "bicubic", "lanczos"):
                _same(img, mode, size, f, box)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA"])
def test_resize_batch_boxes_are_pillows(mode, threads):
    """resize_batch(box=...): one box for all images or one per image (None: the whole image),
    each result Pillow's resize of that image's box (integer boxes of the output's size are
    Pillow's crop, RGBA's through RGBa)."""
    imgs = [_array(mode, h, w, seed) for seed, (h, w) in enumerate([(40, 60), (33, 21), (64, 64), (9, 50)])]
    boxes = [(2.5, 3.25, 40.0, 30.5), None, (10, 10, 34, 26), (0.0, 0.5, 50.0, 8.75)]
    size = (24, 16)
    for flt, f in FILTERS.items():
        out = fastprep.resize_batch(imgs, size, filter=flt, box=boxes, num_threads=threads)
        for a, b, got in zip(imgs, boxes, out, strict=True):
            im = Image.fromarray(a, mode)
            np.testing.assert_array_equal(got, np.asarray(im.resize(size, f, box=b)))
        shared = (1.5, 0.0, 9.0, 8.5)
        one = fastprep.resize_batch(imgs, size, filter=flt, box=shared, num_threads=threads)
        for a, got in zip(imgs, one, strict=True):
            np.testing.assert_array_equal(got, np.asarray(Image.fromarray(a, mode).resize(size, f, box=shared)))


def test_resize_batch_box_checks():
    imgs = [_array("RGB", 10, 10)] * 2
    with pytest.raises(ValueError, match="one per image"):
        fastprep.resize_batch(imgs, (4, 4), box=[None, None, None])
    with pytest.raises(ValueError, match="exceed"):
        fastprep.resize_batch(imgs, (4, 4), box=[None, (0, 0, 11, 10)])
