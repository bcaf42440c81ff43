"""Field-by-field comparison of fastprep and HF tokenizers encodings, for the parity tests."""

from __future__ import annotations

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
