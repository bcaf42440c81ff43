"""``resize`` of Pillow's integer modes against Pillow, byte for byte: I (int32, its 32bpc
double-precision passes, rounding as its ``ROUND_UP`` and overflowing to INT_MIN as x86 does),
I;16 / I;16L / I;16B / I;16N (uint16, its 16bpc passes, which read I;16B and I;16N with their
bytes swapped on a little-endian machine, and its generic-transform NEAREST), P (palette indices,
always NEAREST), with ``box=`` and ``reducing_gap=`` (which Pillow refuses for I;16 where it would
reduce), and sources with no pixels (Pillow returns zeros)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import fastprep

from .image_data import PIL_FILTERS as FILTERS

MODES = ("I", "I;16", "I;16L", "I;16B", "I;16N", "P")


def source(mode: str, h: int, w: int, seed: int) -> np.ndarray:
    """An array as ``np.asarray`` gives Pillow's image of that mode."""
    rng = np.random.default_rng(seed)
    if mode == "I":
        # the full range overflows lanczos' and bicubic's overshoot; small values round at .5
        wide = seed % 2 == 0
        lo, hi = (-(2**31), 2**31) if wide else (-300, 300)
        return rng.integers(lo, hi, (h, w), dtype=np.int64).astype(np.int32)
    if mode == "P":
        return rng.integers(0, 256, (h, w), dtype=np.uint8)
    values = rng.choice([0, 1, 255, 256, 65534, 65535, 32768], (h, w)) if seed % 3 == 0 else None
    arr = rng.integers(0, 65536, (h, w), dtype=np.uint16) if values is None else values.astype(np.uint16)
    return arr.astype(">u2" if mode == "I;16B" else "<u2")


def pillow(arr: np.ndarray, mode: str, size: tuple[int, int], flt: str, **kw) -> np.ndarray | Exception:
    h, w = arr.shape
    try:
        return np.asarray(Image.frombytes(mode, (w, h), arr.tobytes()).resize(size, FILTERS[flt], **kw))
    except ValueError as exc:
        return exc


def check(arr: np.ndarray, mode: str, size: tuple[int, int], flt: str, **kw) -> None:
    want = pillow(arr, mode, size, flt, **kw)
    if isinstance(want, Exception):
        with pytest.raises(ValueError):
            fastprep.resize(arr, size, filter=flt, mode=mode, **kw)
        return
    got = fastprep.resize(arr, size, filter=flt, mode=mode, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    assert got.tobytes() == want.tobytes(), (mode, arr.shape, size, flt, kw)


@settings(max_examples=300, deadline=None)
@given(
    mode=st.sampled_from(MODES),
    flt=st.sampled_from(sorted(FILTERS)),
    src=st.tuples(st.integers(1, 40), st.integers(1, 40)),
    dst=st.tuples(st.integers(1, 60), st.integers(1, 60)),
    box=st.none() | st.tuples(st.floats(0, 0.5), st.floats(0, 0.5), st.floats(0.5, 1), st.floats(0.5, 1)),
    gap=st.none() | st.sampled_from([1.0, 1.5, 2.0, 3.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_hyp_integer_modes_match_pillow(mode, flt, src, dst, box, gap, seed):
    h, w = src
    kw: dict = {}
    if box is not None:
        kw["box"] = (box[0] * w, box[1] * h, box[2] * w, box[3] * h)
    if gap is not None:
        kw["reducing_gap"] = gap
    check(source(mode, h, w, seed), mode, dst, flt, **kw)


def test_int32_overflow_is_pillows_int_min():
    """A lanczos overshoot past int32's range: Pillow's (int) conversion gives INT_MIN on x86."""
    arr = np.array([[0, 2**31 - 1, 2**31 - 1, 0, -(2**31), -(2**31)]] * 3, np.int32)
    for flt in ("lanczos", "bicubic"):
        got = fastprep.resize(arr, (13, 3), filter=flt)
        assert (got == np.iinfo(np.int32).min).any()
        check(arr, "I", (13, 3), flt)


@pytest.mark.parametrize("mode", ["I;16B", "I;16N"])
def test_swapped_16bit_modes_are_pillows_not_the_values(mode):
    """Pillow's 16-bit resampling reads I;16B and I;16N little-endian first / big-endian on a
    little-endian machine: a smooth ramp comes out scrambled, and fastprep gives those bytes."""
    ramp = (np.arange(64, dtype=np.uint16) * 1000).reshape(8, 8).astype(">u2" if mode == "I;16B" else "<u2")
    got = fastprep.resize(ramp, (3, 3), filter="bilinear", mode=mode)
    as_values = fastprep.resize(ramp.astype("<u2"), (3, 3), filter="bilinear")
    assert not np.array_equal(got.astype(np.int64), as_values.astype(np.int64))
    check(ramp, mode, (3, 3), "bilinear")


def test_palette_indices_are_never_mixed():
    arr = source("P", 9, 7, 1)
    for flt in FILTERS:
        got = fastprep.resize(arr, (4, 11), filter=flt, mode="P")
        assert set(np.unique(got)) <= set(np.unique(arr))
        check(arr, "P", (4, 11), flt)


def test_i16_reducing_gap_that_reduces_is_refused_as_pillow():
    arr = source("I;16", 40, 40, 2)
    check(arr, "I;16", (5, 5), "bilinear", reducing_gap=2.0)  # Pillow raises: reduce takes no I;16
    with pytest.raises(ValueError, match="wrong mode"):
        fastprep.resize(arr, (5, 5), filter="bilinear", reducing_gap=2.0)
    check(arr, "I;16", (5, 5), "nearest", reducing_gap=2.0)  # NEAREST never reduces


@pytest.mark.parametrize("size", [(0, 0), (5, 0), (0, 4)])
@pytest.mark.parametrize(
    ("mode", "dtype", "channels"),
    [("L", np.uint8, ()), ("RGB", np.uint8, (3,)), ("RGBA", np.uint8, (4,)), ("F", np.float32, ()),
     ("I", np.int32, ()), ("I;16", np.uint16, ()), ("1", np.bool_, ())],
)  # fmt: skip
def test_source_without_pixels_gives_zeros_as_pillow(size, mode, dtype, channels):
    arr = np.zeros((size[1], size[0], *channels), dtype)
    for flt, f in FILTERS.items():
        want = np.asarray(Image.new(mode, size).resize((3, 2), f))
        got = fastprep.resize(arr, (3, 2), filter=flt)
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
    with pytest.raises(ValueError, match="exceed"):
        fastprep.resize(arr, (3, 2), box=(0, 0, 1, 1))
