"""``python -m fastprep``: the command line.

``demo`` runs fastprep's main job on bundled sample data and prints its figures: the memory pool
(allocation latency against numpy and bytearray, and a soak of image-sized buffers with RSS
tracked) and the tokenizer (cl100k_base on the bundled text sample, throughput and speedup over HF
tokenizers measured in the same run), and image preprocessing (the bundled photos to a normalized
224x224 batch: per-stage P50/P95/P99 and the speedup over Pillow's pipeline, same run).
``info`` prints ``build_info()``. ``tokenize`` and ``images`` run fastprep's jobs on a user's files
(``fastprep.jobs``; ``demo-jobs`` runs both on the bundled sample data and writes their report).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import BlockPool, _demo_figures, _demo_image, _demo_tokenizer, build_info
from ._soak import alloc_latency_ns, soak
from .jobs.cli import add_commands as add_job_commands
from .jobs.cli import run as run_job

MiB = 1024 * 1024


def _fmt_bytes(n: float) -> str:
    return f"{n / MiB:8.1f} MiB"


def demo(cycles: int, as_json: bool) -> int:
    info = build_info()
    report: dict[str, object] = {"build": info}
    if not as_json:
        print(
            f"fastprep {info['version']} ({info['build_profile']} build, {info['target']}, "
            f"SIMD {'/'.join(info['simd_detected']) or 'none'}, GPU visible: {info['gpu']})"
        )
        if info["build_profile"] != "release":
            print("warning: this is a debug build; figures below are not representative")
    figures = _demo_figures.run()
    report["figures"] = figures
    if not as_json:
        _demo_figures.print_report(figures)
        print("\n2. Take + return one buffer from Python (ns per cycle, P50 / P95 / P99)")
        print(f"   {'size':>8}  {'BlockPool':>22}  {'numpy.empty':>22}  {'bytearray':>22}  pool speedup")
    latency = {}
    for size in (1024, 64 * 1024, MiB, 16 * MiB):
        row = {impl: alloc_latency_ns(impl, size) for impl in ("pool", "numpy", "bytearray")}
        latency[size] = row
        if not as_json:
            cells = "  ".join(f"{r['p50']:6.0f} /{r['p95']:6.0f} /{r['p99']:6.0f}" for r in row.values())
            label = f"{size // 1024} KiB" if size < MiB else f"{size // MiB} MiB"
            print(f"   {label:>8}  {cells}  {row['numpy']['p50'] / row['pool']['p50']:8.1f}x")
    report["latency_ns"] = latency

    if not as_json:
        print(
            f"\n3. Soak: {cycles:,} buffers of 150 KB - 6 MB (log-uniform), 8 held at once, one byte written per page"
        )
    soaks = {}
    for impl in ("numpy", "pool"):
        r = soak(impl, cycles)
        soaks[impl] = r.as_dict()
        if not as_json:
            print(
                f"   {impl:>5}: {r.seconds:6.2f} s  alloc P50/P95/P99 {r.alloc_ns_p50:7.0f} /"
                f"{r.alloc_ns_p95:7.0f} /{r.alloc_ns_p99:8.0f} ns   RSS after warm-up"
                f"{_fmt_bytes(r.rss_after_warmup)}  peak{_fmt_bytes(r.rss_peak)}  final"
                f"{_fmt_bytes(r.rss_final)}  growth {100 * r.growth_after_warmup:+.2f}%"
            )
    report["soak"] = soaks

    pool = BlockPool(6 * MiB, 9)
    with pool.acquire():
        pass
    report["pool_stats_example"] = pool.stats()
    if not as_json:
        print(f"\n   pool stats after one cycle: {pool.stats()}")
    tokenizer_report = _demo_tokenizer.run()
    report["tokenizer"] = tokenizer_report
    if not as_json:
        _demo_tokenizer.print_report(tokenizer_report)
    image_report = _demo_image.run()
    report["image"] = image_report
    if as_json:
        json.dump(report, sys.stdout, indent=2, default=str)
        print()
    else:
        _demo_image.print_report(image_report)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fastprep", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="run the demonstration on bundled sample data and print its figures")
    d.add_argument("--cycles", type=int, default=100_000, help="soak cycles per implementation")
    d.add_argument("--json", action="store_true", help="print the figures as JSON")
    sub.add_parser("info", help="print build_info() as JSON")
    add_job_commands(sub)
    args = parser.parse_args(argv)
    if args.command in ("tokenize", "images", "demo-jobs"):
        if "numpy" not in sys.modules:
            # The jobs use no BLAS, but numpy's OpenBLAS starts a thread a core at import that
            # spins for a while (~0.15 CPU-s on 2 cores, taken from the tokenizer's load and
            # first batches). Only for this process (and workers it starts); a user's setting wins.
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        return run_job(args)
    if args.command == "info":
        json.dump(build_info(), sys.stdout, indent=2)
        print()
        return 0
    return demo(args.cycles, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
