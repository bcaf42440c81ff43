"""Fuzzed bad input: thousands of mutated real JPEG and PNG files (bit flips, overwritten runs,
cuts, spliced and repeated segments, and edits to header fields). Every one must either decode
or raise DecodeError: no crash, no other exception, no hang (pytest-timeout bounds the run), and
a batch of them reports each failure by index while decoding the rest."""

from __future__ import annotations

import random
import struct
import zlib

import numpy as np
import pytest

import fastprep
from fastprep.errors import DecodeError

from . import image_data as data

SEEDS = {
    "jpeg-420": lambda: data.jpeg(data.photos()["china.jpg"][:120, :160], quality=80, subsampling=2),
    "jpeg-444-prog": lambda: data.jpeg(data.photos()["flower.jpg"][:96, :128], quality=70, progressive=True),
    "jpeg-gray-restart": lambda: data.jpeg(
        data.photos()["china.jpg"][:64, :80], mode="L", quality=60, restart_marker_blocks=2
    ),
    "jpeg-cmyk": lambda: data.jpeg(data.photos()["flower.jpg"][:48, :64], mode="CMYK", quality=75),
    "png-rgba-adam7": lambda: data.png_variants()["rgba8-adam7"],
    "png-pal2-trns": lambda: data.png_variants()["pal2-trns"],
    "png-gray16": lambda: data.png_variants()["gray16"],
}


REASONS = {"empty", "unknown_format", "truncated", "corrupt", "unsupported", "too_large", "resources"}


def mutate(blob: bytes, rng: random.Random) -> bytes:
    b = bytearray(blob)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        n = len(b)
        if n < 4:
            break
        if op == 0:  # flip bits
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif op == 1:  # overwrite a run with one value (0x00 and 0xFF are the interesting ones)
            i = rng.randrange(n)
            b[i : i + rng.randint(1, 64)] = bytes([rng.choice((0, 0xFF, rng.randrange(256)))]) * rng.randint(1, 64)
        elif op == 2:  # cut
            b = b[: rng.randrange(1, n)]
        elif op == 3:  # drop a run
            i = rng.randrange(n)
            del b[i : i + rng.randint(1, 256)]
        elif op == 4:  # repeat a run
            i = rng.randrange(n)
            j = min(n, i + rng.randint(1, 512))
            b[j:j] = b[i:j] * rng.randint(1, 3)
        elif op == 5:  # header fields: sizes, counts, lengths live in the first bytes
            i = rng.randrange(min(n, 700))
            b[i] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        else:  # random bytes
            i = rng.randrange(n)
            b[i : i + 16] = rng.randbytes(16)
    return bytes(b)


def fix_png_crcs(blob: bytes) -> bytes:
    """Recompute each chunk's CRC, so that mutations reach the decoder's inner checks (zlib data,
    filters, IHDR fields) instead of all stopping at the CRC."""
    b = bytearray(blob)
    i = 8
    while i + 12 <= len(b):
        n = struct.unpack(">I", b[i : i + 4])[0]
        end = i + 8 + n
        if end + 4 > len(b):
            break
        b[end : end + 4] = struct.pack(">I", zlib.crc32(bytes(b[i + 4 : end])))
        i = end + 4
    return bytes(b)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed_name", sorted(SEEDS))
def test_mutated_files_decode_or_raise_decode_error(seed_name):
    blob = SEEDS[seed_name]()
    want = fastprep.decode(blob)
    rng = random.Random(f"fastprep-{seed_name}")
    outcomes = {"decoded": 0, "refused": 0}
    mutants = [mutate(blob, rng) for _ in range(600)]
    if seed_name.startswith("png"):
        mutants = [fix_png_crcs(m) if i % 2 else m for i, m in enumerate(mutants)]
    for m in mutants:
        for mode in ("RGB", "unchanged"):
            try:
                arr = fastprep.decode(m, mode=mode)
            except DecodeError as e:
                assert e.reason in REASONS
                assert str(e)
                outcomes["refused"] += 1
            else:
                assert arr.dtype == np.uint8 and arr.ndim == 3 and arr.size > 0
                outcomes["decoded"] += 1
    # the batch path: same verdicts, by index, with every other image produced
    got = fastprep.decode_batch([*mutants, blob], on_error="skip", num_threads=2)
    np.testing.assert_array_equal(got[-1], want)
    for m, g in zip(mutants, got, strict=False):
        try:
            single = fastprep.decode(m)
        except DecodeError:
            assert g is None
        else:
            np.testing.assert_array_equal(g, single)
    # the mutations must reach both outcomes, or the fuzzer tests nothing; except that every
    # mutant of the small PNGs' one IDAT breaks its zlib checksum, which Pillow (and so
    # fastprep) refuses, and the rest break a chunk Pillow checks (the one pal2 mutant that
    # once decoded had its tRNS renamed "\x7fRNS", not a chunk name, which Pillow refuses)
    assert outcomes["refused"] > 50, outcomes
    assert outcomes["decoded"] > 0 or seed_name in ("png-gray16", "png-pal2-trns"), outcomes


@pytest.mark.timeout(300)
@pytest.mark.parametrize("draft", [False, True], ids=["exact", "draft"])
def test_mutated_jpegs_through_the_pipeline(draft):
    """The pipeline decodes only the crop's region of a JPEG, at a draft scale when asked: mutated
    files must still either come out or be reported by index, with the same verdict as a decode."""
    photo = data.scaled(data.photos()["china.jpg"], (400, 300))
    seeds = [data.jpeg(photo, quality=80, subsampling=2), data.jpeg(photo, quality=70, progressive=True)]
    rng = random.Random(f"fastprep-pipeline-{draft}")
    mutants = [mutate(seeds[i % 2], rng) for i in range(400)]
    batch, ok = fastprep.preprocess([*mutants, *seeds], resize_shorter=96, crop=(64, 48), draft=draft, on_error="skip")
    assert batch.shape == (len(mutants) + 2, 3, 48, 64) and ok[-2:].all()
    assert np.isfinite(batch).all()
    refused = 0
    for i, m in enumerate(mutants):
        try:
            fastprep.decode(m)
        except DecodeError:
            refused += 1
            assert not ok[i], f"mutant {i}: refused by decode, produced by the pipeline"
            assert not batch[i].any()
        else:
            assert ok[i], f"mutant {i}: decoded alone, refused by the pipeline"
    assert 20 < refused < len(mutants) - 20, refused
