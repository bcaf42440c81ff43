"""Every CUDA source shipped in the wheel compiles with NVRTC, for the GPU generations fastprep
targets, with every preamble the launcher generates. This needs no GPU and no driver: the
`nvidia-cuda-nvrtc-cu12` wheel carries the compiler and `cuda-bindings` calls it (both in the test
extra). The kernels' arithmetic is checked by the CPU emulation tests; this checks that the same
text is valid CUDA, warning-free."""

from __future__ import annotations

import itertools

import pytest

import fastprep
from fastprep.kernels import kernel_unit

nvrtc = pytest.importorskip("cuda.bindings.nvrtc", reason="the test extra installs cuda-bindings")

ARCHS = ("compute_80", "compute_90")


def _variants(name: str) -> list[dict[str, int]]:
    if name == "resize.cu":
        out = []
        # (0, 1) and (0, 2): uint8 resampled, stored through a normalize table (resize_vertical_lut)
        pairs = [(0, 0), (1, 1), (2, 1), (1, 2), (2, 2), (0, 1), (0, 2)]
        for channels, (src, dst) in itertools.product((1, 3, 4), pairs):
            premuls = [(0, 0), (1, 0), (0, 1), (1, 1)] if (channels == 4 and src == 0) else [(0, 0)]
            for pre, un in premuls:
                for shared in (0, 1):
                    out.append(
                        {
                            "CHANNELS": channels,
                            "SRC_DTYPE": src,
                            "DST_DTYPE": dst,
                            "PREMUL_IN": pre,
                            "UNPREMUL_OUT": un,
                            "H_SHARED": shared,
                            # resize_hv's staged horizontal phase, and its global-memory form
                            "HV_STAGE": 1 - shared,
                        }
                    )
        return out
    if name == "normalize.cu":
        return [{"OUT_DTYPE": d, "OUT_NCHW": nchw, "CHANNELS": c} for d in (1, 2) for nchw in (0, 1) for c in (1, 3, 4)]
    if name in ("jpeg_idct.cu", "jpeg_entropy.cu", "jpeg_fused.cu"):
        return [{}]  # no preamble: every scale and upsampler is chosen per plane at run time
    raise AssertionError(f"no compile variants listed for {name}: add them here")


def _compile(source: str, name: str, defines: dict[str, int], arch: str) -> tuple[str, bytes]:
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17", *(f"-D{k}={v}".encode() for k, v in defines.items())]
    (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    # NVRTC writes into the buffer: a bytearray, never `b" " * size`, which for size 1 is CPython's
    # shared one-byte b" " object, so that writing "\0" into it turned every b" " in the process
    # into b"\0" (tiktoken then panicked on " " in a later test).
    log = bytearray(size)
    nvrtc.nvrtcGetProgramLog(prog, log)
    ptx = bytearray()
    if result == nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, psize = nvrtc.nvrtcGetPTXSize(prog)
        ptx = bytearray(psize)
        nvrtc.nvrtcGetPTX(prog, ptx)
    nvrtc.nvrtcDestroyProgram(prog)
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, f"{name} {defines} {arch}:\n{log.decode(errors='replace')}"
    return log.decode(errors="replace").strip("\x00 \n"), bytes(ptx)


@pytest.mark.parametrize("name", fastprep.kernel_names())
def test_every_kernel_compiles_with_nvrtc(name):
    source = kernel_unit(name)  # after the sources it calls into, as the launcher compiles it
    entries = {
        "resize.cu": [b"resize_horizontal", b"resize_vertical", b"resize_vertical_lut", b"resize_hv"],
        "normalize.cu": [b"crop_normalize_u8"],
        "jpeg_idct.cu": [b"jpeg_idct", b"jpeg_color"],
        "jpeg_fused.cu": [b"jpeg_fused_h"],
        "jpeg_entropy.cu": [
            b"jpeg_unstuff_count",
            b"jpeg_tile_offsets",
            b"jpeg_unstuff_write",
            b"jpeg_chunk_layout",
            b"jpeg_sync",
            b"jpeg_chunk_scan",
            b"jpeg_write",
        ],
    }[name]
    for arch in ARCHS:
        for defines in _variants(name):
            log, ptx = _compile(source, name, defines, arch)
            assert "warning" not in log.lower(), f"{name} {defines} {arch}: {log}"
            for entry in entries:
                assert b".entry " + entry in ptx, f"{entry!r} missing from the PTX of {name} {defines}"


def test_a_broken_kernel_is_reported():
    with pytest.raises(AssertionError, match="error"):
        _compile('extern "C" __global__ void k() { undefined_thing(); }', "broken.cu", {}, ARCHS[0])


def test_compiling_leaves_python_objects_intact():
    # NVRTC fills caller-given buffers; a shared immutable object passed there is corrupted for
    # the rest of the process (see _compile).
    _compile('extern "C" __global__ void k() {}', "empty.cu", {}, ARCHS[0])
    assert bytes([32]) == b" " and bytes([0]) == b"\x00"
