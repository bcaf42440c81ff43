"""Structure-aware fuzzing of odd files: the mutations Pillow's odd test images are made of
(segments and chunks dropped, repeated, reordered, stray bytes before markers, Huffman or
quantization tables removed, EXIF and XMP blocks inserted in odd places, cut short or pointing
nowhere, checksums broken), applied at random to JPEGs, PNGs and APNGs. Every mutant must either give
Pillow's exact pixels or raise DecodeError; a crash, another exception or other pixels fail."""

from __future__ import annotations

import io
import random
import struct
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image, ImageOps

import fastprep
from fastprep.errors import DecodeError

from . import image_odd as odd


def _exif_blob(rng: random.Random) -> bytes:
    e = odd.exif(rng.randint(0, 9), rng.choice((0, 8, 0xFFFFFF, 2**32 - 1)), little=rng.random() < 0.5)
    if rng.random() < 0.3:
        e = e[: rng.randrange(len(e))]
    return e


def _metadata_segment(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return odd.app1(b"Exif\x00\x00" + _exif_blob(rng))
    return odd.app1(odd.XMP_JPEG + odd.xmp(rng.randint(0, 9), element=rng.random() < 0.5))


def mutate_jpeg(blob: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 3)):
        segs = odd.segments(blob)
        head = [(m, blob[s:e]) for m, s, e in segs]
        op = rng.randrange(7)
        if op == 0:  # drop a table or APP segment (DHT: a Motion-JPEG frame; DQT: refused)
            cands = [i for i, (m, _) in enumerate(head) if m in (0xC4, 0xDB, 0xE0, 0xE1)]
            if cands:
                del head[rng.choice(cands)]
        elif op == 1:  # stray bytes before a marker
            i = rng.randrange(len(head))
            head[i] = (head[i][0], rng.choice((b"\x00", b"\x13\x37\x00", b"\xff\xff", rng.randbytes(5))) + head[i][1])
        elif op == 2 and len(head) > 2:  # repeat or swap header segments
            i, j = rng.randrange(len(head) - 1), rng.randrange(len(head) - 1)
            if rng.random() < 0.5:
                head.insert(j, head[i])
            else:
                head[i], head[j] = head[j], head[i]
        elif op == 3:  # an EXIF or XMP segment somewhere before the scan
            head.insert(rng.randrange(max(1, len(head))), (0xE1, _metadata_segment(rng)))
        elif op == 4 and head[-1][0] == 0xDA:  # a marker inside the scan data
            scan = bytearray(head[-1][1])
            i = rng.randrange(len(scan) // 2, len(scan))
            scan[i:i] = rng.choice((b"\xff\xd0", b"\xff\xd9", b"\xff\xc8", b"\xff\xe1\x00\x04ab"))
            head[-1] = (0xDA, bytes(scan))
        elif op == 5:  # cut
            blob = blob[: rng.randrange(len(blob) // 2, len(blob))]
            continue
        elif head[-1][0] == 0xDA:  # flip bits in the scan
            scan = bytearray(head[-1][1])
            scan[rng.randrange(len(scan))] ^= 1 << rng.randrange(8)
            head[-1] = (0xDA, bytes(scan))
        blob = blob[:2] + b"".join(s for _, s in head)
    return blob


def mutate_png(blob: bytes, rng: random.Random) -> bytes:
    chunks = odd.png_chunks(blob)
    raw_crc = None
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(7)
        if op == 0 and len(chunks) > 2:  # drop a chunk (IEND, tRNS, text, one IDAT...)
            del chunks[rng.randrange(1, len(chunks))]
        elif op == 1:  # metadata before or after the image data
            kind = rng.choice((b"eXIf", b"tEXt", b"zTXt", b"iTXt"))
            e = b"Exif\x00\x00" + _exif_blob(rng)
            hexed = b"\nexif\n%8d\n" % len(e) + e.hex().encode() + b"\n"
            body = {
                b"eXIf": e[6:],
                b"tEXt": b"Raw profile type exif\x00" + hexed,
                b"zTXt": b"Raw profile type exif\x00\x00" + zlib.compress(hexed),
                b"iTXt": b"XML:com.adobe.xmp\x00\x00\x00\x00\x00" + odd.xmp(rng.randint(0, 9), rng.random() < 0.5),
            }[kind]
            chunks.insert(rng.randrange(1, len(chunks) + 1), (kind, body))
        elif op == 2:  # split the image data into several IDATs
            i = next((k for k, c in enumerate(chunks) if c[0] == b"IDAT"), None)
            if i is not None and len(chunks[i][1]) > 2:
                d = chunks[i][1]
                cut = rng.randrange(1, len(d))
                chunks[i : i + 1] = [(b"IDAT", d[:cut]), (b"IDAT", d[cut:])]
        elif op == 3:  # repeat a chunk
            i = rng.randrange(1, len(chunks))
            chunks.insert(rng.randrange(1, len(chunks) + 1), chunks[i])
        elif op == 4:  # a transparency value
            w = rng.choice((2, 6))
            chunks.insert(1, (b"tRNS", rng.randbytes(w)))
        elif op == 5:  # a broken CRC on one chunk
            raw_crc = rng.randrange(len(chunks))
        else:  # flip a bit inside a chunk body
            i = rng.randrange(len(chunks))
            body = bytearray(chunks[i][1])
            if body:
                body[rng.randrange(len(body))] ^= 1 << rng.randrange(8)
                chunks[i] = (chunks[i][0], bytes(body))
    out = bytearray(odd.png_build(chunks))
    if raw_crc is not None and raw_crc < len(chunks):
        i = 8 + sum(12 + len(b) for _, b in chunks[:raw_crc]) + 8 + len(chunks[raw_crc][1])
        out[i] ^= 0x55
    if rng.random() < 0.15:
        out = out[: rng.randrange(len(out) // 2, len(out))]
    return bytes(out)


def pillow(blob: bytes) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Pillow's ``exif_transpose(open).convert("RGBA")`` (None if Pillow refuses), and, where
    only ``exif_transpose`` raises (EXIF it cannot read), the image as decoded without it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            im = Image.open(io.BytesIO(blob))
            im.load()
        except Exception:
            return None, None
        with im:
            try:
                return np.asarray(ImageOps.exif_transpose(im).convert("RGBA")), None
            except Exception:
                return None, np.asarray(im.convert("RGBA"))


SEEDS = {
    "jpeg-420": lambda: odd.jpeg(odd.photo(64, 48), quality=85),
    "jpeg-444-prog": lambda: odd.jpeg(odd.photo(40, 32, seed=1), quality=70, progressive=True, subsampling=0),
    "jpeg-mjpeg": lambda: odd.without(odd.jpeg(odd.photo(48, 32, seed=2), quality=80), 0xC4),
    "png-rgb": lambda: odd.png(odd.photo(24, 20)),
    "png-gray2": lambda: odd.png_raw(8, 2, 2, 0, [b"\x1b\xe4", b"\xe4\x1b"], struct.pack(">H", 2)),
    "png-gray16": lambda: odd.png_raw(3, 1, 16, 0, [struct.pack(">HHH", 300, 7, 0x0707)], struct.pack(">H", 7)),
    # APNG: frame controls and fdATs dropped, repeated, reordered, their sequence numbers flipped
    "apng-3-frames": lambda: odd.odd_apngs()["three-frames"],
    "apng-part-fdat-palette": lambda: odd.partial_frame_apngs()["p-trns-0-30x20-at-5,3-fdat"],
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed_name", sorted(SEEDS))
def test_odd_mutants_match_pillow_or_raise(seed_name):
    blob = SEEDS[seed_name]()
    rng = random.Random(f"fastprep-odd-{seed_name}")
    mutate = mutate_jpeg if seed_name.startswith("jpeg") else mutate_png
    mutants = [mutate(blob, rng) for _ in range(250)]
    counts = {"same": 0, "both_refuse": 0, "only_fastprep_refuses": 0, "only_pillow_refuses": 0}
    for m in mutants:
        want, unoriented = pillow(m)
        try:
            got = fastprep.decode(m, mode="RGBA")
        except DecodeError as e:
            assert str(e) and e.reason
            counts["both_refuse" if want is None else "only_fastprep_refuses"] += 1
            continue
        if want is None:
            counts["only_pillow_refuses"] += 1
            if unoriented is not None:
                # A deliberate difference (README): EXIF that makes Pillow's exif_transpose
                # raise is ignored, and the image decodes as Pillow decodes it unrotated.
                np.testing.assert_array_equal(got, unoriented, err_msg=repr(m[:64]))
        else:
            np.testing.assert_array_equal(got, want, err_msg=repr(m[:64]))
            counts["same"] += 1
    batch = fastprep.decode_batch(mutants, mode="RGBA", on_error="skip", num_threads=2)
    for m, g in zip(mutants, batch, strict=True):
        if g is not None:
            np.testing.assert_array_equal(g, fastprep.decode(m, mode="RGBA"))
    assert counts["same"] > 25 and counts["both_refuse"] + counts["only_fastprep_refuses"] > 10, counts
    # fastprep refuses only what Pillow refuses, up to a few (libjpeg's warnings are judged
    # from the last one, which TurboJPEG keeps; Pillow sees them as they come)
    assert counts["only_fastprep_refuses"] <= len(mutants) // 25, counts
