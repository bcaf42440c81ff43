"""The image part of ``python -m fastprep demo``: the bundled photos (and, where Pillow is
installed, 1080p / 12 MP / PNG re-encodings of them made in memory) through
``ImagePipeline`` -> 224x224 normalized float32 NCHW. Prints per-stage P50/P95/P99 and the speedup
over Pillow's pipeline (open, convert, resize, crop, numpy normalize) measured in the same run,
after checking that both give identical arrays."""

from __future__ import annotations

import importlib.util
import io
import os
import time
from pathlib import Path
from typing import Any

from .pipeline import IMAGENET_MEAN, IMAGENET_STD, ImagePipeline

IMAGES = Path(__file__).parent / "data" / "images"


def sample_images() -> dict[str, bytes]:
    """name -> encoded bytes: the bundled JPEGs, plus re-encodings when Pillow is available."""
    out = {p.name: p.read_bytes() for p in sorted(IMAGES.glob("*.jpg"))}
    if importlib.util.find_spec("PIL") is None:
        return out
    from PIL import Image

    base = Image.open(io.BytesIO(out["china.jpg"])).convert("RGB")
    for (w, h), label in (((1920, 1080), "1080p"), ((4032, 3024), "12MP")):
        big = base.resize((w, h), Image.Resampling.BICUBIC)
        for kind, kw in (("420", {"subsampling": 2}), ("444-progressive", {"subsampling": 0, "progressive": True})):
            buf = io.BytesIO()
            big.save(buf, "JPEG", quality=90, **kw)
            out[f"china-{label}-{kind}.jpg"] = buf.getvalue()
    buf = io.BytesIO()
    base.resize((1920, 1080), Image.Resampling.BICUBIC).save(buf, "PNG")
    out["china-1080p.png"] = buf.getvalue()
    return out


def _pillow_pipeline(blob: bytes, draft: bool = False) -> Any:
    import numpy as np
    from PIL import Image, ImageOps

    src = Image.open(io.BytesIO(blob))
    w, h = src.size
    rw, rh = (256, int(256 * h / w)) if w <= h else (int(256 * w / h), 256)
    if draft:
        src.draft("RGB", (rw, rh))
    im = ImageOps.exif_transpose(src).convert("RGB").resize((rw, rh), Image.Resampling.BILINEAR)
    left, top = round((rw - 224) / 2.0), round((rh - 224) / 2.0)
    x: Any = np.asarray(im.crop((left, top, left + 224, top + 224)), dtype=np.float32) / np.float32(255)
    x = (x - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32)
    return x.transpose(2, 0, 1)


def run(rounds: int = 5) -> dict[str, Any]:
    import numpy as np

    images = sample_images()
    blobs = list(images.values())
    report: dict[str, Any] = {"images": {k: len(v) for k, v in images.items()}, "rounds": rounds}
    pipe = ImagePipeline(num_threads=1)
    batch = pipe(blobs)  # warm-up; also the array checked against Pillow below
    pipe.reset_stats()
    t0 = time.perf_counter()
    for _ in range(rounds):
        pipe(blobs)
    ours = time.perf_counter() - t0
    report["stages_ms"] = pipe.stats()
    report["fastprep_images_per_s"] = rounds * len(blobs) / ours
    draft = ImagePipeline(num_threads=1, draft=True)
    draft(blobs)
    t0 = time.perf_counter()
    for _ in range(rounds):
        draft(blobs)
    report["fastprep_draft_images_per_s"] = rounds * len(blobs) / (time.perf_counter() - t0)
    threads = os.cpu_count() or 1
    par = ImagePipeline()
    par(blobs * 2)
    t0 = time.perf_counter()
    for _ in range(rounds):
        par(blobs * 2)
    report["fastprep_batch_images_per_s"] = rounds * 2 * len(blobs) / (time.perf_counter() - t0)
    report["threads"] = threads
    if importlib.util.find_spec("PIL") is not None:
        want = np.stack([_pillow_pipeline(b) for b in blobs])
        report["identical_to_pillow"] = bool(np.array_equal(batch, want))
        t0 = time.perf_counter()
        for _ in range(rounds):
            for b in blobs:
                _pillow_pipeline(b)
        report["pillow_images_per_s"] = rounds * len(blobs) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(rounds):
            for b in blobs:
                _pillow_pipeline(b, draft=True)
        report["pillow_draft_images_per_s"] = rounds * len(blobs) / (time.perf_counter() - t0)
    return report


def print_report(r: dict[str, Any]) -> None:
    print(
        f"\n5. Images: {len(r['images'])} files ({', '.join(r['images'])}) x {r['rounds']} rounds"
        " -> 224x224 float32 NCHW (resize 256 bilinear, center crop, ImageNet normalize)"
    )
    print(f"   {'stage (1 thread)':<16} {'P50':>8} {'P95':>8} {'P99':>8}   ms per image")
    for stage in ("decode", "resize", "crop_normalize", "total"):
        s = r["stages_ms"][stage]
        print(f"   {stage:<16} {s['p50']:8.2f} {s['p95']:8.2f} {s['p99']:8.2f}")
    ours = r["fastprep_images_per_s"]
    if "pillow_images_per_s" in r:
        same = "identical arrays" if r["identical_to_pillow"] else "ARRAYS DIFFER"
        pil, pil_draft = r["pillow_images_per_s"], r["pillow_draft_images_per_s"]
        print(
            f"   exact, 1 thread:  fastprep {ours:7.1f} img/s   Pillow {pil:7.1f} img/s   {ours / pil:4.1f}x  ({same})"
        )
        d = r["fastprep_draft_images_per_s"]
        print(f"   draft, 1 thread:  fastprep {d:7.1f} img/s   Pillow {pil_draft:7.1f} img/s   {d / pil_draft:4.1f}x")
    else:
        print(f"   exact, 1 thread:  fastprep {ours:7.1f} img/s   (install Pillow to compare)")
    b = r["fastprep_batch_images_per_s"]
    print(f"   batch, {r['threads']} threads: fastprep {b:7.1f} img/s   {b / ours:4.1f}x one thread")
