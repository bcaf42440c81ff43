"""The other Rust tokenizers on PyPI that load the same files (kitoken, tokie), for the
per-family benchmarks. A peer is timed even when its ids differ from `tokenizers`; its parity
(documents with identical ids) goes into the benchmark's extra_info, since the goal is to be ahead
of every peer that gives identical ids. A peer that is not installed or refuses the file is
skipped with the reason."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Encoders = tuple[Callable[[str], list[int]], Callable[[list[str]], list[list[int]]]]
PEERS = ("kitoken", "tokie")


def load(name: str, tokenizer_json: str, sentencepiece_model: Path | None = None) -> Encoders:
    """(encode one text, encode a batch) to ids without special tokens, or pytest.skip."""
    try:
        if name == "kitoken":
            import kitoken  # type: ignore[import-not-found]

            if sentencepiece_model is not None:
                kt = kitoken.Kitoken.from_sentencepiece_file(str(sentencepiece_model))
            else:
                kt = kitoken.Kitoken.from_tokenizers(tokenizer_json.encode())
            return (lambda t: list(kt.encode(t, True)), lambda ts: [list(x) for x in kt.encode_all(ts, True)])
        if name == "tokie":
            import tokie  # type: ignore[import-not-found]

            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
                f.write(tokenizer_json)
            tt = tokie.Tokenizer.from_json(f.name)
            Path(f.name).unlink()
            return (
                lambda t: list(tt.encode(t, add_special_tokens=False).ids),
                lambda ts: [list(e.ids) for e in tt.encode_batch(ts, add_special_tokens=False)],
            )
    except ImportError as e:
        pytest.skip(f"{name} is not installed ({e})")
    except BaseException as e:  # peers raise their own types, some derived from BaseException
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        pytest.skip(f"{name} cannot load this tokenizer: {type(e).__name__}: {e}")
    raise ValueError(f"unknown peer {name!r}")


def guarded(name: str, run: Callable[[list[str]], list[list[int]]], docs: list[str]) -> list[list[int]]:
    """`run(docs)`, or pytest.skip if the peer crashes on the corpus (some raise a Rust panic)."""
    try:
        return run(docs)
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        pytest.skip(f"{name} fails on the corpus: {type(e).__name__}: {str(e)[:120]}")


def parity(got: list[list[int]], hf: Any, docs: list[str]) -> str:
    """Documents whose ids equal `tokenizers`' (with or without special tokens, whichever the
    peer's convention matches better)."""
    best = 0
    for add in (False, True):
        want = [e.ids for e in hf.encode_batch(docs, add_special_tokens=add)]
        best = max(best, sum(a == b for a, b in zip(got, want, strict=True)))
    return f"{best}/{len(docs)}"


def record_parity(benchmark: Any, got: list[list[int]], hf: Any, docs: list[str]) -> None:
    benchmark.extra_info["identical_docs"] = parity(got, hf, docs)
