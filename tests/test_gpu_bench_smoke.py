"""The GPU check's scripts (benches/gpu/) run here, with no GPU, before a lent GPU machine runs
them once: gpu_bench.py and sanitize.py with ``--emulate`` (numpy and the CPU emulation of the
kernels, tiny sizes), gpu_bench's verdict on a report, and run.sh's refusal without CuPy."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "benches" / "gpu"


def _run(args: list[str], timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout, **kw)


def _bench_module() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_bench", GPU / "gpu_bench.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _errors(d: dict[str, Any], where: str = "") -> list[str]:
    out = []
    for k, v in d.items():
        if isinstance(v, dict):
            out += _errors(v, f"{where}.{k}")
        elif k.endswith("error"):
            out.append(f"{where}.{k}: {v}")
    return out


def test_gpu_bench_emulated_runs_every_part(tmp_path):
    out = tmp_path / "bench.json"
    r = _run([sys.executable, str(GPU / "gpu_bench.py"), "--emulate", "--out", str(out)])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    report = json.loads(out.read_text())
    # a peer's error is allowed only where its package is missing
    peers = {"torchvision": ("torch", "torchvision"), "opencv": ("cv2",)}
    allowed = [p for p, mods in peers.items() if any(importlib.util.find_spec(m) is None for m in mods)]
    errors = [e for e in _errors(report) if not any(f"{p}_error" in e for p in allowed)]
    assert not errors, errors
    assert report["emulated"] is True
    assert {"device", "batch", "input", "fastprep", "skipped", "results", "peak_bandwidth_GBps"} <= set(report)
    assert "copy_bandwidth_GBps" in report
    # what needs CUDA itself is skipped with a printed line, and listed
    assert any("CUPTI" in s for s in report["skipped"]) and any("peak" in s for s in report["skipped"])
    assert "emulation: no peak memory bandwidth" in r.stdout
    res = report["results"]
    assert {"jpeg_preprocess", "224x224", "455x256", "ragged_mixed_to_224"} <= set(res)
    jpeg = res["jpeg_preprocess"]
    coef = jpeg["coefficients_gpu_vs_libjpeg_turbo"]
    assert coef["images"] == 2 and coef["coefficients_differing"] == 0 and coef["flagged"] == 0
    for entropy in ("gpu", "cpu"):
        for draft in ("", "_draft"):
            assert jpeg[f"fastprep_gpu_{entropy}_entropy{draft}_max_diff_vs_cpu"] == 0
        assert jpeg[f"fastprep_gpu_{entropy}_entropy_s"] > 0
        assert jpeg[f"h2d_bytes_{entropy}_entropy"]["total"] > 0
        assert set(jpeg[f"host_transfers_{entropy}_entropy"]) == {
            "host_to_device",
            "device_to_host",
            "kernels_and_copies",
        }
    assert {"jpeg_unstuff_count", "jpeg_sync", "jpeg_write", "jpeg_fused_h", "resize_vertical_lut"} <= set(
        jpeg["fastprep_gpu_kernels_s"]
    )
    # and the three-kernel path beside it, with the same batch
    assert {"jpeg_idct", "jpeg_color", "resize_hv"} <= set(jpeg["fastprep_gpu_unfused_kernels_s"])
    assert jpeg["fastprep_gpu_unfused_s"] > 0 and jpeg["fastprep_gpu_fused_vs_unfused_max_diff"] == 0
    assert {"headers_s", "entropy_decoding_s", "upload_s"} <= set(jpeg["stages_cpu_entropy"])
    rows = {"fastprep_gpu", "fastprep_cpu"} | ({"torchvision_nvjpeg"} if "torchvision" not in allowed else set())
    for k in ("batch_1", "batch_2"):
        assert rows <= set(jpeg["latency"][k])
        assert set(jpeg["latency"][k]["fastprep_gpu"]) == {"p50_s", "p95_s", "p99_s", "images_per_s"}
    if "torchvision" not in allowed:
        assert "torchvision_nvjpeg_s" in jpeg and "speedup_fastprep_gpu_vs_torchvision" in jpeg
    for size in ("224x224", "455x256"):
        r2 = res[size]
        assert r2["max_diff_vs_cpu"] == 0
        assert {"fastprep_gpu_s", "kernels_s", "effective_GBps", "kernels_s_h_shared_1"} <= set(r2)
        assert {"kernels_s_two_launches", "essential_bytes_GBps"} <= set(r2) and r2["fused_one_launch"]
    assert res["ragged_mixed_to_224"]["images"] == 3


def test_gpu_bench_verdict_counts_fastprep_failures_not_peers():
    bench = _bench_module()
    good = {"results": {"jpeg_preprocess": {"fastprep_gpu_gpu_entropy_max_diff_vs_cpu": 0.0}, "224x224": {}}}
    assert bench.problems(good) == []
    peer = {"results": {"jpeg_preprocess": {"torchvision_error": "x", "host_transfers_gpu_entropy_error": "y"}}}
    assert bench.problems(peer) == []
    bad = {
        "results": {
            "jpeg_preprocess": {
                "correctness_error": "StopIteration()",
                "fastprep_gpu_cpu_entropy_draft_max_diff_vs_cpu": 0.5,
                "coefficients_gpu_vs_libjpeg_turbo": {"coefficients_differing": 3, "flagged": 0},
            },
            "224x224": {"max_diff_vs_cpu": 1},
            "ragged_mixed_to_224": {"error": "ValueError()"},
        }
    }
    assert len(bench.problems(bad)) == 5


def test_sanitize_workload_emulated():
    r = _run([sys.executable, str(GPU / "sanitize.py"), "--emulate"])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "0 results differ from the CPU" in r.stdout


def test_run_sh_parses_and_refuses_without_cupy(tmp_path):
    assert _run(["bash", "-n", str(GPU / "run.sh")]).returncode == 0
    # A python without CuPy (a package that fails to import stands in, wherever CuPy is
    # installed) and a pip that installs nothing: run.sh must stop at the preflight, saying why.
    fake_site = tmp_path / "nocupy"
    (fake_site / "cupy").mkdir(parents=True)
    (fake_site / "cupy" / "__init__.py").write_text("raise ImportError('no CuPy in this test')\n")
    fake = tmp_path / "python"
    fake.write_text(f'#!/bin/sh\n[ "$1 $2" = "-m pip" ] && exit 0\nexec "{sys.executable}" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    wheel = tmp_path / "fastprep-0-py3-none-any.whl"
    wheel.write_bytes(b"")
    here = os.pathsep.join(p for p in sys.path if p and Path(p, "fastprep").is_dir())
    env = {
        **os.environ,
        "PYTHON": str(fake),
        "WHEEL": str(wheel),
        "OUT": str(tmp_path / "out"),
        "SITE": str(tmp_path / "site"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(fake_site), here, os.environ.get("PYTHONPATH", "")])),
    }
    r = _run(["bash", str(GPU / "run.sh")], env=env)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "MISSING cupy" in r.stdout and "no CuPy in this test" in r.stdout
    assert "preflight failed" in r.stderr
    assert not (tmp_path / "out" / "gpu-tests.log").exists()  # nothing ran past the preflight


def test_sass_check_runs_without_a_gpu():
    # The script's own code, for one kernel file and sm_90, with this machine's NVRTC (all files
    # take over a minute here; the GPU machine checks all of them with its own NVRTC).
    import shutil

    import pytest

    pytest.importorskip("cuda.bindings.nvrtc", reason="the test extra installs cuda-bindings")
    tool = shutil.which("cuobjdump")
    if tool is None:
        triton = importlib.util.find_spec("triton")
        found = (
            Path(triton.origin).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
            if triton and triton.origin
            else None
        )
        tool = str(found) if found and found.exists() else None
    if tool is None:
        pytest.skip("no cuobjdump (CUDA toolkit, or triton's copy that torch brings)")
    r = _run(
        [sys.executable, str(GPU / "sass_check.py"), "--arch", "sm_90", "--kernel", "jpeg_idct.cu"],
        env={**os.environ, "CUOBJDUMP": tool},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "jpeg_idct.cu: 1 variants checked" in r.stdout


def test_preflight_finds_a_wheel_of_other_code(tmp_path, monkeypatch):
    import shutil

    import fastprep

    spec = importlib.util.spec_from_file_location("preflight", GPU / "preflight.py")
    assert spec is not None and spec.loader is not None
    preflight = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(preflight)
    tree = ROOT / "python" / "fastprep"
    copy = tmp_path / "fastprep"
    shutil.copytree(tree, copy, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    monkeypatch.setattr(fastprep, "__file__", str(copy / "__init__.py"))
    assert preflight._stale_wheel() == []
    (copy / "gpu" / "resize.py").write_text((tree / "gpu" / "resize.py").read_text() + "# older\n")
    assert preflight._stale_wheel() == ["fastprep/gpu/resize.py"]
