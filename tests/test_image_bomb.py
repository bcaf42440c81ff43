"""The default pixel limit is Pillow's pair: over ``MAX_IMAGE_PIXELS`` an image decodes with a
``DecompressionBombWarning`` (Pillow: ``Image.DecompressionBombWarning``), over twice it is
refused (``DecompressionBombError``); an explicit ``max_pixels`` is a hard limit with no
warning, ``None`` no limit.

The big image is a 1-bit gray PNG of 9000 x 10000 (90 M pixels, just over the limit) whose zlib
stream ends after 40 rows, on a row boundary: Pillow decodes it with the other rows zero, from
1.4 KB of data."""

from __future__ import annotations

import io
import struct
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image

import fastprep
from fastprep.errors import DecodeError, DecompressionBombWarning

from . import image_odd as odd

M = fastprep.MAX_IMAGE_PIXELS
W, H = 9000, 10_000


def _gray1(width: int, height: int, rows: int = 40) -> bytes:
    rng = np.random.default_rng(0)
    raw = b"".join(b"\x00" + rng.integers(0, 256, (width + 7) // 8, dtype=np.uint8).tobytes() for _ in range(rows))
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return odd.png_build([(b"IHDR", ihdr), (b"IDAT", zlib.compress(raw, 9)), (b"IEND", b"")])


def _header_only(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return odd.png_build([(b"IHDR", ihdr), (b"IEND", b"")])


@pytest.fixture(scope="module")
def big() -> bytes:
    assert M < W * H < 2 * M
    return _gray1(W, H)


def _bomb_warnings(record: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in record if issubclass(w.category, DecompressionBombWarning)]


def test_the_warning_class():
    assert issubclass(fastprep.DecompressionBombWarning, UserWarning)
    assert fastprep.DecompressionBombWarning is DecompressionBombWarning
    assert fastprep.MAX_IMAGE_PIXELS == Image.MAX_IMAGE_PIXELS


def test_over_the_limit_decodes_with_a_warning_as_pillow(big):
    with pytest.warns(Image.DecompressionBombWarning), Image.open(io.BytesIO(big)) as im:
        want = np.asarray(im.convert("L"))
    with pytest.warns(DecompressionBombWarning, match=f"{W}x{H}") as record:
        got = fastprep.decode(big, mode="L")
    assert record[0].filename == __file__  # the caller's line
    assert got.shape == (H, W, 1)
    np.testing.assert_array_equal(got[..., 0], want)
    assert got[:40].any() and not got[40:].any()


def test_explicit_limits_are_hard_and_none_is_none(big):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert fastprep.decode(big, mode="L", max_pixels=None).shape == (H, W, 1)
        assert fastprep.decode(big, mode="L", max_pixels=W * H).shape == (H, W, 1)
    assert not _bomb_warnings(record)
    with pytest.raises(DecodeError) as e:
        fastprep.decode(big, mode="L", max_pixels=W * H - 1)
    assert e.value.reason == "too_large"
    # passing the default's value is the default
    with pytest.warns(DecompressionBombWarning):
        fastprep.decode(big, mode="L", max_pixels=fastprep.MAX_IMAGE_PIXELS)


def test_over_twice_the_limit_is_refused_as_pillow():
    over = _header_only(2 * M + 1, 1)
    with pytest.raises(Image.DecompressionBombError):
        Image.open(io.BytesIO(over))
    with pytest.raises(DecodeError, match="over the limit of 178956970 pixels") as e:
        fastprep.decode(over)
    assert e.value.reason == "too_large"
    # at twice the limit Pillow opens it (and warns); without image data, both then refuse it
    # as truncated, not as too large
    with pytest.warns(Image.DecompressionBombWarning):
        Image.open(io.BytesIO(_header_only(2 * M, 1))).close()
    with pytest.raises(DecodeError) as e:
        fastprep.decode(_header_only(2 * M, 1))
    assert e.value.reason == "truncated"
    jpeg = bytearray(odd.jpeg(odd.photo(64, 48), quality=80))
    sof = jpeg.index(b"\xff\xc0")
    jpeg[sof + 5 : sof + 9] = struct.pack(">HH", 13_400, 13_400)  # 179.6 M pixels
    with pytest.raises(DecodeError) as e:
        fastprep.decode(bytes(jpeg))
    assert e.value.reason == "too_large"


def test_images_under_the_limit_do_not_warn():
    small = _gray1(64, 48)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fastprep.decode(small)
        fastprep.decode_batch([small, small], num_threads=2)
        fastprep.ImagePipeline(resize_shorter=32, crop=32)([small])
    assert not _bomb_warnings(record)


def test_batch_warns_once_naming_the_image(big):
    small = _gray1(64, 48)
    with pytest.warns(DecompressionBombWarning, match=rf"1 image\(s\) of the batch, the first \(index 1\) {W}x{H}"):
        out = fastprep.decode_batch([small, big, b"junk"], mode="L", on_error="skip", num_threads=2)
    assert out[1].shape == (H, W, 1) and out[2] is None
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fastprep.decode_batch([small, big], mode="L", max_pixels=None)
    assert not _bomb_warnings(record)
    with pytest.raises(DecodeError) as e:
        fastprep.decode_batch([small, big], mode="L", max_pixels=M - 1)
    assert e.value.index == 1 and e.value.reason == "too_large"


def test_pipelines_warn_and_refuse_as_decode(big):
    small = _gray1(64, 48)
    for make in (
        lambda **kw: fastprep.ImagePipeline(resize_shorter=32, crop=32, on_error="skip", **kw),
        lambda **kw: fastprep.TrainPipeline(32, seed=0, on_error="skip", **kw),
    ):
        with pytest.warns(DecompressionBombWarning):
            out = make()([small, big])
        assert out[-1].all()
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            assert make(max_pixels=None)([big])[-1].all()
        assert not _bomb_warnings(record)
        assert not make(max_pixels=W * H - 1)([big])[-1].any()
