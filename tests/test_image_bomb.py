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
import threading
import time
import warnings
import zlib
from typing import Any

import numpy as np
import pytest
from PIL import Image

import fastprep
from fastprep import _core
from fastprep.data import ImageCollate
from fastprep.errors import DecodeError, DecompressionBombWarning

from . import image_data as data
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


def _calls_on_small_images(small: bytes) -> dict[str, Any]:
    """Each batch entry point, on small images only, with the default limit."""
    pipe = fastprep.ImagePipeline(resize_shorter=32, crop=32)
    train = fastprep.TrainPipeline(32, seed=0)
    batch = [small] * 16
    return {
        "decode": lambda: fastprep.decode(small),
        "decode_batch": lambda: fastprep.decode_batch(batch, num_threads=1),
        "ImagePipeline": lambda: pipe(batch, return_timings=True),
        "preprocess": lambda: fastprep.preprocess(batch, resize_shorter=32, crop=32),
        "TrainPipeline": lambda: train(batch),
    }


@pytest.mark.parametrize("other_limit", ["default", None])
def test_no_warning_for_an_image_another_thread_decodes(big, other_limit):
    """A call warns for its own images only: while another thread decodes the big image over and
    over (with the default limit, so that it warns itself, or with none), calls on small images
    get no warning. With a count shared by the process, they got the other thread's."""
    small = _gray1(64, 48)
    calls = _calls_on_small_images(small)
    stop = threading.Event()
    decoded = []
    errors: list[BaseException] = []

    def decode_big() -> None:
        kw = {} if other_limit == "default" else {"max_pixels": None}
        try:
            while not stop.is_set():
                decoded.append(fastprep.decode(big, mode="L", **kw).shape)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    rounds = 0
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        other = threading.Thread(target=decode_big)
        other.start()
        try:
            # Until the other thread has sized the big image several times: each time, a call
            # running then would have seen the shared count move.
            deadline = time.monotonic() + 60
            while (len(decoded) < 6 or rounds < 20) and time.monotonic() < deadline and not errors:
                for call in calls.values():
                    call()
                rounds += 1
        finally:
            stop.set()
            other.join()
    assert not errors, errors
    assert len(decoded) >= 6, "the other thread did not get to decode the big image"
    # catch_warnings is process-wide: the other thread's own warnings (each naming its single
    # image) are recorded here too; none may name a batch, nor come from the small decode.
    bombs = _bomb_warnings(record)
    assert all(str(w.message).startswith(f"an image of {W}x{H} ") for w in bombs), [str(w.message) for w in bombs]
    if other_limit == "default":
        assert bombs, "the other thread's own decodes warn"
    else:
        assert not bombs


@pytest.mark.parametrize("entry", ["decode_batch", "ImagePipeline", "preprocess", "TrainPipeline", "ImageCollate"])
def test_batch_warning_names_the_first_image_over_the_limit(big, entry):
    small = _gray1(64, 48)
    broken = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
    batch = [small, broken, small, big, small, big]
    calls = {
        "decode_batch": lambda: fastprep.decode_batch(batch, mode="L", on_error="skip"),
        "ImagePipeline": lambda: fastprep.ImagePipeline(resize_shorter=32, crop=32, on_error="skip")(batch),
        "preprocess": lambda: fastprep.preprocess(batch, resize_shorter=32, crop=32, on_error="skip"),
        "TrainPipeline": lambda: fastprep.TrainPipeline(32, seed=0, on_error="skip")(batch),
        "ImageCollate": lambda: ImageCollate(return_tensors="np", resize_shorter=32, crop=32, on_error="skip")(
            [(b, 0) for b in batch]
        ),
    }
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        calls[entry]()
    bombs = _bomb_warnings(record)
    assert len(bombs) == 1, [str(w.message) for w in bombs]
    msg = str(bombs[0].message)
    assert msg.startswith(f"2 image(s) of the batch, the first (index 3) {W}x{H} = {W * H} pixels over "), msg
    assert bombs[0].filename == __file__  # the caller's line, not fastprep's


