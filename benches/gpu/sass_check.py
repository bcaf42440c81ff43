"""Every kernel variant compiled to machine code for this GPU with the installed NVRTC, and the
SASS searched for a VIMNMX with a predicate output: CUDA 13.0's NVRTC turned resize.cu's old
unpremultiply test (`alpha != 0 && alpha != 255` after a clamp) into one, and on an H200 that
code skipped the division for every alpha. Prints the NVRTC version and any variant that has
one; exits 1 if any does, 3 if it cannot check. Run by benches/gpu/run.sh (needs cuda-bindings and
cuobjdump); ``--arch sm_90`` checks without a GPU what this machine's NVRTC makes for that one
(tests/test_gpu_bench_smoke.py, with triton's cuobjdump where the CUDA toolkit's is missing)."""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import fastprep
from fastprep.kernels import kernel_unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
try:
    from cuda.bindings import nvrtc
except ImportError as e:  # say what to carry rather than a bare traceback (see run.sh's header)
    print(f"sass_check: needs cuda-bindings for this machine's CUDA (not checked): {e}")
    raise SystemExit(3) from e
try:
    from test_cuda_nvrtc import _variants  # the variants the NVRTC test compiles
except ImportError as e:  # it imports pytest
    print(f"sass_check: needs pytest to read tests/test_cuda_nvrtc.py's variants (not checked): {e}")
    raise SystemExit(3) from e


def _sass(source: str, defines: dict[str, int], arch: str, tool: str) -> str:
    pre = "".join(f"#define {k} {v}\n" for k, v in sorted(defines.items()))
    _, prog = nvrtc.nvrtcCreateProgram((pre + source).encode(), b"kernel.cu", 0, [], [])
    opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17"]
    (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, (defines, result)
    _, size = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = bytearray(size)
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    nvrtc.nvrtcDestroyProgram(prog)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=True).stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", help="sm_XY to compile for (default: the current CuPy device's); needs no GPU")
    ap.add_argument("--kernel", action="append", help="only this kernel file (repeatable; default: all)")
    args = ap.parse_args(argv)
    tool = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not Path(tool).exists():
        print("sass_check: no cuobjdump ($CUOBJDUMP, PATH or /usr/local/cuda/bin): not checked")
        return 3
    if args.arch:
        arch = args.arch
    else:
        import cupy

        # compute_capability is a string of major and minor digits: "90" for sm_90, "100" for sm_100
        arch = f"sm_{cupy.cuda.Device().compute_capability}"
    print("nvrtc", nvrtc.nvrtcVersion()[1:], "arch", arch)
    pattern = re.compile(r"VIMNMX[.A-Z0-9]* R\d+, P\d")
    bad = 0
    # The variants compile in threads (NVRTC and cuobjdump run outside the GIL): run.sh gives this
    # stage a minute, and one after another they take about that on one core.
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for name in args.kernel or fastprep.kernel_names():
            source = kernel_unit(name)  # after the sources it calls into, as launched
            variants = _variants(name)
            outputs = pool.map(lambda d, source=source: _sass(source, d, arch, tool), variants)
            for defines, sass in zip(variants, outputs, strict=True):
                found = pattern.findall(sass)
                if found:
                    bad += 1
                    print(f"{name} {defines}: {len(found)} VIMNMX with a predicate output")
            print(f"{name}: {len(variants)} variants checked")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
