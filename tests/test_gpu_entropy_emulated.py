"""The GPU entropy decoder without a GPU: the host plan of fastprep.gpu.jpeg_entropy and the kernel text
of cuda/jpeg_entropy.cu, run by the exact (fiber) CPU emulation of tests/cuda_emu.py, against the
quantized DCT coefficients libjpeg-turbo's own entropy decoder gives (``_core.jpeg_coefficients_into``):
every coefficient must be equal. Every sampling (4:2:0 to 4:1:1), restart intervals, odd sizes,
grayscale, Motion-JPEG frames without Huffman tables, scans long enough for the chained
synchronisation across thread blocks, and damaged scans (flagged, never silently different)."""

from __future__ import annotations

import numpy as np
import pytest

from fastprep import _core
from fastprep.gpu import jpeg_entropy as ge

from . import image_data as data
from .cuda_emu import EmuBackend


def cpu_coefficients(blob: bytes) -> np.ndarray | None:
    lay = _core.jpeg_layouts([blob])[0]
    assert isinstance(lay, dict)
    total = sum(c[3] * c[4] * 64 for c in lay["components"])
    out = np.zeros(total, np.int16)
    (err,) = _core.jpeg_coefficients_into([blob], [0], out.view(np.uint8))
    return None if err is not None else out


def gpu_coefficients(blobs: list[bytes], be: EmuBackend | None = None) -> tuple[list[np.ndarray], list[int]]:
    """Coefficients of each blob by the kernels (one batch), and each image's status bits."""
    be = be or EmuBackend()
    layouts = _core.jpeg_layouts(blobs)
    scans, lays, offsets, total = [], [], [], 0
    for i, (blob, lay) in enumerate(zip(blobs, layouts, strict=True)):
        assert isinstance(lay, dict), f"image {i}: {lay}"
        sp = ge.parse_scan(blob, lay)
        assert sp is not None, f"image {i} has no GPU scan plan"
        scans.append(sp)
        lays.append(lay)
        offsets.append(total)
        total += sum(c[3] * c[4] * 64 for c in lay["components"])
    batch = ge.plan_batch(scans, lays, offsets)
    src = np.zeros(max(batch.nbytes, 1), np.uint8)
    for sp, blob, at in zip(scans, blobs, batch.src_offsets, strict=True):
        src[at : at + sp.end - sp.start] = np.frombuffer(blob, np.uint8, sp.end - sp.start, sp.start)
    coefs = np.zeros(max(total, 1), np.int16)
    status = ge.decode_scans(be, src, batch, coefs)
    ends = [*offsets[1:], total]
    return [coefs[a:b] for a, b in zip(offsets, ends, strict=True)], [int(s) for s in status[: len(blobs)]]


def _check(names: list[str], blobs: list[bytes]) -> None:
    got, status = gpu_coefficients(blobs)
    for name, blob, g, st in zip(names, blobs, got, status, strict=True):
        assert st == 0, f"{name}: status {st}"
        want = cpu_coefficients(blob)
        assert want is not None, name
        bad = np.flatnonzero(g != want)
        assert bad.size == 0, f"{name}: {bad.size} of {g.size} coefficients differ, first at {bad[:5]}"


def _crop(photo: str, w: int, h: int) -> np.ndarray:
    return np.ascontiguousarray(data.photos()[photo][:h, :w])


def test_standard_tables_are_the_ones_libjpeg_turbo_writes():
    blob = data.jpeg(_crop("flower.jpg", 16, 16), quality=90)
    i, found = 2, {}
    while blob[i + 1] != 0xDA:
        length = int.from_bytes(blob[i + 2 : i + 4], "big")
        if blob[i + 1] == 0xC4:
            body, j = blob[i + 4 : i + 2 + length], 0
            while j < len(body):
                counts = tuple(body[j + 1 : j + 17])
                found[(body[j] >> 4, body[j] & 15)] = (counts, bytes(body[j + 17 : j + 17 + sum(counts)]))
                j += 17 + sum(counts)
        i += 2 + length
    assert found == ge._STD


@pytest.mark.parametrize("sub", [0, 1, 2])
def test_photos_at_every_pillow_sampling(sub):
    names, blobs = [], []
    for photo, w, h in [("china.jpg", 160, 120), ("flower.jpg", 97, 61), ("grace_hopper.jpg", 33, 47)]:
        for q in (50, 95):
            names.append(f"{photo}-{w}x{h}-q{q}-{sub}")
            blobs.append(data.jpeg(_crop(photo, w, h), quality=q, subsampling=sub))
    _check(names, blobs)


def test_tiny_sizes_grayscale_and_optimized_tables():
    photo = data.photos()["flower.jpg"]
    sizes = [(1, 1), (2, 3), (8, 8), (9, 17), (17, 9), (33, 31)]
    blobs = [data.jpeg(photo[:h, :w], quality=90, subsampling=2) for w, h in sizes]
    blobs += [data.jpeg(np.ascontiguousarray(photo[:h, :w, 0]), quality=85) for w, h in sizes]
    blobs += [data.jpeg(photo[:45, :70], quality=80, optimize=True)]
    _check([f"b{i}" for i in range(len(blobs))], blobs)


