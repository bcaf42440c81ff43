"""fastprep.resize against Pillow 12.2+ (a reference no one here wrote; the test extra pins it):
byte-identical output for L, RGB and RGBA (Pillow premultiplies alpha), every filter, down and up,
odd sizes, images over 100x taller than wide (Pillow resizes those vertically first), on noise,
gradients and a photo-like image; float32 against Pillow's mode "F"; the batch form; hypothesis
sweeps over sizes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import fastprep

from .image_data import PIL_FILTERS as FILTERS


def _images(h: int, w: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(h * 1000 + w)
    yy, xx = np.mgrid[0:h, 0:w]
    gradient = np.stack([xx * 255 // max(w - 1, 1), yy * 255 // max(h - 1, 1), (xx + yy) % 256], -1).astype(np.uint8)
    # a "photo": smooth shapes, sharp edges and noise, where ringing filters overshoot
    photo = gradient.copy()
    photo[h // 4 : h // 2, w // 4 : w // 2] = (250, 10, 10)
    photo = np.clip(photo.astype(int) + rng.integers(-20, 21, photo.shape), 0, 255).astype(np.uint8)
    return {
        "noise": rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
        "gradient": gradient,
        "photo": photo,
    }


def _pillow(arr: np.ndarray, size: tuple[int, int], name: str) -> np.ndarray:
    return np.asarray(Image.fromarray(arr).resize(size, FILTERS[name], reducing_gap=None))


@pytest.mark.parametrize("name", list(FILTERS))
@pytest.mark.parametrize(
    ("src", "dst"),
    [((480, 640), (224, 224)), ((97, 131), (300, 41)), ((50, 60), (50, 17)), ((33, 20), (200, 20)), ((1, 9), (4, 1))],
)
def test_matches_pillow_rgb_and_l(name, src, dst):
    for kind, img in _images(*src).items():
        got = fastprep.resize(img, dst, filter=name)
        np.testing.assert_array_equal(got, _pillow(img, dst, name), err_msg=f"{kind} RGB {name}")
        gray = np.ascontiguousarray(img[..., 1])
        np.testing.assert_array_equal(
            fastprep.resize(gray, dst, filter=name), _pillow(gray, dst, name), err_msg=f"{kind} L {name}"
        )


@settings(max_examples=60, deadline=None)
@given(
    h=st.integers(1, 70),
    w=st.integers(1, 70),
    oh=st.integers(1, 90),
    ow=st.integers(1, 90),
    name=st.sampled_from(list(FILTERS)),
)
def test_hyp_sizes(h, w, oh, ow, name):
    img = np.random.default_rng(h * 7919 + w).integers(0, 256, (h, w, 3), dtype=np.uint8)
    np.testing.assert_array_equal(fastprep.resize(img, (ow, oh), filter=name), _pillow(img, (ow, oh), name))


def test_non_contiguous_input_and_shape():
    img = _images(40, 60)["photo"][:, ::2]  # a strided view
    out = fastprep.resize(img, (10, 20), filter="bilinear")
    assert out.shape == (20, 10, 3) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, _pillow(np.ascontiguousarray(img), (10, 20), "bilinear"))


def test_errors_say_what_to_do():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(TypeError, match=r"uint8, uint16, int32, float32 or bool.*astype"):
        fastprep.resize(img.astype(np.float64), (2, 2))
    with pytest.raises(ValueError, match="filter must be"):
        fastprep.resize(img, (2, 2), filter="nearest-ish")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="channels"):
        fastprep.resize(np.zeros((4, 4, 5), np.uint8), (2, 2))
    with pytest.raises(ValueError, match="positive"):
        fastprep.resize(img, (0, 2))
    with pytest.raises(ValueError, match=r"\(H, W\)"):
        fastprep.resize(np.zeros(4, np.uint8), (2, 2))


@settings(max_examples=80, deadline=None)
@given(
    h=st.integers(1, 60),
    w=st.integers(1, 60),
    oh=st.integers(1, 60),
    ow=st.integers(1, 60),
    data=st.data(),
    name=st.sampled_from(list(FILTERS)),
    channels=st.sampled_from([1, 3]),
)
def test_window_equals_resize_then_crop(h, w, oh, ow, data, name, channels):
    """The preprocessing path resizes only the crop window; it must give the crop's exact bytes."""
    from fastprep import _core

    x = data.draw(st.integers(0, ow - 1))
    y = data.draw(st.integers(0, oh - 1))
    cw = data.draw(st.integers(1, ow - x))
    ch = data.draw(st.integers(1, oh - y))
    img = _images(h, w)["photo"]
    img = np.ascontiguousarray(img[..., :channels])
    full = np.asarray(_core.resize_u8(img, h, w, channels, ow, oh, name))
    part = np.asarray(_core.resize_u8(img, h, w, channels, ow, oh, name, (x, y, cw, ch)))
    np.testing.assert_array_equal(part, full[y : y + ch, x : x + cw])
    if channels == 3:
        np.testing.assert_array_equal(full, _pillow(img, (ow, oh), name))


