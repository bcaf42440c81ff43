"""fastprep.TrainPipeline against torchvision's v2 training transform on Pillow images:
``resized_crop`` (bilinear, antialias) + ``horizontal_flip`` + ``to_image`` + ``to_dtype(scale=True)``
+ ``normalize``, given the parameters fastprep reports (or replays): identical arrays. The sampling
is fastprep's own generator with torchvision's algorithm: checked against torchvision's
``make_params`` by distribution, and exactly on its deterministic fallback."""

from __future__ import annotations

import collections
import io

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

import fastprep
from fastprep.errors import DecodeError

from . import image_data as data

MEAN, STD = list(fastprep.IMAGENET_MEAN), list(fastprep.IMAGENET_STD)


def pil_image(blob: bytes, exif: bool = True) -> Image.Image:
    im = Image.open(io.BytesIO(blob))
    return (ImageOps.exif_transpose(im) if exif else im).convert("RGB")


def torchvision_train(
    blob: bytes, row: np.ndarray, size: tuple[int, int], dtype: str = "float32", filter: str = "bilinear"
) -> np.ndarray:
    """The reference for one image: torchvision v2 on the Pillow image, (3, H, W)."""
    top, left, height, width, flipped = (int(v) for v in row)
    mode = {"bilinear": F.InterpolationMode.BILINEAR, "bicubic": F.InterpolationMode.BICUBIC}[filter]
    im = F.resized_crop(pil_image(blob), top, left, height, width, list(size), interpolation=mode, antialias=True)
    if flipped:
        im = F.horizontal_flip(im)
    t = F.to_image(im)
    if dtype == "uint8":
        return t.numpy()
    x = F.normalize(F.to_dtype(t, torch.float32, scale=True), MEAN, STD)
    return x.to(torch.float16).numpy() if dtype == "float16" else x.numpy()


def _tiny(w: int, h: int, kind: str) -> bytes:
    rng = np.random.default_rng(w * 31 + h)
    arr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    if kind == "png":
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, "PNG")
        return buf.getvalue()
    return data.jpeg(arr, quality=90, subsampling=2)


def corpus() -> dict[str, bytes]:
    """JPEG 4:2:0 / 4:2:2 / 4:4:4, progressive, gray, CMYK, restart markers, odd sizes, a 1080p
    photo; PNGs of several colour types; every EXIF orientation; tiny images."""
    jpegs = data.jpeg_variants()
    names = [
        "china-q75-420",
        "china-q95-444",
        "flower-prog-422",
        "flower-prog-420",
        "china-gray",
        "china-gray-prog",
        "flower-cmyk",
        "china-restart-rows",
        "flower-odd-420",
        "china-odd-422-prog",
        "china-1920x1080-420",
    ]
    out = {n: jpegs[n] for n in names}
    pngs = data.png_variants()
    out.update({n: pngs[n] for n in ("rgb8", "gray8", "rgba8-adam7", "pal4-trns", "la8")})
    small = data.scaled(data.photos()["flower.jpg"], (160, 120))
    for o in range(2, 9):
        out[f"exif-{o}-420"] = data.jpeg_with_orientation(small, o, subsampling=2)
    out["exif-6-444-prog"] = data.jpeg_with_orientation(small, 6, subsampling=0, progressive=True)
    out["png-exif-8"] = data.png(small, 2, 8, exif=data.exif_orientation(8))
    for w, h in ((1, 1), (2, 3), (7, 5), (17, 9)):
        out[f"tiny-{w}x{h}-jpeg"] = _tiny(w, h, "jpeg")
        out[f"tiny-{w}x{h}-png"] = _tiny(w, h, "png")
    return out


def random_params(rng: np.random.Generator, w: int, h: int, n: int) -> list[tuple[int, int, int, int, int]]:
    """Crops of every kind: random, the whole image, 1x1, and ones touching each border."""
    rows = [(0, 0, h, w, 0), (0, 0, h, w, 1), (h - 1, w - 1, 1, 1, 0), (0, 0, 1, 1, 1)]
    for _ in range(n):
        cw, ch = int(rng.integers(1, w + 1)), int(rng.integers(1, h + 1))
        left, top = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        edge = rng.integers(0, 4)
        if edge == 1:
            left = w - cw  # right border
        elif edge == 2:
            top = h - ch  # bottom border
        rows.append((top, left, ch, cw, int(rng.integers(0, 2))))
    return rows


