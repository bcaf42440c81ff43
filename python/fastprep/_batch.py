"""Padding flat token arrays into batches (numpy, vectorised: no per-token Python objects)."""

from __future__ import annotations

from typing import Any

import numpy as np


def flat_arrays(ids_b: Any, lens_b: Any) -> tuple[Any, Any]:
    """The ids (uint32) and row lengths (int64) of ``encode_batch_flat`` / ``encode_lines_flat``:
    a view of the ids' Rust-owned buffer (no copy), the lengths as int64."""
    ids = np.frombuffer(memoryview(ids_b), dtype="<u4")
    return ids, np.frombuffer(memoryview(lens_b), dtype="<u8").astype(np.int64)


def _round_up(n: int, multiple: int | None) -> int:
    if multiple and multiple > 0 and n % multiple:
        n += multiple - n % multiple
    return n


def pad_flat(
    ids: Any, lens: Any, offs: Any, width: int, pad_id: int, left: bool, multiple: int | None
) -> dict[str, Any]:
    """Scatter the concatenated ``ids`` (row lengths ``lens``) into (N, width) arrays."""
    n = lens.size
    width = _round_up(max(width, int(lens.max(initial=0))), multiple)
    input_ids = np.full((n, width), pad_id, dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.int64)
    rows = np.repeat(np.arange(n), lens)
    starts = np.cumsum(lens) - lens
    cols = np.arange(ids.size) - np.repeat(starts, lens)
    if left:
        cols = cols + np.repeat(width - lens, lens)
    input_ids[rows, cols] = ids
    mask[rows, cols] = 1
    out = {"input_ids": input_ids, "attention_mask": mask}
    if offs is not None:
        offsets = np.zeros((n, width, 2), dtype=np.int64)
        offsets[rows, cols] = offs
        out["offsets"] = offsets
    return out


def bucketize(
    ids: Any, lens: Any, offs: Any, pad_id: int, left: bool, multiple: int | None, bucket_size: int
) -> dict[str, Any]:
    """Sort by length, cut into buckets of ``bucket_size`` rows, pad each to its own longest."""
    if bucket_size < 1:
        raise ValueError(f"bucket_size must be >= 1, got {bucket_size}")
    order = np.argsort(lens, kind="stable")
    starts = np.cumsum(lens) - lens
    buckets = []
    padded_tokens = 0
    for b in range(0, lens.size, bucket_size):
        idx = order[b : b + bucket_size]
        sel_lens = lens[idx]
        pieces = [ids[starts[i] : starts[i] + lens[i]] for i in idx]
        sub_ids = np.concatenate(pieces) if pieces else ids[:0]
        sub_offs = np.concatenate([offs[starts[i] : starts[i] + lens[i]] for i in idx]) if offs is not None else None
        width = _round_up(int(sel_lens.max(initial=0)), multiple)
        bucket = pad_flat(sub_ids, sel_lens, sub_offs, width, pad_id, left, multiple)
        bucket["indices"] = idx
        padded_tokens += bucket["input_ids"].size
        buckets.append(bucket)
    longest = _round_up(int(lens.max(initial=0)), multiple) * lens.size
    return {"buckets": buckets, "padding_saved": int(longest - padded_tokens), "padded_tokens": int(padded_tokens)}
