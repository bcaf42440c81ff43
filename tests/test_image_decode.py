"""fastprep.decode / decode_batch against Pillow (libjpeg-turbo inside; a reference no one here
wrote): identical pixels for every JPEG and PNG variant in tests/image_data.py, in every mode, with
EXIF orientation; typed errors with the image's index for bad input."""

from __future__ import annotations

import pickle
import struct

import numpy as np
import pytest
from PIL import Image

import fastprep
from fastprep.errors import DecodeError, FastprepError

from . import image_data as data

MODES = ("RGB", "L", "RGBA")


def _assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == np.uint8, what
    assert got.shape == want.shape, f"{what}: shape {got.shape} != Pillow's {want.shape}"
    if not np.array_equal(got, want):
        diff = np.abs(got.astype(int) - want.astype(int))
        pytest.fail(f"{what}: {np.count_nonzero(diff)} values differ from Pillow's, max by {diff.max()}")


@pytest.mark.parametrize("name", sorted(data.jpeg_variants()))
def test_jpeg_matches_pillow(name):
    blob = data.jpeg_variants()[name]
    for mode in MODES:
        _assert_same(fastprep.decode(blob, mode=mode), data.pillow_decode(blob, mode), f"{name} {mode}")
    if "cmyk" in name:  # the file's own channels: CMYK, inverted back as Pillow does
        _assert_same(fastprep.decode(blob, mode="unchanged"), data.pillow_decode(blob, "unchanged"), name)


@pytest.mark.parametrize("name", sorted(data.png_variants()))
def test_png_matches_pillow(name):
    blob = data.png_variants()[name]
    for mode in MODES:
        _assert_same(fastprep.decode(blob, mode=mode), data.pillow_decode(blob, mode), f"{name} {mode}")
    native = Image.open(__import__("io").BytesIO(blob)).mode
    if native in ("L", "LA", "RGB", "RGBA") and "trns" not in name:
        _assert_same(fastprep.decode(blob, mode="unchanged"), data.pillow_decode(blob, "unchanged"), name)


def test_real_files_as_shipped():
    for path in data.photo_paths():
        blob = path.read_bytes()
        for mode in MODES:
            _assert_same(fastprep.decode(blob, mode=mode), data.pillow_decode(blob, mode), f"{path.name} {mode}")


def test_unchanged_channels():
    v = data.png_variants()
    assert fastprep.decode(v["gray8"], mode="unchanged").shape[2] == 1
    assert fastprep.decode(v["la8"], mode="unchanged").shape[2] == 2
    assert fastprep.decode(v["pal8"], mode="unchanged").shape[2] == 3
    assert fastprep.decode(v["pal8-trns"], mode="unchanged").shape[2] == 4
    assert fastprep.decode(data.jpeg_variants()["china-gray"], mode="unchanged").shape[2] == 1


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_like_pillow(orientation):
    arr = data.photos()["flower.jpg"][:61, :90]  # not square: rotations change the shape
    blob = data.jpeg_with_orientation(arr, orientation)
    _assert_same(fastprep.decode(blob), data.pillow_decode(blob, "RGB"), f"JPEG orientation {orientation}")
    plain = data.pillow_decode(data.jpeg_with_orientation(arr, 1), "RGB")
    _assert_same(fastprep.decode(blob, apply_exif_orientation=False), plain, "orientation ignored")
    png_blob = data.png(arr, 2, 8, exif=data.exif_orientation(orientation))
    _assert_same(fastprep.decode(png_blob), data.pillow_decode(png_blob, "RGB"), f"PNG orientation {orientation}")


def test_zero_copy_writable_array_owns_its_memory():
    blob = data.jpeg_variants()["china-q75-420"]
    a = fastprep.decode(blob)
    assert a.flags.c_contiguous and a.flags.writeable
    assert not a.flags.owndata  # a view of Rust's buffer, no copy
    a[0, 0] = (1, 2, 3)
    b = fastprep.decode(blob)
    assert tuple(b[0, 0]) != (1, 2, 3) or tuple(data.pillow_decode(blob, "RGB")[0, 0]) == (1, 2, 3)
    base = a.base
    del a
    assert np.asarray(base).shape == b.shape  # the buffer outlives the first array


def test_accepts_bytearray_and_memoryview():
    blob = data.png_variants()["rgb8"]
    want = fastprep.decode(blob)
    np.testing.assert_array_equal(fastprep.decode(bytearray(blob)), want)
    np.testing.assert_array_equal(fastprep.decode(memoryview(blob)), want)
    with pytest.raises(TypeError, match="bytes"):
        fastprep.decode("not bytes")  # type: ignore[arg-type]


def test_batch_calls_read_buffers_in_place():
    """decode_batch, preprocess and TrainPipeline take slices of one buffer (a tar shard or a
    record file in memory) as they are, and give what the same files as bytes give."""
    jpegs, pngs = data.jpeg_variants(), data.png_variants()
    blobs = [jpegs["china-q75-420"], pngs["rgba8"], jpegs["flower-prog-444"]]
    arena = bytearray(b"".join(blobs))
    views, pos = [], 0
    for b in blobs:
        views.append(memoryview(arena)[pos : pos + len(b)])
        pos += len(b)
    as_numpy = [np.frombuffer(b, np.uint8) for b in blobs]  # a uint8 array: read in place too
    strided = [memoryview(bytes(2 * len(b)))[::2] for b in blobs]  # not contiguous: copied
    for got in (fastprep.decode_batch(views), fastprep.decode_batch([bytearray(b) for b in blobs])):
        for g, w in zip(got, fastprep.decode_batch(blobs), strict=True):
            np.testing.assert_array_equal(g, w)
    want = fastprep.preprocess(blobs)
    np.testing.assert_array_equal(fastprep.preprocess(views), want)
    np.testing.assert_array_equal(fastprep.preprocess([memoryview(n) for n in as_numpy]), want)
    pipe = fastprep.TrainPipeline(32, seed=3)
    got, params = pipe(views, step=0)
    want_batch, want_params = pipe(blobs, step=0)
    np.testing.assert_array_equal(got, want_batch)
    np.testing.assert_array_equal(params, want_params)
    # a strided view is copied (its bytes are all zero here: a decode error, by index)
    with pytest.raises(DecodeError) as e:
        fastprep.decode_batch([blobs[0], strided[1]])
    assert e.value.index == 1
    with pytest.raises(TypeError, match="image 1"):
        fastprep.decode_batch([blobs[0], "not bytes"])  # type: ignore[list-item]


