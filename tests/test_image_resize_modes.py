"""``resize(mode=...)``: 4-channel arrays that are not RGBA (RGBX, CMYK, an already
premultiplied RGBa) are resized channel by channel, RGBA and LA premultiplied by alpha, "1"
with nearest, all bit-exact with Pillow (I, I;16 and P: test_image_resize_int_modes.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import fastprep

from .image_data import PIL_FILTERS as FILTERS

CHANNELS = {"RGBA": 4, "RGBX": 4, "CMYK": 4, "RGBa": 4, "LA": 2, "YCbCr": 3, "1": 1}


def pillow_resize(arr: np.ndarray, mode: str, size: tuple[int, int], flt: str) -> np.ndarray:
    h, w = arr.shape[:2]
    im = Image.fromarray(arr) if mode == "1" else Image.frombytes(mode, (w, h), arr.tobytes())
    return np.asarray(im.resize(size, FILTERS[flt]))


@settings(max_examples=150, deadline=None)
@given(
    mode=st.sampled_from(sorted(CHANNELS)),
    flt=st.sampled_from(sorted(FILTERS)),
    src=st.tuples(st.integers(1, 40), st.integers(1, 40)),
    dst=st.tuples(st.integers(1, 70), st.integers(1, 70)),
    seed=st.integers(0, 2**32 - 1),
)
def test_hyp_modes_match_pillow(mode, flt, src, dst, seed):
    rng = np.random.default_rng(seed)
    h, w = src
    if mode == "1":
        arr = rng.random((h, w)) < 0.5
    else:
        arr = rng.integers(0, 256, (h, w, CHANNELS[mode]), dtype=np.uint8)
        if mode in ("RGBA", "LA"):  # alpha 0 and 255 are where premultiplication shows most
            arr[..., -1] = rng.choice([0, 255, 1, 128, 254], (h, w))
    np.testing.assert_array_equal(fastprep.resize(arr, dst, filter=flt, mode=mode), pillow_resize(arr, mode, dst, flt))


def test_rgbx_and_cmyk_are_not_premultiplied():
    arr = np.zeros((8, 8, 4), np.uint8)
    arr[::2, :, 0] = 200
    arr[::2, :, 3] = 255  # for RGBA the other rows are transparent, for CMYK they have no black
    as_rgba = fastprep.resize(arr, (4, 4), filter="bilinear")
    as_cmyk = fastprep.resize(arr, (4, 4), filter="bilinear", mode="CMYK")
    assert (abs(as_rgba[..., 0].astype(int) - 200) <= 2).all()  # only opaque rows' colour counts
    assert (as_cmyk[1:3, :, 0] == 100).all() and (as_cmyk[1:3, :, 3] == 128).all()  # averaged
    np.testing.assert_array_equal(as_cmyk, pillow_resize(arr, "CMYK", (4, 4), "bilinear"))
    np.testing.assert_array_equal(as_rgba, pillow_resize(arr, "RGBA", (4, 4), "bilinear"))


def test_unchanged_la_decodes_resize():
    from . import image_data as data

    la = fastprep.decode(data.png_variants()["la8"], mode="unchanged")
    assert la.shape[2] == 2
    np.testing.assert_array_equal(fastprep.resize(la, (17, 9)), pillow_resize(la, "LA", (17, 9), "bicubic"))


def test_refusals_say_why():
    with pytest.raises(TypeError, match="int32"):
        fastprep.resize(np.zeros((4, 4), np.int16), (2, 2))
    with pytest.raises(ValueError, match="CMYK"):
        fastprep.resize(np.zeros((4, 4, 3), np.uint8), (2, 2), mode="CMYK")
    with pytest.raises(ValueError, match="channels"):
        fastprep.resize(np.zeros((4, 4, 5), np.uint8), (2, 2))