def _rgba(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rgb = _images(h, w)["photo"]
    alpha = rng.integers(0, 256, (h, w), dtype=np.uint8)
    alpha[::5] = 255  # opaque and fully transparent pixels take Pillow's special case
    alpha[1::7] = 0
    return np.dstack([rgb, alpha])


@pytest.mark.parametrize("name", list(FILTERS))
@pytest.mark.parametrize(("src", "dst"), [((480, 640), (224, 224)), ((97, 131), (300, 41)), ((33, 20), (200, 20))])
def test_rgba_matches_pillow_premultiplied(name, src, dst):
    img = _rgba(*src, seed=src[0])
    np.testing.assert_array_equal(fastprep.resize(img, dst, filter=name), _pillow(img, dst, name))


@pytest.mark.parametrize("name", list(FILTERS))
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_tall_images_are_resized_vertically_first_like_pillow(name, channels):
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (700, 5, channels), dtype=np.uint8)  # height > 100 x width
    if channels == 1:
        img = img[..., 0]
    for dst in ((3, 40), (9, 200), (2, 699)):
        np.testing.assert_array_equal(fastprep.resize(img, dst, filter=name), _pillow(img, dst, name), err_msg=str(dst))


def test_pass_order_follows_the_installed_pillow():
    import PIL

    assert fastprep.pillow_order() == (12 if int(PIL.__version__.split(".")[0]) <= 12 else 13)
    with pytest.raises(ValueError, match="12 or 13"):
        fastprep.pillow_order(11)


@pytest.mark.parametrize("order", [12, 13])
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_either_pillow_pass_order(order, dtype):
    """Pillow 13 resizes vertically first whenever the height shrinks by more than twice as many
    pixels as the width (12.x: only images over 100x taller than wide). The order shows in the
    bytes; each is one pass after the other, as two single-axis resizes give it."""
    rng = np.random.default_rng(order)
    before = fastprep.pillow_order()
    try:
        fastprep.pillow_order(order)
        cases = [((97, 131), (64, 48), True), ((200, 300), (180, 130), True), ((300, 200), (150, 150), False)]
        cases += [((200, 300), (170, 239), True), ((200, 300), (170, 240), False), ((20, 2500), (10, 40), True)]
        for (w, h), (ow, oh), v13 in cases:
            img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8).astype(dtype)
            got = fastprep.resize(img, (ow, oh), filter="bicubic")
            h_first = fastprep.resize(fastprep.resize(img, (ow, h), filter="bicubic"), (ow, oh), filter="bicubic")
            v_first = fastprep.resize(fastprep.resize(img, (w, oh), filter="bicubic"), (ow, oh), filter="bicubic")
            vertical = v13 if order == 13 else h > 100 * w
            assert not np.array_equal(h_first, v_first)
            np.testing.assert_array_equal(got, v_first if vertical else h_first, err_msg=f"{(w, h)} -> {(ow, oh)}")
    finally:
        fastprep.pillow_order(before)


