"""gpu_resize on a real GPU, against the CPU path. These run only where CuPy sees a CUDA device
(the GPU check, benches/gpu/run.sh); elsewhere they skip and say so. Without a GPU the same kernels
and launch plan are checked by tests/test_gpu_resize_emulated.py and test_cuda_nvrtc.py."""

from __future__ import annotations

import numpy as np
import pytest

import fastprep


def _device() -> str | None:
    try:
        import cupy

        return None if cupy.cuda.runtime.getDeviceCount() > 0 else "CuPy sees no CUDA device"
    except ImportError:
        return "CuPy is not installed (pip install 'fastprep[cuda12]')"
    except Exception as e:  # no driver
        return f"no CUDA device: {e}"


_WHY = _device()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=f"needs a GPU: {_WHY}")

FILTERS = ["nearest", "box", "bilinear", "hamming", "bicubic", "lanczos"]


def _images(n: int, h: int, w: int, c: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, h, w, c), dtype=np.uint8)


@pytest.mark.parametrize("f", FILTERS)
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_uint8_equals_cpu(f, channels):
    import cupy

    host = _images(3, 97, 131, channels)
    got = fastprep.gpu_resize(cupy.asarray(host), (64, 48), filter=f)
    assert isinstance(got, cupy.ndarray) and got.shape == (3, 48, 64, channels)
    for i in range(3):
        want = fastprep.resize(host[i] if channels > 1 else host[i, ..., 0], (64, 48), filter=f)
        np.testing.assert_array_equal(cupy.asnumpy(got[i]).reshape(want.shape), want)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float_equals_cpu(dtype):
    import cupy

    host = (_images(2, 60, 80, 3).astype(np.float32) / 7).astype(dtype)
    got = cupy.asnumpy(fastprep.gpu_resize(cupy.asarray(host), (33, 21), filter="bicubic"))
    for i in range(2):
        want = fastprep.resize(host[i].astype(np.float32), (33, 21), filter="bicubic").astype(dtype)
        np.testing.assert_array_equal(got[i], want)


def test_ragged_list_and_nchw_and_stream():
    import cupy

    imgs = [cupy.asarray(_images(1, h, w, 3, h)[0]) for h, w in ((40, 60), (1080, 1920), (300, 3))]
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        got = fastprep.gpu_resize(imgs, (224, 224), filter="bilinear")
    stream.synchronize()
    for i, img in enumerate(imgs):
        np.testing.assert_array_equal(
            cupy.asnumpy(got[i]), fastprep.resize(cupy.asnumpy(img), (224, 224), filter="bilinear")
        )
    nchw = cupy.ascontiguousarray(cupy.stack(imgs[:1]).transpose(0, 3, 1, 2))
    out = fastprep.gpu_resize(nchw, (30, 20), filter="lanczos", layout="NCHW")
    np.testing.assert_array_equal(
        cupy.asnumpy(out[0]).transpose(1, 2, 0), fastprep.resize(cupy.asnumpy(imgs[0]), (30, 20), filter="lanczos")
    )


def test_torch_tensor_in_dlpack_out():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    t = torch.randint(0, 256, (2, 100, 120, 3), dtype=torch.uint8, device="cuda")
    out = fastprep.gpu_resize(t, (50, 40), filter="bilinear")
    back = torch.from_dlpack(out)
    assert back.is_cuda and tuple(back.shape) == (2, 40, 50, 3)
    want = fastprep.resize(t[0].cpu().numpy(), (50, 40), filter="bilinear")
    np.testing.assert_array_equal(back[0].cpu().numpy(), want)


@pytest.mark.parametrize("draft", [False, True])
def test_preprocess_cuda_decodes_jpegs_on_the_gpu_equal_to_the_cpu(draft):
    import cupy

    from . import image_data as data

    v = data.jpeg_variants()
    blobs = [v[k] for k in ("china-q75-420", "flower-prog-422", "grace_hopper-gray", "china-odd-420")]
    blobs += [v["china-1920x1080-420"], v["china-cmyk"], data.png_variants()["rgb8"]]
    blobs += [data.jpeg_with_orientation(data.photos()["flower.jpg"][:300, :400], 6)]
    for _ in range(2):  # the second call reuses the pinned staging block
        got = fastprep.preprocess(blobs, device="cuda", draft=draft)
        assert isinstance(got, cupy.ndarray)
        np.testing.assert_array_equal(cupy.asnumpy(got), fastprep.preprocess(blobs, draft=draft))


