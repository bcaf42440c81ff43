"""The installed package: version, build info, embedded kernels, stubs, and the command line."""

import json
import pathlib
import subprocess
import sys

import pytest

import fastprep

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_tests_run_against_the_installed_wheel():
    installed = pathlib.Path(fastprep.__file__).resolve()
    assert REPO / "python" not in installed.parents, f"imported the source tree: {installed}"


def test_version_matches_cargo_toml():
    cargo = (REPO / "Cargo.toml").read_text()
    assert f'version = "{fastprep.__version__}"' in cargo


def test_build_info_fields():
    info = fastprep.build_info()
    assert info["version"] == fastprep.__version__
    assert info["build_profile"] == fastprep.build_profile == "release"
    assert info["rustc"].startswith("rustc 1.")
    assert info["pyo3"].startswith("0.")
    assert isinstance(info["simd_compiled"], list) and isinstance(info["simd_detected"], list)
    assert set(info["simd_compiled"]) <= set(info["simd_detected"]) | {"neon"}
    assert info["gpu"] == (info["gpu_count"] > 0)
    assert info["cupy"] is None or isinstance(info["cupy"], str)


def test_every_cuda_source_is_embedded_verbatim():
    files = sorted(p.name for p in (REPO / "cuda").iterdir() if p.suffix in (".cu", ".cuh"))
    assert files and fastprep.kernel_names() == files
    for name in files:
        assert fastprep.kernel_source(name) == (REPO / "cuda" / name).read_text()
    assert fastprep.kernel_source("normalize") == fastprep.kernel_source("normalize.cu")


def test_unknown_kernel_lists_the_names():
    with pytest.raises(KeyError, match=r"available: jpeg_entropy\.cu, jpeg_fused\.cu, jpeg_idct\.cu, normalize\.cu"):
        fastprep.kernel_source("nope")


def test_stub_and_marker_ship():
    pkg = pathlib.Path(fastprep.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_core.pyi").exists()


def test_public_names():
    for name in fastprep.__all__:
        assert hasattr(fastprep, name), name
    assert issubclass(fastprep.PoolExhaustedError, MemoryError)


def test_cli_info():
    out = subprocess.run([sys.executable, "-m", "fastprep", "info"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["version"] == fastprep.__version__


def test_cli_demo_prints_its_figures():
    out = subprocess.run(
        [sys.executable, "-m", "fastprep", "demo", "--cycles", "3000", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    report = json.loads(out.stdout)
    # The first section states the README table's gated rows, in its terms (fastprep/_ratios.py).
    figures = {r["name"]: r for r in report["figures"]}
    assert {"tokenizer_cl100k_single", "image_pipeline_1080p", "resize_1080p_bilinear"} <= set(figures)
    for r in figures.values():
        assert r["skipped"] or r["speedup"] > 0, r
    assert set(report["soak"]) == {"pool", "numpy"}
    pool = report["soak"]["pool"]
    assert pool["cycles"] == 3000 and pool["alloc_ns_p50"] > 0
    assert set(report["latency_ns"]) == {"1024", "65536", "1048576", "16777216"}
    assert report["pool_stats_example"]["acquires"] == 1
    tok = report["tokenizer"]
    assert tok["identical_to_tokenizers"] == f"{tok['documents']}/{tok['documents']}"
    assert tok["fastprep_MBps"]["encode"] > 0 and tok["speedup"]["encode"] > 0
