"""The CUDA kernel sources that ship inside the extension (the files of the repository's cuda/)."""

from __future__ import annotations

import functools

from . import _core

__all__ = ["kernel_names", "kernel_source"]


def kernel_names() -> list[str]:
    """File names of the embedded sources, e.g. ``['normalize.cu']``."""
    return list(_core.kernel_names())


@functools.cache
def kernel_source(name: str) -> str:
    """The text of one source, by file name with or without ``.cu``; KeyError lists the names.
    (Kept per name: the GPU launcher keys its compiled modules by the text, at every launch.)"""
    return str(_core.kernel_source(name))
