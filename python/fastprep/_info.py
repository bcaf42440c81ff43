"""``fastprep.build_info()``: what this build is and what it can use."""

from __future__ import annotations

import platform
from typing import Any

from . import _core


def build_info() -> dict[str, Any]:
    """Version, build profile, Rust and PyO3 versions, SIMD features, and GPU visibility.

    >>> info = build_info()
    >>> info["build_profile"] in ("release", "debug")
    True
    """
    info: dict[str, Any] = dict(_core.build_info())
    info["python"] = platform.python_version()
    try:
        import cupy
    except Exception:  # ImportError, or a broken CUDA install failing at import
        info["cupy"] = None
        info["gpu_count"] = 0
    else:
        from ._cupy_memory import device_count

        info["cupy"] = str(cupy.__version__)
        info["gpu_count"] = device_count()
    info["gpu"] = info["gpu_count"] > 0
    return info
