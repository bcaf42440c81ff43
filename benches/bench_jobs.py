"""The jobs end to end against the work they wrap, ratios measured in one run.

- ``fastprep tokenize`` (JSONL file -> Parquet shards, reading and writing included) against
  ``Tokenizer.count_tokens`` on the same documents already in memory (the tokenizer alone), and
  against the usual recipe: ``datasets.load_dataset("json")`` + ``Dataset.map(batched=True)`` with
  HF ``tokenizers.encode_batch`` + ``to_parquet``. Same tokenizer (cl100k_base's tokenizer.json).
- ``fastprep images`` (an image folder -> uint8 NCHW ``.npy`` shards) against ``fastprep.preprocess``
  on the same files already in memory, in batches of the same size.

``python -m benches.bench_jobs [MB]`` prints the table; under pytest a small run checks that the
outputs agree (it is a smoke test in CI, where figures mean nothing).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import fastprep
from fastprep.jobs import ImagesSettings, TokenizeSettings, run_images, run_tokenize
from tests import tokenizer_data as data


def _best(fn: Callable[[], Any], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def tokenize_figures(root: Path, megabytes: float, rounds: int = 5) -> dict[str, Any]:
    import datasets
    import pyarrow.parquet as pq
    import tokenizers

    docs = data.corpus_documents(int(megabytes * 1e6))
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    tok_file = root / "tokenizer.json"
    tok_file.write_text(data.cl100k_tokenizer_json(), encoding="utf-8")
    tok = fastprep.Tokenizer.from_file(tok_file)
    hf = tokenizers.Tokenizer.from_file(str(tok_file))
    nbytes = corpus.stat().st_size
    counts = tok.count_tokens(docs)

    def job() -> None:
        shutil.rmtree(root / "job", ignore_errors=True)
        run_tokenize(TokenizeSettings([str(corpus)], str(tok_file), str(root / "job"), progress=False))

    def recipe() -> None:
        shutil.rmtree(root / "hf", ignore_errors=True)
        ds = datasets.load_dataset("json", data_files=str(corpus), split="train", cache_dir=str(root / "hf"))
        ds = ds.map(
            lambda b: {"input_ids": [e.ids for e in hf.encode_batch(b["text"], add_special_tokens=False)]},
            batched=True,
            remove_columns=["text"],
        )
        ds.to_parquet(str(root / "hf" / "out.parquet"))

    datasets.disable_progress_bars()
    job()
    recipe()
    ours = [len(x) for f in sorted((root / "job").glob("*.parquet")) for x in pq.read_table(f)["input_ids"].to_pylist()]
    theirs = [len(x) for x in pq.read_table(root / "hf" / "out.parquet")["input_ids"].to_pylist()]
    assert ours == counts == theirs, "the job, count_tokens and the recipe disagree"

    # The tokenizer's cache makes a second pass over the same documents ~3x faster; the job
    # starts cold, so count_tokens is timed cold too (a fresh tokenizer each round, load excluded).
    def cold_count() -> float:
        fresh = fastprep.Tokenizer.from_file(tok_file)
        t = time.perf_counter()
        fresh.count_tokens(docs)
        return time.perf_counter() - t

    t_count = t_job = steady = float("inf")
    paired: list[float] = []
    # The same job with Snappy over plain ids, with plain ids, and writing the flat token file:
    # what each Parquet layout costs over the default (delta-packed ids) on these cores.
    variants = {
        "parquet_snappy": {"compression": "snappy"},
        "parquet_none": {"compression": "none"},
        "bin": {"format": "bin"},
    }
    t_variant = dict.fromkeys(variants, float("inf"))
    # Interleaved, best of five: the box's load drifts, and a cold tokenizer's pass varies by
    # ~10% from round to round on a 2-core VM (page faults, where the kernel puts the threads).
    for _ in range(rounds):
        count_r = cold_count()
        t_count = min(t_count, count_r)
        t_job = min(t_job, _best(job, 1))
        steady_r = _steady(root, corpus, tok_file)
        steady = min(steady, steady_r)
        # The ratio within a round: both sides under the same load, unlike a best against a best
        # taken in different rounds (which moved by +-10% between runs of this bench).
        paired.append(count_r / steady_r)
        for name, kw in variants.items():
            t_variant[name] = min(t_variant[name], _steady(root, corpus, tok_file, **kw))
    t_recipe = _best(recipe, max(1, rounds - 1))
    return {
        "docs": len(docs),
        "mb": nbytes / 1e6,
        "tokens": sum(counts),
        "count_tokens_mb_s": nbytes / t_count / 1e6,
        "job_mb_s": nbytes / t_job / 1e6,
        "job_steady_mb_s": nbytes / steady / 1e6,
        "recipe_mb_s": nbytes / t_recipe / 1e6,
        "job_vs_count_tokens": t_count / t_job,
        "steady_vs_count_tokens": t_count / steady,
        "steady_vs_count_tokens_paired": float(np.median(paired)),
        "job_vs_recipe": t_recipe / t_job,
        **{f"steady_{name}_vs_count_tokens": t_count / t for name, t in t_variant.items()},
    }


def _steady(root: Path, corpus: Path, tok_file: Path, **settings: Any) -> float:
    """The job's own seconds from its summary: the run after the tokenizer is loaded."""
    shutil.rmtree(root / "job", ignore_errors=True)
    summary = run_tokenize(
        TokenizeSettings([str(corpus)], str(tok_file), str(root / "job"), progress=False, **settings)
    )
    return float(summary["seconds"])


