"""Side-by-side timings that alternate their contenders round by round, for a shared, noisy
machine where pytest-benchmark's one-contender-after-another runs drift apart:

    python benches/interleaved.py resize [rounds]   fastprep.resize vs Pillow, per shape and filter
    python benches/interleaved.py batch [rounds]    preprocess / resize_batch of 16, 1 vs 2 threads
    python benches/interleaved.py pipeline [rounds] [size]   bytes -> 224x224 float32 NCHW, one
                                                     thread, every pipeline and decoder of
                                                     bench_image.py (size: 640x480, 1080p, 4032x3024)

Each line gives the best and the median round of each side and their ratios. For the batch, a
round in which other processes took more than 3% of the machine (``/proc/stat`` minus this
process's CPU time) is left out of the "quiet" figures, and the fastest decode and resize of each
kind of JPEG with 1 and 2 threads shows whether running both cores slows each image down.
Run from the repository root with the wheel installed (the benches refuse debug builds).
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from PIL import Image

import fastprep
from benches.bench_image import _set
from tests import image_data as data

SHAPES = [
    ((1920, 1080), (455, 256), "RGB"),
    ((640, 480), (224, 224), "RGB"),
    ((640, 480), (341, 256), "RGB"),
    ((4032, 3024), (455, 341), "RGB"),
    ((224, 224), (448, 448), "RGB"),
    ((1920, 1080), (455, 256), "RGBA"),
    ((1920, 1080), (455, 256), "L"),
]


def _image(size: tuple[int, int], mode: str) -> np.ndarray:
    img = data.scaled(data.photos()["china.jpg"], size)
    if mode == "RGBA":
        alpha = (np.arange(size[0] * size[1]) % 256).astype(np.uint8).reshape(size[1], size[0])
        return np.dstack([img, alpha])
    return np.ascontiguousarray(img[..., 1]) if mode == "L" else img


def _pair(ours: Callable[[], Any], theirs: Callable[[], Any], rounds: int) -> tuple[list[float], list[float]]:
    t0 = time.perf_counter()
    theirs()
    inner = max(1, int(0.03 / max(time.perf_counter() - t0, 1e-6)))
    a: list[float] = []
    b: list[float] = []
    for _ in range(rounds):
        for fn, out in ((ours, a), (theirs, b)):
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            out.append((time.perf_counter() - t0) / inner)
    return a, b


def resize(rounds: int) -> None:
    for src, dst, mode in SHAPES:
        arr = _image(src, mode)
        pil = Image.fromarray(arr)
        for name in ("bilinear", "bicubic", "lanczos"):
            pf = getattr(Image.Resampling, name.upper())
            np.testing.assert_array_equal(fastprep.resize(arr, dst, filter=name), np.asarray(pil.resize(dst, pf)))
            a, b = _pair(lambda: fastprep.resize(arr, dst, filter=name), lambda: pil.resize(dst, pf), rounds)  # noqa: B023
            print(
                f"{src[0]}x{src[1]} -> {dst[0]}x{dst[1]} {mode:4} {name:8} fastprep best {min(a) * 1e3:7.3f} "
                f"median {statistics.median(a) * 1e3:7.3f} ms | Pillow best {min(b) * 1e3:7.3f} "
                f"median {statistics.median(b) * 1e3:7.3f} ms | Pillow/fastprep best {min(b) / min(a):5.2f} "
                f"median {statistics.median(b) / statistics.median(a):5.2f}",
                flush=True,
            )


def _busy() -> float:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")


def _ours() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def batch(rounds: int) -> None:
    blobs = _set("1080p", "jpeg") * 4
    imgs = [_image((1920, 1080), "RGB")] * 16
    kinds: dict[str, Callable[[int], Any]] = {
        "preprocess 16 x 1080p jpeg -> 224x224": lambda n: fastprep.preprocess(blobs, num_threads=n),
        "resize_batch 16 x 1080p -> 455x256 bilinear": lambda n: fastprep.resize_batch(
            imgs, (455, 256), filter="bilinear", num_threads=n
        ),
    }
    for label, fn in kinds.items():
        fn(1)
        fn(2)
        runs: dict[int, list[tuple[float, bool]]] = {1: [], 2: []}
        for _ in range(rounds):
            for n in (1, 2):
                b0, o0 = _busy(), _ours()
                t0 = time.perf_counter()
                fn(n)
                wall = time.perf_counter() - t0
                other = (_busy() - b0) - (_ours() - o0)
                runs[n].append((wall, other < 0.06 * wall + 0.011))  # /proc/stat counts 10 ms ticks
        for which, keep in (("all rounds", lambda q: True), ("quiet rounds", lambda q: q)):
            t1 = [w for w, q in runs[1] if keep(q)]
            t2 = [w for w, q in runs[2] if keep(q)]
            if not t1 or not t2:
                print(f"{label}, {which}: none")
                continue
            print(
                f"{label}, {which} ({len(t1)}+{len(t2)}): 1 thread best {min(t1) * 1e3:.1f} median "
                f"{statistics.median(t1) * 1e3:.1f} ms | 2 threads best {min(t2) * 1e3:.1f} median "
                f"{statistics.median(t2) * 1e3:.1f} ms | speedup best {min(t1) / min(t2):.2f} median "
                f"{statistics.median(t1) / statistics.median(t2):.2f}",
                flush=True,
            )
    best: dict[int, np.ndarray] = {}
    for _ in range(rounds):
        for n in (1, 2):
            _, tm = fastprep.preprocess(blobs, num_threads=n, return_timings=True)
            per_kind = tm["per_image"].reshape(4, 4, 3).min(axis=0)  # repeat, kind, stage
            best[n] = np.minimum(best[n], per_kind) if n in best else per_kind
    names = ["baseline 4:2:0", "baseline 4:4:4", "progressive 4:2:0", "progressive 4:4:4"]
    for k, name in enumerate(names):
        d1, d2, r1, r2 = (x * 1e3 for x in (best[1][k, 0], best[2][k, 0], best[1][k, 1], best[2][k, 1]))
        print(
            f"fastest {name:18}: decode {d1:6.2f} ms alone, {d2:6.2f} ms beside the other core (x{d2 / d1:.3f}); "
            f"resize {r1:5.2f} / {r2:5.2f} ms (x{r2 / r1:.3f})"
        )


def pipeline(rounds: int, size: str = "1080p") -> None:
    """The image goals, side by side: exact vs Pillow's pipeline, draft vs the fastest draft peer,
    and each fastprep pipeline against the fastest decode alone of the same mode."""
    from benches.bench_image import DECODERS, PIPELINES

    blobs = _set(size, "jpeg")
    contenders: dict[str, Callable[[list[bytes]], Any]] = {f"pipeline {k}": v for k, v in PIPELINES.items()}
    for k, dec in DECODERS.items():
        contenders[f"decode {k}"] = lambda bl, dec=dec: [dec(b) for b in bl]
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for f in contenders.values():
        f(blobs)  # warm up
    for _ in range(rounds):
        for name, f in contenders.items():
            t0 = time.perf_counter()
            f(blobs)
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in med.items():
        print(f"{k:34} median {v * 1e3:7.1f} ms  best {min(times[k]) * 1e3:7.1f} ms")
    draft_peers = [k for k in med if k.startswith("pipeline") and any(p in k for p in ("draft", "reduced", "scaled"))]
    draft_peers.remove("pipeline fastprep-draft")
    full_decodes = [k for k in med if k.startswith("decode") and "scaled" not in k and "reduced" not in k]
    scaled_decodes = [k for k in med if k.startswith("decode") and ("scaled" in k or "reduced" in k)]
    best_peer = min(draft_peers, key=med.__getitem__)
    print(f"exact vs Pillow: {med['pipeline pillow'] / med['pipeline fastprep']:.2f}x (goal >= 1.8)")
    draft = med[best_peer] / med["pipeline fastprep-draft"]
    print(f"draft vs fastest draft peer ({best_peer}): {draft:.2f}x (goal >= 1.1)")
    print(
        f"exact / fastest full decode: {med['pipeline fastprep'] / min(med[k] for k in full_decodes):.2f}; "
        f"draft / fastest scaled decode: {med['pipeline fastprep-draft'] / min(med[k] for k in scaled_decodes):.2f} "
        "(goal <= 1.15)"
    )


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "resize"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    if what == "pipeline":
        pipeline(n, *sys.argv[3:4])
    else:
        {"resize": resize, "batch": batch}[what](n)
