"""The performance gate: fastprep's speedups over its peers, measured side by side in one process,
against the committed baseline (benches/baseline.json). CI runs it after the tests; a speedup
below its floor fails the run.

    python benches/gate.py                      # check against the baseline (exit 1 on a regression)
    python benches/gate.py --update-baseline    # re-measure (5 runs) and rewrite the baseline
    python benches/gate.py --only resize_1080p_bilinear --inject-slowdown resize_1080p_bilinear=2

How the floors are set (docs/perf-gate.md): ``--update-baseline`` runs every check ``--runs``
times; the baseline speedup is the median of those runs and the check's floor is

    floor = baseline * max(0.6, 1 - max(0.25, 2 * spread)),   spread = (max - min) / median of the runs

so a check whose runs scatter by 10% gets a floor 25% under its baseline, a noisier one up to 40%
under it, and a 2x slowdown (a speedup halved) always falls below the floor. A check under its
floor is measured once more before it counts as a failure: one disturbed measurement on a shared
2-core machine does not fail CI, a real regression fails both times.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

import fastprep
from fastprep import _ratios

BASELINE = Path(__file__).with_name("baseline.json")
MIN_FACTOR = 0.6  # a 2x slowdown (factor 0.5) must fail whatever the measured spread
MIN_MARGIN = 0.25


def floor_factor(runs: list[float], min_margin: float = MIN_MARGIN) -> float:
    med = statistics.median(runs)
    spread = (max(runs) - min(runs)) / med if med > 0 else 1.0
    return max(MIN_FACTOR, 1.0 - max(min_margin, 2.0 * spread))


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "python": platform.python_version(),
    }


def _cpu_model() -> str:
    """The CPU's model name with its family and model numbers: a VM may name every generation
    alike ("AMD EPYC"), and ratios move between them (resize against Pillow: 4.75x on the
    machine of the first baseline, 2.9x on a family 23 model 1 one)."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor()
    if "cpu family" in fields and "model" in fields:
        return f"{name} (family {fields['cpu family']}, model {fields['model']})"
    return name


def _bare(processor: str) -> str:
    """A processor key without its family and model (how baselines were keyed before)."""
    return processor.split(" (family ", 1)[0]


def _parse_slowdowns(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, _, factor = item.partition("=")
        if name not in _ratios.BY_NAME or not factor.isdigit() or int(factor) < 1:
            raise SystemExit(f"--inject-slowdown wants NAME=INTEGER with NAME one of {sorted(_ratios.BY_NAME)}")
        out[name] = int(factor)
    return out


def _selected(only: str | None) -> list[_ratios.Check]:
    if not only:
        return list(_ratios.CHECKS)
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in _ratios.BY_NAME]
    if unknown:
        raise SystemExit(f"unknown check(s) {unknown}; known: {sorted(_ratios.BY_NAME)}")
    return [_ratios.BY_NAME[n] for n in names]


def update_baseline(checks: list[_ratios.Check], runs: int) -> int:
    results: dict[str, list[float]] = {c.name: [] for c in checks}
    skipped: dict[str, str] = {}
    for i in range(runs):
        for c in checks:
            r = _ratios.measure(c)
            if r.skipped:
                skipped[c.name] = r.skipped
                continue
            results[c.name].append(r.speedup)
            print(f"run {i + 1}/{runs}  {c.name:<26} {r.speedup:8.2f}x", flush=True)
    # Checks not re-measured this time keep their entries (`--only` updates part of the baseline).
    doc = json.loads(BASELINE.read_text()) if BASELINE.is_file() else {}
    here = machine()
    mine = _own_entry(doc, here, exact=True)
    entries = dict(mine["checks"]) if mine else {}
    for c in checks:
        values = results[c.name]
        if not values:
            print(f"{c.name}: skipped ({skipped.get(c.name)}), left out of the baseline")
            continue
        med = statistics.median(values)
        factor = floor_factor(values, c.min_margin)
        entries[c.name] = {
            "what": c.what,
            "peer": c.peer,
            "speedup": round(med, 3),
            "runs": [round(v, 3) for v in values],
            "floor_factor": round(factor, 3),
            "floor": round(med * factor, 3),
        }
    measured = {
        "date": datetime.date.today().isoformat(),
        "fastprep": fastprep.__version__,
        "machine": here,
        "method": "median of --runs runs, each the median of alternating rounds; floor per benches/gate.py",
        "checks": {c.name: entries[c.name] for c in _ratios.CHECKS if c.name in entries},
    }
    if not doc or doc["machine"]["processor"] == here["processor"]:
        doc = {**measured, "other_machines": doc.get("other_machines", {})}
    else:
        doc.setdefault("other_machines", {})[here["processor"]] = measured
    BASELINE.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {BASELINE} ({len(entries)} checks for {here['processor']})")
    return 0


def _own_entry(doc: dict[str, Any], here: dict[str, Any], *, exact: bool = False) -> dict[str, Any] | None:
    """The baseline measured on this CPU model, if any: the entry with this model's family and
    model numbers, else (unless ``exact``) one keyed by the bare model name, measured before
    keys had the numbers."""
    if not doc:
        return None
    entries = [doc, *doc.get("other_machines", {}).values()]
    for e in entries:
        if e["machine"]["processor"] == here["processor"]:
            return e
    if exact:
        return None
    for e in entries:
        if e["machine"]["processor"] == _bare(here["processor"]):
            return e
    return None


