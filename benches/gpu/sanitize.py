"""A small GPU workload for compute-sanitizer (run by benches/gpu/run.sh): every resize filter on a
ragged uint8 batch and a float batch, NCHW, the JPEG path with and without draft and with either
entropy decoder, and the GPU entropy decoder on damaged scans, so memcheck sees each kernel read
and write with odd sizes. Exits non-zero if a result differs from the CPU.

``--emulate`` runs the same workload with no CuPy and no CUDA, on numpy and the CPU emulation of
the kernels (``tests/cuda_emu.py``), with the JPEGs cut down to a small size: the check
(tests/test_gpu_bench_smoke.py) that this script runs on the GPU machine the first time."""

from __future__ import annotations

import argparse
import io
import pathlib
import sys
from typing import Any

import numpy as np

import fastprep


def _blobs(emulate: bool) -> list[bytes]:
    """The wheel's sample files; with `emulate`, its JPEGs re-encoded at 120x80 with Pillow (with
    restart markers in one, so the emulated decoder sees segments), as the emulation decodes every
    GPU thread on one CPU core."""
    folder = pathlib.Path(fastprep.__file__).parent / "data" / "images"
    blobs = [p.read_bytes() for p in sorted(folder.glob("*"))]
    if not emulate:
        return blobs
    from PIL import Image

    out = []
    for k, b in enumerate(blobs):
        img = Image.open(io.BytesIO(b)).convert("RGB").crop((0, 0, 120, 80))
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=90, subsampling=2, restart_marker_blocks=4 if k == 0 else 0)
        out.append(buf.getvalue())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--emulate", action="store_true", help="no GPU: numpy and the CPU emulation of the kernels")
    args = ap.parse_args(argv)
    be: Any
    if args.emulate:
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
        from tests.cuda_emu import EmuBackend

        be = EmuBackend()
        asnumpy: Any = np.asarray
        sync: Any = lambda: None  # noqa: E731
    else:
        import cupy

        from fastprep import gpu

        be = gpu._backend()
        asnumpy = cupy.asnumpy
        sync = cupy.cuda.Device().synchronize

    rng = np.random.default_rng(1)
    bad = 0
    imgs = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((37, 53), (129, 65), (300, 7))]
    for f in ("nearest", "box", "bilinear", "hamming", "bicubic", "lanczos"):
        got = fastprep.gpu_resize([be.asarray(i) for i in imgs], (31, 17), filter=f, backend=be)
        for g, i in zip(got, imgs, strict=True):
            bad += int(not np.array_equal(asnumpy(g), fastprep.resize(i, (31, 17), filter=f)))
    flt = be.asarray(rng.random((2, 3, 45, 61), dtype=np.float32))
    fastprep.gpu_resize(flt, (20, 70), filter="bicubic", layout="NCHW", backend=be)
    rgba = rng.integers(0, 256, (2, 33, 47, 4), dtype=np.uint8)
    try:
        got = asnumpy(fastprep.gpu_resize(be.asarray(rgba), (15, 66), filter="lanczos", backend=be))
        want = [fastprep.resize(rgba[i], (15, 66), filter="lanczos") for i in range(2)]
        bad += sum(int(not np.array_equal(got[i], want[i])) for i in range(2))
    except fastprep.DeviceUnavailableError as e:  # the RGBA self-check refused this device: say so, go on
        print(f"RGBA refused: {e}")
        bad += 1
    blobs = _blobs(args.emulate)
    for draft, entropy in ((False, "gpu"), (True, "gpu"), (False, "cpu")):
        got = asnumpy(fastprep.preprocess(blobs, device="cuda", draft=draft, entropy=entropy, backend=be))
        bad += int(not np.array_equal(got, fastprep.preprocess(blobs, draft=draft)))
    # damaged scans: the GPU entropy decoder flags them (they go to the CPU), the rest decode
    jpegs = [b for b in blobs if b[:2] == b"\xff\xd8"]
    damaged = []
    for k, b in enumerate(jpegs):
        d = bytearray(b)
        sos = b.index(b"\xff\xda")
        d[sos + 40 + 97 * k] ^= 0x5A
        damaged += [bytes(d), b[: sos + (len(b) - sos) // 2] + b"\xff\xd9"]
    want, want_ok = fastprep.preprocess(damaged + jpegs, on_error="skip")
    from fastprep.gpu import streams

    chunk = streams.CHUNK
    for size in (chunk, 2):  # as one chunk, and in chunks of 2 on two streams
        streams.CHUNK = size
        try:
            got, ok = fastprep.preprocess(damaged + jpegs, device="cuda", on_error="skip", backend=be)
        finally:
            streams.CHUNK = chunk
        bad += int(ok.tolist() != want_ok.tolist() or not np.array_equal(asnumpy(got), want))
    sync()
    print(f"sanitize workload done{' (emulated)' if args.emulate else ''}, {bad} results differ from the CPU")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
