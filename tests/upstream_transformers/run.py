"""Run transformers' own tokenizer tests on fastprep (through fastprep.hf) and on the stock
tokenizers backend, every fastprep call compared with the stock one.

    .venv/bin/python tests/upstream_transformers/run.py --fetch        # once: the sdist, from PyPI
    .venv/bin/python tests/upstream_transformers/run.py [--src PATH] [--json OUT] [pytest args...]

The tests are those of the installed transformers release: ``tests/test_tokenization_common.py``
(``TokenizerTesterMixin``, upstream's ``TokenizersBackendCommonTest``), ``test_tokenizers_backend_mixin.py``
and ``test_sentencepiece_backend_mixin.py`` from its sdist (cached by ``--fetch``; ``--src`` takes
the sdist, a checkout or a bare git directory instead), plus ``cases.py``, which applies the
mixins to one tokenizer per model family as a model's own test file would. The Hub names they
load are served from local files of the same kind (hub.py). The suite runs twice, each in a
pytest subprocess: on the stock backend, then with every ``TokenizersBackend`` on fastprep
(backend.py: ``fastprep.hf.FastprepBackend`` with each call also made on tokenizers and
compared). Prints both outcomes of every test that is not passed on both, the calls compared
and every difference; exits non-zero if a test passes on the stock backend and not on fastprep,
or a call differs; ``--json`` also writes every test's two outcomes. Extra pytest args
(``-k ...``) select tests in both runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TARGETS = (
    "tests/test_tokenization_common.py",
    "tests/test_tokenizers_backend_mixin.py",
    "tests/test_fastprep_models.py",
)


def _load(name: str) -> Any:
    """A module of this folder by path (upstream's own ``tests`` package owns that name here)."""
    spec = importlib.util.spec_from_file_location(f"fastprep_upstream_transformers_{name}", HERE / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


# -------------------------------------------------------------------------------- one run (child)


class Recorder:
    """pytest plugin of a child run: one outcome per test (a failed phase or subtest wins)."""

    def __init__(self) -> None:
        self.tests: dict[str, dict[str, str]] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and report.outcome == "passed":
            return
        prev = self.tests.get(report.nodeid)
        if prev is not None and prev["outcome"] == "failed":
            return
        why = ""
        if report.outcome == "failed":
            lines = [ln[2:].strip() for ln in report.longreprtext.splitlines() if ln.startswith("E ")]
            why = (lines[0] if lines else report.longreprtext.strip().splitlines()[-1])[:240]
        elif report.outcome == "skipped" and isinstance(report.longrepr, tuple):
            why = str(report.longrepr[2])[:240]
        self.tests[report.nodeid] = {"outcome": report.outcome, "why": why}


def child(backend_name: str, report: Path, root: Path, args: list[str]) -> int:
    import pytest

    backend = _load("backend")
    if backend_name == "fastprep":
        backend.install()
    os.chdir(root)
    rec = Recorder()
    code = pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", str(root), *TARGETS, *args], plugins=[rec])
    out = {"tests": rec.tests, "calls": backend.CALLS["n"], "mismatches": list(dict.fromkeys(backend.MISMATCHES))}
    report.write_text(json.dumps(out, indent=1))
    return int(code)


# -------------------------------------------------------------------------------- both runs (parent)


@dataclass
class Summary:
    stock: dict[str, dict[str, str]]
    fastprep: dict[str, dict[str, str]]
    calls: int
    mismatches: list[str]
    counts: dict[str, int] = field(default_factory=dict)

    def differing(self) -> list[str]:
        """Tests whose outcome on fastprep is not the stock backend's."""
        names = sorted(set(self.stock) | set(self.fastprep))
        return [n for n in names if self._outcome(self.stock, n) != self._outcome(self.fastprep, n)]

    def on_both(self, outcome: str) -> list[str]:
        return sorted(
            n for n in self.stock if self._outcome(self.stock, n) == self._outcome(self.fastprep, n) == outcome
        )

    @staticmethod
    def _outcome(run: dict[str, dict[str, str]], name: str) -> str:
        return run.get(name, {}).get("outcome", "not run")

    def ok(self) -> bool:
        return not self.differing() and not self.mismatches and bool(self.stock)


def prepare(work: Path, src: Path | None) -> tuple[Path, dict[str, str]]:
    """Upstream's tests, cases.py, the fixture they read and the local Hub under ``work``; returns
    the tests' root and the environment of the runs (offline, on that Hub)."""
    source, hub = _load("source"), _load("hub")
    root = work / "upstream"
    tests = source.extract(src, root)
    shutil.copyfile(HERE / "cases.py", tests / "test_fastprep_models.py")
    # fixtures/sample_text.txt is not in the sdist: fastprep's own sample text stands in
    (tests / "fixtures").mkdir()
    shutil.copyfile(REPO / "python" / "fastprep" / "data" / "sample_text.txt", tests / "fixtures" / "sample_text.txt")
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow\n")
    hub_dir = hub.build(work / "hf")
    env = os.environ | {
        "HF_HOME": str(work / "hf"),
        "HF_HUB_CACHE": str(hub_dir),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        # @slow marks test_conversion_reversible (offline) and the round trips of 18 real Hub
        # models (which then fail on both backends here): run them, so that they are counted
        "RUN_SLOW": "1",
    }
    return root, env


def run_suite(pytest_args: list[str], src: Path | None = None, timeout: float | None = None) -> Summary:
    work = Path(tempfile.mkdtemp(prefix="fastprep-upstream-transformers-"))
    try:
        root, env = prepare(work, src)
        runs = {}
        for name in ("stock", "fastprep"):
            report = work / f"{name}.json"
            cmd = [sys.executable, str(HERE / "run.py"), "--child", name, str(report), str(root), *pytest_args]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            if not report.is_file():
                raise RuntimeError(f"the {name} run did not finish:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
            runs[name] = json.loads(report.read_text())
        summary = Summary(
            runs["stock"]["tests"], runs["fastprep"]["tests"], runs["fastprep"]["calls"], runs["fastprep"]["mismatches"]
        )
        for outcome in ("passed", "failed", "skipped"):
            summary.counts[outcome] = len(summary.on_both(outcome))
        summary.counts["ran"] = len(set(summary.stock) | set(summary.fastprep))
        summary.counts["differing"] = len(summary.differing())
        return summary
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(s: Summary) -> str:
    c = s.counts
    lines = [
        f"{c['ran']} upstream tests: {c['passed']} passed on both backends, {c['failed']} failed on both, "
        f"{c['skipped']} skipped on both, {c['differing']} with another outcome on fastprep",
        f"{s.calls} calls made on both libraries; {len(s.mismatches)} differences",
    ]
    for name in s.differing():
        st, fp = s.stock.get(name, {}), s.fastprep.get(name, {})
        lines.append(f"  OUTCOME {name}: stock {st.get('outcome', 'not run')}, fastprep {fp.get('outcome', 'not run')}")
        lines.append(f"      fastprep: {fp.get('why', '')}")
    for name in s.on_both("failed"):
        lines.append(f"  FAILED ON BOTH {name}: {s.stock[name]['why']}")
    reasons: dict[str, int] = {}
    for name in s.on_both("skipped"):
        why = s.stock[name]["why"]
        reasons[why] = reasons.get(why, 0) + 1
    lines.extend(f"  SKIPPED ON BOTH x{n}: {why}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
    lines.extend(f"  DIFF {m}" for m in s.mismatches)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        return child(argv[1], Path(argv[2]), Path(argv[3]), argv[4:])
    if argv[:1] == ["--fetch"]:
        print(_load("source").fetch())
        return 0
    src = out = None
    while argv[:1] in (["--src"], ["--json"]):
        if argv[0] == "--src":
            src = Path(argv[1]).resolve()
        else:
            out = Path(argv[1])
        argv = argv[2:]
    summary = run_suite(argv, src)
    print(report(summary))
    if out is not None:
        fields = {"counts": summary.counts, "calls": summary.calls, "mismatches": summary.mismatches}
        out.write_text(json.dumps(fields | {"stock": summary.stock, "fastprep": summary.fastprep}, indent=1))
    return 0 if summary.ok() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