def baseline_here() -> tuple[dict[str, Any], str]:
    """The checks' baselines for this machine and where they come from. Ratios move with the CPU,
    so each CPU model measured has its own baseline; a check that this model's baseline lacks (a
    model not measured yet, or a check changed since it was) is held to the lowest floor of
    those measured (lenient: measure the model once CI runs on it)."""
    doc = json.loads(BASELINE.read_text())
    all_checks = [doc["checks"], *(m["checks"] for m in doc.get("other_machines", {}).values())]
    lowest: dict[str, Any] = {}
    for checks in all_checks:
        for name, e in checks.items():
            if name not in lowest or e["floor"] < lowest[name]["floor"]:
                lowest[name] = e
    mine = _own_entry(doc, machine())
    if mine is None:
        return lowest, "the lowest floor of the CPU models measured (this one is not)"
    own = mine["checks"]
    missing = sorted(set(lowest) - set(own))
    source = mine["machine"]["processor"]
    if missing:
        source += f" (for {', '.join(missing)}: the lowest floor of the models measured)"
    return {**lowest, **own}, source


def check(checks: list[_ratios.Check], slowdowns: dict[str, int], report: Path | None) -> int:
    if not BASELINE.is_file():
        print(f"no baseline at {BASELINE}: run `python benches/gate.py --update-baseline` first")
        return 2
    baseline, source = baseline_here()
    print(f"baseline: {source}")
    failed = []
    rows = []
    print(f"{'check':<26} {'speedup':>9} {'baseline':>9} {'floor':>8}  verdict   (peer)")
    for c in checks:
        entry = baseline.get(c.name)
        r = _ratios.measure(c, slowdown=slowdowns.get(c.name, 1))
        if r.skipped:
            # A check in the baseline that cannot run here is a failure: the gate would silently
            # stop guarding that path.
            verdict = "FAIL (cannot run)" if entry else "skipped"
            print(f"{c.name:<26} {'-':>9} {'-':>9} {'-':>8}  {verdict}: {r.skipped}")
            if entry:
                failed.append(c.name)
            rows.append({**r.as_dict(), "verdict": verdict})
            continue
        if entry is None:
            print(f"{c.name:<26} {r.speedup:8.2f}x {'-':>9} {'-':>8}  no baseline ({c.peer})")
            rows.append({**r.as_dict(), "verdict": "no baseline"})
            continue
        first = r.speedup
        if r.speedup < entry["floor"]:
            r = _ratios.measure(c, slowdown=slowdowns.get(c.name, 1))
        ok = r.speedup >= entry["floor"]
        verdict = "ok" if ok else "REGRESSION"
        retried = "" if first >= entry["floor"] else f" (first {first:.2f}x, re-measured)"
        print(
            f"{c.name:<26} {r.speedup:8.2f}x {entry['speedup']:8.2f}x {entry['floor']:7.2f}x  "
            f"{verdict:<9} ({c.peer}){retried}",
            flush=True,
        )
        if not ok:
            failed.append(c.name)
        rows.append({**r.as_dict(), "baseline": entry["speedup"], "floor": entry["floor"], "verdict": verdict})
    if report is not None:
        report.write_text(
            json.dumps(
                {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine(), "checks": rows},
                indent=2,
            )
            + "\n"
        )
    if failed:
        print(f"\nperformance gate FAILED: {', '.join(failed)} below the floor of benches/baseline.json")
        print("If the slowdown is intended (or the peer got faster), re-measure the baseline on this machine:")
        print("    .venv/bin/python benches/gate.py --update-baseline")
        return 1
    print("\nperformance gate passed")
    return 0


def readme_rows() -> int:
    b = json.loads(BASELINE.read_text())
    where = f"{b['date']}, {b['machine']['cpus']} cores"
    for name, e in b["checks"].items():
        print(f"| {e['what']} | {e['speedup']:.1f}x {e['peer']} | {where} | `python benches/gate.py --only {name}` |")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated check names (default: all)")
    p.add_argument("--update-baseline", action="store_true", help="re-measure and rewrite benches/baseline.json")
    p.add_argument("--runs", type=int, default=5, help="runs per check for --update-baseline")
    p.add_argument(
        "--inject-slowdown",
        action="append",
        default=[],
        metavar="NAME=N",
        help="run fastprep's side of check NAME N times per round (tests the gate itself)",
    )
    p.add_argument("--report", type=Path, help="write the measurements as JSON here")
    p.add_argument("--readme-rows", action="store_true", help="print the baseline as the README table's rows")
    args = p.parse_args(argv)
    if args.readme_rows:
        return readme_rows()
    if fastprep.build_profile != "release":
        print(f"fastprep is a {fastprep.build_profile} build: the gate times release builds only")
        return 2
    checks = _selected(args.only)
    if args.update_baseline:
        return update_baseline(checks, args.runs)
    return check(checks, _parse_slowdowns(args.inject_slowdown), args.report)


if __name__ == "__main__":
    sys.exit(main())