def ray_figures(root: Path, megabytes: float, files: int = 4, rounds: int = 3) -> dict[str, Any]:
    """``--engine ray`` against the local engine on the same corpus cut into ``files`` JSONL
    files (Ray's unit of work is a file), on a local 2-CPU cluster started beforehand (a cluster
    outlives jobs; its start-up is not the job's). Rounds interleave the engines (the box's load
    drifts); the first Ray job on the fresh cluster also starts and warms its worker processes
    (imports, tokenizer load), so it is reported apart: "cold". The fixed cost is Ray's time
    minus the local engine's, median over the warm rounds."""
    import statistics

    import ray

    from fastprep.jobs.ray_engine import run_ray

    docs = data.corpus_documents(int(megabytes * 1e6))
    inputs = []
    for k in range(files):
        path = root / f"part-{k}.jsonl"
        part = docs[k::files]
        path.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in part), encoding="utf-8")
        inputs.append(str(path))
    del docs
    tok_file = root / "tokenizer.json"
    tok_file.write_text(data.cl100k_tokenizer_json(), encoding="utf-8")
    nbytes = sum(Path(p).stat().st_size for p in inputs)

    def settings(out: str) -> TokenizeSettings:
        shutil.rmtree(root / out, ignore_errors=True)
        return TokenizeSettings(inputs, str(tok_file), str(root / out), progress=False)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        t_cold = _best(lambda: run_ray("tokenize", settings("ray"), concurrency=2), 1)
        local, warm = [], []
        for _ in range(rounds):
            local.append(_best(lambda: run_tokenize(settings("local")), 1))
            warm.append(_best(lambda: run_ray("tokenize", settings("ray"), concurrency=2), 1))
    finally:
        ray.shutdown()
    same = sorted(p.name for p in (root / "ray").iterdir()) == sorted(p.name for p in (root / "local").iterdir())
    assert same, "the engines wrote different files"
    ratios = [r / t for r, t in zip(warm, local, strict=True)]
    return {
        "mb": nbytes / 1e6,
        "files": files,
        "local_mb_s": nbytes / min(local) / 1e6,
        "ray_mb_s": nbytes / min(warm) / 1e6,
        "ray_vs_local": statistics.median(ratios),
        "ray_vs_local_best": min(ratios),
        "cold_vs_local": t_cold / statistics.median(local),
        "fixed_s": statistics.median(r - t for r, t in zip(warm, local, strict=True)),
        "cold_fixed_s": t_cold - statistics.median(local),
    }


def images_figures(root: Path, n_images: int, rounds: int = 5, dtype: str = "uint8") -> dict[str, Any]:
    from fastprep._demo_image import sample_images

    # The 12 MP re-encodings take a second each on a loaded 2-core box: the bundled photos and the
    # 1080p JPEG/PNG versions are enough to compare the two paths.
    blobs = [b for name, b in sample_images().items() if "12MP" not in name]
    folder = root / "images"
    folder.mkdir(exist_ok=True)
    files = []
    for i in range(n_images):
        blob = blobs[i % len(blobs)]
        ext = "png" if blob.startswith(b"\x89PNG") else "jpg"
        path = folder / f"{i:06d}.{ext}"
        path.write_bytes(blob)
        files.append(blob)
    batch = 64

    def alone() -> None:
        for k in range(0, len(files), batch):
            fastprep.preprocess(files[k : k + batch], dtype=dtype)

    def job() -> None:
        shutil.rmtree(root / "out", ignore_errors=True)
        run_images(ImagesSettings([str(folder)], str(root / "out"), dtype=dtype, batch_size=batch, progress=False))

    job()
    first = np.load(root / "out" / "shard-00000-00000.npy")
    np.testing.assert_array_equal(first[:batch], fastprep.preprocess(files[:batch], dtype=dtype))
    t_alone = t_job = float("inf")
    paired: list[float] = []
    for _ in range(rounds):  # interleaved: the box's load drifts
        alone_r, job_r = _best(alone, 1), _best(job, 1)
        t_alone, t_job = min(t_alone, alone_r), min(t_job, job_r)
        paired.append(alone_r / job_r)
    return {
        "images": n_images,
        "dtype": dtype,
        "preprocess_img_s": n_images / t_alone,
        "job_img_s": n_images / t_job,
        "job_vs_preprocess": t_alone / t_job,
        "job_vs_preprocess_paired": float(np.median(paired)),
    }


