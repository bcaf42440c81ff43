"""A small GPU workload for compute-sanitizer (run by benches/gpu/run.sh): every resize filter on a
ragged uint8 batch and a float batch, NCHW, the JPEG path with and without draft and with either
entropy decoder, and the GPU entropy decoder on damaged scans, so memcheck sees each kernel read
and write with odd sizes. Exits non-zero if a result differs from the CPU."""

from __future__ import annotations

import pathlib
import sys

import cupy
import numpy as np

import fastprep

rng = np.random.default_rng(1)
bad = 0
imgs = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((37, 53), (129, 65), (300, 7))]
for f in ("nearest", "box", "bilinear", "hamming", "bicubic", "lanczos"):
    got = fastprep.gpu_resize([cupy.asarray(i) for i in imgs], (31, 17), filter=f)
    for g, i in zip(got, imgs, strict=True):
        bad += int(not np.array_equal(cupy.asnumpy(g), fastprep.resize(i, (31, 17), filter=f)))
flt = cupy.asarray(rng.random((2, 3, 45, 61), dtype=np.float32))
fastprep.gpu_resize(flt, (20, 70), filter="bicubic", layout="NCHW")
rgba = rng.integers(0, 256, (2, 33, 47, 4), dtype=np.uint8)
try:
    got = cupy.asnumpy(fastprep.gpu_resize(cupy.asarray(rgba), (15, 66), filter="lanczos"))
    bad += sum(int(not np.array_equal(got[i], fastprep.resize(rgba[i], (15, 66), filter="lanczos"))) for i in range(2))
except fastprep.DeviceUnavailableError as e:  # the RGBA self-check refused this device: say so, go on
    print(f"RGBA refused: {e}")
    bad += 1
folder = pathlib.Path(fastprep.__file__).parent / "data" / "images"
blobs = [p.read_bytes() for p in sorted(folder.glob("*"))]
for draft, entropy in ((False, "gpu"), (True, "gpu"), (False, "cpu")):
    got = cupy.asnumpy(fastprep.preprocess(blobs, device="cuda", draft=draft, entropy=entropy))
    bad += int(not np.array_equal(got, fastprep.preprocess(blobs, draft=draft)))
# damaged scans: the GPU entropy decoder flags them (they go to the CPU), the rest decode
jpegs = [b for b in blobs if b[:2] == b"\xff\xd8"]
damaged = []
for k, b in enumerate(jpegs):
    d = bytearray(b)
    sos = b.index(b"\xff\xda")
    d[sos + 40 + 97 * k] ^= 0x5A
    damaged += [bytes(d), b[: sos + (len(b) - sos) // 2] + b"\xff\xd9"]
got, ok = fastprep.preprocess(damaged + jpegs, device="cuda", on_error="skip")
want, want_ok = fastprep.preprocess(damaged + jpegs, on_error="skip")
bad += int(ok.tolist() != want_ok.tolist() or not np.array_equal(cupy.asnumpy(got), want))
cupy.cuda.Device().synchronize()
print(f"sanitize workload done, {bad} results differ from the CPU")
sys.exit(1 if bad else 0)