# --- bad input --------------------------------------------------------------------------------


def _reason(blob: bytes, **kw: object) -> str:
    with pytest.raises(DecodeError) as info:
        fastprep.decode(blob, **kw)  # type: ignore[arg-type]
    err = info.value
    assert isinstance(err, FastprepError) and isinstance(err, ValueError)
    assert err.index is None
    return err.reason


def test_bad_input_is_a_typed_error():
    jpg = data.jpeg_variants()["china-q75-420"]
    pngb = data.png_variants()["rgb8"]
    assert _reason(b"") == "empty"
    assert _reason(b"GIF89a\x01\x00\x01\x00") == "unknown_format"
    assert _reason(b"\x00" * 100) == "unknown_format"
    assert _reason(jpg[: len(jpg) // 2]) == "truncated"
    assert _reason(jpg[:200]) in ("truncated", "corrupt")
    assert _reason(jpg[:3]) in ("truncated", "corrupt")
    assert _reason(pngb[: len(pngb) // 2]) == "truncated"
    assert _reason(pngb[:30]) in ("truncated", "corrupt")
    broken = bytearray(pngb)
    broken[40:60] = b"\xff" * 20  # inside IDAT: the CRC no longer matches
    assert _reason(bytes(broken)) == "corrupt"
    with pytest.raises(ValueError, match="mode"):
        fastprep.decode(jpg, mode="HSV")  # type: ignore[arg-type]


def test_truncation_message_says_what_happened():
    jpg = data.jpeg_variants()["china-q75-420"]
    with pytest.raises(DecodeError, match="truncated JPEG"):
        fastprep.decode(jpg[: len(jpg) // 3])


def _png_header_only(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + data._chunk(b"IHDR", ihdr) + data._chunk(b"IEND", b"")


def _jpeg_with_size(width: int, height: int) -> bytes:
    blob = bytearray(data.jpeg_variants()["flower-q75-420"])
    sof = blob.index(b"\xff\xc0")
    blob[sof + 5 : sof + 9] = struct.pack(">HH", height, width)
    return bytes(blob)


def test_decompression_bombs_are_refused_before_allocating():
    with pytest.raises(DecodeError, match="over the limit") as info:
        fastprep.decode(_png_header_only(100_000, 100_000))
    assert info.value.reason == "too_large"
    assert _reason(_jpeg_with_size(65_000, 65_000)) == "too_large"
    assert fastprep.MAX_IMAGE_PIXELS == Image.MAX_IMAGE_PIXELS
    jpg = data.jpeg_variants()["flower-q75-420"]
    assert _reason(jpg, max_pixels=1000) == "too_large"
    assert fastprep.decode(jpg, max_pixels=None).shape == (427, 640, 3)
    with pytest.raises(ValueError, match="max_pixels"):
        fastprep.decode(jpg, max_pixels=0)


def test_error_pickles_with_index_and_reason():
    err = DecodeError("truncated JPEG file: x", 3, "truncated")
    back = pickle.loads(pickle.dumps(err))
    assert (back.index, back.reason, str(back)) == (3, "truncated", str(err))


# --- batches ----------------------------------------------------------------------------------


def _batch() -> list[bytes]:
    j, p = data.jpeg_variants(), data.png_variants()
    return [j["china-q75-420"], p["rgba8"], j["flower-prog-444"], p["pal4-trns-adam7"], j["grace_hopper-cmyk"]]


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_batch_matches_single_decodes(threads):
    blobs = _batch()
    for mode in MODES:
        got = fastprep.decode_batch(blobs, mode=mode, num_threads=threads)
        assert len(got) == len(blobs)
        for i, (g, b) in enumerate(zip(got, blobs, strict=True)):
            _assert_same(g, data.pillow_decode(b, mode), f"item {i} {mode}")


def test_one_bad_image_is_reported_by_index_and_the_rest_are_decoded():
    blobs = _batch()
    blobs.insert(2, blobs[0][:500])
    blobs.insert(4, b"")
    with pytest.raises(DecodeError) as info:
        fastprep.decode_batch(blobs)
    err = info.value
    assert err.index == 2 and err.reason in ("truncated", "corrupt")
    assert str(err).startswith("image 2:") and "1 more failed: 4" in str(err)
    assert [e.index for e in err.errors] == [2, 4]
    assert err.errors[1].reason == "empty"
    got = fastprep.decode_batch(blobs, on_error="skip")
    assert got[2] is None and got[4] is None
    for i in (0, 1, 3, 5, 6):
        _assert_same(got[i], data.pillow_decode(blobs[i], "RGB"), f"item {i}")
    with pytest.raises(TypeError, match="image 1"):
        fastprep.decode_batch([blobs[0], 42])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="on_error"):
        fastprep.decode_batch(blobs, on_error="ignore")  # type: ignore[arg-type]
    assert fastprep.decode_batch([]) == []