def _cv2_jpeg(img: np.ndarray, *params: int) -> bytes:
    cv2 = pytest.importorskip("cv2", reason="the test extra installs opencv-python-headless")
    ok, enc = cv2.imencode(".jpg", np.ascontiguousarray(img[..., ::-1]), [cv2.IMWRITE_JPEG_QUALITY, 90, *params])
    assert ok
    return bytes(enc.tobytes())


def test_440_and_411_samplings_from_opencv():
    cv2 = pytest.importorskip("cv2", reason="the test extra installs opencv-python-headless")
    img = _crop("china.jpg", 101, 67)
    names, blobs = [], []
    for name in ("444", "422", "420", "440", "411"):
        f = getattr(cv2, f"IMWRITE_JPEG_SAMPLING_FACTOR_{name}")
        names.append(name)
        blobs.append(_cv2_jpeg(img, cv2.IMWRITE_JPEG_SAMPLING_FACTOR, f))
    comps = [lay["components"] for lay in _core.jpeg_layouts(blobs)]  # type: ignore[index]
    assert [(c[0][1], c[0][2]) for c in comps] == [(1, 1), (2, 1), (2, 2), (1, 2), (4, 1)]
    _check(names, blobs)


@pytest.mark.parametrize("interval", [1, 3, 17])
def test_restart_intervals(interval):
    # each restart interval is a segment of its own: the DC predictions and the bit position
    # start again there, and the scan over chunks restarts its sums
    cv2 = pytest.importorskip("cv2", reason="the test extra installs opencv-python-headless")
    names, blobs = [], []
    for w, h, f in [(95, 63, "420"), (64, 40, "444"), (41, 23, "411")]:
        fac = getattr(cv2, f"IMWRITE_JPEG_SAMPLING_FACTOR_{f}")
        blobs.append(
            _cv2_jpeg(
                _crop("grace_hopper.jpg", w, h),
                cv2.IMWRITE_JPEG_RST_INTERVAL,
                interval,
                cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
                fac,
            )
        )
        names.append(f"{w}x{h}-{f}-ri{interval}")
    assert all(b"\xff\xdd" in b for b in blobs)
    _check(names, blobs)


def test_pillow_restart_variants_and_a_long_scan():
    # The 1080p scan spans ~3000 chunks in ~25 thread blocks: the chained look-back between
    # blocks carries the synchronised state from block to block.
    v = data.jpeg_variants()
    names = ["flower-restart", "flower-restart-rows", "china-1920x1080-420"]
    _check(names, [v[k] for k in names])


def _without_dht(blob: bytes) -> bytes:
    out, i = bytearray(blob[:2]), 2
    while blob[i + 1] != 0xDA:
        length = int.from_bytes(blob[i + 2 : i + 4], "big")
        if blob[i + 1] != 0xC4:
            out += blob[i : i + 2 + length]
        i += 2 + length
    return bytes(out + blob[i:])


def test_motion_jpeg_frames_use_the_standard_tables():
    frames = [data.jpeg(_crop("china.jpg", 72, 40), quality=q) for q in (60, 90)]
    stripped = [_without_dht(f) for f in frames]
    assert all(b"\xff\xc4" not in s[: s.index(b"\xff\xda")] for s in stripped)
    _check(["mjpeg-60", "mjpeg-90"], stripped)


def test_files_the_kernels_do_not_take_stay_on_the_cpu():
    v = data.jpeg_variants()
    lay = {k: _core.jpeg_layouts([v[k]])[0] for k in ("flower-prog-420", "flower-cmyk", "flower-q75-420")}
    assert ge.parse_scan(v["flower-prog-420"], lay["flower-prog-420"]) is None  # progressive
    assert ge.parse_scan(v["flower-q75-420"], lay["flower-q75-420"]) is not None
    good = v["flower-q75-420"]
    cut = good[: len(good) - 1000]  # no EOI after the scan: libjpeg-turbo reports it
    assert ge.parse_scan(cut, lay["flower-q75-420"]) is None
    sos = good.index(b"\xff\xda")
    bad_table = bytearray(good)
    dht = good.index(b"\xff\xc4")
    bad_table[dht + 5 : dht + 21] = bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255])  # over-full
    assert ge.parse_scan(bytes(bad_table), lay["flower-q75-420"]) is None
    assert ge.derived_table((3, 0) + (0,) * 14, b"\x00\x01\x02", True) is None  # 3 codes of 1 bit
    assert ge.derived_table((0, 1) + (0,) * 14, b"\x10", True) is None  # DC size 16
    assert sos > dht


def _damaged(seed: int, blob: bytes) -> bytes:
    rng = np.random.default_rng(seed)
    start = blob.index(b"\xff\xda") + 14
    out = bytearray(blob)
    for _ in range(int(rng.integers(1, 4))):
        at = int(rng.integers(start, len(blob) - 2))
        out[at] = int(rng.integers(0, 256))
    return bytes(out)


