"""Where ``fastprep tokenize`` spends CPU, next to ``count_tokens`` on the same documents.

On 2 cores ``count_tokens`` keeps both busy tokenizing, so each CPU-second the job spends on
anything else (reading, Parquet encoding, Python between stages) or with a core idle costs its
throughput directly. Wall-clock ratios on a shared box swing with other people's load; the
CPU-seconds per stage barely do. Rounds alternate a cold ``count_tokens`` (a fresh tokenizer)
and the job after its tokenizer load, in each output format:

    python -m benches.jobs_cpu [MB] [rounds]

Per format: the wall ratio (median and best of the rounds, and of the rounds in which other
processes took under 0.1 core, if any), ``cpu`` = count_tokens' CPU-s / the job's (the ratio on
2 cores kept busy), ``busy`` = the job's CPU-s / (2 x its seconds), and CPU-s per thread: read,
tokenize (the Python side of the calls), pool (fastprep's tokenizing threads), write.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import fastprep
from benches.interleaved import _busy, _ours
from fastprep.jobs import TokenizeSettings
from fastprep.jobs import tokenize as job_module
from tests import tokenizer_data as data

VARIANTS: dict[str, dict[str, Any]] = {"snappy": {}, "none": {"compression": "none"}, "bin": {"format": "bin"}}


class ThreadClock:
    """CPU-s of the Python threads started while installed, summed by name (digits dropped)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._run = threading.Thread.run

    def __enter__(self) -> ThreadClock:
        clock, run = self, self._run

        def timed(thread: threading.Thread) -> None:
            t0 = time.thread_time()
            try:
                run(thread)
            finally:
                name = thread.name.rstrip("_0123456789").removeprefix("fastprep-")
                clock.seconds[name] = clock.seconds.get(name, 0.0) + time.thread_time() - t0

        threading.Thread.run = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        threading.Thread.run = self._run  # type: ignore[method-assign]


def pool_seconds() -> float:
    """CPU-s so far of fastprep's pool threads (named fastprep-N), from /proc."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            if name.startswith("fastprep-") and name[9:].isdigit():
                with open(f"/proc/self/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick
        except FileNotFoundError:
            continue
    return total


def job_round(corpus: Path, tok_file: Path, out: Path, settings: dict[str, Any]) -> dict[str, float]:
    """One run after the tokenizer load: its seconds, CPU-s per thread, others' cores."""
    shutil.rmtree(out, ignore_errors=True)
    got: dict[str, float] = {}
    pipeline = job_module._pipeline

    def measured(*args: Any) -> None:
        p0, o0 = pool_seconds(), _ours()
        with ThreadClock() as clock:
            pipeline(*args)
        got.update(clock.seconds, pool=pool_seconds() - p0, cpu=_ours() - o0)

    job_module._pipeline = measured  # type: ignore[assignment]
    try:
        b0, o0 = _busy(), _ours()
        job = TokenizeSettings([str(corpus)], str(tok_file), str(out), progress=False, **settings)
        s = job_module.run_tokenize(job)
        others = (_busy() - b0) - (_ours() - o0)
    finally:
        job_module._pipeline = pipeline  # type: ignore[assignment]
    return {**got, "seconds": float(s["seconds"]), "others": others / float(s["seconds"])}


def main(megabytes: float = 20.0, rounds: int = 7) -> None:
    docs = data.corpus_documents(int(megabytes * 1e6))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus, tok_file = root / "corpus.jsonl", root / "tokenizer.json"
        corpus.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
        tok_file.write_text(data.cl100k_tokenizer_json(), encoding="utf-8")
        counts: list[dict[str, float]] = []
        jobs: dict[str, list[dict[str, float]]] = {k: [] for k in VARIANTS}
        for _ in range(rounds):
            fresh = fastprep.Tokenizer.from_file(tok_file)
            b0, o0, t0 = _busy(), _ours(), time.perf_counter()
            fresh.count_tokens(docs)
            seconds, cpu = time.perf_counter() - t0, _ours() - o0
            counts.append({"seconds": seconds, "cpu": cpu, "others": ((_busy() - b0) - cpu) / seconds})
            for name, settings in VARIANTS.items():
                jobs[name].append(job_round(corpus, tok_file, root / "out", settings))
        cpu_count = statistics.median(c["cpu"] for c in counts)
        print(f"{megabytes:g} MB, {rounds} rounds; count_tokens {cpu_count:.3f} CPU-s (median)")
        for name, runs in jobs.items():
            ratios = [c["seconds"] / r["seconds"] for c, r in zip(counts, runs, strict=True)]
            quiet = [q for q, c, r in zip(ratios, counts, runs, strict=True) if max(c["others"], r["others"]) < 0.1]
            med = {k: statistics.median(r.get(k, 0.0) for r in runs) for k in ("read", "tokenize", "pool", "write")}
            cpu_job = statistics.median(r["cpu"] for r in runs)
            busy = statistics.median(r["cpu"] / (2 * r["seconds"]) for r in runs)
            quiet_s = f", quiet {statistics.median(quiet):.0%} ({len(quiet)})" if quiet else ""
            print(
                f"  {name:6s} wall {statistics.median(ratios):.0%} (best {max(ratios):.0%}{quiet_s}) "
                f"cpu {cpu_count / cpu_job:.0%} busy {busy:.0%} | CPU-s {cpu_job:.3f}: "
                + " ".join(f"{k} {v:.3f}" for k, v in med.items())
            )


if __name__ == "__main__":
    main(*(float(a) for a in sys.argv[1:2]), *(int(a) for a in sys.argv[2:3]))
