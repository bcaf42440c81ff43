"""fastprep under every transformers fast tokenizer, each call compared with the stock backend.

``install()`` makes every ``TokenizersBackend`` (``PreTrainedTokenizerFast``) run on
``fastprep.hf``: at the end of its construction, and whenever ``_tokenizer`` is replaced after
it, the ``tokenizers.Tokenizer`` is put under a ``ComparingBackend``, which is
``fastprep.hf.FastprepBackend`` (what ``hf.patch`` installs) with one addition: each call that
fastprep answers is also made on the original ``tokenizers.Tokenizer`` and the two results are
compared, encodings field by field (overflowing windows included) and their alignment methods
call by call. fastprep's result (or exception) is what transformers and the test see, so the
upstream assertions check fastprep; the differences go to ``MISMATCHES``.
"""

from __future__ import annotations

import functools
from typing import Any

import fastprep
from fastprep import hf

MISMATCHES: list[str] = []
CALLS = {"n": 0}

ENC_FIELDS = (
    "ids",
    "type_ids",
    "tokens",
    "offsets",
    "attention_mask",
    "special_tokens_mask",
    "word_ids",
    "sequence_ids",
    "n_sequences",
)
# Encoding methods transformers' BatchEncoding calls (char_to_token, word_to_tokens, ...).
ENC_METHODS = frozenset(
    {
        "char_to_token",
        "char_to_word",
        "token_to_chars",
        "token_to_word",
        "token_to_sequence",
        "word_to_chars",
        "word_to_tokens",
    }
)


def _norm(v: Any) -> Any:
    """A comparable form of a result of either library."""
    if isinstance(v, PairedEncoding):
        v = v.fp
    if hasattr(v, "ids") and hasattr(v, "overflowing"):
        return {f: getattr(v, f) for f in ENC_FIELDS} | {"overflowing": [_norm(o) for o in v.overflowing]}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    return v


def _short(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    parts = [repr(a)[:50] for a in args] + [f"{k}={v!r:.30}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def both(label: str, ref_call: Any, fp_call: Any) -> Any:
    """Runs ``ref_call`` (stock) and ``fp_call`` (fastprep), records any difference in result or
    exception type, and returns (or raises) fastprep's."""
    CALLS["n"] += 1
    ref_err = fp_err = None
    ref_v = fp_v = None
    try:
        ref_v = ref_call()
    except Exception as e:
        ref_err = e
    try:
        fp_v = fp_call()
    except Exception as e:
        fp_err = e
    if ref_err is not None or fp_err is not None:
        if ref_err is None or fp_err is None:
            MISMATCHES.append(
                f"{label}: tokenizers {'raised ' + repr(ref_err) if ref_err else 'returned'}, fastprep "
                f"{'raised ' + repr(fp_err) if fp_err else 'returned'}"
            )
        elif not isinstance(fp_err, type(ref_err)) and type(ref_err).__name__ != "PanicException":
            MISMATCHES.append(f"{label}: tokenizers raised {type(ref_err).__name__}, fastprep {type(fp_err).__name__}")
        if fp_err is not None:
            raise fp_err
        return fp_v
    a, b = _norm(ref_v), _norm(fp_v)
    if a != b:
        MISMATCHES.append(f"{label}: tokenizers {str(a)[:300]} != fastprep {str(b)[:300]}")
    return fp_v


class PairedEncoding:
    """fastprep's Encoding as transformers sees it, with tokenizers' beside it: attributes are
    fastprep's (compared already with the encode call), alignment methods are compared per call."""

    __slots__ = ("fp", "ref")

    def __init__(self, ref: Any, fp: Any) -> None:
        self.ref, self.fp = ref, fp

    @property
    def overflowing(self) -> list[PairedEncoding]:
        return [PairedEncoding(r, f) for r, f in zip(self.ref.overflowing, self.fp.overflowing, strict=True)]

    def __len__(self) -> int:
        return len(self.fp)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.fp, name)
        if name not in ENC_METHODS:
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            ref_fn = getattr(self.ref, name)
            return both(
                f"Encoding.{name}{_short(args, kwargs)}",
                lambda: ref_fn(*args, **kwargs),
                lambda: value(*args, **kwargs),
            )

        return call


def _pair(ref: Any, fp: Any) -> Any:
    if isinstance(fp, list):
        return [PairedEncoding(r, f) for r, f in zip(ref, fp, strict=True)]
    return PairedEncoding(ref, fp)


class ComparingBackend(hf.FastprepBackend):
    """``hf.FastprepBackend`` whose every fastprep answer is checked against the original's."""

    def _compare(self, name: str, *args: Any, **kwargs: Any) -> Any:
        fp_fn = getattr(super(), name)
        ref_fn = getattr(self._hf, name)
        return both(f"{name}{_short(args, kwargs)}", lambda: ref_fn(*args, **kwargs), lambda: fp_fn(*args, **kwargs))

    def encode(
        self, sequence: Any, pair: Any = None, is_pretokenized: bool = False, add_special_tokens: bool = True
    ) -> Any:
        ref = self._hf.encode(sequence, pair, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens)
        fp = self._compare(
            "encode", sequence, pair, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens
        )
        return _pair(ref, fp)

    def encode_batch(self, inputs: Any, is_pretokenized: bool = False, add_special_tokens: bool = True) -> Any:
        ref = self._hf.encode_batch(inputs, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens)
        fp = self._compare(
            "encode_batch", inputs, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens
        )
        return _pair(ref, fp)

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return self._compare("decode", ids, skip_special_tokens=skip_special_tokens)  # type: ignore[no-any-return]

    def decode_batch(self, sequences: Any, skip_special_tokens: bool = True) -> list[str]:
        return self._compare("decode_batch", sequences, skip_special_tokens=skip_special_tokens)  # type: ignore[no-any-return]

    def token_to_id(self, token: str) -> int | None:
        return self._compare("token_to_id", token)  # type: ignore[no-any-return]

    def id_to_token(self, id: int) -> str | None:
        return self._compare("id_to_token", id)  # type: ignore[no-any-return]

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        return self._compare("num_special_tokens_to_add", is_pair)  # type: ignore[no-any-return]


def _wrap(value: Any) -> Any:
    if value is None or isinstance(value, hf.FastprepBackend):
        return value
    return ComparingBackend(value)


def install() -> None:
    """Puts ``ComparingBackend`` under every ``TokenizersBackend`` built from now on."""
    from transformers import TokenizersBackend

    if getattr(TokenizersBackend, "_fastprep_installed", False):
        return
    init = TokenizersBackend.__init__

    @functools.wraps(init)
    def patched_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        # As hf.patch does after AutoTokenizer.from_pretrained: the built tokenizer goes on fastprep.
        self.__dict__["_fastprep_ready"] = True
        self.__dict__["_tokenizer"] = _wrap(self.__dict__.get("_tokenizer"))

    def get(self: Any) -> Any:
        return self.__dict__.get("_tokenizer")

    def put(self: Any, value: Any) -> None:
        # During construction transformers assembles the backend piece by piece; once built,
        # a backend put in its place (from a tokenizer object, a copy) goes on fastprep too.
        self.__dict__["_tokenizer"] = _wrap(value) if self.__dict__.get("_fastprep_ready") else value

    TokenizersBackend.__init__ = patched_init  # type: ignore[method-assign]
    TokenizersBackend._tokenizer = property(get, put)  # type: ignore[assignment]
    TokenizersBackend._fastprep_installed = True  # type: ignore[attr-defined]
    assert fastprep.Tokenizer is hf.Tokenizer
