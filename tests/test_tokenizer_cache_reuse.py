"""A tokenizer made after another was dropped takes over that tokenizer's per-thread piece
caches, emptied in place (no new tables to zero): it must never serve the dropped tokenizer's
ids. Checked against tokenizers with a second vocabulary whose ids differ from the first's for
the same pieces."""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Callable
from typing import Any

import tokenizers

import fastprep
from tests import tokenizer_data as data


def _swapped_ids(js: str) -> str:
    """cl100k with the ids of each pair of ordinary tokens (0 and 1, 2 and 3, ...) swapped: the
    same merges and pieces, other ids."""
    spec = json.loads(js)
    vocab = spec["model"]["vocab"]
    spec["model"]["vocab"] = {t: (i ^ 1 if i < 100_256 else i) for t, i in vocab.items()}
    return json.dumps(spec)


def _in_thread(fn: Callable[[], Any]) -> Any:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_a_fresh_tokenizer_never_serves_a_dropped_ones_ids() -> None:
    js = data.cl100k_tokenizer_json()
    other = _swapped_ids(js)
    # Short and long pieces (hot, wide and full caches), with repeats.
    docs = data.corpus_documents(300_000)
    want = {
        name: [e.ids for e in tokenizers.Tokenizer.from_str(spec).encode_batch(docs, add_special_tokens=False)]
        for name, spec in (("cl100k", js), ("swapped", other))
    }
    assert want["cl100k"] != want["swapped"]

    def run() -> list[list[list[int]]]:
        got = []
        for name in ("cl100k", "swapped", "cl100k", "swapped"):
            tok = fastprep.Tokenizer.from_str(js if name == "cl100k" else other)
            got.append([tok.encode(d, add_special_tokens=False).ids for d in docs])
            del tok
            gc.collect()
        return got

    got = _in_thread(run)
    for i, name in enumerate(("cl100k", "swapped", "cl100k", "swapped")):
        assert got[i] == want[name], f"tokenizer {i} ({name})"


def test_a_dropped_tokenizers_cache_is_reused_not_added() -> None:
    js = data.cl100k_tokenizer_json()
    docs = data.corpus_documents(300_000)

    def run() -> list[int]:
        sizes = []
        for _ in range(3):
            tok = fastprep.Tokenizer.from_str(js)
            for d in docs:
                tok.encode(d, add_special_tokens=False)
            sizes.append(fastprep.token_cache_bytes())
            del tok
            gc.collect()
        return sizes

    sizes = _in_thread(run)
    # One model's caches at a time in the thread (the dropped one's were taken over).
    assert sizes[2] <= sizes[0] * 1.5, sizes


def test_a_cap_set_after_a_tokenizer_was_dropped_bounds_the_next_one() -> None:
    js = data.cl100k_tokenizer_json()
    docs = data.corpus_documents(300_000)
    before = fastprep.token_cache_mb()

    def run() -> tuple[int, int, list[list[int]]]:
        tok = fastprep.Tokenizer.from_str(js)
        want = [tok.encode(d, add_special_tokens=False).ids for d in docs]
        free = fastprep.token_cache_bytes()
        del tok
        gc.collect()
        fastprep.set_token_cache_mb(1)
        tok = fastprep.Tokenizer.from_str(js)
        got = [tok.encode(d, add_special_tokens=False).ids for d in docs]
        assert got == want
        return free, fastprep.token_cache_bytes(), got

    try:
        free, capped, _ = _in_thread(run)
    finally:
        fastprep.set_token_cache_mb(before)
    assert 0 < capped <= 1024 * 1024 < free, (capped, free)