@pytest.mark.filterwarnings("ignore:Palette images with Transparency")
def test_replayed_params_match_torchvision_exactly():
    rng = np.random.default_rng(0)
    pipe = fastprep.TrainPipeline(32, num_threads=2)
    pipe_u8 = fastprep.TrainPipeline((24, 40), dtype="uint8", num_threads=2)
    checked = 0
    for name, blob in corpus().items():
        w, h = pil_image(blob).size
        rows = random_params(rng, w, h, 4)
        blobs = [blob] * len(rows)
        batch, params = pipe(blobs, params=rows)
        np.testing.assert_array_equal(params, np.asarray(rows))
        batch_u8, _ = pipe_u8(blobs, params=rows)
        for i, row in enumerate(rows):
            np.testing.assert_array_equal(batch[i], torchvision_train(blob, row, (32, 32)), err_msg=f"{name} {row}")
            ref_u8 = torchvision_train(blob, row, (24, 40), "uint8")
            np.testing.assert_array_equal(batch_u8[i], ref_u8, err_msg=f"{name} {row} uint8")
            checked += 1
    assert checked > 250


@pytest.mark.parametrize(
    ("dtype", "layout", "filter"), [("float16", "NHWC", "bilinear"), ("float32", "NCHW", "bicubic")]
)
def test_dtypes_layouts_filters(dtype, layout, filter):
    blob = data.jpeg_variants()["china-q95-444"]
    pipe = fastprep.TrainPipeline(48, dtype=dtype, layout=layout, filter=filter, seed=3)
    batch, params = pipe([blob] * 6)
    for i, row in enumerate(params):
        ref = torchvision_train(blob, row, (48, 48), dtype, filter)
        got = batch[i].transpose(2, 0, 1) if layout == "NHWC" else batch[i]
        np.testing.assert_array_equal(got, ref)


def test_sampled_batch_equals_torchvision_on_its_params():
    """The default transform (224, scale (0.08, 1), ratio (3/4, 4/3), p=0.5) on real photos."""
    blobs = [data.jpeg_variants()[n] for n in ("china-q75-420", "flower-prog-444", "china-1920x1080-444-prog")]
    pipe = fastprep.TrainPipeline(seed=1234)
    batch, params = pipe(blobs * 3)
    assert batch.shape == (9, 3, 224, 224) and batch.dtype == np.float32
    for i, row in enumerate(params):
        np.testing.assert_array_equal(batch[i], torchvision_train((blobs * 3)[i], row, (224, 224)))
    assert len({tuple(r) for r in params.tolist()}) == 9


def _sample_sizes(w: int, h: int, n: int, **kw) -> list[tuple[int, int, int, int, int]]:
    blob = _tiny(w, h, "png")
    pipe = fastprep.TrainPipeline(4, dtype="uint8", seed=99, **kw)
    _, params = pipe([blob] * n)
    return [tuple(r) for r in params.tolist()]


@pytest.mark.parametrize(("w", "h", "kw"), [(40, 30, {}), (13, 50, {"scale": (0.3, 0.9), "ratio": (0.5, 2.0)})])
def test_sampling_distribution_is_torchvision(w, h, kw):
    """Same algorithm, other generator: the distribution of the crop's (height, width) is as
    close to torchvision's make_params as two torchvision runs of other seeds are to each other
    (sampling noise), and the placement and the flips are uniform."""
    n = 20000
    ours = _sample_sizes(w, h, n, **kw)
    tv = v2.RandomResizedCrop(4, **kw)
    ref_img = torch.zeros(3, h, w, dtype=torch.uint8)

    def torchvision_sizes(seed: int) -> list[tuple[int, int]]:
        torch.manual_seed(seed)
        return [(p["height"], p["width"]) for p in (tv.make_params([ref_img]) for _ in range(n))]

    def distance(a: list, b: list) -> float:  # total variation between the empirical laws
        ca, cb = collections.Counter(a), collections.Counter(b)
        return 0.5 * sum(abs(ca[k] / len(a) - cb[k] / len(b)) for k in ca.keys() | cb.keys())

    theirs, noise = torchvision_sizes(0), torchvision_sizes(1)
    assert distance([r[2:4] for r in ours], theirs) < 1.5 * distance(noise, theirs) + 0.01
    # the placement: uniform over the valid offsets, as torch.randint
    rel = [r[0] / (h - r[2]) for r in ours if r[2] < h]
    assert abs(np.mean(rel) - 0.5) < 0.02
    assert abs(np.mean([r[4] for r in ours]) - 0.5) < 0.02


@pytest.mark.parametrize(("w", "h"), [(1000, 10), (10, 1000), (301, 7)])
def test_fallback_central_crop_is_torchvision(w, h):
    """No sampled crop can fit a long strip: torchvision's central fallback, exactly."""
    tv = v2.RandomResizedCrop(8)
    p = tv.make_params([torch.zeros(3, h, w, dtype=torch.uint8)])
    expect = (p["top"], p["left"], p["height"], p["width"])
    for row in _sample_sizes(w, h, 5, flip_p=0.0):
        assert row == (*expect, 0)