def test_the_warning_comes_before_a_failure_is_raised(big):
    """With on_error="raise", a batch that has both warns and raises (the warning first, as the
    images were decoded)."""
    batch = [b"junk", big]
    for call in (
        lambda: fastprep.decode_batch(batch, mode="L"),
        lambda: fastprep.ImagePipeline(resize_shorter=32, crop=32)(batch),
        lambda: fastprep.TrainPipeline(32, seed=0)(batch),
    ):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            with pytest.raises(DecodeError) as e:
                call()
        assert e.value.index == 0
        bombs = _bomb_warnings(record)
        assert len(bombs) == 1 and "(index 1)" in str(bombs[0].message), [str(w.message) for w in bombs]


@pytest.fixture(scope="module")
def big_rotated_jpeg() -> bytes:
    """A gray JPEG of 12000 x 7500 stored (90 M pixels), EXIF-rotated to 7500 x 12000."""
    return data.jpeg_with_orientation(np.zeros((7500, 12_000), np.uint8), 6)


def test_a_jpeg_over_the_limit_warns_in_every_path_with_its_oriented_size(big_rotated_jpeg):
    """A JPEG's flag comes from its header in every path: a whole decode, a region decode (the
    pipelines decode only what the crop reads), a draft one at 1/8 scale, and the GPU path's
    header read; the size named is the oriented one."""
    jpeg, small = big_rotated_jpeg, _gray1(64, 48)
    with pytest.warns(DecompressionBombWarning, match="an image of 7500x12000 = 90000000 pixels"):
        assert fastprep.decode(jpeg, mode="L").shape == (12_000, 7500, 1)
    batch = [small, jpeg]
    for call in (
        lambda: fastprep.decode_batch(batch, mode="L"),
        lambda: fastprep.ImagePipeline(resize_shorter=32, crop=32)(batch),
        lambda: fastprep.ImagePipeline(resize_shorter=32, crop=32, draft=True)(batch),
        lambda: fastprep.TrainPipeline(32, seed=0)(batch),
    ):
        with pytest.warns(DecompressionBombWarning, match=r"the first \(index 1\) 7500x12000 = 90000000 pixels"):
            call()
    (layout,) = _core.jpeg_layouts([jpeg], 2 * M)
    assert isinstance(layout, dict) and layout["over_default_max_pixels"] is True
    (layout,) = _core.jpeg_layouts([data.jpeg_variants()["china-q75-420"]])
    assert isinstance(layout, dict) and layout["over_default_max_pixels"] is False


def test_the_gpu_path_warns_for_its_own_images(big, big_rotated_jpeg):
    """``preprocess(device="cuda")`` (kernels run by the CPU emulation): a JPEG's flag from its
    header, whichever decoder runs it, a PNG's from its CPU decode."""
    from fastprep.gpu import gpu_preprocess

    from .cuda_emu import EmuBackend

    class LaunchesOnly(EmuBackend):
        """Records the launches without running them: the flag is set before any kernel, and
        the emulation's resize of a 90 M pixel image took ~35 s a call."""

        def launch(self, source: str, defines: dict[str, int], kernel: str, grid: Any, *a: Any, **k: Any) -> None:
            self.launches.append((kernel, dict(defines), grid))

    small = _gray1(64, 48)
    for batch, kw, backend, want in (
        ([small, big, small], {}, LaunchesOnly, rf"1 image\(s\) of the batch, the first \(index 1\) {W}x{H} "),
        ([small, small, big_rotated_jpeg], {"draft": True, "entropy": "cpu"}, EmuBackend, r"\(index 2\) 7500x12000 "),
    ):
        with pytest.warns(DecompressionBombWarning, match=want) as record:
            ran = backend()
            gpu_preprocess(batch, resize_shorter=32, crop=32, backend=ran, **kw)
        assert len(_bomb_warnings(record.list)) == 1 and record[0].filename == __file__
        assert ran.launches, "the batch went to the kernels"
        with warnings.catch_warnings(record=True) as quiet:
            warnings.simplefilter("always")
            gpu_preprocess(batch, resize_shorter=32, crop=32, max_pixels=None, backend=backend(), **kw)
        assert not _bomb_warnings(quiet)
