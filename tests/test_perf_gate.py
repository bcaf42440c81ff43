"""The CI performance gate (benches/gate.py) fails on an injected 2x slowdown and passes without.

The slowdown is a knob of the bench harness (fastprep's side of a check runs twice per round), not
of the library. The checks used here are the quickest and steadiest ones of the gate; the whole
gate runs in .ci/run after the tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import fastprep

GATE = Path(__file__).resolve().parents[1] / "benches" / "gate.py"
CHECKS = "resize_1080p_bilinear,pool_acquire_16MiB"

pytestmark = [
    pytest.mark.skipif(
        fastprep.build_profile != "release", reason="the gate times release builds only (this is a debug build)"
    ),
    # Timings: another test worker on the same cores would make a 2x slowdown look like noise.
    pytest.mark.serial,
]


def _gate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GATE), "--only", CHECKS, *args], capture_output=True, text=True, timeout=300
    )


def test_baseline_covers_every_gated_path():
    baseline = json.loads((GATE.parent / "baseline.json").read_text())["checks"]
    for name in (
        "tokenizer_cl100k_single",
        "tokenizer_cl100k_batch",
        "image_pipeline_1080p",
        "resize_1080p_bilinear",
        "pool_acquire_16MiB",
    ):
        entry = baseline[name]
        # A floor that a 2x slowdown would pass is no gate.
        assert 0.5 * entry["speedup"] < entry["floor"] < entry["speedup"], entry


@pytest.mark.parametrize("slowed", CHECKS.split(","))
def test_gate_fails_on_a_2x_slowdown(slowed, tmp_path):
    out = _gate("--inject-slowdown", f"{slowed}=2", "--report", str(tmp_path / "r.json"))
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"performance gate FAILED: {slowed}" in out.stdout
    rows = {r["name"]: r for r in json.loads((tmp_path / "r.json").read_text())["checks"]}
    assert rows[slowed]["verdict"] == "REGRESSION"


def test_gate_passes_without_a_slowdown():
    out = _gate()
    assert out.returncode == 0, out.stdout + out.stderr
    assert "performance gate passed" in out.stdout


def test_gate_refuses_unknown_checks():
    out = subprocess.run([sys.executable, str(GATE), "--only", "nope"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "unknown check" in (out.stdout + out.stderr)


def _load_gate() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("fastprep_gate", GATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_check_missing_from_this_models_baseline_takes_the_lowest_floor(tmp_path, monkeypatch):
    """This CPU model's own entries are used; a check it lacks is held to the lowest floor of the
    models measured; a model not measured at all gets the lowest floor of every check."""
    gate: object = _load_gate()

    def entry(floor: float) -> dict[str, float]:
        return {"speedup": floor / 0.6, "floor": floor}

    doc = {
        "machine": {"processor": "CPU A"},
        "checks": {"one": entry(3.0), "two": entry(5.0)},
        "other_machines": {"CPU B": {"machine": {"processor": "CPU B"}, "checks": {"one": entry(4.0)}}},
    }
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(doc))
    monkeypatch.setattr(gate, "BASELINE", baseline)
    for model, want_one, own in (("CPU B", 4.0, True), ("CPU A", 3.0, True), ("CPU C", 3.0, False)):
        monkeypatch.setattr(gate, "machine", lambda model=model: {"processor": model})
        checks, source = gate.baseline_here()  # type: ignore[attr-defined]
        assert checks["one"]["floor"] == want_one, model
        assert checks["two"]["floor"] == 5.0, model  # only CPU A measured it
        assert source.startswith(model) == own, source
    monkeypatch.setattr(gate, "machine", lambda: {"processor": "CPU B"})
    assert "for two: the lowest floor" in gate.baseline_here()[1]  # type: ignore[attr-defined]
