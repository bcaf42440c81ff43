"""What a job measures: per-stage latencies, counts, throughput over time; the summary it prints
and the report (JSON and a PNG chart) that ``--report DIR`` writes."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

__all__ = ["JobStats", "Progress"]


class JobStats:
    """Thread-safe: the read, compute and write stages run on their own threads."""

    def __init__(self, job: str, item_name: str, stages: tuple[str, ...]) -> None:
        self.job = job
        self.item_name = item_name
        self.stages = stages
        self.samples: dict[str, list[float]] = {s: [] for s in stages}
        self.sample_unit: dict[str, str] = {}
        self.counts: dict[str, int] = {"items": 0, "tokens": 0, "bytes_in": 0, "bytes_out": 0, "errors": 0}
        self.skipped_shards = 0
        self.timeline: list[tuple[float, int]] = []
        self._lock = threading.Lock()
        self.start = time.perf_counter()
        self.end: float | None = None

    def add_samples(self, stage: str, seconds: Any, unit: str = "batch") -> None:
        with self._lock:
            self.samples[stage].extend(float(s) for s in seconds)
            self.sample_unit[stage] = unit

    def add(self, **counts: int) -> None:
        with self._lock:
            for k, v in counts.items():
                self.counts[k] += int(v)
            self.timeline.append((time.perf_counter() - self.start, self.counts["items"]))

    def finish(self) -> None:
        self.end = time.perf_counter()

    def summary(self) -> dict[str, Any]:
        import numpy as np

        seconds = (self.end or time.perf_counter()) - self.start
        stages: dict[str, Any] = {}
        for s in self.stages:
            v = np.asarray(self.samples[s], dtype=np.float64)
            if v.size == 0:
                stages[s] = {"count": 0}
                continue
            p50, p95, p99 = np.percentile(v, [50, 95, 99]) * 1e3
            stages[s] = {
                "per": self.sample_unit.get(s, "batch"),
                "count": int(v.size),
                "total_s": float(v.sum()),
                "p50_ms": float(p50),
                "p95_ms": float(p95),
                "p99_ms": float(p99),
                "max_ms": float(v.max() * 1e3),
            }
        rate = {
            f"{self.item_name}_per_s": self.counts["items"] / seconds if seconds else 0.0,
            "mb_in_per_s": self.counts["bytes_in"] / seconds / 1e6 if seconds else 0.0,
        }
        if self.counts["tokens"]:
            rate["tokens_per_s"] = self.counts["tokens"] / seconds
        return {
            "job": self.job,
            "seconds": seconds,
            self.item_name: self.counts["items"],
            "tokens": self.counts["tokens"],
            "bytes_in": self.counts["bytes_in"],
            "bytes_out": self.counts["bytes_out"],
            "errors": self.counts["errors"],
            "shards_skipped": self.skipped_shards,
            "throughput": rate,
            "stages": stages,
            "timeline": [[round(t, 4), n] for t, n in self.timeline],
        }


def print_summary(summary: dict[str, Any], out: TextIO | None = None) -> None:
    out = out or sys.stderr
    item = "docs" if "docs" in summary else "images"
    tput = summary["throughput"]
    line = (
        f"fastprep {summary['job']}: {summary[item]:,} {item}"
        + (f", {summary['tokens']:,} tokens" if summary["tokens"] else "")
        + f", {summary['bytes_in'] / 1e6:,.1f} MB in, {summary['bytes_out'] / 1e6:,.1f} MB out"
        + f" in {summary['seconds']:.2f} s: {tput[f'{item}_per_s']:,.0f} {item}/s"
        + (f", {tput['tokens_per_s'] / 1e6:,.2f} M tokens/s" if "tokens_per_s" in tput else "")
        + f", {tput['mb_in_per_s']:,.1f} MB/s"
    )
    print(line, file=out)
    if summary["errors"] or summary["shards_skipped"]:
        print(
            f"  {summary['errors']} bad records (see errors.jsonl), "
            f"{summary['shards_skipped']} shards already done and skipped",
            file=out,
        )
    print(f"  {'stage':<16}{'per':>7}{'P50 ms':>10}{'P95 ms':>10}{'P99 ms':>10}{'total s':>10}", file=out)
    for name, s in summary["stages"].items():
        if s["count"]:
            print(
                f"  {name:<16}{s['per']:>7}{s['p50_ms']:>10.3f}{s['p95_ms']:>10.3f}{s['p99_ms']:>10.3f}"
                f"{s['total_s']:>10.2f}",
                file=out,
            )


def write_report(summary: dict[str, Any], samples: dict[str, list[float]], directory: Path) -> list[Path]:
    """``report.json`` (the summary) and ``report.png``: each stage's latency distribution and
    the throughput over time."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{summary['job']}-report.json"
    path.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return [path, _chart(summary, samples, directory / f"{summary['job']}-report.png")]


def _chart(summary: dict[str, Any], samples: dict[str, list[float]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    stages = [s for s in summary["stages"] if summary["stages"][s]["count"]]
    data = [np.asarray(samples[s]) * 1e3 for s in stages]
    if data:
        left.boxplot(data, whis=(1, 99), showfliers=True, flierprops={"markersize": 2})
        left.set_xticks(range(1, len(stages) + 1), [f"{s}\n(per {summary['stages'][s]['per']})" for s in stages])
        left.set_yscale("log")
    left.set_ylabel("latency (ms, log scale; whiskers P1-P99)")
    left.set_title("Stage latency")
    item = "docs" if "docs" in summary else "images"
    t = np.asarray([p[0] for p in summary["timeline"]] or [0.0])
    n = np.asarray([p[1] for p in summary["timeline"]] or [0])
    if t.size > 1:
        rate = np.diff(n) / np.maximum(np.diff(t), 1e-9)
        right.step(t[1:], rate, where="pre", label="per shard batch")
    right.axhline(summary["throughput"][f"{item}_per_s"], color="k", ls="--", label="mean")
    right.set_xlabel("seconds since start")
    right.set_ylabel(f"{item} per second")
    right.set_title("Throughput over time")
    right.legend(loc="lower right")
    fig.suptitle(
        f"fastprep {summary['job']}: {summary[item]:,} {item} in {summary['seconds']:.2f} s"
        + (f", {summary['tokens']:,} tokens" if summary["tokens"] else "")
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


class Progress:
    """A tqdm bar on a terminal; nothing when stderr is a pipe or a file (CI logs stay clean) or
    when tqdm is not installed."""

    def __init__(self, total: int | None, unit: str, enabled: bool | None = None) -> None:
        self.bar: Any = None
        if enabled is None:
            enabled = sys.stderr.isatty()
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self.bar = tqdm(total=total, unit=unit, unit_scale=True, dynamic_ncols=True)

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