def test_fallback_to_an_empty_crop_is_torchvision():
    """A 5x1 image with ratio (0.1, 0.3): no try fits and the fallback's width rounds to 0;
    torchvision then resizes Pillow's empty crop to black, and so does fastprep."""
    blob = _tiny(5, 1, "png")
    tv = v2.RandomResizedCrop(8, ratio=(0.1, 0.3))
    p = tv.make_params([torch.zeros(3, 1, 5, dtype=torch.uint8)])
    batch, params = fastprep.TrainPipeline(8, ratio=(0.1, 0.3), flip_p=0.0, seed=1)([blob])
    assert tuple(params[0]) == (p["top"], p["left"], p["height"], p["width"], 0) == (0, 2, 1, 0, 0)
    np.testing.assert_array_equal(batch[0], torchvision_train(blob, params[0], (8, 8)))


def test_flip_probability_extremes():
    assert all(r[4] == 0 for r in _sample_sizes(20, 20, 200, flip_p=0.0))
    assert all(r[4] == 1 for r in _sample_sizes(20, 20, 200, flip_p=1.0))


def test_seed_step_and_threads_determinism():
    blobs = [data.jpeg_variants()[n] for n in ("china-q75-420", "flower-q50-444", "china-gray")] * 4
    runs = []
    for threads in (1, 2, 3):
        pipe = fastprep.TrainPipeline(64, seed=7, num_threads=threads)
        first = pipe(blobs)
        second = pipe(blobs)
        runs.append((first, second))
        assert pipe.step == 2
    for (b1, p1), (_b2, p2) in runs[1:]:
        np.testing.assert_array_equal(b1, runs[0][0][0])
        np.testing.assert_array_equal(p1, runs[0][0][1])
        np.testing.assert_array_equal(p2, runs[0][1][1])
    (_, p_first), (_, p_second) = runs[0]
    assert not np.array_equal(p_first, p_second)  # each call draws new parameters
    replay = fastprep.TrainPipeline(64, seed=7)
    _, again = replay(blobs, step=1)
    np.testing.assert_array_equal(again, p_second)
    _, other_seed = fastprep.TrainPipeline(64, seed=8)(blobs)
    assert not np.array_equal(other_seed, p_first)


def test_corrupt_image_reported_by_index_or_skipped():
    good = data.jpeg_variants()["china-q75-420"]
    bad = good[: len(good) // 3]  # truncated
    blobs = [good, good, b"not an image", good, bad]
    with pytest.raises(DecodeError) as exc:
        fastprep.TrainPipeline(32, seed=5)(blobs)
    assert exc.value.index == 2
    assert [e.index for e in exc.value.errors] == [2, 4]
    batch, params, ok = fastprep.TrainPipeline(32, seed=5, on_error="skip")(blobs)
    assert ok.tolist() == [True, True, False, True, False]
    assert (params[2] == -1).all() and (params[4] == -1).all()
    assert not batch[2].any() and not batch[4].any()
    for i in (0, 1, 3):
        np.testing.assert_array_equal(batch[i], torchvision_train(good, params[i], (32, 32)))


def test_replayed_params_outside_the_image_are_refused():
    blob = _tiny(17, 9, "jpeg")
    rows = [(0, 0, 9, 17, 0), (0, 1, 9, 17, 0), (0, 0, 0, 3, 0)]
    batch, _params, ok = fastprep.TrainPipeline(8, on_error="skip")([blob] * 3, params=rows)
    assert ok.tolist() == [True, False, True]
    # an empty box is torchvision's too: Pillow resizes the 0x9 crop to black
    np.testing.assert_array_equal(batch[2], torchvision_train(blob, rows[2], (8, 8)))
    with pytest.raises(DecodeError, match="does not fit") as exc:
        fastprep.TrainPipeline(8)([blob] * 3, params=rows)
    assert exc.value.index == 1
    huge = [(0, 2**63, 1, 2**63, 0)]  # left + width wraps around in 64 bits
    _, _, ok = fastprep.TrainPipeline(8, on_error="skip")([blob], params=np.asarray(huge, dtype=np.uint64))
    assert ok.tolist() == [False]
    with pytest.raises(ValueError, match="rows of 5"):
        fastprep.TrainPipeline(8)([blob], params=[(0, 0, 1)])


@pytest.mark.parametrize(
    "kw",
    [{"scale": (0.5, 0.1)}, {"scale": (0.0, 1.0)}, {"ratio": (2.0, 1.0)}, {"flip_p": 1.5}, {"size": 0}, {"seed": -1}],
)
def test_bad_settings_raise_value_error(kw):
    with pytest.raises(ValueError):
        fastprep.TrainPipeline(**kw)


def test_timings_and_stats():
    blob = data.jpeg_variants()["flower-q75-420"]
    pipe = fastprep.TrainPipeline(32, seed=0)
    _batch, _params, timings = pipe([blob] * 4, return_timings=True)
    assert timings["per_image"].shape == (4, 3) and timings["wall"] > 0
    assert pipe.stats()["decode"]["count"] == 4
