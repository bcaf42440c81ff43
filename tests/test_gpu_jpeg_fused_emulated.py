"""JPEG decoding fused with the horizontal resize pass (cuda/jpeg_fused.cu) without a GPU: the
kernel text run by the CPU emulation (tests/cuda_emu.py) must give the three-kernel path's bytes
(jpeg_idct, jpeg_color, then resize.cu) and the CPU pipeline's, for every subsampling, the scaled
IDCTs of draft mode, EXIF flips, odd sizes, crops that leave one axis unresized, and tilings of
many column tiles and row strips (a small shared-memory budget forces them); and where every image
of a batch is fused, the vertical pass writing the batch itself (normalize table, dtype, layout)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import fastprep
from fastprep.gpu import gpu_preprocess, jpeg_fused

from . import image_data as data
from .cuda_emu import EmuBackend

VARIANTS = ("china-q75-420", "flower-prog-422", "grace_hopper-gray", "china-odd-420", "grace_hopper-q95-444")


@pytest.fixture
def budget(request: Any) -> Iterator[None]:
    """jpeg_fused.FUSED_SMEM set to request.param for the tiling (the kernel keeps its own, larger
    budget: smaller tiles always fit it)."""
    old = jpeg_fused.FUSED_SMEM
    jpeg_fused.FUSED_SMEM = request.param
    jpeg_fused._tiling.cache_clear()
    yield
    jpeg_fused.FUSED_SMEM = old
    jpeg_fused._tiling.cache_clear()


def _both(blobs: list[bytes], **kw: Any) -> tuple[np.ndarray, list[str]]:
    """The batch made with the fused kernel (and its launches), asserted equal to the three-kernel
    path's batch and to the CPU pipeline's."""
    be = EmuBackend()
    fused = gpu_preprocess(blobs, backend=be, **kw)
    kernels = [k for k, _, _ in be.launches]
    jpeg_fused.ENABLED = False
    try:
        plain = gpu_preprocess(blobs, backend=EmuBackend(), **kw)
    finally:
        jpeg_fused.ENABLED = True
    np.testing.assert_array_equal(fused, plain)
    np.testing.assert_array_equal(fused, fastprep.preprocess(blobs, **kw))
    return fused, kernels


@pytest.mark.parametrize("draft", [False, True])
def test_fused_equals_the_three_kernel_path_and_the_cpu(draft):
    v = data.jpeg_variants()
    blobs = [v[k] for k in VARIANTS]
    _, kernels = _both(blobs, crop=64, resize_shorter=72, draft=draft, dtype="uint8", layout="NHWC")
    assert "jpeg_fused_h" in kernels and "jpeg_idct" not in kernels and "jpeg_color" not in kernels, kernels


@pytest.mark.parametrize("budget", [3000, 9000], indirect=True)
@pytest.mark.parametrize("orientation", [1, 2, 3, 4])
def test_tiles_and_strips_with_every_flip(budget, orientation):
    # A photo of odd size with a 4:2:0 chroma whose fancy upsampling reads across strip and tile
    # edges; the small budget cuts it into many tiles of few columns and strips of few rows.
    photo = data.photos()["flower.jpg"][:123, :157]
    blob = data.jpeg_with_orientation(photo, orientation)
    _, kernels = _both([blob], crop=(60, 44), resize_shorter=64, dtype="uint8", layout="NHWC")
    assert "jpeg_fused_h" in kernels


def test_upscale_and_one_axis_unchanged():
    # The height already the target's (no vertical pass: the fused kernel writes the batch rows
    # itself), and an upscale.
    photo = data.photos()["china.jpg"][:40, :90]
    blob = data.jpeg(photo, quality=90)
    _both([blob], size=(131, 40), crop=(120, 40), dtype="uint8", layout="NHWC")
    _both([blob], resize_shorter=97, crop=(96, 90), dtype="float32")


def test_transposing_orientations_take_the_three_kernel_path():
    photo = data.photos()["flower.jpg"][:61, :83]
    blobs = [data.jpeg_with_orientation(photo, o) for o in (1, 6)]
    _, kernels = _both(blobs, crop=40, resize_shorter=48)
    assert {"jpeg_fused_h", "jpeg_idct", "jpeg_color"} <= set(kernels)


def test_the_tiling_fits_the_budget_by_the_kernels_window_arithmetic():
    # 1080p 4:2:0 -> Resize(256) + CenterCrop(224): strips of 32 rows (two iMCU rows), column
    # tiles that keep a block's windows and RGB strip under FUSED_SMEM.
    from fastprep import _core
    from fastprep.gpu.jpeg_idct import plan_jpeg

    blob = data.jpeg_variants()["china-1920x1080-420"]
    lay = _core.jpeg_layouts([blob])[0]
    assert isinstance(lay, dict)
    plan = plan_jpeg(lay)
    assert plan is not None
    part, tiling = jpeg_fused._plan_tiling(plan, (455, 256), (115, 16, 224, 224), "bilinear")
    assert tiling is not None
    tx, rows, org = tiling
    assert rows == 32 and org % 32 == 0 and org <= part.first
    assert 24 <= tx < 224


@pytest.mark.parametrize(
    ("dtype", "layout"), [("float32", "NCHW"), ("float16", "NHWC"), ("uint8", "NCHW"), ("float32", "NHWC")]
)
def test_the_vertical_pass_writes_the_batch_when_every_image_is_fused(dtype, layout):
    # A batch of fused images with a bad file among them: two launches make the batch (no crops,
    # no normalize pass), the bad slot stays zero.
    v = data.jpeg_variants()
    blobs = [v["china-q75-420"], b"not an image", v["grace_hopper-q95-444"]]
    kw = {"crop": 56, "resize_shorter": 64, "dtype": dtype, "layout": layout, "on_error": "skip"}
    be = EmuBackend()
    got, ok = gpu_preprocess(blobs, backend=be, **kw)
    want, want_ok = fastprep.preprocess(blobs, **kw)
    assert ok.tolist() == want_ok.tolist() == [True, False, True]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert not got[1].any()
    kernels = [k for k, _, _ in be.launches]
    last = "resize_vertical" if dtype == "uint8" else "resize_vertical_lut"
    assert kernels[-2:] == ["jpeg_fused_h", last] and "crop_normalize_u8" not in kernels, kernels


def test_a_batch_not_all_fused_is_normalized_after_the_resize():
    photo = data.photos()["flower.jpg"][:61, :83]
    blobs = [data.jpeg_with_orientation(photo, o) for o in (1, 8)]
    _, kernels = _both(blobs, crop=40, resize_shorter=48, dtype="float16")
    assert kernels[-1] == "crop_normalize_u8", kernels


class _Counting(EmuBackend):
    """Counts host-to-device copies."""

    def __init__(self) -> None:
        super().__init__()
        self.copies = 0

    def asarray(self, obj: Any) -> Any:
        self.copies += 1
        return super().asarray(obj)


def test_a_geometry_plans_once_and_a_new_file_of_it_decodes_as_its_own():
    # A training loop decodes batches of one geometry call after call: the fused plan (descriptors,
    # tables, quantization tables on the device) is built once. The plan's key holds each file's
    # own quantization tables, so a file of the same size at another quality gets its own plan.
    photo = data.photos()["china.jpg"][:120, :170]
    q75, q95 = data.jpeg(photo, quality=75), data.jpeg(photo, quality=95)
    jpeg_fused._FUSED_PLANS._plans.clear()
    kw: dict[str, Any] = {"crop": 64, "resize_shorter": 72, "dtype": "uint8", "layout": "NHWC"}
    be = _Counting()
    first = gpu_preprocess([q75, q75], backend=be, **kw)
    built = be.copies
    be.copies = 0
    again = gpu_preprocess([q75, q75], backend=be, **kw)
    assert len(jpeg_fused._FUSED_PLANS._plans) == 1
    assert be.copies < built - 4  # the plan's descriptors and tables were not uploaded again
    np.testing.assert_array_equal(first, again)
    other = gpu_preprocess([q95, q95], backend=be, **kw)
    assert len(jpeg_fused._FUSED_PLANS._plans) == 2
    np.testing.assert_array_equal(other, fastprep.preprocess([q95, q95], **kw))
    assert not np.array_equal(other, first)
