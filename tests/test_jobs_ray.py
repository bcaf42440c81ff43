"""``--engine ray``: a local Ray cluster (loopback) runs both jobs with outputs byte-identical to
the local engine's, and a Ray worker SIGKILLed mid-job costs nothing: the job completes with the
same bytes."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from fastprep.jobs import ImagesSettings, TokenizeSettings, run_images, run_tokenize
from fastprep.jobs.cli import DATA
from fastprep.jobs.ray_engine import run_ray

from .tokenizer_data_wordpiece import bert_file


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One local cluster for the module; a worker dies (SIGKILL) once, the first time any worker
    renames a shard."""
    marker = tmp_path_factory.mktemp("ray") / "killed-once"
    env = {"FASTPREP_JOBS_CRASH_AT": "shard-renamed:1", "FASTPREP_JOBS_CRASH_ONCE": str(marker)}
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": env},
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield marker
    ray.shutdown()


def test_ray_engine_equals_local_engine_and_survives_a_killed_worker(tmp_path: Path, cluster: Path) -> None:
    corpus = []
    for k in range(3):
        path = tmp_path / f"part-{k}.jsonl"
        lines = [json.dumps({"text": f"file {k} document {i} " + "words " * (i % 5)}) for i in range(23)]
        lines[5] = '{"nothing": 0}'
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        corpus.append(str(path))
    settings = {"inputs": [str(tmp_path / "part-*.jsonl")], "tokenizer": str(bert_file()), "docs_per_shard": 6}
    settings |= {"batch_size": 4, "eos": "[SEP]", "progress": False}
    run_tokenize(TokenizeSettings(out=str(tmp_path / "local"), **settings))  # type: ignore[arg-type]
    summary, _ = run_ray("tokenize", TokenizeSettings(out=str(tmp_path / "ray"), **settings), concurrency=2)  # type: ignore[arg-type]
    assert cluster.exists(), "the worker kill did not happen"
    assert _tree(tmp_path / "ray") == _tree(tmp_path / "local")
    assert summary["docs"] == 66 and summary["errors"] == 3
    # Ray Data reads the shards back (the next stage of a Ray pipeline).
    rows = ray.data.read_parquet(str(tmp_path / "ray"), file_extensions=["parquet"]).take_all()
    assert len(rows) == 66 and sum(len(r["input_ids"]) for r in rows) == summary["tokens"]

    tree = tmp_path / "set"
    for cls in ("a", "b"):
        (tree / cls).mkdir(parents=True)
        for i, p in enumerate(sorted((DATA / "images").glob("*.jpg")) * 2):
            (tree / cls / f"{i}.jpg").write_bytes(p.read_bytes())
    img = {"inputs": [str(tree)], "crop": 32, "resize_shorter": 40, "shard_size": 3, "progress": False}
    run_images(ImagesSettings(out=str(tmp_path / "img-local"), **img))  # type: ignore[arg-type]
    run_ray("images", ImagesSettings(out=str(tmp_path / "img-ray"), **img), concurrency=2)  # type: ignore[arg-type]
    assert _tree(tmp_path / "img-ray") == _tree(tmp_path / "img-local")
    assert os.environ.get("FASTPREP_JOBS_CRASH_AT") is None  # the driver itself never had it
