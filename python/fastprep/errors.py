"""The exceptions fastprep raises.

Each subclasses ``FastprepError`` and the nearest builtin, so ``except MemoryError`` or
``except RuntimeError`` keeps working for code that does not know fastprep.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DecodeError",
    "DecompressionBombWarning",
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


class DecompressionBombWarning(UserWarning):
    """An image was decoded with more pixels than ``fastprep.MAX_IMAGE_PIXELS`` (Pillow's
    ``Image.MAX_IMAGE_PIXELS``), under the default limit: Pillow warns there too (its own
    ``DecompressionBombWarning``) and refuses only above twice the limit, as fastprep does.
    Silence it with ``warnings.filterwarnings("ignore", category=DecompressionBombWarning)``, or
    pass ``max_pixels=None`` (no limit) or an explicit limit (a hard one, with no warning)."""


class DecodeError(FastprepError, ValueError):
    """An encoded image that could not be decoded: empty, truncated or corrupt data, a format other
    than JPEG or PNG, or a header over the pixel limit (a decompression bomb).

    ``index`` is the image's position in the batch (None for a single image) and ``reason`` one of
    ``"empty"``, ``"unknown_format"``, ``"truncated"``, ``"corrupt"``, ``"unsupported"``,
    ``"too_large"`` or ``"resources"``.
    """

    def __init__(self, message: str, index: int | None = None, reason: str = "corrupt") -> None:
        super().__init__(message if index is None else f"image {index}: {message}")
        self.index = index
        self.reason = reason
        #: In a batch raised with on_error="raise": every image that failed, this one first.
        self.errors: list[DecodeError] = [self]

    def __reduce__(self) -> tuple[Any, ...]:
        # The index prefix is already in str(self): rebuild without adding it twice (pickling
        # matters: DataLoader workers send exceptions to the parent process).
        return (_rebuild_decode_error, (str(self), self.index, self.reason))


def _rebuild_decode_error(message: str, index: int | None, reason: str) -> DecodeError:
    err = DecodeError(message, None, reason)
    err.index = index
    return err
