"""fastprep.reduce against Pillow's Image.reduce, byte for byte: every factor 1..8 and tuples of
them, boxes, every mode (RGBA and LA through their premultiplied forms), Pillow's special-cased
factors (1xN, Nx1, 2x2 .. 5x5) and the partial last column and row, and its argument checks;
the modes Pillow cannot reduce ("1", P, I;16) are refused as Pillow refuses them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import fastprep

MODES = ("L", "LA", "RGB", "RGBA", "F", "I")


def _array(mode: str, h: int, w: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + h * 1009 + w)
    if mode == "F":
        return rng.normal(0, 1000, (h, w)).astype(np.float32)
    if mode == "I":  # the whole int32 range: Pillow's sums of pairs and quads wrap
        return rng.integers(-(2**31), 2**31, (h, w), dtype=np.int64).astype(np.int32)
    shape = {"L": (h, w), "LA": (h, w, 2), "RGB": (h, w, 3), "RGBA": (h, w, 4)}[mode]
    a = rng.integers(0, 256, shape, dtype=np.uint8)
    if mode in ("LA", "RGBA"):
        a[..., -1] = rng.choice([0, 1, 127, 255, 200], (h, w))
    return a


def _same(a: np.ndarray, mode: str, factor, box=None) -> None:
    im = Image.fromarray(a, mode) if mode == "LA" else Image.fromarray(a)
    ref = np.asarray(im.reduce(factor, box))
    got = fastprep.reduce(a, factor, box=box, mode=mode)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.shape, ref.shape)
    assert got.tobytes() == ref.tobytes(), (mode, a.shape, factor, box)


@pytest.mark.parametrize("mode", MODES)
def test_every_factor_and_pair(mode: str) -> None:
    # Pillow's test_image_reduce.py sizes: divisible and not, so the partial edges are exercised.
    for h, w in ((41, 53), (40, 48), (7, 3), (1, 1)):
        a = _array(mode, h, w)
        for fx in range(1, 9):
            for fy in range(1, 9):
                _same(a, mode, (fx, fy))
            _same(a, mode, fx)


@pytest.mark.parametrize("mode", MODES)
def test_boxes(mode: str) -> None:
    a = _array(mode, 41, 53)
    for box in ((0, 0, 53, 41), (5, 7, 50, 40), (1, 2, 2, 3), (10, 0, 11, 41), (0, 20, 53, 21), (3, 3, 40, 9)):
        for factor in (1, 2, 3, 4, 5, 6, 7, 8, (1, 3), (3, 1), (2, 5), (8, 1), (1, 8), (64, 64)):
            _same(a, mode, factor, box)


def test_large_factors_and_extremes() -> None:
    # the general NxN path with large blocks, and values at 0 and 255 (rounding at the ends)
    for fill in (0, 255):
        a = np.full((70, 90, 3), fill, np.uint8)
        for factor in ((9, 11), (17, 3), (90, 70), (100, 100)):
            _same(a, "RGB", factor)
    _same(_array("L", 300, 20), "L", (20, 300))


@settings(max_examples=150)
@given(
    st.sampled_from(MODES),
    st.integers(1, 40),
    st.integers(1, 40),
    st.tuples(st.integers(1, 12), st.integers(1, 12)),
    st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)),
    st.booleans(),
)
def test_hypothesis(mode, w, h, factor, fr, with_box) -> None:
    box = None
    if with_box:
        x0 = int(fr[0] * (w - 1))
        y0 = int(fr[1] * (h - 1))
        box = (x0, y0, x0 + 1 + int(fr[2] * (w - 1 - x0)), y0 + 1 + int(fr[3] * (h - 1 - y0)))
    _same(_array(mode, h, w), mode, factor, box)


def test_factor_one_is_pillows_crop() -> None:
    a = _array("RGBA", 10, 12)
    for box in (None, (2, 3, 9, 8), (-2, -1, 14, 12)):
        _same(a, "RGBA", (1, 1), box)


@pytest.mark.parametrize(
    ("factor", "box", "error"),
    [
        (0, None, ValueError),
        ((2, 0), None, ValueError),
        ((-1, 2), None, ValueError),
        (2, (-1, 0, 5, 5), ValueError),
        (2, (0, 0, 13, 5), ValueError),
        (2, (0, 0, 5, 11), ValueError),
        (2, (5, 0, 5, 5), ValueError),
        (2, (0, 6, 5, 5), ValueError),
        (2.0, None, TypeError),
        ((2, 2.5), None, TypeError),
        (2, (0, 0, 5.5, 5), TypeError),
        ((2, 2, 2), None, TypeError),
    ],
)
def test_invalid_arguments_raise_as_pillow(factor, box, error) -> None:
    a = _array("RGB", 10, 12)
    with pytest.raises(error):
        Image.fromarray(a).reduce(factor, box)
    with pytest.raises(error):
        fastprep.reduce(a, factor, box=box)


@pytest.mark.parametrize("mode", ["1", "P", "I;16", "I;16B"])
def test_modes_pillow_cannot_reduce_are_refused(mode: str) -> None:
    a = np.zeros((4, 4), bool if mode == "1" else np.uint16 if mode.startswith("I") else np.uint8)
    im = Image.fromarray(a) if mode == "1" else Image.frombytes(mode, (4, 4), a.tobytes())
    with pytest.raises(ValueError):
        im.reduce(2)
    with pytest.raises(ValueError, match="wrong mode"):
        fastprep.reduce(a, 2, mode=mode)


def test_pillow_suite_args() -> None:
    # Pillow's Tests/test_image_reduce.py test_args_* re-expressed on a 10x10 L image.
    a = np.zeros((10, 10), np.uint8)
    for factor, size in ((3, (4, 4)), ((3, 1), (4, 10)), ((1, 3), (10, 4)), ((2, 4), (5, 3))):
        assert fastprep.reduce(a, factor).shape == (size[1], size[0])
    for box, size in (((0, 0, 10, 10), (5, 5)), ((5, 5, 6, 6), (1, 1))):
        assert fastprep.reduce(a, 2, box=box).shape == (size[1], size[0])
    for factor, error in ((0, ValueError), (2.0, TypeError), ((0, 10), ValueError)):
        with pytest.raises(error):
            fastprep.reduce(a, factor)  # type: ignore[arg-type]
    for box, error in (
        ("stri", TypeError),
        ((0, 0, 11, 10), ValueError),
        ((0, 0, 10, 11), ValueError),
        ((-1, 0, 10, 10), ValueError),
        ((0, -1, 10, 10), ValueError),
        ((0, 5, 10, 5), ValueError),
        ((5, 0, 5, 10), ValueError),
    ):
        with pytest.raises(error):
            fastprep.reduce(a, 2, box=box)  # type: ignore[arg-type]
