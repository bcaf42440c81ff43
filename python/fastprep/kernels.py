"""The CUDA kernel sources that ship inside the extension (the files of the repository's cuda/)."""

from __future__ import annotations

import functools

from . import _core

__all__ = ["kernel_names", "kernel_source", "kernel_unit"]

# Sources that call functions of others: NVRTC compiles one text per module, so the launcher
# compiles them after the sources they use (jpeg_fused.cu runs jpeg_idct.cu's IDCT and colour
# code and resize.cu's resampling, so that both paths compute every value with the same code).
_DEPENDS = {"jpeg_fused.cu": ("jpeg_idct.cu", "resize.cu")}


def kernel_names() -> list[str]:
    """File names of the embedded sources, e.g. ``['normalize.cu']``."""
    return list(_core.kernel_names())


@functools.cache
def kernel_source(name: str) -> str:
    """The text of one source, by file name with or without ``.cu``; KeyError lists the names.
    (Kept per name: the GPU launcher keys its compiled modules by the text, at every launch.)"""
    return str(_core.kernel_source(name))


@functools.cache
def kernel_unit(name: str) -> str:
    """The text NVRTC compiles for the source `name`: the sources it calls into, then its own."""
    name = name if name.endswith(".cu") else f"{name}.cu"
    return "".join(kernel_source(dep) for dep in _DEPENDS.get(name, ())) + kernel_source(name)
