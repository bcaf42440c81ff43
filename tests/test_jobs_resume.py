"""Nothing lost, nothing twice: a job SIGKILLed between any two steps that matter (a temporary
shard written, renamed, the manifest written, the final join), then run again, leaves exactly the
bytes of a clean run; a finished job run again does nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fastprep.jobs.cli import DATA

from .tokenizer_data_wordpiece import bert_file


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _run(args: list[str], crash: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FASTPREP_JOBS_CRASH_AT"}
    if crash:
        env["FASTPREP_JOBS_CRASH_AT"] = crash
    return subprocess.run(
        [sys.executable, "-m", "fastprep", *args, "--quiet"], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    lines = [json.dumps({"text": f"document {i}: " + "some words here " * (i % 7)}) for i in range(37)]
    lines[11] = '{"title": "no text"}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _check_resume(out: Path, args: list[str], crashes: list[str], clean: dict[str, bytes]) -> None:
    for crash in crashes:
        victim = out.with_name(out.name + "-" + crash.replace(":", "-"))
        killed = _run([*args, "--out", str(victim)], crash)
        assert killed.returncode == -signal.SIGKILL, (crash, killed.stderr)
        assert _tree(victim) != clean, f"{crash}: the kill came after the job had finished"
        again = _run([*args, "--out", str(victim)])
        assert again.returncode == 0, again.stderr
        assert _tree(victim) == clean, crash


@pytest.mark.parametrize(
    ("fmt", "crashes"),
    [
        ("parquet", ["shard-written:2", "before-rename:3", "shard-renamed:4", "after-manifest:5"]),
        ("bin", ["shard-renamed:3", "before-rename:25", "before-rename:27"]),  # then: the final join, errors
    ],
)
def test_tokenize_killed_and_resumed_is_byte_identical(
    tmp_path: Path, corpus: Path, fmt: str, crashes: list[str]
) -> None:
    args = ["tokenize", str(corpus), "--tokenizer", str(bert_file()), "--format", fmt]
    args += ["--docs-per-shard", "5", "--batch-size", "2", "--eos", "[SEP]"]
    done = _run([*args, "--out", str(tmp_path / "clean")])
    assert done.returncode == 0, done.stderr
    clean = _tree(tmp_path / "clean")
    manifest = json.loads(clean["manifest.json"])
    assert len(manifest["shards"]) == 8 and manifest["totals"]["docs"] == 36
    assert b'"line": 12' in clean["errors.jsonl"]
    _check_resume(tmp_path / "v", args, crashes, clean)
    # A finished job run again changes nothing.
    assert _run([*args, "--out", str(tmp_path / "clean")]).returncode == 0
    assert _tree(tmp_path / "clean") == clean


def test_bin_of_one_shard_killed_and_resumed_is_byte_identical(tmp_path: Path, corpus: Path) -> None:
    """One shard's part becomes tokens.bin by a second name (no copy): a kill before or after
    that link leaves what a re-run completes, and the stream is the one the join of 8 writes."""
    args = ["tokenize", str(corpus), "--tokenizer", str(bert_file()), "--format", "bin", "--eos", "[SEP]"]
    done = _run([*args, "--out", str(tmp_path / "clean")])
    assert done.returncode == 0, done.stderr
    clean = _tree(tmp_path / "clean")
    assert len(json.loads(clean["manifest.json"])["shards"]) == 1
    # Passes of before-rename: the part, its lengths, the manifest, then tokens.bin's link (4)
    # and offsets.npy (5).
    _check_resume(tmp_path / "v", args, ["before-rename:4", "before-rename:5"], clean)
    joined = _run([*args, "--docs-per-shard", "5", "--out", str(tmp_path / "joined")])
    assert joined.returncode == 0, joined.stderr
    for name in ("tokens.bin", "offsets.npy"):
        assert (tmp_path / "joined" / name).read_bytes() == clean[name]


def test_images_killed_and_resumed_is_byte_identical(tmp_path: Path) -> None:
    tree = tmp_path / "set"
    for cls in ("cat", "dog"):
        (tree / cls).mkdir(parents=True)
        for i, src in enumerate(sorted((DATA / "images").glob("*.jpg")) * 2):
            (tree / cls / f"{i}.jpg").write_bytes(src.read_bytes())
    (tree / "dog" / "9-corrupt.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    args = ["images", str(tree), "--shard-size", "2", "--batch-size", "1", "--crop", "32", "--resize-shorter", "40"]
    done = _run([*args, "--out", str(tmp_path / "clean")])
    assert done.returncode == 0, done.stderr
    clean = _tree(tmp_path / "clean")
    assert len(json.loads(clean["manifest.json"])["shards"]) == 5
    assert b"9-corrupt.jpg" in clean["errors.jsonl"]
    _check_resume(tmp_path / "v", args, ["shard-written:2", "shard-renamed:3", "after-manifest:2"], clean)
