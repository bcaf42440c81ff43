"""Host side of the GPU entropy decoder (``cuda/jpeg_entropy.cu``): read a baseline JPEG's tables
and scan header, lay out a batch of compressed scans for one upload, and launch the decoding.

Only what the kernels decode exactly as libjpeg-turbo does comes here: one interleaved,
sequential, Huffman-coded 8-bit scan holding every component, tables libjpeg-turbo would accept,
the file ended by EOI. Everything else (progressive, arithmetic, multi-scan, 12-bit, odd tables)
returns None from `parse_scan` and keeps libjpeg-turbo's entropy decoding on the CPU; a scan the
kernels find damaged is flagged in the status array and decoded on the CPU too, where
libjpeg-turbo decides what it is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

__all__ = ["EntropyBatch", "ScanPlan", "decode_scans", "parse_scan"]

# Must match cuda/jpeg_entropy.cu.
TILE_BYTES = 1024
TILE_THREADS = 128
SYNC_THREADS = 128
CHUNK_BITS = 1024
EDESC_LEN = 64
U_BASE, S_BASE, S_LEN = 16, 36, 7
HT_LEN = 802
CV_LEN = 6
STATUS_NAMES = {
    1: "a marker inside the scan",
    2: "restart markers out of order",
    4: "the scan ends before its last block",
    8: "a bit pattern that is no Huffman code",
    16: "a chunk layout overflow or a look-back that waited too long",
}

# The tables of JPEG Annex K.3 that libjpeg-turbo installs (jstdhuff.c) when a file has none, as
# Motion-JPEG frames do: (class, slot) -> (code counts by length, symbols). Checked against the
# tables libjpeg-turbo itself writes (tests/test_gpu_entropy_emulated.py).
_STD = {
    (0, 0): ((0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0), bytes(range(12))),
    (0, 1): ((0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0), bytes(range(12))),
    (1, 0): (
        (0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 125),
        bytes.fromhex(
            "01020300041105122131410613516107227114328191a1082342b1c11552d1f02433627282090a161718191a25262728292a"
            "3435363738393a434445464748494a535455565758595a636465666768696a737475767778797a838485868788898a9293"
            "9495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7"
            "e8e9eaf1f2f3f4f5f6f7f8f9fa"
        ),
    ),
    (1, 1): (
        (0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 119),
        bytes.fromhex(
            "000102031104052131061241510761711322328108144291a1b1c109233352f0156272d10a162434e125f11718191a2627"
            "28292a35363738393a434445464748494a535455565758595a636465666768696a737475767778797a8283848586878889"
            "8a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae2e3e4e5"
            "e6e7e8e9eaf2f3f4f5f6f7f8f9fa"
        ),
    ),
}

Table = tuple[tuple[int, ...], bytes]


@dataclass(frozen=True)
class ScanPlan:
    """One file's scan as the kernels decode it."""

    start: int  # the entropy-coded bytes: data[start:end]
    end: int
    restart: int  # restart interval in MCUs (0: none)
    mcus: int
    mcus_per_row: int
    units: tuple[tuple[int, int, int], ...]  # per block of the MCU: scan component, column, row
    # per scan component: frame index, blocks per MCU across and down, DC table, AC table
    comps: tuple[tuple[int, int, int, Table, Table], ...]

    @property
    def segments(self) -> int:
        return -(-self.mcus // self.restart) if self.restart else 1


@functools.lru_cache(maxsize=256)
def derived_table(counts: tuple[int, ...], symbols: bytes, dc: bool) -> Any:
    """libjpeg's jpeg_make_d_derived_tbl as the kernel's int32 table (HT_LEN), or None where
    libjpeg-turbo would refuse the table (so that the CPU decoder reports it)."""
    import numpy as np

    if len(counts) != 16 or sum(counts) > 256 or len(symbols) != sum(counts):
        return None
    if dc and any(s > 15 for s in symbols):
        return None
    maxcode = [-1] * 17
    valoff = [0] * 17
    code, p = 0, 0
    for length in range(1, 17):
        n = counts[length - 1]
        if n:
            valoff[length] = p - code
            code += n
            p += n
            maxcode[length] = code - 1
        if code >= 1 << length:  # libjpeg: JERR_BAD_HUFF_TABLE
            return None
        code <<= 1
    out = np.zeros(HT_LEN, np.int32)
    for pattern in range(512):
        for length in range(1, 10):
            c = pattern >> (9 - length)
            if c <= maxcode[length]:
                out[pattern] = length << 8 | symbols[c + valoff[length]]
                break
    out[512:529] = maxcode
    out[529:546] = valoff
    out[546 : 546 + len(symbols)] = np.frombuffer(symbols, np.uint8)
    return out


def parse_scan(data: bytes, layout: dict[str, Any]) -> ScanPlan | None:
    """The scan of a baseline JPEG the kernels can decode, checked against its `layout`
    (``_core.jpeg_layouts``); None for anything else."""
    if data[:2] != b"\xff\xd8":
        return None
    tables: dict[tuple[int, int], Table] = {}
    restart = 0
    frame: list[tuple[int, int, int]] | None = None
    size = (0, 0)
    i, n = 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        m = data[i + 1]
        if m == 0xFF:
            i += 1
            continue
        seg_len = int.from_bytes(data[i + 2 : i + 4], "big")
        body = data[i + 4 : i + 2 + seg_len]
        if seg_len < 2 or len(body) != seg_len - 2:
            return None
        if m == 0xC4:  # DHT
            j = 0
            while j < len(body):
                if j + 17 > len(body):
                    return None
                tc, th = body[j] >> 4, body[j] & 15
                counts = tuple(body[j + 1 : j + 17])
                total = sum(counts)
                if tc > 1 or th > 3 or j + 17 + total > len(body):
                    return None
                tables[(tc, th)] = (counts, bytes(body[j + 17 : j + 17 + total]))
                j += 17 + total
        elif m == 0xDD:  # DRI
            if len(body) != 2:
                return None
            restart = int.from_bytes(body, "big")
        elif m in (0xC0, 0xC1):  # baseline / extended sequential Huffman
            if len(body) < 6 or body[0] != 8 or frame is not None:
                return None
            size = (int.from_bytes(body[3:5], "big"), int.from_bytes(body[1:3], "big"))
            nf = body[5]
            if len(body) != 6 + 3 * nf:
                return None
            frame = [(body[6 + 3 * c], body[7 + 3 * c] >> 4, body[7 + 3 * c] & 15) for c in range(nf)]
        elif 0xC2 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):
            return None  # progressive, lossless, arithmetic: libjpeg-turbo on the CPU
        elif m == 0xDA:
            return _scan(data, i + 2 + seg_len, body, frame, size, tables, restart, layout)
        elif m in (0xD8, 0xD9) or 0xD0 <= m <= 0xD7:
            return None
        i += 2 + seg_len
    return None


