"""PNGs whose image data is cut short, ends early or carries a checksum Pillow never reads:
fastprep decodes exactly those Pillow decodes, with its pixels, and refuses the rest.

Pillow feeds its zlib decoder the data chunks in pieces of at most 64 KiB and stops as soon as
the image is complete (its last row, or a whole row in the same call that reached the stream's
end); only data running out before that, a zlib error it reaches (the Adler-32 included, when the
stream's end is in the piece of the last row), an unknown filter type, or a later data chunk cut
short refuses the file."""

from __future__ import annotations

import io
import random
import struct
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image

import fastprep
from fastprep.errors import DecodeError

from . import image_odd as odd


def pillow(blob: bytes, mode: str = "RGBA") -> np.ndarray | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(blob)) as im:
                im.load()
                return np.asarray(im.convert(mode))
    except (OSError, SyntaxError, ValueError):
        return None


def same_as_pillow(blob: bytes) -> bool:
    """Asserts fastprep's verdict is Pillow's; returns whether Pillow decodes the file."""
    want = pillow(blob)
    if want is None:
        with pytest.raises(DecodeError):
            fastprep.decode(blob, mode="RGBA")
        return False
    np.testing.assert_array_equal(fastprep.decode(blob, mode="RGBA"), want)
    return True


def parts(blob: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The chunks before the image data, and the zlib stream."""
    chunks = odd.png_chunks(blob)
    head = [c for c in chunks if c[0] not in (b"IDAT", b"IEND")]
    return head, b"".join(b for k, b in chunks if k == b"IDAT")


def with_data(head: list[tuple[bytes, bytes]], *idats: bytes, end: bool = True) -> bytes:
    return odd.png_build([*head, *((b"IDAT", d) for d in idats), *([(b"IEND", b"")] if end else [])])


def rows_png(width: int, height: int, depth: int, color: int, seed: int = 0) -> tuple[list, bytes, int]:
    """A PNG's header chunks, its raw filtered rows (random samples, filter types 0-4) and the
    bytes of one row."""
    rng = np.random.default_rng(seed)
    samples = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    row = 1 + (width * samples * depth + 7) // 8
    raw = rng.integers(0, 256, (height, row), dtype=np.uint8)
    raw[:, 0] = rng.integers(0, 5, height)
    head = [(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0))]
    if color == 3:
        head.append((b"PLTE", rng.integers(0, 256, 3 << depth, dtype=np.uint8).tobytes()))
        head.append((b"tRNS", b"\x00\x80"))
    return head, raw.tobytes(), row


FORMATS = {"rgb8": (2, 8), "palette4": (3, 4), "gray16": (0, 16), "rgba16": (6, 16), "gray2": (0, 2)}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_last_idat_cut_after_the_last_row_decodes(fmt):
    color, depth = FORMATS[fmt]
    head, raw, _ = rows_png(23, 11, depth, color)
    blob = with_data(head, zlib.compress(raw), end=False)
    # the file cut inside the chunk's CRC, the Adler-32, or the stream's end-of-block
    decoded = [same_as_pillow(blob[:-k]) for k in range(1, 9)]
    assert decoded[:4] == [True] * 4, decoded
    # cut inside the last row: Pillow runs out of data
    assert not same_as_pillow(blob[: len(blob) - 4 - len(zlib.compress(raw)) // 3])


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_stream_ending_early_on_a_row_boundary_leaves_zero_rows(fmt):
    color, depth = FORMATS[fmt]
    head, raw, row = rows_png(17, 9, depth, color, seed=1)
    for k in (1, 4, 8):
        # Pillow stops at the stream's end when it completes a row: the rest of the image is 0
        assert same_as_pillow(with_data(head, zlib.compress(raw[: k * row])))
    # the stream ends inside a row: Pillow waits for data that never comes
    assert not same_as_pillow(with_data(head, zlib.compress(raw[: 3 * row + 2])))
    # the stream's end in a later chunk than its last row's bytes: not in the same zlib call
    z = zlib.compress(raw[: 4 * row])
    assert not same_as_pillow(with_data(head, z[:-4], z[-4:]))


def test_header_claiming_many_more_rows_than_the_data():
    head, raw, _ = rows_png(24, 20, 8, 2, seed=2)
    ihdr = struct.pack(">IIBBBBB", 24, 2_000_000, 8, 2, 0, 0, 0)
    tall = [(b"IHDR", ihdr), *head[1:]]
    # the data ends on a row boundary: Pillow decodes 2,000,000 rows, all but 20 of them zero
    got = fastprep.decode(with_data(tall, zlib.compress(raw)), mode="RGB")
    assert got.shape == (2_000_000, 24, 3)
    small = fastprep.decode(with_data(head, zlib.compress(raw)), mode="RGB")
    np.testing.assert_array_equal(got[:20], small)
    assert not got[20:].any()
    # ... or inside a row: refused before anything of the image's size is allocated
    with pytest.raises(DecodeError) as e:
        fastprep.decode(with_data(tall, zlib.compress(raw[:-1])))
    assert e.value.reason == "truncated"


def test_adler32_counts_only_where_pillows_zlib_reads_it():
    head, raw, _ = rows_png(31, 13, 8, 2, seed=3)
    z = bytearray(zlib.compress(raw))
    z[-1] ^= 1
    z = bytes(z)
    # in the chunk of the last row: checked (Pillow: "broken data stream")
    assert not same_as_pillow(with_data(head, z))
    # in a chunk of its own, or cut off: the image is complete before zlib gets to it
    assert same_as_pillow(with_data(head, z[:-4], z[-4:]))
    assert same_as_pillow(with_data(head, z[:-2], z[-2:]))
    assert same_as_pillow(with_data(head, z[:-4]))


def _stored(raw: bytes, before_end: int = 0) -> bytes:
    """A zlib stream of stored blocks, padded with empty ones until its final block and
    checksum reach past `before_end`; its Adler-32 broken."""
    z = bytearray(b"\x78\x01")
    for i in range(0, len(raw), 65_535):
        block = raw[i : i + 65_535]
        z += struct.pack("<BHH", 0, len(block), 0xFFFF ^ len(block)) + block
    while len(z) + 9 <= before_end:
        z += struct.pack("<BHH", 0, 0, 0xFFFF)
    return bytes(z + struct.pack("<BHH", 1, 0, 0xFFFF) + struct.pack(">I", zlib.adler32(raw) ^ 1))


def test_adler32_in_another_64k_piece_of_the_same_chunk():
    # Pillow reads a chunk 65,536 bytes at a time: the stream's end in a later piece than the
    # image's last byte is not read, in one chunk as in several
    rng = np.random.default_rng(4)
    raw = b"".join(b"\x00" + rng.integers(0, 256, 3 * 200, dtype=np.uint8).tobytes() for _ in range(160))
    head = [(b"IHDR", struct.pack(">IIBBBBB", 200, 160, 8, 2, 0, 0, 0))]
    assert 65_536 < len(raw) < 131_000
    assert not same_as_pillow(with_data(head, _stored(raw)))
    padded = _stored(raw, before_end=131_072)
    assert len(padded) > 131_072
    assert same_as_pillow(with_data(head, padded))


def test_a_data_chunk_cut_after_the_one_that_completes_the_image():
    head, raw, _ = rows_png(19, 7, 8, 6, seed=5)
    z = zlib.compress(raw)
    whole = with_data(head, z, z[:10], end=False)
    # Pillow reads the next chunk with the ones after the image: a cut body refuses the file
    assert not same_as_pillow(whole[:-8])
    assert same_as_pillow(whole)


def test_data_run_broken_by_another_chunk():
    head, raw, _ = rows_png(19, 7, 8, 2, seed=6)
    z = zlib.compress(raw)
    k = len(z) // 2
    blob = odd.png_build([*head, (b"IDAT", z[:k]), (b"tEXt", b"a\x00b"), (b"IDAT", z[k:]), (b"IEND", b"")])
    assert not same_as_pillow(blob)


def test_interlaced_stream_ending_early():
    rng = np.random.default_rng(7)
    w, h = 21, 13
    passes = [(0, 8, 0, 8), (4, 8, 0, 8), (0, 4, 4, 8), (2, 4, 0, 4), (0, 2, 2, 4), (1, 2, 0, 2), (0, 1, 1, 2)]
    raw, ends = b"", []
    for x0, dx, y0, dy in passes:
        n = len(range(x0, w, dx))
        for _ in range(y0, h, dy):
            raw += b"\x00" + rng.integers(0, 256, 3 * n, dtype=np.uint8).tobytes()
            ends.append(len(raw))
    head = [(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 1))]
    assert same_as_pillow(with_data(head, zlib.compress(raw)))
    for k in (1, 5, len(ends) // 2):
        assert same_as_pillow(with_data(head, zlib.compress(raw[: ends[k]])))
    assert not same_as_pillow(with_data(head, zlib.compress(raw[: ends[5] + 3])))
    blob = with_data(head, zlib.compress(raw), end=False)
    assert same_as_pillow(blob[:-3])


def test_unknown_filter_type_before_the_stream_ends():
    head, raw, row = rows_png(9, 6, 8, 0, seed=8)
    bad = bytearray(raw)
    bad[2 * row] = 5
    assert not same_as_pillow(with_data(head, zlib.compress(bytes(bad))))
    # after the rows Pillow decodes (the stream ends first): not read
    assert same_as_pillow(with_data(head, zlib.compress(bytes(bad[: 2 * row]))))
    # before the data runs out: Pillow reports the filter ("unrecognized data stream contents")
    short = with_data(head, zlib.compress(bytes(bad[: 3 * row + 2])))
    assert not same_as_pillow(short)
    with pytest.raises(DecodeError, match="unknown filter type 5") as e:
        fastprep.decode(short)
    assert e.value.reason == "corrupt"


def test_partial_apng_frame_with_its_last_idat_cut():
    frames = odd.partial_frame_apngs()
    blob = frames["p-trns-0-30x20-at-5,3"]
    chunks = odd.png_chunks(blob)
    assert same_as_pillow(odd.png_build(chunks[:-1])[:-3])  # the CRC cut: Pillow decodes
    idat = [c for c in chunks if c[0] == b"IDAT"]
    # a repeated IDAT cut short after the frame's: Pillow refuses it
    again = odd.png_build([*chunks[:-1], idat[-1]])
    assert not same_as_pillow(again[:-10])


def _mutant(rng: random.Random, head: list, z: bytes, row: int, height: int) -> bytes:
    op = rng.randrange(6)
    if op == 0:  # the stream ends early
        n = rng.randrange(height + 1) * row + (rng.randrange(row) if rng.random() < 0.5 else 0)
        z = zlib.compress(zlib.decompress(z)[:n], rng.choice((0, 6)))
    elif op == 1:  # a broken Adler-32, or any bit
        b = bytearray(z)
        b[-1 - rng.randrange(4) if rng.random() < 0.6 else rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        z = bytes(b)
    elif op == 2:  # its end dropped
        z = z[: len(z) - rng.randint(1, 6)]
    elif op == 3:  # data after the stream
        z += rng.randbytes(rng.randint(1, 9))
    cuts = sorted(rng.sample(range(1, len(z)), min(len(z) - 1, rng.choice((0, 1, 3)))))
    pieces = [z[a:b] for a, b in zip([0, *cuts], [*cuts, len(z)], strict=True)]
    blob = with_data(head, *pieces, end=rng.random() < 0.7)
    if op >= 4:  # the file cut inside its last chunks
        blob = blob[: len(blob) - rng.randint(1, min(len(z), 24))]
    return blob


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_image_data_mutants_match_pillow(fmt):
    """Streams ended early, checksums broken, chunks split and cut: decoded as Pillow decodes
    them, refused where it refuses (before this, about 1 in 17 was refused by fastprep alone)."""
    color, depth = FORMATS[fmt]
    head, raw, row = rows_png(37, 21, depth, color, seed=9)
    z = zlib.compress(raw)
    rng = random.Random(f"png-idat-{fmt}")
    decoded = sum(same_as_pillow(_mutant(rng, head, z, row, 21)) for _ in range(300))
    assert 60 < decoded < 270, decoded


def _tail_streams(raw: bytes) -> list[bytes]:
    """zlib streams of the same rows: default, stored, fixed Huffman; each also ending with a
    sync flush (an empty stored block) before the final block."""
    out = []
    for level, strategy in ((6, zlib.Z_DEFAULT_STRATEGY), (0, zlib.Z_DEFAULT_STRATEGY), (9, zlib.Z_FIXED)):
        for sync in (False, True):
            co = zlib.compressobj(level, zlib.DEFLATED, 15, 8, strategy)
            s = co.compress(raw)
            out.append(s + (co.flush(zlib.Z_SYNC_FLUSH) if sync else b"") + co.flush())
    return out


@pytest.mark.parametrize("size", [(24, 20), (7, 5)])
def test_bit_flips_in_the_streams_last_bytes_match_pillow(size):
    """Every bit of the last 14 bytes of the stream (the last rows' codes, block ends and
    headers, the Adler-32) flipped in turn: Pillow's verdict and pixels each time."""
    head, stream = parts(odd.png(odd.photo(*size)))
    decoded = 0
    for s in _tail_streams(zlib.decompress(stream)):
        for pos in range(max(2, len(s) - 14), len(s)):
            for bit in range(8):
                d = bytearray(s)
                d[pos] ^= 1 << bit
                decoded += same_as_pillow(with_data(head, bytes(d)))
    assert decoded > 0


def test_error_at_the_end_of_the_chunk_that_completes_the_image():
    """The stream's last rows end a data chunk, followed by a bad block header in that chunk's last
    byte, the stream's end (a block end and the Adler-32) in a chunk of its own: Pillow's zlib
    reads that byte and refuses the file, and so does fastprep (the crate's inflater stops at the
    chunk's end with the image complete; a short last data chunk sends the file to Pillow's
    reading). The same split with the byte intact decodes, with the image's own pixels."""
    head, stream = parts(odd.png(odd.photo(7, 5)))
    co = zlib.compressobj(6)
    s = bytearray(co.compress(zlib.decompress(stream)) + co.flush(zlib.Z_SYNC_FLUSH) + co.flush())
    good = with_data(head, bytes(s))
    split = with_data(head, bytes(s[:-5]), bytes(s[-5:]))
    np.testing.assert_array_equal(fastprep.decode(split, mode="RGBA"), pillow(good))
    assert same_as_pillow(split)
    s[-6] ^= 4  # the final block's header byte (fixed Huffman) becomes BTYPE=3, reserved
    bad = with_data(head, bytes(s[:-5]), bytes(s[-5:]))
    assert pillow(bad) is None
    with pytest.raises(DecodeError):
        fastprep.decode(bad, mode="RGBA")
    assert not same_as_pillow(bad)  # refused by both: nothing decoded


@pytest.mark.parametrize("tail", [1, 4, 9])
def test_bit_flips_before_a_stream_end_in_its_own_chunk_match_pillow(tail):
    """Every bit of the 12 bytes before a cut that leaves the stream's last `tail` bytes in a
    chunk of their own: Pillow's verdict and pixels each time."""
    head, stream = parts(odd.png(odd.photo(7, 5)))
    for s in _tail_streams(zlib.decompress(stream)):
        for pos in range(max(2, len(s) - tail - 12), len(s) - tail):
            for bit in range(8):
                d = bytearray(s)
                d[pos] ^= 1 << bit
                same_as_pillow(with_data(head, bytes(d[:-tail]), bytes(d[-tail:])))
