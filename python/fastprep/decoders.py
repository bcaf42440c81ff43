"""Streaming detokenization, as ``tokenizers.decoders.DecodeStream``.

A model emits ids one at a time; decoding each id alone breaks multi-byte characters and loses the
spaces the decoder derives from context. ``DecodeStream`` keeps a short window of recent ids and
returns only the text that became final.

>>> stream = DecodeStream(skip_special_tokens=True)             # doctest: +SKIP
>>> for i in ids:                                               # doctest: +SKIP
...     chunk = stream.step(tokenizer, i)
...     if chunk is not None:
...         print(chunk, end="")
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from .errors import TokenizeError
from .tokenizer import Tokenizer

__all__ = ["DecodeStream"]


class DecodeStream:
    """Incremental decoder with the same windowing as HF tokenizers' ``DecodeStream``."""

    __slots__ = ("__weakref__", "_ids", "_prefix", "_prefix_index", "skip_special_tokens")

    def __init__(self, ids: Sequence[int] | None = None, skip_special_tokens: bool = False) -> None:
        self.skip_special_tokens = skip_special_tokens
        self._ids: list[int] = list(ids or [])
        self._prefix = ""
        self._prefix_index = 0

    def step(self, tokenizer: Tokenizer, id: int | Sequence[int]) -> str | None:
        """Add the next id (or ids); return the newly final text, or None while a character is
        still incomplete."""
        new = [id] if isinstance(id, int) else list(id)
        skip = self.skip_special_tokens
        if not self._prefix and self._ids:
            prefix = tokenizer.decode(self._ids, skip)
            if not prefix.endswith("\ufffd"):
                self._prefix = prefix
                self._prefix_index = len(self._ids)
        self._ids.extend(new)
        text = tokenizer.decode(self._ids, skip)
        # Lengths compared in UTF-8 bytes, as HF does.
        if len(text.encode()) > len(self._prefix.encode()) and not text.endswith("\ufffd"):
            if not text.startswith(self._prefix):
                raise TokenizeError(
                    f"DecodeStream: decoding id {self._ids[-1]} changed text already returned "
                    f"(expected it to start with {self._prefix!r}, got {text!r}); start a new stream"
                )
            chunk = text[len(self._prefix) :]
            new_prefix_index = len(self._ids) - self._prefix_index
            self._ids = self._ids[self._prefix_index :]
            self._prefix = tokenizer.decode(self._ids, skip)
            self._prefix_index = new_prefix_index
            return chunk
        return None

    def __copy__(self) -> DecodeStream:
        other = DecodeStream(self._ids, self.skip_special_tokens)
        other._prefix, other._prefix_index = self._prefix, self._prefix_index
        return other

    def __deepcopy__(self, memo: dict[int, object]) -> DecodeStream:
        return copy.copy(self)
