"""The GPU JPEG decoder without a GPU: coefficients from the Rust core (libjpeg-turbo's entropy
decoder), the launch plan of fastprep.gpu and the kernel text of cuda/jpeg_idct.cu run by the CPU
emulation (tests/cuda_emu.py), against fastprep.decode (libjpeg-turbo ISLOW + fancy upsampling,
itself checked against Pillow): every pixel must be equal. Real photos at every subsampling,
progressive, restart markers, grayscale, odd sizes, the scaled IDCTs of draft mode, EXIF
orientations."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import fastprep
from fastprep import _core, gpu

from . import image_data as data
from .cuda_emu import EmuBackend

ENTROPY = [
    "jpeg_unstuff_count",
    "jpeg_tile_offsets",
    "jpeg_unstuff_write",
    "jpeg_chunk_layout",
    "jpeg_sync",
    "jpeg_chunk_scan",
    "jpeg_write",
]


def gpu_decode(blobs: list[bytes], denom: int = 1, be: EmuBackend | None = None) -> list[np.ndarray]:
    """Decode through the GPU path: layouts and coefficients from Rust, kernels emulated."""
    be = be or EmuBackend()
    layouts = _core.jpeg_layouts(blobs)
    plans = []
    for i, lay in enumerate(layouts):
        assert isinstance(lay, dict), f"image {i}: {lay}"
        plan = gpu.plan_jpeg(lay, denom)
        assert plan is not None, f"image {i} has no GPU plan: {lay['color_space']}"
        plans.append(plan)
    offsets, total = [], 0
    for p in plans:
        offsets.append(total)
        total += p.coefficients
    coefs = np.zeros(max(total, 1), np.int16)
    errors = _core.jpeg_coefficients_into(blobs, [2 * o for o in offsets], coefs.view(np.uint8))
    assert errors == [None] * len(blobs), errors
    dst_offsets, size = [], 0
    for p in plans:
        dst_offsets.append(size)
        size += p.width * p.height * 3
    dst = np.zeros(size, np.uint8)
    gpu.run_jpeg_decode(be, coefs, plans, offsets, dst, dst_offsets)
    out = []
    for p, off in zip(plans, dst_offsets, strict=True):
        w, h = p.oriented_size
        out.append(dst[off : off + w * h * 3].reshape(h, w, 3))
    return out


def _cpu(blob: bytes, denom: int = 1) -> np.ndarray:
    return np.asarray(_core.decode_image(blob, "RGB", True, None, denom)[0])


def _check(names: list[str], blobs: list[bytes], denom: int) -> None:
    got = gpu_decode(blobs, denom)
    for name, blob, g in zip(names, blobs, got, strict=True):
        want = _cpu(blob, denom)
        assert g.shape == want.shape, name
        diff = np.abs(g.astype(int) - want.astype(int))
        assert diff.max() == 0, f"{name} 1/{denom}: {np.count_nonzero(diff)} values differ, max {diff.max()}"


VARIANTS = [k for k in data.jpeg_variants() if "cmyk" not in k and "4032" not in k and "1920" not in k]


@pytest.mark.parametrize("denom", [1, 2, 4, 8])
def test_every_variant_equals_the_cpu_decoder(denom):
    # one batch: ragged sizes, gray and colour, every subsampling together
    blobs = [data.jpeg_variants()[k] for k in VARIANTS]
    _check(VARIANTS, blobs, denom)


@pytest.mark.parametrize("denom", [1, 8])
def test_large_photos(denom):
    names = ["china-1920x1080-420", "china-1920x1080-444-prog"]
    _check(names, [data.jpeg_variants()[k] for k in names], denom)


@pytest.mark.parametrize("sub", [0, 1, 2])
@pytest.mark.parametrize("denom", [1, 2, 4, 8])
def test_tiny_and_odd_sizes(sub, denom):
    # Widths 1-3 take libjpeg's plain (replicating) upsamplers instead of the fancy ones; odd
    # sizes leave partial blocks and partial MCUs at the right and bottom edges.
    photo = data.photos()["flower.jpg"]
    sizes = [(1, 1), (2, 3), (3, 2), (5, 7), (17, 9), (33, 31), (64, 48), (127, 61)]
    blobs = [data.jpeg(photo[:h, :w], quality=90, subsampling=sub) for w, h in sizes]
    _check([f"{w}x{h}-{sub}" for w, h in sizes], blobs, denom)


def test_440_and_411_samplings():
    # 4:4:0 (h1v2 fancy upsampling) and 4:1:1 (integral replication), which Pillow cannot write:
    # OpenCV's libjpeg-turbo can.
    cv2 = pytest.importorskip("cv2", reason="the test extra installs opencv-python-headless")
    photo = np.ascontiguousarray(data.photos()["china.jpg"][:203, :301, ::-1])
    factors = {"440": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_440, "411": cv2.IMWRITE_JPEG_SAMPLING_FACTOR_411}
    names, blobs = [], []
    for name, f in factors.items():
        ok, enc = cv2.imencode(".jpg", photo, [cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_SAMPLING_FACTOR, f])
        assert ok
        names.append(name)
        blobs.append(enc.tobytes())
    comps = [lay["components"] for lay in _core.jpeg_layouts(blobs)]  # type: ignore[index]
    assert [(c[0][1], c[0][2]) for c in comps] == [(1, 2), (4, 1)]  # the samplings asked for
    for denom in (1, 2, 4, 8):
        _check(names, blobs, denom)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_is_applied_by_the_colour_kernel(orientation):
    photo = data.photos()["flower.jpg"][:61, :83]
    blob = data.jpeg_with_orientation(photo, orientation)
    (got,) = gpu_decode([blob])
    np.testing.assert_array_equal(got, np.asarray(fastprep.decode(blob)))


def test_launches_are_one_per_stage_for_the_whole_batch():
    be = EmuBackend()
    blobs = [data.jpeg_variants()[k] for k in ("china-q75-420", "flower-gray", "grace_hopper-q95-444")]
    gpu_decode(blobs, be=be)
    assert [k for k, _, _ in be.launches] == ["jpeg_idct", "jpeg_color"]
    assert be.launches[0][2][2] == 7  # grid z: every component plane of the batch
    assert be.launches[1][2][2] == 3  # grid z: every image


def test_coefficients_reject_bad_input():
    layouts = _core.jpeg_layouts([b"junk", data.png_variants()["rgb8"], data.jpeg_variants()["china-cmyk"][:200]])
    assert all(isinstance(r, tuple) for r in layouts), layouts
    cmyk = _core.jpeg_layouts([data.jpeg_variants()["china-cmyk"]])[0]
    assert isinstance(cmyk, dict) and gpu.plan_jpeg(cmyk) is None  # CMYK stays on the CPU
    blob = data.jpeg_variants()["china-q75-420"]
    buf = np.zeros(10, np.uint8)
    with pytest.raises(ValueError, match="fit"):
        _core.jpeg_coefficients_into([blob], [0], buf)
    truncated = blob[: len(blob) // 2]
    lay = _core.jpeg_layouts([truncated])[0]
    assert isinstance(lay, dict)
    plan = gpu.plan_jpeg(lay)
    # the header is whole, so a plan of the header's size exists; the coefficients are what fail
    assert plan is not None and (plan.width, plan.height) == (lay["width"], lay["height"])
    out = np.zeros(plan.coefficients * 2, np.uint8)
    (err,) = _core.jpeg_coefficients_into([truncated], [0], out)
    assert err is not None and err[0] == "truncated", err


# --- preprocess(device="cuda") with the JPEG kernels ------------------------------------------


@pytest.mark.parametrize("draft", [False, True])
@pytest.mark.parametrize(("layout", "dtype"), [("NCHW", "float32"), ("NHWC", "uint8")])
def test_gpu_preprocess_decodes_jpegs_on_the_gpu_and_equals_the_cpu_pipeline(draft, layout, dtype):
    from fastprep.gpu import gpu_preprocess

    v = data.jpeg_variants()
    blobs = [v[k] for k in ("china-q75-420", "flower-prog-422", "grace_hopper-gray", "china-odd-420")]
    blobs += [v["china-1920x1080-420"], v["china-cmyk"], data.png_variants()["rgb8"]]
    blobs += [data.jpeg_with_orientation(data.photos()["flower.jpg"][:300, :400], o) for o in (3, 6, 8)]
    be = EmuBackend()
    kw = {"layout": layout, "dtype": dtype, "draft": draft}
    got = gpu_preprocess(blobs, backend=be, **kw)
    want = fastprep.preprocess(blobs, **kw)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    kernels = [k for k, _, _ in be.launches]
    # the baseline JPEGs entropy-decoded by the GPU in one pass, then the DCT stages: the two
    # transposed orientations (6, 8) by the three-kernel path, the other six JPEGs fused with
    # their horizontal pass (unless a draft decode is already the target's width); the CMYK one is
    # decoded on the CPU
    assert kernels[: len(ENTROPY) + 2] == [*ENTROPY, "jpeg_idct", "jpeg_color"], kernels
    unfused = be.launches[len(ENTROPY) + 1][2][2]
    fused = sum(grid[2] for k, _, grid in be.launches if k == "jpeg_fused_h")
    assert unfused + fused == 8 and unfused == (3 if draft else 2), (unfused, fused)


def test_gpu_preprocess_with_cpu_entropy_decoding_equals_the_cpu_pipeline():
    from fastprep.gpu import gpu_preprocess

    v = data.jpeg_variants()
    blobs = [v[k] for k in ("china-q75-420", "flower-prog-422", "grace_hopper-gray", "china-odd-420")]
    be = EmuBackend()
    got = gpu_preprocess(blobs, entropy="cpu", backend=be)
    np.testing.assert_array_equal(got, fastprep.preprocess(blobs))
    # decode + horizontal pass, then the vertical pass writing the normalized batch: two launches
    assert [k for k, _, _ in be.launches] == ["jpeg_fused_h", "resize_vertical_lut"]
    with pytest.raises(ValueError, match="entropy"):
        gpu_preprocess(blobs, entropy="nvjpeg", backend=be)  # type: ignore[arg-type]


def test_damaged_scans_fall_back_to_the_cpu_decoder_with_their_index():
    # A scan the GPU flags goes to libjpeg-turbo on the CPU: a file it refuses raises a
    # DecodeError naming its index (or is skipped), the others are decoded on the GPU.
    from fastprep.gpu import gpu_preprocess

    good = data.jpeg(data.photos()["china.jpg"][:120, :160], quality=90)
    sos = good.index(b"\xff\xda")
    # The scan ends early with no EOI: Pillow refuses it ("image file is truncated"); a scan cut
    # short but closed by an EOI is only a libjpeg warning, which Pillow decodes.
    short = good[: sos + (len(good) - sos) // 2]
    blobs = [good, short, good]
    be = EmuBackend()
    batch, ok = gpu_preprocess(blobs, crop=96, resize_shorter=100, on_error="skip", backend=be)
    want, want_ok = fastprep.preprocess(blobs, crop=96, resize_shorter=100, on_error="skip")
    assert ok.tolist() == want_ok.tolist() == [True, False, True]
    np.testing.assert_array_equal(batch, want)
    assert "jpeg_write" in [k for k, _, _ in be.launches]
    with pytest.raises(fastprep.DecodeError, match="image 1"):
        gpu_preprocess(blobs, crop=96, resize_shorter=100, backend=be)
    # Cut short but closed by an EOI: decoded with libjpeg's fill, as on the CPU and in Pillow.
    closed = [good, short + b"\xff\xd9", good]
    np.testing.assert_array_equal(
        gpu_preprocess(closed, crop=96, resize_shorter=100, backend=be),
        fastprep.preprocess(closed, crop=96, resize_shorter=100),
    )


def test_gpu_preprocess_draft_uses_the_scaled_idcts():
    from fastprep.gpu import gpu_preprocess, plan_jpeg

    blob = data.jpeg_variants()["china-1920x1080-420"]
    lay = _core.jpeg_layouts([blob])[0]
    assert isinstance(lay, dict)
    assert fastprep.gpu._draft_denom(lay, 256, None) == 4
    assert [p.scale for p in plan_jpeg(lay, 4).planes] == [2, 4, 4]  # type: ignore[union-attr]
    be = EmuBackend()
    got = gpu_preprocess([blob], draft=True, backend=be)
    np.testing.assert_array_equal(got, fastprep.preprocess([blob], draft=True))
    assert not np.array_equal(got, fastprep.preprocess([blob]))  # draft really decoded smaller


def test_gpu_preprocess_draft_of_images_smaller_than_the_target():
    # Smaller than the resize target (upscaled): no draft scale, full size, as pipeline.rs's
    # draft_denominator says (the GPU path raised StopIteration here, found by gpu_bench --emulate).
    from fastprep.gpu import gpu_preprocess

    blob = data.jpeg(data.photos()["china.jpg"][:64, :96], quality=90)
    lay = _core.jpeg_layouts([blob])[0]
    assert isinstance(lay, dict)
    assert fastprep.gpu._draft_denom(lay, 256, None) == 1
    got = gpu_preprocess([blob], draft=True, backend=EmuBackend())
    np.testing.assert_array_equal(got, fastprep.preprocess([blob], draft=True))


def test_gpu_preprocess_bad_and_refused_files():
    from fastprep.gpu import gpu_preprocess

    v = data.jpeg_variants()
    good = v["china-q75-420"]
    truncated = good[: len(good) // 2]  # the header reads, the coefficients do not
    bad = [good, b"junk", truncated, v["flower-q95-444"]]
    be = EmuBackend()
    batch, ok = gpu_preprocess(bad, on_error="skip", backend=be)
    want, want_ok = fastprep.preprocess(bad, on_error="skip")
    assert ok.tolist() == want_ok.tolist() == [True, False, False, True]
    np.testing.assert_array_equal(batch, want)
    with pytest.raises(fastprep.DecodeError):
        gpu_preprocess(bad, backend=be)
    batch, ok = gpu_preprocess([b"junk"], on_error="skip", backend=be)
    assert ok.tolist() == [False] and not batch.any()


def test_a_file_cut_in_its_tables_leaves_the_next_reads_intact():
    # A JPEG cut after its frame header, inside a Huffman table, once left libjpeg-turbo's
    # per-thread handle reading the next file on that thread as 0x0 (most runs of this loop).
    v = data.jpeg_variants()
    cut = v["china-cmyk"][:200]
    good = [v[k] for k in ("china-q75-420", "flower-prog-422", "grace_hopper-gray", "china-odd-420")] * 2
    for _ in range(10):
        assert all(isinstance(r, tuple) for r in _core.jpeg_layouts([b"junk", cut, cut, cut]))
        assert all(isinstance(r, dict) for r in _core.jpeg_layouts(good))
        np.testing.assert_array_equal(fastprep.decode(good[0]), _cpu(good[0]))


def test_cpu_draft_reads_after_files_cut_in_their_headers():
    # The CPU pipeline's draft mode reads JPEG headers alone (the target scale); files cut inside
    # a table or the scan header must fail themselves and leave the next files intact.
    v = data.jpeg_variants()
    good = v["china-1920x1080-420"]
    sos = good.index(b"\xff\xda")
    cuts = [v["china-cmyk"][:200], good[:300], good[: sos + 6]]
    want = fastprep.preprocess([good], draft=True)
    for _ in range(5):
        batch, ok = fastprep.preprocess([*cuts, good, good, good], draft=True, on_error="skip")
        assert ok.tolist() == [False] * 3 + [True] * 3
        for k in range(3, 6):
            np.testing.assert_array_equal(batch[k], want[0])


def _cut_scans(blob: bytes, keep: int) -> bytes:
    """A progressive JPEG with only its first `keep` scans, properly ended."""
    starts = [i for i in range(len(blob) - 1) if blob[i] == 0xFF and blob[i + 1] == 0xDA]
    return blob[: starts[keep]] + b"\xff\xd9"


@pytest.mark.parametrize("keep", [1, 3, 6])
def test_progressive_files_libjpeg_smooths_go_to_the_cpu(keep):
    # A progressive file whose low frequencies never got full precision is block-smoothed by
    # libjpeg-turbo (decompress_smooth_data); the kernels do not do that, so it is decoded on the
    # CPU: the layout says so, and the forced GPU decode really differs.
    blob = _cut_scans(data.jpeg_variants()["flower-prog-444"], keep)
    lay = _core.jpeg_layouts([blob])[0]
    assert isinstance(lay, dict) and lay["block_smoothing"] is True
    assert gpu.plan_jpeg(lay) is None
    forced = gpu.plan_jpeg({**lay, "block_smoothing": False})
    assert forced is not None and (forced.width, forced.height) == (lay["width"], lay["height"])
    coefs = np.zeros(forced.coefficients, np.int16)
    assert _core.jpeg_coefficients_into([blob], [0], coefs.view(np.uint8)) == [None]
    dst = np.zeros(forced.width * forced.height * 3, np.uint8)
    gpu.run_jpeg_decode(EmuBackend(), coefs, [forced], [0], dst, [0])
    assert not np.array_equal(dst.reshape(forced.height, forced.width, 3), _cpu(blob))
    be = EmuBackend()
    np.testing.assert_array_equal(gpu.gpu_preprocess([blob], backend=be), fastprep.preprocess([blob]))
    assert "jpeg_idct" not in [k for k, _, _ in be.launches]
    full = _core.jpeg_layouts([data.jpeg_variants()["flower-prog-444"]])[0]
    assert isinstance(full, dict) and full["block_smoothing"] is False


def test_cupy_backend_staging_blocks_come_back_once_their_copy_is_done(monkeypatch):
    # CupyBackend's pinned staging without a GPU: CuPy's pinned allocation stood in for by host
    # memory (as tests/test_pool_device.py does) and its stream events by flags.
    import threading
    from types import SimpleNamespace

    from fastprep import _cupy_memory as cm

    monkeypatch.setattr(cm, "require", lambda kind: None)
    monkeypatch.setattr(cm, "allocate", lambda kind, n: ((buf := np.zeros(n, np.uint8)).ctypes.data, buf))
    events: list[SimpleNamespace] = []

    def record() -> SimpleNamespace:
        events.append(SimpleNamespace(done=False))
        return events[-1]

    stream = SimpleNamespace(record=record)
    be = gpu.CupyBackend.__new__(gpu.CupyBackend)
    be.xp = SimpleNamespace(cuda=SimpleNamespace(get_current_stream=lambda: stream))
    be._lock, be._pinned, be._in_flight, be._modules = threading.Lock(), {}, [], {}
    view, release = be.staging(3_000_000)
    assert view.dtype == np.uint8 and view.size == 3_000_000 and view.flags.writeable
    view[:] = 7
    pool = be._pinned[1 << 22]  # one pool per power-of-two size
    assert pool.kind == "pinned"
    release()
    del view
    assert pool.stats()["in_use"] == 1  # the copy reading it may still run
    view, release = be.staging(2_500_000)
    assert pool.stats()["in_use"] == 2  # so the next batch gets another block
    release()
    del view
    for e in events:
        e.done = True
    be._reap()
    assert pool.stats()["in_use"] == 0 and be._in_flight == []


def test_batches_past_the_grid_z_limit_take_more_launches(monkeypatch):
    monkeypatch.setattr(gpu.jpeg_idct, "MAX_GRID_Z", 2)
    names = ["china-q75-420", "flower-gray", "grace_hopper-q95-444"]
    blobs = [data.jpeg_variants()[k] for k in names]
    be = EmuBackend()
    got = gpu_decode(blobs, be=be)
    assert [k for k, _, _ in be.launches] == ["jpeg_idct"] * 4 + ["jpeg_color"] * 2  # 7 planes, 3 images
    for name, blob, g in zip(names, blobs, got, strict=True):
        np.testing.assert_array_equal(g, _cpu(blob), err_msg=name)


class _UploadRecorder(EmuBackend):
    """The emulation with CupyBackend's ranged upload, recording each copy's range."""

    def __init__(self) -> None:
        super().__init__()
        self.uploads: list[tuple[int, int]] = []

    def upload(self, dst: np.ndarray, host: np.ndarray, start: int, end: int) -> None:
        self.uploads.append((start, end))
        dst[start:end] = host[start:end]


def test_coefficients_go_up_chunk_by_chunk_and_refused_files_still_decode(monkeypatch):
    """With one thread, eight JPEGs are entropy-decoded in four chunks, each uploaded as soon as it
    is decoded (the copies tile the coefficient region in order), then the CPU-decoded pixels. A
    file the coefficient reader refuses but the CPU decoder reads lands after the decoded images
    (the device buffer grows) and the batch still equals the CPU pipeline's."""
    v = data.jpeg_variants()
    names = ["china-q75-420", "flower-prog-422", "grace_hopper-gray", "china-odd-420"] * 2
    blobs = [v[k] for k in names] + [data.png_variants()["rgb8"]]
    real = _core.jpeg_coefficients_into
    refusals = []

    class Refusing:
        def __getattr__(self, name: str) -> Any:
            return getattr(_core, name)

        @staticmethod
        def jpeg_coefficients_into(items: list[bytes], offsets: list[int], out: Any, threads: Any) -> list[Any]:
            errors = real(items, offsets, out, threads)
            refused = ("corrupt", "refused for the test")
            refusals.extend(b for b in items if b is blobs[2])
            return [refused if b is blobs[2] else e for b, e in zip(items, errors, strict=True)]

    monkeypatch.setattr(gpu.upload, "_core", Refusing())
    be = _UploadRecorder()
    got = gpu.gpu_preprocess(blobs, num_threads=1, entropy="cpu", backend=be)
    np.testing.assert_array_equal(got, fastprep.preprocess(blobs))
    coef = be.uploads[:4]
    assert coef[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(coef)), be.uploads
    assert len(be.uploads) == 5 and be.uploads[4][0] == coef[-1][1], be.uploads
    assert len(refusals) == 2  # grace_hopper-gray, twice: decoded on the CPU after the rest