def _scan(
    data: bytes,
    start: int,
    body: bytes,
    frame: list[tuple[int, int, int]] | None,
    size: tuple[int, int],
    tables: dict[tuple[int, int], Table],
    restart: int,
    layout: dict[str, Any],
) -> ScanPlan | None:
    comps_l = layout["components"]
    if frame is None or size != (layout["width"], layout["height"]) or len(frame) != len(comps_l):
        return None
    ns = body[0] if body else 0
    if ns != len(frame) or len(body) != 4 + 2 * ns or tuple(body[1 + 2 * ns :]) != (0, 63, 0):
        return None  # one scan with every component, Ss=0, Se=63, Ah=Al=0
    ids = [f[0] for f in frame]
    if len(set(ids)) != len(ids):
        return None
    # The scan runs to the last EOI. Searching it for the first marker instead would cost the
    # host a pass over every byte (~0.15 ms per 1080p file): the unstuffing kernel does that pass
    # and flags a marker other than RSTn inside (another scan, a DNL, data after a first EOI),
    # which sends the file to the CPU. A file with no EOI after its scan (cut short) goes there now.
    end = data.rfind(b"\xff\xd9")
    if end < start:
        return None
    w, h = size
    max_h = max(f[1] for f in frame)
    max_v = max(f[2] for f in frame)
    if any(not (1 <= f[1] <= 4 and 1 <= f[2] <= 4) for f in frame):
        return None
    comps = []
    units: list[tuple[int, int, int]] = []
    single = ns == 1
    for s in range(ns):
        cid, sel = body[1 + 2 * s], body[2 + 2 * s]
        if cid not in ids:
            return None
        c = ids.index(cid)
        _, ch, cv = frame[c]
        if (comps_l[c][1], comps_l[c][2]) != (ch, cv):
            return None
        dc = tables.get((0, sel >> 4)) or _STD.get((0, sel >> 4))
        ac = tables.get((1, sel & 15)) or _STD.get((1, sel & 15))
        if dc is None or ac is None:
            return None
        if derived_table(dc[0], dc[1], True) is None or derived_table(ac[0], ac[1], False) is None:
            return None
        bh, bv = (1, 1) if single else (ch, cv)
        comps.append((c, bh, bv, dc, ac))
        units += [(s, x, y) for y in range(bv) for x in range(bh)]
    if len(units) > 10:
        return None  # libjpeg: JERR_BAD_MCU_SIZE
    if single:
        mcux, mcuy = comps_l[0][3], comps_l[0][4]
    else:
        mcux, mcuy = -(-w // (8 * max_h)), -(-h // (8 * max_v))
    return ScanPlan(start, end, restart, mcux * mcuy, mcux, tuple(units), tuple(comps))


@dataclass
class EntropyBatch:
    """The layout of a batch of scans in one upload, and the kernels' descriptors."""

    src_offsets: list[int]  # where each scan goes in the uploaded bytes
    nbytes: int
    desc: Any  # (n, EDESC_LEN) int64
    tables: Any  # int32, HT_LEN per distinct table
    tile_img: Any
    block_img: Any
    n_segments: int
    n_slots: int


def plan_batch(scans: list[ScanPlan], layouts: list[dict[str, Any]], coef_offsets: list[int]) -> EntropyBatch:
    """Descriptors for decoding scans[i] into the coefficients at element coef_offsets[i]."""
    import numpy as np

    desc = np.zeros((len(scans), EDESC_LEN), np.int64)
    table_ids: dict[tuple[Table, bool], int] = {}
    table_rows: list[Any] = []
    offsets: list[int] = []
    tile_img: list[Any] = []
    block_img: list[Any] = []
    src = seg = slot = 0

    def table(t: Table, dc: bool) -> int:
        key = (t, dc)
        if key not in table_ids:
            table_ids[key] = len(table_rows)
            table_rows.append(derived_table(t[0], t[1], dc))
        return table_ids[key]

    for n, (sp, lay, coff) in enumerate(zip(scans, layouts, coef_offsets, strict=True)):
        length = sp.end - sp.start
        tiles = -(-length // TILE_BYTES)
        slots = -(-(-(-length * 8 // CHUNK_BITS) + sp.segments) // SYNC_THREADS) * SYNC_THREADS
        row = desc[n]
        row[:10] = (src, length, seg, sp.segments, slot, slots, sp.restart, sp.mcus, len(sp.units), sp.mcus_per_row)
        row[10] = len(sp.comps)
        for u, (s, x, y) in enumerate(sp.units):
            row[U_BASE + 2 * u] = s
            row[U_BASE + 2 * u + 1] = x + 256 * y
        plane_off = [coff]
        for _id, _h, _v, wb, hb, _q in lay["components"]:
            plane_off.append(plane_off[-1] + wb * hb * 64)
        for s, (c, bh, bv, dc, ac) in enumerate(sp.comps):
            wb, hb = lay["components"][c][3], lay["components"][c][4]
            base = S_BASE + s * S_LEN
            row[base : base + S_LEN] = (plane_off[c], wb, hb, bh, bv, table(dc, True), table(ac, False))
        offsets.append(src)
        tile_img.append(np.full(tiles, n, np.int32))
        block_img.append(np.full(slots // SYNC_THREADS, n, np.int32))
        src += tiles * TILE_BYTES
        seg += sp.segments
        slot += slots
    return EntropyBatch(
        offsets,
        src,
        desc,
        np.concatenate(table_rows) if table_rows else np.zeros(HT_LEN, np.int32),
        np.concatenate(tile_img) if tile_img else np.zeros(0, np.int32),
        np.concatenate(block_img) if block_img else np.zeros(0, np.int32),
        seg,
        slot,
    )


def decode_scans(backend: Any, src: Any, batch: EntropyBatch, coefs: Any) -> Any:
    """Launches the entropy decoding of every scan of `batch` (its bytes at batch.src_offsets in
    the device array `src`) into `coefs` (int16, zeroed by the caller). Returns the device array
    of per-image status bits (0: decoded)."""
    import numpy as np

    from ..kernels import kernel_source

    xp = backend.xp
    source = kernel_source("jpeg_entropy.cu")
    n = len(batch.desc)
    if n == 0:
        return xp.zeros(1, dtype="int32")
    i32 = np.int32
    desc = backend.asarray(batch.desc)
    tables = backend.asarray(batch.tables)
    tile_img = backend.asarray(batch.tile_img)
    block_img = backend.asarray(batch.block_img)
    n_tiles = len(batch.tile_img)
    n_blocks = len(batch.block_img)
    status = xp.zeros(max(n, 1), dtype="int32")
    tile_cnt = xp.zeros(max(2 * n_tiles, 1), dtype="int32")
    img_info = xp.zeros(max(2 * n, 1), dtype="int64")
    bits = xp.zeros(max(batch.nbytes, 1), dtype="uint8")
    seg_start = xp.zeros(max(batch.n_segments, 1), dtype="int32")
    seg_chunk0 = xp.zeros(max(batch.n_segments, 1), dtype="int32")
    chunk_seg = xp.full(max(batch.n_slots, 1), -1, dtype="int32")
    ticket = xp.zeros(1, dtype="int32")
    done = xp.zeros(max(n_blocks, 1), dtype="int32")
    exits = xp.zeros(max(2 * n_blocks, 1), dtype="int64")
    ch_pos = xp.zeros(max(batch.n_slots, 1), dtype="int64")
    ch_val = xp.zeros(max(batch.n_slots * CV_LEN, 1), dtype="int32")
    tb = (TILE_THREADS, 1, 1)
    per_image = (-(-n // 128), 1, 1)

    def launch(kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int], args: tuple[Any, ...]) -> None:
        backend.launch(source, {}, kernel, grid, args, block=block)

    if n_tiles:
        launch("jpeg_unstuff_count", (n_tiles, 1, 1), tb, (src, desc, tile_img, i32(n_tiles), tile_cnt))
    launch("jpeg_tile_offsets", per_image, (128, 1, 1), (desc, i32(n), tile_cnt, img_info))
    if n_tiles:
        write = (src, desc, tile_img, i32(n_tiles), tile_cnt, bits, seg_start, status)
        launch("jpeg_unstuff_write", (n_tiles, 1, 1), tb, write)
    layout = (desc, i32(n), img_info, seg_start, seg_chunk0, chunk_seg, status)
    launch("jpeg_chunk_layout", per_image, (128, 1, 1), layout)
    common: tuple[Any, ...] = (bits, desc, tables, img_info, seg_start, seg_chunk0, chunk_seg, block_img)
    sb = (SYNC_THREADS, 1, 1)
    launch("jpeg_sync", (n_blocks, 1, 1), sb, (*common, ticket, done, exits, ch_pos, ch_val, status))
    launch("jpeg_chunk_scan", (n, 1, 1), sb, (desc, chunk_seg, ch_val, status))
    launch("jpeg_write", (n_blocks, 1, 1), sb, (*common, ch_pos, ch_val, coefs, status))
    return status
