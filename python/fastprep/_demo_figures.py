"""The demo's first section: the README performance table's gated rows, measured here and now.

Each row is a check of ``fastprep._ratios`` (the CI gate runs the same ones), so the demo, the
README and CI state the same figures in the same terms: fastprep's speedup over a peer, measured
side by side in this process, after asserting identical results.
"""

from __future__ import annotations

from typing import Any

from . import _ratios


def run() -> list[dict[str, Any]]:
    return [_ratios.measure(c).as_dict() for c in _ratios.CHECKS]


def print_report(rows: list[dict[str, Any]]) -> None:
    print("\n1. fastprep against its peers, side by side in this process (as in the README's table)")
    print(f"   {'what':<84} {'speedup':>8}  peer")
    for r in rows:
        if r["skipped"]:
            print(f"   {r['what']:<84} {'-':>8}  {r['peer']} (skipped: {r['skipped']})")
        else:
            print(f"   {r['what']:<84} {r['speedup']:7.1f}x  {r['peer']}")
