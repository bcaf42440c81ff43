"""The exceptions fastprep raises.

Each subclasses ``FastprepError`` and the nearest builtin, so ``except MemoryError`` or
``except RuntimeError`` keeps working for code that does not know fastprep.
"""

from __future__ import annotations

__all__ = [
    "DeviceUnavailableError",
    "FastprepError",
    "PoolExhaustedError",
    "TokenizeError",
    "TokenizerFileError",
    "UnsupportedTokenizerError",
]


class FastprepError(Exception):
    """Base class of every fastprep error."""


class PoolExhaustedError(FastprepError, MemoryError):
    """A BlockPool had no free block within the time allowed; the message carries its stats."""


class DeviceUnavailableError(FastprepError, RuntimeError):
    """A GPU feature was asked for where CuPy or a CUDA device is missing; the message says which."""


class UnsupportedTokenizerError(FastprepError, ValueError):
    """A tokenizer file uses a component fastprep does not implement; the message names it and its
    place in the JSON. fastprep refuses rather than tokenize differently from HF tokenizers."""


class TokenizerFileError(FastprepError, ValueError):
    """A tokenizer file that is not valid (bad JSON, a merge of tokens not in the vocabulary...)."""


class TokenizeError(FastprepError, ValueError):
    """Settings that make an encoding impossible (e.g. truncation shorter than the special tokens)."""
