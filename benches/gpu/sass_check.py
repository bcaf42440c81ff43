"""Every kernel variant compiled to machine code for this GPU with the installed NVRTC, and the
SASS searched for a VIMNMX with a predicate output: CUDA 13.0's NVRTC turned resize.cu's old
unpremultiply test (`alpha != 0 && alpha != 255` after a clamp) into one, and on an H200 that
code skipped the division for every alpha. Prints the NVRTC version and any variant that has
one; exits 1 if any does. Run by benches/gpu/run.sh (needs cuda-bindings and cuobjdump)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import fastprep

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
try:
    from cuda.bindings import nvrtc
except ImportError as e:  # say what to carry rather than a bare traceback (see run.sh's header)
    print(f"sass_check: needs cuda-bindings for this machine's CUDA (not checked): {e}")
    raise SystemExit(3) from e
from test_cuda_nvrtc import _variants  # the variants the NVRTC test compiles


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


def main() -> int:
    import cupy

    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not Path(tool).exists():
        print("sass_check: no cuobjdump on PATH or in /usr/local/cuda/bin (not checked)")
        return 3
    # compute_capability is a string of major and minor digits: "90" for sm_90, "100" for sm_100
    arch = f"sm_{cupy.cuda.Device().compute_capability}"
    print("nvrtc", nvrtc.nvrtcVersion()[1:], "arch", arch)
    pattern = re.compile(r"VIMNMX[.A-Z0-9]* R\d+, P\d")
    bad = 0
    for name in fastprep.kernel_names():
        source = fastprep.kernel_source(name)
        for defines in _variants(name):
            found = pattern.findall(_sass(source, defines, arch, tool))
            if found:
                bad += 1
                print(f"{name} {defines}: {len(found)} VIMNMX with a predicate output")
        print(f"{name}: {len(_variants(name))} variants checked")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
