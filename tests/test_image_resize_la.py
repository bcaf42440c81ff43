"""Mode "La" (L premultiplied by alpha, as Pillow stores LA while resizing) through `resize`,
`resize(box=, reducing_gap=)` and `reduce`: no second premultiplication, Pillow's bytes."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import fastprep

from .image_data import PIL_FILTERS as FILTERS


def _la(arr: np.ndarray) -> Image.Image:
    return Image.frombytes("La", (arr.shape[1], arr.shape[0]), arr.tobytes())


def _pixels(im: Image.Image) -> np.ndarray:
    return np.frombuffer(im.tobytes(), np.uint8).reshape(im.height, im.width, 2)


@pytest.fixture(scope="module")
def arr() -> np.ndarray:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, (37, 53, 2), dtype=np.uint8)
    a[5:9, 10:30, 1] = 0  # transparent pixels with colour: premultiplying again would zero them
    return a


@pytest.mark.parametrize("filter", list(FILTERS))
def test_resize_la_is_pillows(arr: np.ndarray, filter: str) -> None:
    for size in ((20, 15), (80, 61)):
        want = _pixels(_la(arr).resize(size, FILTERS[filter]))
        np.testing.assert_array_equal(fastprep.resize(arr, size, filter=filter, mode="La"), want)
    # LA (not premultiplied) differs: the test would pass for "La" treated as "LA" otherwise
    assert (
        not np.array_equal(
            fastprep.resize(arr, (20, 15), filter=filter, mode="La"), fastprep.resize(arr, (20, 15), filter=filter)
        )
        or filter == "nearest"
    )


@pytest.mark.parametrize("filter", ["bilinear", "bicubic", "lanczos"])
def test_resize_la_box_and_gap_are_pillows(arr: np.ndarray, filter: str) -> None:
    box = (2.5, 3.25, 47.0, 30.5)
    want = _pixels(_la(arr).resize((17, 11), FILTERS[filter], box=box))
    np.testing.assert_array_equal(fastprep.resize(arr, (17, 11), filter=filter, mode="La", box=box), want)
    want = _pixels(_la(arr).resize((9, 7), FILTERS[filter], reducing_gap=2.0))
    np.testing.assert_array_equal(fastprep.resize(arr, (9, 7), filter=filter, mode="La", reducing_gap=2.0), want)


@pytest.mark.parametrize("factor", [2, 3, (2, 5), 7])
def test_reduce_la_is_pillows(arr: np.ndarray, factor: int | tuple[int, int]) -> None:
    np.testing.assert_array_equal(fastprep.reduce(arr, factor, mode="La"), _pixels(_la(arr).reduce(factor)))