def test_damaged_scans_are_flagged_or_decode_as_libjpeg_turbo_does():
    # A flipped byte either stays a valid code stream (then the kernels decode exactly what
    # libjpeg-turbo decodes), or the kernels flag the file, which then goes to libjpeg-turbo on
    # the CPU: a DecodeError there, or its own repair. Never different coefficients unflagged.
    good = data.jpeg(_crop("china.jpg", 64, 48), quality=90)
    blobs, cut_short = [], []
    for seed in range(40):
        b = _damaged(seed, good)
        lay = _core.jpeg_layouts([b])[0]
        if isinstance(lay, dict) and ge.parse_scan(b, lay) is not None:
            blobs.append(b)
    # a scan with its last bytes gone but EOI kept: the kernels must see the data end early
    sos = good.index(b"\xff\xda")
    short = good[: sos + (len(good) - sos) // 2] + b"\xff\xd9"
    cut_short.append(short)
    blobs += [*cut_short, good]
    got, status = gpu_coefficients(blobs)
    flagged = 0
    for k, (blob, g, st) in enumerate(zip(blobs, got, status, strict=True)):
        want = cpu_coefficients(blob)
        if st:
            flagged += 1
            continue
        assert want is not None, f"damaged file {k}: decoded unflagged but libjpeg-turbo refuses it"
        np.testing.assert_array_equal(g, want, err_msg=f"damaged file {k}")
    assert status[-2] & 4, "the shortened scan must be flagged short"
    assert status[-1] == 0  # the good file after them is intact
    np.testing.assert_array_equal(got[-1], cpu_coefficients(good))
    assert flagged >= 2


def test_an_empty_batch_launches_nothing():
    be = EmuBackend()
    batch = ge.plan_batch([], [], [])
    status = ge.decode_scans(be, np.zeros(1, np.uint8), batch, np.zeros(1, np.int16))
    assert be.launches == [] and status.tolist() == [0]


def test_a_second_scan_or_data_after_eoi_is_flagged_by_the_kernels():
    # The host takes everything up to the last EOI as the scan; the unstuffing kernel finds the
    # markers inside (here a whole second file appended, and a DNL-like segment), which sends the
    # file to the CPU decoder.
    good = data.jpeg(_crop("flower.jpg", 40, 24), quality=90)
    appended = good + good
    eoi = good.rindex(b"\xff\xd9")
    dnl = good[:eoi] + b"\xff\xdc\x00\x04\x00\x18" + good[eoi:]
    _, status = gpu_coefficients([appended, dnl, good])
    assert status[0] & 1 and status[1] & 1 and status[2] == 0


def test_random_encodings_equal_libjpeg_turbo():
    # A property over encoder settings, drawn once per run from a fixed seed (the emulation is
    # serial, so one batch of many small files): size, quality, sampling, restart interval,
    # optimized tables, gray or colour.
    cv2 = pytest.importorskip("cv2", reason="the test extra installs opencv-python-headless")
    rng = np.random.default_rng(2026)
    photo = data.photos()["grace_hopper.jpg"]
    samplings = ["444", "422", "420", "440", "411"]
    names, blobs = [], []
    for k in range(24):
        w, h = (int(v) for v in rng.integers(1, 90, 2))
        y, x = int(rng.integers(0, photo.shape[0] - h)), int(rng.integers(0, photo.shape[1] - w))
        img = np.ascontiguousarray(photo[y : y + h, x : x + w])
        q = int(rng.integers(5, 101))
        params = [cv2.IMWRITE_JPEG_QUALITY, q]
        sub = samplings[int(rng.integers(0, 5))]
        params += [cv2.IMWRITE_JPEG_SAMPLING_FACTOR, getattr(cv2, f"IMWRITE_JPEG_SAMPLING_FACTOR_{sub}")]
        ri = int(rng.choice([0, 0, 1, 2, 5]))
        if ri:
            params += [cv2.IMWRITE_JPEG_RST_INTERVAL, ri]
        if rng.random() < 0.3:
            params += [cv2.IMWRITE_JPEG_OPTIMIZE, 1]
        gray = rng.random() < 0.2
        src = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY) if gray else img[..., ::-1]
        ok, enc = cv2.imencode(".jpg", np.ascontiguousarray(src), params)
        assert ok
        names.append(f"{k}: {w}x{h} q{q} {'gray' if gray else sub} ri{ri}")
        blobs.append(bytes(enc.tobytes()))
    _check(names, blobs)


def test_an_empty_scan_is_short_and_alone_launches_no_tiles():
    good = data.jpeg(_crop("flower.jpg", 40, 24), quality=90)
    sos = good.index(b"\xff\xda")
    empty = good[: sos + 2 + int.from_bytes(good[sos + 2 : sos + 4], "big")] + b"\xff\xd9"
    _, status = gpu_coefficients([empty, good, empty])
    assert status == [4, 0, 4]
    be = EmuBackend()
    _, status = gpu_coefficients([empty], be)
    assert status == [4] and "jpeg_unstuff_count" not in [k for k, _, _ in be.launches]
