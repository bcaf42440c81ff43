"""Field-by-field comparison of fastprep and HF tokenizers encodings, for the parity tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

FIELDS = (
    "ids",
    "tokens",
    "offsets",
    "type_ids",
    "attention_mask",
    "special_tokens_mask",
    "word_ids",
    "sequence_ids",
    "n_sequences",
)


def diff(ref: Any, got: Any, depth: int = 0) -> str | None:
    """None when identical (overflowing windows included), else what differs first."""
    for field in FIELDS:
        a, b = getattr(ref, field), getattr(got, field)
        if a != b:
            if isinstance(a, list):
                i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
                lo = max(0, i - 2)
                return f"{field}[{i}] (depth {depth}): tokenizers {a[lo : i + 3]} != fastprep {b[lo : i + 3]}"
            return f"{field} (depth {depth}): tokenizers {a!r} != fastprep {b!r}"
    if len(ref.overflowing) != len(got.overflowing):
        return f"overflowing (depth {depth}): {len(ref.overflowing)} != {len(got.overflowing)} windows"
    for o_ref, o_got in zip(ref.overflowing, got.overflowing, strict=True):
        d = diff(o_ref, o_got, depth + 1)
        if d:
            return d
    return None


def check_pair_with_settings(
    hf: Any,
    fp: Any,
    a: str,
    b: str,
    truncation: dict[str, Any],
    pad: tuple[str, int | None] | None = None,
    pad_id: int = 0,
    pad_token: str = "[PAD]",
) -> None:
    """Encodes the pair (a, b) on both tokenizers with the same truncation (``enable_truncation``
    keywords) and padding (``(direction, length)`` or None) and asserts the same encoding, or that
    both refuse the settings, or that fastprep raises ``TokenizeError`` where HF raises or panics.
    Both tokenizers are left with neither truncation nor padding."""
    import pytest

    import fastprep

    errors = []
    for tok in (hf, fp):
        tok.no_padding()
        try:
            tok.enable_truncation(**truncation)
        except BaseException as exc:  # HF: ValueError, or a panic when max_length < special tokens
            if isinstance(exc, KeyboardInterrupt):
                raise
            errors.append(type(exc).__name__)
    try:
        if errors:
            assert len(errors) == 2, f"only one tokenizer refused the truncation settings: {errors}"
            return
        for tok in (hf, fp):
            if pad:
                tok.enable_padding(direction=pad[0], length=pad[1], pad_id=pad_id, pad_token=pad_token)
        try:
            ref = hf.encode(a, b)
        except BaseException as exc:  # HF raises (or panics) on impossible settings; we refuse cleanly
            if isinstance(exc, KeyboardInterrupt):
                raise
            with pytest.raises(fastprep.TokenizeError):
                fp.encode(a, b)
            return
        assert diff(ref, fp.encode(a, b)) is None
    finally:
        for tok in (hf, fp):
            tok.no_truncation()
            tok.no_padding()


def truncation(max_length: int, stride: int, strategy: str, direction: str) -> dict[str, Any]:
    """``enable_truncation`` keywords, for a parametrized list of settings."""
    return {"max_length": max_length, "stride": stride, "strategy": strategy, "direction": direction}


def padding(
    direction: str, pad_id: int, pad_type_id: int, pad_token: str, length: int | None, pad_to_multiple_of: int | None
) -> dict[str, Any]:
    """``enable_padding`` keywords, for a parametrized list of settings."""
    return {
        "direction": direction,
        "pad_id": pad_id,
        "pad_type_id": pad_type_id,
        "pad_token": pad_token,
        "length": length,
        "pad_to_multiple_of": pad_to_multiple_of,
    }


def apply_settings(hf: Any, fp: Any, settings: dict[str, dict[str, Any]]) -> None:
    """Sets the same ``{"truncation": ..., "padding": ...}`` on both tokenizers (from none) and
    asserts they read back equal."""
    for tok in (hf, fp):
        tok.no_padding()
        tok.no_truncation()
        if "truncation" in settings:
            tok.enable_truncation(**settings["truncation"])
        if "padding" in settings:
            tok.enable_padding(**settings["padding"])
    assert fp.truncation == hf.truncation and fp.padding == hf.padding


@contextlib.contextmanager
def settings_applied(hf: Any, fp: Any, settings: dict[str, dict[str, Any]]) -> Iterator[None]:
    """``apply_settings`` for the ``with`` block; both tokenizers back to no truncation and no
    padding after it (the tokenizers are shared by a module's tests)."""
    apply_settings(hf, fp, settings)
    try:
        yield
    finally:
        for tok in (hf, fp):
            tok.no_padding()
            tok.no_truncation()


def check_batch(hf: Any, fp: Any, texts: list[str]) -> None:
    """Asserts the same encodings of ``texts`` as one batch."""
    ref, got = hf.encode_batch(texts), fp.encode_batch(texts)
    assert [diff(x, y) for x, y in zip(ref, got, strict=True)] == [None] * len(ref)


def check_pretokenized(hf: Any, fp: Any, words: list[str]) -> None:
    """Asserts the same encoding of ``words`` as a pre-tokenized sequence, alone and paired with
    itself reversed."""
    assert diff(hf.encode(words, is_pretokenized=True), fp.encode(words, is_pretokenized=True)) is None
    got = fp.encode(words, words[::-1], is_pretokenized=True)
    assert diff(hf.encode(words, words[::-1], is_pretokenized=True), got) is None


def check_pairs(hf: Any, fp: Any, pairs: list[tuple[str, str]], singles: bool = True) -> None:
    """Asserts the same encoding of each pair (and of its first text alone, with ``singles``), or
    fastprep's ``TokenizeError`` about truncation where HF raises or panics on the settings."""
    import pytest

    import fastprep

    for a, b in pairs:
        try:
            ref = hf.encode(a, b)
        except BaseException as exc:  # HF raises, or panics, on settings it cannot meet
            if isinstance(exc, KeyboardInterrupt):
                raise
            with pytest.raises(fastprep.TokenizeError, match=r"truncat|stride"):
                fp.encode(a, b)
            continue
        assert diff(ref, fp.encode(a, b)) is None, (a[:30], b[:30], diff(ref, fp.encode(a, b)))
        if singles:
            assert diff(hf.encode(a), fp.encode(a)) is None
