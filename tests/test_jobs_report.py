"""The figures a job gives: the summary, ``--report`` (JSON + PNG chart), the progress bar only
on a terminal, and ``fastprep demo-jobs`` on the bundled sample data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastprep.__main__ import main
from fastprep.jobs.stats import Progress


def test_demo_jobs_runs_both_jobs_and_writes_the_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo-jobs", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "fastprep tokenize:" in err and "fastprep images: 2 images" in err
    tok = json.loads((tmp_path / "report" / "tokenize-report.json").read_text())
    img = json.loads((tmp_path / "report" / "images-report.json").read_text())
    assert tok["docs"] > 6000 and tok["tokens"] > 100_000 and tok["errors"] == 0
    assert set(tok["stages"]) == {"read", "tokenize", "write"}
    for stage in tok["stages"].values():
        assert stage["p50_ms"] <= stage["p95_ms"] <= stage["p99_ms"] <= stage["max_ms"]
    assert img["images"] == 2 and img["stages"]["decode"]["per"] == "image"
    assert tok["timeline"][-1][1] == tok["docs"]
    for name in ("tokenize-report.png", "images-report.png"):
        assert (tmp_path / "report" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    manifest = json.loads((tmp_path / "tokens" / "manifest.json").read_text())
    assert manifest["complete"] and manifest["totals"]["tokens"] == tok["tokens"]
    # Run again: every shard is already done.
    assert main(["demo-jobs", "--out", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "report" / "tokenize-report.json").read_text())
    assert again["docs"] == 0 and again["shards_skipped"] == 1


def test_progress_bar_only_when_asked_or_on_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    quiet = Progress(100, "B")  # stderr is not a terminal under pytest
    quiet.update(50)
    quiet.close()
    assert capsys.readouterr().err == ""
    bar = Progress(100, "B", enabled=True)
    bar.update(50)
    bar.close()
    assert "50%" in capsys.readouterr().err
