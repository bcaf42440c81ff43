"""Benchmarks compare implementations side by side in one run; ratios matter, not absolute times.

In the test command they run with --benchmark-disable, as smoke tests that still assert
correctness, on a smaller corpus (FASTPREP_BENCH_CORPUS_MB, unless set: a smoke test times
nothing, and the peers' single-threaded passes over megabytes were minutes of CI). Timed runs
refuse a debug build of the extension.
"""

import os

import pytest

import fastprep

SMOKE_CORPUS_MB = "0.5"


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("benchmark_disable", default=False):
        os.environ.setdefault("FASTPREP_BENCH_CORPUS_MB", SMOKE_CORPUS_MB)


@pytest.fixture(autouse=True)
def _refuse_debug_builds(request):
    bench = request.node.funcargs.get("benchmark") if hasattr(request.node, "funcargs") else None
    if bench is not None and not bench.disabled and fastprep.build_profile != "release":
        pytest.fail(
            f"fastprep is a {fastprep.build_profile} build; benchmarks need a release build "
            "(maturin build --release, or bash scripts/test.sh)"
        )
