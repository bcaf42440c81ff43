"""Odd files that Pillow's own test images exercise (made in image_odd.py): fastprep gives
Pillow's pixels where Pillow decodes, and raises DecodeError where Pillow refuses."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageOps

import fastprep
from fastprep.errors import DecodeError

from . import image_odd as odd

JPEGS = odd.odd_jpegs()
PNGS = odd.odd_pngs()
APNGS = odd.odd_apngs()
PARTIAL_FRAMES = odd.partial_frame_apngs()
REFUSED_BY_PILLOW = {
    "bad-adler32",
    "bad-ihdr-crc",
    "chunk-after-idat-cut",
    "big-ztxt",
    "trns-rgb-short",
    "trns-rgb-short-after-idat",
    "trns-gray-short",
}
APNGS_REFUSED_BY_PILLOW = {
    "fdat-without-fctl",
    "fdat-without-fctl-no-actl",
    "still-fdat-out-of-sequence",
    "first-fctl-not-0",
    "first-fctl-outside-image",
    "empty-first-frame",
    "no-actl-fctl-after-idat-out-of-sequence",
    "zero-frames-then-fdat",
    "two-actl-still-bad-sequence",
    "short-actl",
    "short-gama",
    "short-phys-after-idat",
    "not-a-name-before-idat",
}


def pillow(blob: bytes, mode: str) -> np.ndarray | None:
    try:
        with Image.open(io.BytesIO(blob)) as im:
            im.load()
            out = ImageOps.exif_transpose(im).convert(mode)
    except (OSError, SyntaxError, ValueError):
        return None
    arr = np.asarray(out)
    return arr[..., None] if arr.ndim == 2 else arr


def check(blob: bytes, mode: str) -> None:
    want = pillow(blob, mode)
    if want is None:
        with pytest.raises(DecodeError):
            fastprep.decode(blob, mode=mode)
    else:
        np.testing.assert_array_equal(fastprep.decode(blob, mode=mode), want)


@pytest.mark.parametrize("name", sorted(JPEGS))
def test_odd_jpegs_decode_as_pillow(name):
    assert pillow(JPEGS[name], "RGB") is not None, "Pillow decodes every one of these"
    for mode in ("RGB", "L", "RGBA"):
        check(JPEGS[name], mode)


@pytest.mark.parametrize("name", sorted(PNGS))
def test_odd_pngs_as_pillow(name):
    assert (pillow(PNGS[name], "RGB") is None) == (name in REFUSED_BY_PILLOW)
    for mode in ("RGB", "L", "RGBA"):
        check(PNGS[name], mode)


@pytest.mark.filterwarnings("ignore:Invalid APNG")
@pytest.mark.parametrize("name", sorted(APNGS))
def test_odd_apng_chunk_sequences_as_pillow(name):
    """Pillow refuses a file for the APNG chunks it reads with the first frame (after its pixels
    are decoded, too) and stops reading an animated file at the next frame's fcTL."""
    assert (pillow(APNGS[name], "RGB") is None) == (name in APNGS_REFUSED_BY_PILLOW)
    for mode in ("RGB", "L", "RGBA"):
        check(APNGS[name], mode)
    if name in APNGS_REFUSED_BY_PILLOW:
        with pytest.raises(DecodeError) as e:
            fastprep.decode(APNGS[name])
        assert e.value.reason == "corrupt"


@pytest.mark.filterwarnings("ignore:Invalid APNG")
@pytest.mark.parametrize("name", sorted(PARTIAL_FRAMES))
def test_apng_first_frame_of_part_of_the_image_as_pillow(name):
    """Pillow decodes such a frame into its place on a zero-filled image (not a black one: zero
    is the palette's first colour, or transparent where tRNS says so)."""
    assert pillow(PARTIAL_FRAMES[name], "RGB") is not None, "Pillow decodes every one of these"
    for mode in ("RGB", "L", "RGBA"):
        check(PARTIAL_FRAMES[name], mode)


def test_orientation_sources_really_rotate():
    """The cases above would pass with no orientation at all if Pillow ignored them too."""
    assert fastprep.decode(JPEGS["xmp-6-element"]).shape[:2] == (48, 40)
    assert fastprep.decode(JPEGS["exif-8-bad-next-ifd"]).shape[:2] == (48, 40)
    assert fastprep.decode(PNGS["exif-6-after-idat"]).shape[:2] == (48, 40)
    assert fastprep.decode(PNGS["raw-profile-6-ztxt"]).shape[:2] == (48, 40)
    assert fastprep.decode(APNGS["animated-exif-before-next-fctl"]).shape[:2] == (48, 40)
    assert fastprep.decode(APNGS["animated-exif-after-next-fctl"]).shape[:2] == (40, 48)  # not read
    assert fastprep.decode(JPEGS["exif-6-over-xmp-3"]).shape[:2] == (48, 40)
    plain = fastprep.decode(JPEGS["stray-before-dqt"])
    np.testing.assert_array_equal(fastprep.decode(JPEGS["xmp-3-attribute"]), plain[::-1, ::-1])


def test_pillow_transparency_not_the_spec():
    """Pillow compares tRNS with its 8-bit samples: a 1-bit gray tRNS of 255 makes white
    transparent (the spec: nothing), a 2-bit tRNS of 2 makes nothing transparent (the spec:
    gray 170)."""
    white_transparent = fastprep.decode(PNGS["1bit-trns-255"], mode="RGBA")
    assert white_transparent[0, :, 3].tolist() == [0, 255, 0, 255, 255, 0, 255, 0]
    assert (fastprep.decode(PNGS["2bit-trns-2"], mode="RGBA")[..., 3] == 255).all()
    # 16-bit RGB: the tRNS (1, 3, 5) matches the high bytes of (0x0100, 0x0300, 0x0500)
    unchanged = fastprep.decode(PNGS["16bit-rgb-trns-high-bytes"], mode="unchanged")
    assert unchanged[..., 3].tolist() == [[255, 0]]
