"""Benchmarks compare implementations side by side in one run; ratios matter, not absolute times.

In the test command they run with --benchmark-disable, as smoke tests that still assert
correctness. Timed runs refuse a debug build of the extension.
"""

import pytest

import fastprep


@pytest.fixture(autouse=True)
def _refuse_debug_builds(request):
    bench = request.node.funcargs.get("benchmark") if hasattr(request.node, "funcargs") else None
    if bench is not None and not bench.disabled and fastprep.build_profile != "release":
        pytest.fail(
            f"fastprep is a {fastprep.build_profile} build; benchmarks need a release build "
            "(maturin build --release, or bash scripts/test.sh)"
        )