def test_gpu_entropy_coefficients_equal_libjpeg_turbos_on_the_device():
    # The entropy kernels on real hardware (warps, the look-back between blocks in ticket order)
    # against libjpeg-turbo's coefficients: every sampling, restart intervals, a 1080p scan.
    import cupy

    from fastprep import _core
    from fastprep.gpu import jpeg_entropy as ge

    from . import image_data as data

    v = data.jpeg_variants()
    names = ["china-q75-420", "flower-q95-444", "grace_hopper-q50-422", "china-gray", "china-restart"]
    names += ["flower-restart-rows", "china-odd-420", "china-1920x1080-420", "china-4032x3024-420"]
    blobs = [v[k] for k in names]
    layouts = _core.jpeg_layouts(blobs)
    scans = [ge.parse_scan(b, lay) for b, lay in zip(blobs, layouts, strict=True)]  # type: ignore[arg-type]
    assert all(s is not None for s in scans)
    counts = [sum(c[3] * c[4] * 64 for c in lay["components"]) for lay in layouts]  # type: ignore[index]
    offsets = [sum(counts[:i]) for i in range(len(counts))]
    batch = ge.plan_batch(scans, layouts, offsets)  # type: ignore[arg-type]
    src = np.zeros(batch.nbytes, np.uint8)
    for sp, b, at in zip(scans, blobs, batch.src_offsets, strict=True):
        src[at : at + sp.end - sp.start] = np.frombuffer(b, np.uint8, sp.end - sp.start, sp.start)
    from fastprep.gpu import _backend

    coefs = cupy.zeros(sum(counts), cupy.int16)
    status = ge.decode_scans(_backend(), cupy.asarray(src), batch, coefs).get()
    want = np.zeros(sum(counts), np.int16)
    assert _core.jpeg_coefficients_into(blobs, [2 * o for o in offsets], want.view(np.uint8)) == [None] * len(blobs)
    got = coefs.get()
    for k, name in enumerate(names):
        a, b = offsets[k], offsets[k] + counts[k]
        assert status[k] == 0, f"{name}: status {status[k]}"
        assert np.array_equal(got[a:b], want[a:b]), f"{name}: {np.count_nonzero(got[a:b] != want[a:b])} differ"


def test_preprocess_cuda_with_gpu_and_cpu_entropy_decoding_equal_the_cpu_pipeline():
    import cupy

    from . import image_data as data

    v = data.jpeg_variants()
    blobs = [v[k] for k in ("china-q75-420", "flower-prog-422", "grace_hopper-gray", "china-restart")]
    blobs += [v["china-1920x1080-420"], v["china-cmyk"], data.png_variants()["rgb8"]]
    want = fastprep.preprocess(blobs)
    for entropy in ("gpu", "cpu"):
        got = fastprep.preprocess(blobs, device="cuda", entropy=entropy)
        np.testing.assert_array_equal(cupy.asnumpy(got), want, err_msg=entropy)


@pytest.mark.parametrize("fused", [True, False])
def test_every_kernel_form_equals_the_cpu_on_the_device(fused, monkeypatch):
    """The fused forms (decode + horizontal pass in one kernel, the vertical pass writing the
    batch, both resize passes in one launch) and the unfused ones, on the device: a compiler can
    mistranslate one variant alone (NVRTC 13.0 and RGBA's unpremultiply), which the CPU emulation
    of the same text cannot show."""
    import cupy

    from fastprep import gpu

    from . import image_data as data

    monkeypatch.setattr(gpu.jpeg_fused, "ENABLED", fused)
    monkeypatch.setattr(gpu.resize, "FUSED", fused)
    v = data.jpeg_variants()
    blobs = [v[k] for k in ("china-q75-420", "flower-prog-422", "grace_hopper-gray", "grace_hopper-q95-444")]
    blobs += [data.jpeg_with_orientation(data.photos()["flower.jpg"][:300, :400], o) for o in (2, 3, 4)]
    for kw in ({"dtype": "float32"}, {"dtype": "float16", "layout": "NHWC"}, {"dtype": "uint8", "draft": True}):
        got = fastprep.preprocess(blobs, device="cuda", **kw)
        np.testing.assert_array_equal(cupy.asnumpy(got), fastprep.preprocess(blobs, **kw), err_msg=str(kw))
    for c in (1, 3, 4):
        batch = _images(3, 181, 203, c, seed=c)
        got = cupy.asnumpy(fastprep.gpu_resize(cupy.asarray(batch), (45, 67), filter="lanczos"))
        for i in range(3):
            want = fastprep.resize(batch[i] if c > 1 else batch[i, ..., 0], (45, 67), filter="lanczos")
            np.testing.assert_array_equal(got[i], want if c > 1 else want[..., None])


def test_chunks_on_two_streams_equal_the_cpu_pipeline_in_the_callers_stream_order(monkeypatch):
    """A batch in chunks of 2 on fastprep's two streams, called on a stream of the caller's own
    (non-blocking: no implicit order with anything) and read back on that stream: the fork and
    join events must order everything, the flagged scans' CPU decodes included."""
    import cupy

    from fastprep import gpu

    from . import image_data as data

    monkeypatch.setattr(gpu.streams, "CHUNK", 2)
    v = data.jpeg_variants()
    blobs = [v[k] for k in ("china-q75-420", "flower-prog-422", "grace_hopper-gray", "china-restart")]
    blobs += [v["china-1920x1080-420"], v["china-cmyk"], data.png_variants()["rgb8"]]
    good = v["china-q75-420"]
    sos = good.index(b"\xff\xda")
    blobs += [good[: sos + (len(good) - sos) // 2] + b"\xff\xd9", v["flower-q95-444"]]  # flagged, CPU repairs
    for kw in ({"dtype": "float32"}, {"dtype": "uint8", "layout": "NHWC"}):
        want = fastprep.preprocess(blobs, **kw)
        with cupy.cuda.Stream(non_blocking=True) as mine:
            for _ in range(3):
                got = fastprep.preprocess(blobs, device="cuda", **kw)
                np.testing.assert_array_equal(cupy.asnumpy(got, stream=mine), want, err_msg=str(kw))
