"""gpu_resize without a GPU: the launch plan of fastprep.gpu and the kernel text of cuda/resize.cu,
run by the CPU emulation (tests/cuda_emu.py), against the CPU path (fastprep.resize, itself
checked byte for byte against Pillow). Every filter, uint8 L/RGB/RGBA, float32, float16, NHWC and
NCHW, ragged batches, Pillow's tall-image pass order."""

from __future__ import annotations

import numpy as np
import pytest

import fastprep

from .cuda_emu import EmuBackend

FILTERS = ["nearest", "box", "bilinear", "hamming", "bicubic", "lanczos"]


def _img(h: int, w: int, c: int, seed: int, dtype: str = "uint8") -> np.ndarray:
    rng = np.random.default_rng(seed)
    _, xx = np.mgrid[0:h, 0:w]
    base = np.stack([(xx * 255 // max(w - 1, 1) + k * 40) % 256 for k in range(c)], -1)
    img = np.clip(base + rng.integers(-30, 31, base.shape), 0, 255)
    if c == 4:
        img[..., 3] = rng.integers(0, 256, (h, w))
        img[::4, :, 3] = 255
        img[1::5, :, 3] = 0
    if dtype == "uint8":
        return img.astype(np.uint8)
    return (img.astype(np.float32) * 1.7 - 100).astype(dtype)


def _cpu(img: np.ndarray, size: tuple[int, int], f: str) -> np.ndarray:
    if img.dtype == np.float16:
        return fastprep.resize(img.astype(np.float32), size, filter=f).astype(np.float16)
    out = fastprep.resize(img if img.shape[2] > 1 else img[..., 0], size, filter=f)
    return out if out.ndim == 3 else out[..., None]


@pytest.fixture(
    params=[(True, 0, 1), (True, 0, 0), (False, 1, 1), (False, 0, 1)],
    ids=["fused-staged", "fused-global", "shared", "global"],
)
def h_shared(request, monkeypatch):
    """Each form of the passes: both in one launch (resize_hv) with its horizontal phase staged by
    16-byte loads or read from global memory (resize.cu's HV_STAGE), or two launches with each
    form of the horizontal pass (resize.cu's H_SHARED)."""
    fused, shared, stage = request.param
    monkeypatch.setattr(fastprep.gpu.resize, "FUSED", fused)
    monkeypatch.setattr(fastprep.gpu.resize, "H_SHARED", shared)
    monkeypatch.setattr(fastprep.gpu.resize, "HV_STAGE", stage)
    return shared


@pytest.mark.parametrize("f", FILTERS)
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_uint8_equals_cpu_path(f, channels, h_shared):
    be = EmuBackend()
    batch = np.stack([_img(37, 53, channels, s) for s in range(3)])
    for size in ((20, 15), (80, 61), (53, 20), (19, 37)):
        got = fastprep.gpu_resize(batch, size, filter=f, backend=be)
        assert got.shape == (3, size[1], size[0], channels) and got.dtype == np.uint8
        for i in range(3):
            np.testing.assert_array_equal(got[i], _cpu(batch[i], size, f), err_msg=f"{f} {channels}ch {size} #{i}")
    # each launch carries the form asked for, also where the plan was cached under the other one
    assert {d["H_SHARED"] for _, d, _ in be.launches} == {h_shared}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("f", FILTERS)
def test_float_equals_cpu_path(f, dtype, h_shared):
    be = EmuBackend()
    batch = np.stack([_img(29, 41, 3, s, dtype) for s in range(2)])
    for size in ((13, 9), (60, 50)):
        got = fastprep.gpu_resize(batch, size, filter=f, backend=be)
        assert got.dtype == np.dtype(dtype)
        for i in range(2):
            np.testing.assert_array_equal(got[i], _cpu(batch[i], size, f), err_msg=f"{f} {dtype} {size}")


def test_nchw_layout():
    be = EmuBackend()
    batch = np.stack([_img(40, 30, 3, s) for s in range(2)])
    nchw = np.ascontiguousarray(batch.transpose(0, 3, 1, 2))
    got = fastprep.gpu_resize(nchw, (17, 23), filter="bicubic", layout="NCHW", backend=be)
    assert got.shape == (2, 3, 23, 17)
    want = fastprep.gpu_resize(batch, (17, 23), filter="bicubic", backend=be)
    np.testing.assert_array_equal(got.transpose(0, 2, 3, 1), want)


@pytest.mark.parametrize("fused", [True, False])
def test_ragged_batch_in_one_launch_per_pass(fused, monkeypatch):
    monkeypatch.setattr(fastprep.gpu.resize, "FUSED", fused)
    be = EmuBackend()
    # all horizontal-first under either Pillow's pass order
    images = [_img(h, w, 3, h + w) for h, w in ((40, 60), (31, 97), (224, 224), (12, 300), (47, 60))]
    got = fastprep.gpu_resize(images, (64, 48), filter="bilinear", backend=be)
    assert got.shape == (5, 48, 64, 3)
    for i, img in enumerate(images):
        np.testing.assert_array_equal(got[i], _cpu(img, (64, 48), "bilinear"), err_msg=str(img.shape))
    kernels = [k for k, _, _ in be.launches]
    # one launch for both passes, or one launch per pass
    assert kernels == (["resize_hv"] if fused else ["resize_horizontal", "resize_vertical"]), kernels
    assert be.launches[0][2][2] == 5  # grid z: every image


def test_tall_images_and_mixed_pass_orders(h_shared):
    be = EmuBackend()
    images = [_img(700, 5, 3, 1), _img(50, 40, 3, 2), _img(40, 64, 3, 3)]
    got = fastprep.gpu_resize(images, (64, 40), filter="lanczos", backend=be)
    for i, img in enumerate(images):
        np.testing.assert_array_equal(got[i], _cpu(img, (64, 40), "lanczos"), err_msg=str(img.shape))


@pytest.mark.parametrize("order", [12, 13])
def test_pass_order_follows_the_cpu_path(order, monkeypatch):
    """Pillow 13 runs the vertical pass first whenever the height shrinks by more than twice as
    many pixels as the width; the launch plan asks the CPU path's rule, under either order."""
    monkeypatch.setattr(fastprep.gpu.resize, "FUSED", False)
    before = fastprep.pillow_order()
    try:
        fastprep.pillow_order(order)
        be = EmuBackend()
        images = [_img(97, 31, 3, 4), _img(300, 200, 3, 5), _img(60, 80, 3, 6)]
        got = fastprep.gpu_resize(images, (64, 48), filter="bicubic", backend=be)
        for i, img in enumerate(images):
            np.testing.assert_array_equal(got[i], _cpu(img, (64, 48), "bicubic"), err_msg=str(img.shape))
        kernels = [k for k, _, _ in be.launches]
        # one launch per pass and pass order: under 13 the 97-row image goes vertical-first alone
        want = ["resize_horizontal", "resize_vertical"] * (1 if order == 12 else 2)
        assert sorted(kernels) == sorted(want), kernels
    finally:
        fastprep.pillow_order(before)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_spans_too_wide_for_shared_memory_read_global_memory(layout, monkeypatch):
    """A block whose source span does not fit resize.cu's SMEM_BYTES (here a float32 row of 5000
    pixels shrunk to 9) falls back to global reads for that block; rows of odd byte lengths (uint8
    RGB, 37 pixels) start at every offset within a word in the staged copy."""
    monkeypatch.setattr(fastprep.gpu.resize, "FUSED", False)  # the two-launch form's staging
    be = EmuBackend()
    wide = np.stack([_img(3, 5000, 3, 1, "float32")])
    narrow = np.stack([_img(19, 37, 3, 2)])
    if layout == "NCHW":
        wide, narrow = wide.transpose(0, 3, 1, 2).copy(), narrow.transpose(0, 3, 1, 2).copy()
    got = fastprep.gpu_resize(wide, (9, 3), filter="lanczos", layout=layout, backend=be)
    got = got if layout == "NHWC" else got.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(got[0], _cpu(_img(3, 5000, 3, 1, "float32"), (9, 3), "lanczos"))
    got = fastprep.gpu_resize(narrow, (23, 11), filter="bicubic", layout=layout, backend=be)
    got = got if layout == "NHWC" else got.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(got[0], _cpu(_img(19, 37, 3, 2), (23, 11), "bicubic"))


def test_rgba_premultiplication_only_where_pillow_does_it():
    be = EmuBackend()
    batch = np.stack([_img(33, 47, 4, 9)])
    fastprep.gpu_resize(batch, (20, 20), filter="bilinear", backend=be)
    assert be.launches[0][1]["PREMUL_IN"] == 1 and be.launches[-1][1]["UNPREMUL_OUT"] == 1
    be.launches.clear()
    fastprep.gpu_resize(batch, (20, 20), filter="nearest", backend=be)
    assert all(d["PREMUL_IN"] == 0 and d["UNPREMUL_OUT"] == 0 for _, d, _ in be.launches)


def test_antialias_false_only_changes_shrinking():
    be = EmuBackend()
    batch = np.stack([_img(30, 30, 3, 4)])
    up = fastprep.gpu_resize(batch, (70, 50), filter="bilinear", antialias=False, backend=be)
    np.testing.assert_array_equal(up, fastprep.gpu_resize(batch, (70, 50), filter="bilinear", backend=be))
    down = fastprep.gpu_resize(batch, (7, 5), filter="bilinear", antialias=False, backend=be)
    assert not np.array_equal(down, fastprep.gpu_resize(batch, (7, 5), filter="bilinear", backend=be))


def test_bad_arguments_are_refused_before_any_launch():
    be = EmuBackend()
    batch = np.zeros((2, 8, 8, 3), np.uint8)
    with pytest.raises(ValueError, match="layout"):
        fastprep.gpu_resize(batch, (4, 4), layout="HWC", backend=be)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        fastprep.gpu_resize(batch, (0, 4), backend=be)
    with pytest.raises(TypeError, match="uint8, float16 or float32"):
        fastprep.gpu_resize(batch.astype(np.int32), (4, 4), backend=be)
    with pytest.raises(ValueError, match="channels"):
        fastprep.gpu_resize(np.zeros((1, 8, 8, 2), np.uint8), (4, 4), backend=be)
    with pytest.raises(ValueError, match=r"\(N, H, W, C\)"):
        fastprep.gpu_resize(np.zeros((8, 8, 3), np.uint8), (4, 4), backend=be)
    with pytest.raises(ValueError, match="channels"):
        fastprep.gpu_resize([np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8, 1), np.uint8)], (4, 4), backend=be)
    with pytest.raises(ValueError, match="empty"):
        fastprep.gpu_resize([], (4, 4), backend=be)
    assert be.launches == []


@pytest.mark.parametrize(("dtype", "nchw"), [("float32", 1), ("float32", 0), ("float16", 1)])
def test_crop_normalize_kernel_equals_the_cpu_tables(dtype, nchw):
    import ctypes

    from fastprep import _core

    from .cuda_emu import compile_emulated

    lib = compile_emulated(
        "normalize.cu", {"OUT_DTYPE": 1 if dtype == "float32" else 2, "OUT_NCHW": nchw, "CHANNELS": 3}
    )
    batch = np.stack([_img(40, 50, 3, s) for s in range(2)])
    lut = np.frombuffer(_core.normalize_table(fastprep.IMAGENET_MEAN, fastprep.IMAGENET_STD, dtype), dtype=dtype)
    out = np.zeros((2, 3, 24, 32) if nchw else (2, 24, 32, 3), dtype)
    lib.launch_crop_normalize_u8.restype = None
    lib.launch_crop_normalize_u8(
        *(ctypes.c_uint(v) for v in (1, 3, 2, 32, 8, 1)),
        ctypes.c_void_p(batch.ctypes.data),
        ctypes.c_void_p(out.ctypes.data),
        ctypes.c_void_p(lut.ctypes.data),
        ctypes.c_int(40),
        ctypes.c_int(50),
        ctypes.c_longlong(150),
        ctypes.c_longlong(40 * 150),
        ctypes.c_int(24),
        ctypes.c_int(32),
        ctypes.c_int(7),
        ctypes.c_int(9),
    )
    crop = batch[:, 7:31, 9:41].astype(np.float32) / np.float32(255)
    want = (crop - np.asarray(fastprep.IMAGENET_MEAN, np.float32)) / np.asarray(fastprep.IMAGENET_STD, np.float32)
    want = want.astype(dtype)
    np.testing.assert_array_equal(out, want.transpose(0, 3, 1, 2) if nchw else want)


def test_without_cupy_the_error_says_what_to_install():
    import importlib.util

    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here: the missing-CuPy error cannot happen")
    with pytest.raises(fastprep.DeviceUnavailableError, match=r"fastprep\[cuda12\]"):
        fastprep.gpu_resize(np.zeros((1, 8, 8, 3), np.uint8), (4, 4))


@pytest.mark.parametrize(("layout", "dtype"), [("NCHW", "float32"), ("NHWC", "float16"), ("NCHW", "uint8")])
def test_gpu_preprocess_equals_the_cpu_pipeline(layout, dtype):
    from fastprep.gpu import gpu_preprocess

    from . import image_data as data

    blobs = [v for k, v in data.jpeg_variants().items() if "cmyk" not in k][:10]
    blobs += [data.png_variants()["rgba8"], data.jpeg_with_orientation(data.photos()["flower.jpg"][:300, :400], 6)]
    be = EmuBackend()
    got = gpu_preprocess(blobs, layout=layout, dtype=dtype, backend=be)
    want = fastprep.preprocess(blobs, layout=layout, dtype=dtype)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    kernels = [k for k, _, _ in be.launches]
    assert kernels.count("crop_normalize_u8") == (0 if dtype == "uint8" else 1)


def test_gpu_preprocess_windows_sizes_and_bad_images():
    from fastprep.gpu import gpu_preprocess

    from . import image_data as data

    blobs = [data.jpeg_variants()[k] for k in ("china-q75-420", "flower-prog-444", "grace_hopper-q95-444")]
    be = EmuBackend()
    for kw in ({"size": (200, 150), "crop": None}, {"resize_shorter": 160, "crop": (128, 96)}, {"filter": "lanczos"}):
        np.testing.assert_array_equal(
            gpu_preprocess(blobs, backend=be, **kw), fastprep.preprocess(blobs, **kw), err_msg=str(kw)
        )
    bad = [blobs[0], b"junk", blobs[1]]
    batch, ok = gpu_preprocess(bad, on_error="skip", backend=be)
    want, want_ok = fastprep.preprocess(bad, on_error="skip")
    assert ok.tolist() == want_ok.tolist() == [True, False, True]
    np.testing.assert_array_equal(batch, want)
    with pytest.raises(fastprep.DecodeError):
        gpu_preprocess(bad, backend=be)


class _DeviceEmu(EmuBackend):
    """The emulation posing as a device (CupyBackend's device_id), optionally with the symptom seen
    on the first real GPU: the last pass's unpremultiplication of RGBA lost."""

    def __init__(self, device: int, lose_unpremultiply: bool) -> None:
        super().__init__()
        self.device_id = device
        self.lose = lose_unpremultiply

    def launch(self, source, defines, kernel, grid, args):  # type: ignore[no-untyped-def]
        if self.lose:
            defines = dict(defines, UNPREMUL_OUT=0)
        super().launch(source, defines, kernel, grid, args)


def test_rgba_is_checked_once_per_device_and_a_wrong_device_refuses_it(monkeypatch):
    monkeypatch.setattr(fastprep.gpu.resize, "_RGBA_CHECKED", {})
    rgba = np.stack([_img(40, 30, 4, 3)])
    good = _DeviceEmu(7, lose_unpremultiply=False)
    np.testing.assert_array_equal(
        fastprep.gpu_resize(rgba, (16, 12), backend=good)[0], _cpu(rgba[0], (16, 12), "bilinear")
    )
    assert fastprep.gpu.resize._RGBA_CHECKED == {7: True}
    n = len(good.launches)
    fastprep.gpu_resize(rgba, (16, 12), backend=good)
    # checked once: the second call launches its passes only (one launch for both, or two)
    assert len(good.launches) == n + (1 if fastprep.gpu.resize.FUSED else 2)
    bad = _DeviceEmu(8, lose_unpremultiply=True)
    with pytest.raises(fastprep.DeviceUnavailableError, match="RGBA uint8"):
        fastprep.gpu_resize(rgba, (16, 12), backend=bad)
    with pytest.raises(fastprep.DeviceUnavailableError, match="RGBA uint8"):
        fastprep.gpu_resize(rgba, (16, 12), backend=bad)
    assert fastprep.gpu.resize._RGBA_CHECKED[8] is False
    rgb = np.stack([_img(40, 30, 3, 3)])  # RGB, float RGBA and nearest never premultiply
    got = fastprep.gpu_resize(rgb, (16, 12), backend=bad)
    np.testing.assert_array_equal(got[0], _cpu(rgb[0], (16, 12), "bilinear"))
    fastprep.gpu_resize(rgba.astype(np.float32), (16, 12), backend=bad)
    fastprep.gpu_resize(rgba, (16, 12), filter="nearest", backend=bad)


@pytest.mark.parametrize("budget", [600, 4000])
@pytest.mark.parametrize(("channels", "dtype"), [(3, "uint8"), (4, "uint8"), (3, "float16")])
def test_one_launch_tiles_with_a_small_intermediate_budget(budget, channels, dtype, monkeypatch):
    """resize_hv with many tiles in both axes: the launcher's budget (RESIZE_SMEM, here small)
    cuts the output into narrow and short tiles, whose tap windows overlap their neighbours'."""
    monkeypatch.setattr(fastprep.gpu.resize, "RESIZE_SMEM", budget)
    be = EmuBackend()
    img = _img(181, 203, channels, 9, dtype)
    for f in ("bilinear", "lanczos"):
        got = fastprep.gpu_resize(np.stack([img]), (45, 67), filter=f, backend=be)
        np.testing.assert_array_equal(got[0], _cpu(img, (45, 67), f), err_msg=f)
    desc = be.launches[-1]
    assert desc[0] == "resize_hv" and desc[2][0] > 1 and desc[2][1] > 1, desc


def test_one_launch_tiles_for_1080p():
    # 1080p -> 224: 32 x 32 tiles in uint8 (164 source rows of 32 columns, 16 KiB); float32 RGBA
    # intermediates are 16 bytes a pixel, so the tiles are shorter
    tile = fastprep.gpu.resize._tile
    assert tile("bilinear", True, 1080, 224, 0, 224, 224, 3) == (32, 32)
    assert tile("bilinear", True, 1080, 224, 0, 224, 224, 16) == (32, 8)


@pytest.mark.parametrize("stage", [1, 0])
@pytest.mark.parametrize(
    ("h", "w", "size", "dtype"), [(400, 600, (224, 224), "uint8"), (300, 500, (160, 96), "float32")]
)
def test_one_launch_staging_in_several_chunks(stage, h, w, size, dtype, monkeypatch):
    """resize_hv's horizontal phase where a tile's source rows take several rounds of the staging
    buffer (HV_STAGE_BYTES), and the same launch reading global memory, against the CPU path."""
    monkeypatch.setattr(fastprep.gpu.resize, "HV_STAGE", stage)
    be = EmuBackend()
    imgs = [_img(h, w, 3, 11, dtype), _img(h - 7, w - 13, 3, 12, dtype)[1:, 3:]]  # the second one a strided view
    for f in ("bilinear", "lanczos"):
        got = fastprep.gpu_resize(imgs, size, filter=f, backend=be)
        for i, img in enumerate(imgs):
            np.testing.assert_array_equal(got[i], _cpu(np.ascontiguousarray(img), size, f), err_msg=f"{f} #{i}")
    assert {(k, d["HV_STAGE"]) for k, d, _ in be.launches} == {("resize_hv", stage)}


def test_one_launch_span_too_wide_to_stage_reads_global_memory():
    """A tile whose source span does not fit the staging buffer (a 100x shrink: 32 outputs read
    ~3,200 source pixels a row) takes the global-memory reads in the same launch."""
    be = EmuBackend()
    img = _img(12, 6400, 3, 13)
    got = fastprep.gpu_resize(np.stack([img]), (64, 6), filter="bilinear", backend=be)
    np.testing.assert_array_equal(got[0], _cpu(img, (64, 6), "bilinear"))
    assert [k for k, _, _ in be.launches] == ["resize_hv"]
