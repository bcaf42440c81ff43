"""The exceptions fastprep raises.

Each subclasses ``FastprepError`` and the nearest builtin, so ``except MemoryError`` or
``except RuntimeError`` keeps working for code that does not know fastprep.
"""

from __future__ import annotations

__all__ = [
    "DeviceUnavailableError",
    "FastprepError",
    "PoolExhaustedError",
]


class FastprepError(Exception):
    """Base class of every fastprep error."""


class PoolExhaustedError(FastprepError, MemoryError):
    """A BlockPool had no free block within the time allowed; the message carries its stats."""


class DeviceUnavailableError(FastprepError, RuntimeError):
    """A GPU feature was asked for where CuPy or a CUDA device is missing; the message says which."""
