"""Each JPEG decodes from a clean libjpeg state: a Motion-JPEG frame (no DHT segment, so
libjpeg's standard Huffman tables) gives the same pixels whatever was decoded before it on the
thread, alone, in any order, in batches, and in a fresh process; a JPEG without quantization
tables is always refused (it used to "decode" with the previous image's). The same holds for
the GPU path's coefficient reader."""

from __future__ import annotations

import itertools
import subprocess
import sys

import cv2
import numpy as np
import pytest

import fastprep
from fastprep import _core
from fastprep.errors import DecodeError

from . import image_data as data
from . import image_odd as odd


def _files() -> dict[str, bytes]:
    photo = odd.photo(80, 64, seed=1)
    base = odd.jpeg(photo, quality=90)  # 4:2:0, standard tables (Pillow's default)
    return {
        "base": base,
        "mjpeg": odd.without(base, 0xC4),
        "mjpeg-gray": odd.without(odd.jpeg(photo[..., 1], quality=75), 0xC4),
        # optimized Huffman tables and other quantization tables: what a stale state would reuse
        "optimized": odd.jpeg(odd.photo(64, 48, seed=2)[::-1], quality=20, optimize=True),
        "progressive": odd.jpeg(odd.photo(40, 56, seed=3), quality=60, progressive=True, subsampling=0),
    }


FILES = _files()
NO_DQT = odd.without(FILES["base"], 0xDB)


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    return {name: data.pillow_decode(blob, "RGB") for name, blob in FILES.items()}


def test_mjpeg_frames_match_pillow_and_opencv(reference):
    for name in ("mjpeg", "mjpeg-gray"):
        got = fastprep.decode(FILES[name])
        np.testing.assert_array_equal(got, reference[name])
        cv = cv2.imdecode(np.frombuffer(FILES[name], np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
        np.testing.assert_array_equal(got, cv)


def test_fresh_process_gives_the_same_pixels(reference, tmp_path):
    (tmp_path / "mjpeg.jpg").write_bytes(FILES["mjpeg"])
    code = "import fastprep, sys; sys.stdout.buffer.write(fastprep.decode(open('mjpeg.jpg','rb').read()).tobytes())"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, check=True).stdout
    assert out == reference["mjpeg"].tobytes()


def test_every_order_gives_the_same_pixels(reference):
    names = sorted(FILES)
    for order in itertools.permutations(names):
        for name in order:
            np.testing.assert_array_equal(fastprep.decode(FILES[name]), reference[name], err_msg=f"{order}")
            with pytest.raises(DecodeError, match=r"[Qq]uantization table"):
                fastprep.decode(NO_DQT)


@pytest.mark.parametrize("num_threads", [1, 2])
def test_batches_in_every_rotation(reference, num_threads):
    names = sorted(FILES) * 2
    for shift in range(len(names)):
        order = names[shift:] + names[:shift]
        blobs = [FILES[n] for n in order]
        blobs.insert(shift % len(blobs), NO_DQT)
        got = fastprep.decode_batch(blobs, on_error="skip", num_threads=num_threads)
        assert got[shift % len(blobs)] is None
        del got[shift % len(blobs)]
        for n, g in zip(order, got, strict=True):
            np.testing.assert_array_equal(g, reference[n], err_msg=f"{n} in {order}")


def test_pipeline_decodes_mjpeg_frames_after_other_files(reference):
    blobs = [FILES["optimized"], FILES["mjpeg"], FILES["progressive"], FILES["mjpeg"], NO_DQT]
    batch, ok = fastprep.preprocess(blobs, size=(40, 32), crop=None, dtype="uint8", layout="NHWC", on_error="skip")
    assert ok.tolist() == [True, True, True, True, False]
    want = fastprep.resize(reference["mjpeg"], (40, 32), filter="bilinear")
    np.testing.assert_array_equal(batch[1], want)
    np.testing.assert_array_equal(batch[3], want)


def _coefficients(blobs: list[bytes]) -> list[np.ndarray | None]:
    layouts = _core.jpeg_layouts(blobs, None, False, 1)
    sizes = [0 if isinstance(lay, tuple) else sum(c[3] * c[4] * 64 for c in lay["components"]) for lay in layouts]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int) * 2
    out = np.zeros(max(1, sum(sizes)), np.int16)
    errors = _core.jpeg_coefficients_into(blobs, [int(o) for o in offsets], out.view(np.uint8), 1)
    return [
        None if isinstance(lay, tuple) or err is not None else out[o // 2 : o // 2 + n].copy()
        for lay, err, o, n in zip(layouts, errors, offsets, sizes, strict=True)
    ]


def test_gpu_coefficient_reader_starts_clean_too():
    alone = _coefficients([FILES["mjpeg"]])[0]
    assert alone is not None and alone.any()
    for first in ("optimized", "progressive", "base"):
        got = _coefficients([FILES[first], FILES["mjpeg"], NO_DQT, FILES["mjpeg"]])
        np.testing.assert_array_equal(got[1], alone)
        np.testing.assert_array_equal(got[3], alone)
        assert got[2] is None
    # the standard tables' coefficients are the DHT-carrying file's
    np.testing.assert_array_equal(alone, _coefficients([FILES["base"]])[0])
