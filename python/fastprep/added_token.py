"""``AddedToken``: a token cut out of the input before the model sees it, as ``tokenizers.AddedToken``.

Same options, defaults and behaviour: ``normalized`` defaults to ``not special`` until it is set,
so ``add_special_tokens`` (which marks a token special) stores it unnormalized, as tokenizers does;
``content`` and ``special`` can be changed afterwards, the rest is fixed at construction. Equality
compares every option (with a ``tokenizers.AddedToken`` too), the hash only the content.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AddedToken"]

_OPTIONS = ("single_word", "lstrip", "rstrip", "normalized", "special")


class AddedToken:
    """A token matched in the input before the model runs (``tokenizers.AddedToken``).

    >>> AddedToken("<mask>", lstrip=True)
    AddedToken("<mask>", rstrip=False, lstrip=True, single_word=False, normalized=True, special=False)
    """

    __slots__ = ("__weakref__", "_lstrip", "_normalized", "_rstrip", "_single_word", "content", "special")

    def __init__(
        self,
        content: str | None = None,
        single_word: bool = False,
        lstrip: bool = False,
        rstrip: bool = False,
        normalized: bool | None = None,
        special: bool = False,
    ) -> None:
        self.content = "" if content is None else str(content)
        self._single_word = bool(single_word)
        self._lstrip = bool(lstrip)
        self._rstrip = bool(rstrip)
        self._normalized = None if normalized is None else bool(normalized)
        self.special = bool(special)

    @property
    def single_word(self) -> bool:
        return self._single_word

    @property
    def lstrip(self) -> bool:
        return self._lstrip

    @property
    def rstrip(self) -> bool:
        return self._rstrip

    @property
    def normalized(self) -> bool:
        """As given, else ``not special`` (tokenizers' default)."""
        return (not self.special) if self._normalized is None else self._normalized

    def _tuple(self) -> tuple[str, bool, bool, bool, bool, bool]:
        return (self.content, self.single_word, self.lstrip, self.rstrip, self.normalized, bool(self.special))

    def __getstate__(self) -> dict[str, Any]:
        return {"content": self.content, **{k: getattr(self, k) for k in _OPTIONS}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def __str__(self) -> str:
        return self.content

    def __repr__(self) -> str:
        return (
            f'AddedToken("{self.content}", rstrip={self.rstrip}, lstrip={self.lstrip}, '
            f"single_word={self.single_word}, normalized={self.normalized}, special={self.special})"
        )

    def __eq__(self, other: object) -> bool:
        if not all(hasattr(other, k) for k in ("content", *_OPTIONS)):
            return NotImplemented
        return bool(_token_tuple(other) == self._tuple())

    def __hash__(self) -> int:
        return hash(self.content)


def _token_tuple(t: Any) -> tuple[str, bool, bool, bool, bool, bool]:
    """The options of an AddedToken of fastprep or of tokenizers (read through its attributes)."""
    return (str(t.content), bool(t.single_word), bool(t.lstrip), bool(t.rstrip), bool(t.normalized), bool(t.special))


def _added(t: Any, special: bool) -> tuple[str, bool, bool, bool, bool, bool]:
    """One item of ``add_tokens`` / ``add_special_tokens`` as the core's tuple.

    A str is normalized and not special for ``add_tokens``, special and unnormalized for
    ``add_special_tokens``. An AddedToken (fastprep's or tokenizers') is marked special by
    ``add_special_tokens``, in place, as tokenizers does: one whose ``normalized`` was never set
    then reads as unnormalized.
    """
    if isinstance(t, str):
        return (t, False, False, False, not special, special)
    if all(hasattr(t, k) for k in ("content", *_OPTIONS)):
        if special:
            t.special = True
        return _token_tuple(t)
    raise TypeError(f"Input must be a List[Union[str, AddedToken]] (got an item of type {type(t).__name__})")
