"""Soak: 1M take/return cycles of image-sized buffers (150 KB - 6 MB), through BlockPool and
through fresh numpy allocations, recording start, after-warm-up, peak and final RSS.

    .venv/bin/pytest benches/bench_pool_soak.py -s            # 1M cycles each
    FASTPREP_SOAK_CYCLES=200000 .venv/bin/pytest benches/bench_pool_soak.py -s

Goal: the pool's RSS stays flat after warm-up (<= 1% growth). With --benchmark-disable
(the test command) it runs a short soak as a smoke test, asserting the same.
"""

import os

import pytest

from fastprep._soak import soak


@pytest.mark.parametrize("impl", ["pool", "numpy"])
def test_soak_rss(benchmark, impl):
    default = 20_000 if benchmark.disabled else 1_000_000
    cycles = int(os.environ.get("FASTPREP_SOAK_CYCLES", default))
    benchmark.group = "soak"
    result = benchmark.pedantic(soak, args=(impl, cycles), rounds=1, iterations=1)
    benchmark.extra_info.update(result.as_dict())
    mib = 1 << 20
    print(
        f"\n{impl}: {cycles:,} cycles in {result.seconds:.1f} s; RSS start {result.rss_start / mib:.1f} "
        f"MiB, after warm-up {result.rss_after_warmup / mib:.1f}, peak {result.rss_peak / mib:.1f}, "
        f"final {result.rss_final / mib:.1f} MiB ({100 * result.growth_after_warmup:+.2f}%); alloc "
        f"P50/P95/P99 {result.alloc_ns_p50:.0f}/{result.alloc_ns_p95:.0f}/{result.alloc_ns_p99:.0f} ns"
    )
    if impl == "pool":
        assert result.growth_after_warmup <= 0.01, result.as_dict()
        assert result.rss_peak <= result.rss_after_warmup * 1.01 + (1 << 20)
