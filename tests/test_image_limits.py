"""Nothing a caller passes may abort the process: every buffer sized by the input is allocated
fallibly and a failure becomes MemoryError (resize, as Pillow's ``test_overflow``) or
DecodeError (decode, decode_batch, ImagePipeline, preprocess, with max_pixels=None). Each case
runs in a child process under an address-space limit, so that a regression (Rust's abort on a
failed allocation) fails the test instead of killing the pytest run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from . import image_odd as odd

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc are Linux's")

_PRELUDE = """
import os, resource, sys
import numpy as np
import fastprep
from fastprep.errors import DecodeError
def vm():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
def limit(extra):
    resource.setrlimit(resource.RLIMIT_AS, (vm() + extra, resource.RLIM_INFINITY))
"""


def run_child(body: str, tmp_path, files: dict[str, bytes] | None = None) -> str:
    for name, blob in (files or {}).items():
        (tmp_path / name).write_bytes(blob)
    env = {"FASTPREP_NUM_THREADS": "2", "MALLOC_ARENA_MAX": "2", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(body)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, f"child died (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_resize_to_pillows_overflow_sizes_raises_memory_error(tmp_path):
    # Pillow's Tests/test_image_resample.py TestImagingResampleVulnerability.test_overflow
    out = run_child(
        """
        limit(3 << 30)
        too_large = 0x100000008 // 4
        for arr in (np.zeros((128, 128), np.uint8), np.zeros((16, 16, 3), np.uint8),
                    np.zeros((16, 16, 4), np.uint8), np.zeros((16, 16, 2), np.float32)):
            for size in ((too_large, 1000), (1000, too_large), (2**31 - 1, 2**31 - 1)):
                for f in ("nearest", "bilinear", "lanczos"):
                    try:
                        fastprep.resize(arr, size, filter=f)
                    except MemoryError as e:
                        assert "memory" in str(e), e
                        print("MemoryError")
                    else:
                        raise AssertionError(f"{size} resized")
        try:
            fastprep.resize_batch([np.zeros((8, 8, 3), np.uint8)], (too_large, 1000))
        except MemoryError:
            print("MemoryError")
        """,
        tmp_path,
    )
    assert out.split() == ["MemoryError"] * 37


def test_a_real_allocation_failure_is_an_error(tmp_path):
    """Sizes that fit the address space but not the memory left: the allocation itself fails."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (16000, 16000), 77).save(buf, "JPEG", quality=50)
    out = run_child(
        """
        data = open("big.jpg", "rb").read()
        limit(200 << 20)
        try:
            fastprep.resize(np.zeros((10, 10, 3), np.uint8), (20000, 20000))
        except MemoryError:
            print("resize MemoryError")
        for call in (lambda: fastprep.decode(data, max_pixels=None),
                     lambda: fastprep.decode_batch([data], max_pixels=None)):
            try:
                call()
            except DecodeError as e:
                assert "memory" in str(e), e
                print("decode", e.reason)
        print(fastprep.decode_batch([data], max_pixels=None, on_error="skip"))
        """,
        tmp_path,
        {"big.jpg": buf.getvalue()},
    )
    assert out.split("\n")[:4] == ["resize MemoryError", "decode too_large", "decode too_large", "[None]"], out


def test_headers_claiming_absurd_sizes_with_no_pixel_limit(tmp_path):
    files = {
        "png_65535.png": odd.png_claiming(65535, 65535),
        "png_2_31.png": odd.png_claiming(2**31 - 1, 1),
        "png_2_31_tall.png": odd.png_claiming(1, 2**31 - 1),
        # libjpeg's own limit is 65500 a side
        "jpeg_65500.jpg": odd.jpeg_claiming(65500, 65500),
        "jpeg_wide.jpg": odd.jpeg_claiming(65500, 4096),
    }
    out = run_child(
        """
        import glob
        blobs = [open(f, "rb").read() for f in sorted(glob.glob("*.*g"))]
        limit(3 << 30)
        for data in blobs:
            for mode in ("RGB", "unchanged"):
                try:
                    fastprep.decode(data, mode=mode, max_pixels=None)
                except DecodeError as e:
                    # 1 x (2**31 - 1): 4-byte rows, so the 64x64 image's data reads as ~3k rows
                    # until a pixel byte stands where a row's filter type must be (Pillow, could
                    # it allocate the 8 GB, would stop there too: "unrecognized data stream")
                    assert e.reason in ("too_large", "truncated", "corrupt"), e
                    print("refused")
            try:
                fastprep.decode(data)
            except DecodeError as e:
                assert e.reason in ("too_large", "truncated", "corrupt"), e
                print("refused")
        print(fastprep.decode_batch(blobs, max_pixels=None, on_error="skip") == [None] * len(blobs))
        try:
            fastprep.decode_batch(blobs, max_pixels=None)
        except DecodeError as e:
            print(len(e.errors))
        pipe = fastprep.ImagePipeline(resize_shorter=32, crop=32, max_pixels=None, on_error="skip")
        batch, ok = pipe(blobs)
        print(batch.shape[0], int(ok.sum()))
        batch, ok = fastprep.preprocess(blobs, size=(16, 16), crop=None, max_pixels=None, on_error="skip")
        print(batch.shape[0], int(ok.sum()))
        """,
        tmp_path,
        files,
    )
    n = len(files)
    assert out.split() == ["refused"] * (3 * n) + ["True", str(n), str(n), "0", str(n), "0"], out