def main(megabytes: float = 20.0, n_images: int = 256) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = tokenize_figures(Path(tmp), megabytes)
        print(
            f"tokenize, {t['docs']:,} docs, {t['mb']:.1f} MB, {t['tokens']:,} tokens (cl100k_base):\n"
            f"  count_tokens alone (in memory)        {t['count_tokens_mb_s']:7.2f} MB/s\n"
            f"  fastprep tokenize (JSONL -> Parquet)  {t['job_mb_s']:7.2f} MB/s  = {t['job_vs_count_tokens']:.0%}"
            " of count_tokens (tokenizer load included)\n"
            f"    same, after the tokenizer load      {t['job_steady_mb_s']:7.2f} MB/s  = "
            f"{t['steady_vs_count_tokens']:.0%} of count_tokens (best/best; median of the rounds' own "
            f"ratios {t['steady_vs_count_tokens_paired']:.0%})\n"
            f"    same, --compression snappy / none, --format bin: {t['steady_parquet_snappy_vs_count_tokens']:.0%}"
            f" / {t['steady_parquet_none_vs_count_tokens']:.0%} / {t['steady_bin_vs_count_tokens']:.0%}"
            " of count_tokens\n"
            f"  datasets.map + tokenizers recipe      {t['recipe_mb_s']:7.2f} MB/s  -> job is "
            f"{t['job_vs_recipe']:.1f}x faster"
        )
    # Ray's fixed cost (Ray Data's plan, task hand-offs; on a fresh cluster also the workers'
    # imports and tokenizer loads) amortizes over a corpus: two sizes show how.
    for scale in (5, 20):
        with tempfile.TemporaryDirectory() as tmp:
            r = ray_figures(Path(tmp), scale * megabytes)
            print(
                f"tokenize on a local 2-CPU Ray cluster, {r['files']} files, {r['mb']:.1f} MB: local engine "
                f"{r['local_mb_s']:.2f} MB/s, --engine ray {r['ray_mb_s']:.2f} MB/s = {r['ray_vs_local']:.2f}x "
                f"(best {r['ray_vs_local_best']:.2f}x) the local engine's time, fixed cost {r['fixed_s']:.2f} s; "
                f"first job on the fresh cluster {r['cold_vs_local']:.2f}x (+{r['cold_fixed_s']:.2f} s)"
            )
    # Two sizes: the job's fixed cost (reading the first batch before any decoding starts, writing
    # and syncing the last shard after it ends: ~85 ms) is ~5% of 256 files and ~1.5% of 1024.
    for n in (n_images, 4 * n_images):
        for dtype in ("uint8", "float16"):
            with tempfile.TemporaryDirectory() as tmp:
                r = images_figures(Path(tmp), n, dtype=dtype)
                print(
                    f"images, {r['images']} files ({dtype} NCHW 224x224): preprocess alone "
                    f"{r['preprocess_img_s']:7.1f} img/s, fastprep images {r['job_img_s']:7.1f} img/s = "
                    f"{r['job_vs_preprocess']:.0%} (best/best; median of the rounds' own ratios "
                    f"{r['job_vs_preprocess_paired']:.0%})"
                )


def test_jobs_figures_smoke(tmp_path: Path) -> None:
    """Small run: the three tokenize paths agree, the images job equals preprocess."""
    t = tokenize_figures(tmp_path, 0.3, rounds=1)
    assert t["job_vs_count_tokens"] > 0 and t["job_vs_recipe"] > 0
    r = images_figures(tmp_path, 70, rounds=1)
    assert r["job_vs_preprocess"] > 0


if __name__ == "__main__":
    main(*(float(a) for a in sys.argv[1:2]))
