"""The per-thread BPE cache cap (``fastprep.set_token_cache_mb``, ``FASTPREP_TOKEN_CACHE_MB``):
under a small cap the ids are the same and the caches stay within it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import fastprep
from fastprep import Tokenizer

tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
TEKKEN = Path(tekken.__file__).parents[2] / "data" / "tekken_240718.json"
SAMPLE = Path(__file__).parents[1] / "python" / "fastprep" / "data" / "sample_text.txt"


def in_fresh_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on a new thread, whose caches hold only what ``fn`` puts there."""
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def encode_all(tok: Tokenizer, texts: list[str]) -> tuple[list[list[int]], int]:
    ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
    return ids, fastprep.token_cache_bytes()


@pytest.fixture
def restore_cap() -> Any:
    before = fastprep.token_cache_mb()
    yield
    fastprep.set_token_cache_mb(before)


def test_a_small_cap_keeps_ids_and_bounds_the_caches(restore_cap: None) -> None:
    text = SAMPLE.read_text(encoding="utf-8")
    # Many distinct pieces: the sample's words, each with a number.
    texts = [*text.splitlines(), *(f"{w}{i} " for i, w in enumerate(text.split()[:20000]))]
    fastprep.set_token_cache_mb(None)
    assert fastprep.token_cache_mb() is None
    want, free = in_fresh_thread(lambda: encode_all(Tokenizer.from_tekken(TEKKEN), texts))
    fastprep.set_token_cache_mb(1)
    assert fastprep.token_cache_mb() == 1
    got, capped = in_fresh_thread(lambda: encode_all(Tokenizer.from_tekken(TEKKEN), texts))
    assert got == want
    assert 0 < capped <= 1024 * 1024 < free, (capped, free)


def test_the_cap_is_read_from_the_environment() -> None:
    code = "import fastprep; print(fastprep.token_cache_mb())"
    env = {**os.environ, "FASTPREP_TOKEN_CACHE_MB": "3.5"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3.5"


def test_a_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 0"):
        fastprep.set_token_cache_mb(-1)