@pytest.mark.parametrize("name", list(FILTERS))
def test_float32_matches_pillow_mode_f_per_channel(name):
    rng = np.random.default_rng(5)
    img = (rng.standard_normal((57, 83, 3)) * 100).astype(np.float32)
    for dst in ((30, 20), (120, 90), (83, 11)):
        got = fastprep.resize(img, dst, filter=name)
        assert got.dtype == np.float32 and got.shape == (dst[1], dst[0], 3)
        for c in range(3):
            want = np.asarray(Image.fromarray(np.ascontiguousarray(img[..., c]), "F").resize(dst, FILTERS[name]))
            np.testing.assert_array_equal(got[..., c], want, err_msg=f"{name} {dst} channel {c}")
    flat = np.ascontiguousarray(img[..., 0])
    want = np.asarray(Image.fromarray(flat, "F").resize((30, 20), FILTERS[name]))
    np.testing.assert_array_equal(fastprep.resize(flat, (30, 20), filter=name), want)


@pytest.mark.parametrize("threads", [1, 2])
def test_resize_batch_equals_single_resizes(threads):
    imgs = [_images(h, w)["photo"] for h, w in ((40, 60), (97, 131), (224, 224), (10, 300))]
    out = fastprep.resize_batch(imgs, (64, 48), filter="bilinear", num_threads=threads)
    assert out.shape == (4, 48, 64, 3)
    for i, img in enumerate(imgs):
        np.testing.assert_array_equal(out[i], _pillow(img, (64, 48), "bilinear"))
    gray = fastprep.resize_batch([i[..., 0] for i in imgs], (20, 10), filter="lanczos")
    assert gray.shape == (4, 10, 20)
    np.testing.assert_array_equal(gray[1], _pillow(np.ascontiguousarray(imgs[1][..., 0]), (20, 10), "lanczos"))
    with pytest.raises(ValueError, match="channels"):
        fastprep.resize_batch([imgs[0], _rgba(40, 60, 1)], (8, 8))
    assert fastprep.resize_batch([], (8, 8)).shape == (0, 8, 8, 3)


@settings(max_examples=80, deadline=None)
@given(
    h=st.integers(1, 50),
    w=st.integers(1, 50),
    oh=st.integers(1, 60),
    ow=st.integers(1, 60),
    name=st.sampled_from(list(FILTERS)),
)
def test_hyp_rgba_sizes(h, w, oh, ow, name):
    img = _rgba(h, w, seed=h * 31 + w)
    np.testing.assert_array_equal(fastprep.resize(img, (ow, oh), filter=name), _pillow(img, (ow, oh), name))


@pytest.mark.parametrize("name", list(FILTERS))
@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ((1080, 1920), (256, 455)),  # the pipeline's common shrink: 9 to 27 horizontal taps
        ((1200, 1600), (150, 1500)),  # shrinks more in height: Pillow 13 runs the vertical pass first
        ((2000, 1200), (100, 300)),  # vertical first, then long horizontal filters
        ((377, 501), (1003, 777)),  # upscale: two to six taps
        ((301, 1203), (300, 31)),  # long filters (up to 230 taps): two rows per call of the kernel
    ],
)
def test_large_shapes_match_pillow(name, src, dst):
    """Sizes where the SIMD kernels take their bulk paths (blocks of pixels, pairs of rows, the
    ring of intermediate rows), for L, RGB and RGBA, whole and windowed."""
    from fastprep import _core

    h, w = src
    oh, ow = dst
    rgb = _images(h, w)["photo"]
    for img in (np.ascontiguousarray(rgb[..., 1]), rgb, _rgba(h, w, seed=w)):
        want = _pillow(img, (ow, oh), name)
        np.testing.assert_array_equal(fastprep.resize(img, (ow, oh), filter=name), want, err_msg=str(img.shape))
        c = 1 if img.ndim == 2 else img.shape[2]
        x, y, cw, ch = ow // 5, oh // 3, ow // 2 + 1, oh // 2 + 1
        part = np.asarray(_core.resize_u8(np.ascontiguousarray(img), h, w, c, ow, oh, name, (x, y, cw, ch)))
        np.testing.assert_array_equal(part.reshape(want[y : y + ch, x : x + cw].shape), want[y : y + ch, x : x + cw])
