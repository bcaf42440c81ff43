"""Mistral Tekken benchmarks on the multilingual test corpus: ``Tokenizer.from_tekken`` against
mistral-common's ``Tekkenizer`` (its ``encode``) and the tiktoken ``Encoding`` inside it (the same
vocabulary, ids before mistral-common shifts them past the special tokens), in the same run.

    .venv/bin/pytest benches/bench_tokenizer_tekken.py -p no:cacheprovider --benchmark-columns=min,median
    FASTPREP_BENCH_CORPUS_MB=29 ...   # a bigger corpus

Ids are compared with mistral-common's before anything is timed. MB/s figures are in
extra_info["MB/s"] (from the median).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import fastprep
from tests import tokenizer_data as data

tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")

MB = 1_000_000
FILES = ["tekken_240911.json"]
DATA = Path(tekken.__file__).parents[2] / "data"


@pytest.fixture(scope="module")
def docs() -> list[str]:
    mb = float(os.environ.get("FASTPREP_BENCH_CORPUS_MB", "2"))
    return data.corpus_documents(int(mb * MB))


@functools.cache
def _impls(name: str) -> tuple[dict[str, tuple[Callable[[str], Any], Callable[[list[str]], Any]]], int]:
    """impl -> (encode one text to ids, encode a batch to a list of id lists), and tiktoken's id shift."""
    fp = fastprep.Tokenizer.from_tekken(DATA / name)
    ref = tekken.Tekkenizer.from_file(DATA / name)
    tik, shift = ref._model, ref.num_special_tokens  # the tiktoken Encoding mistral-common wraps
    threads = os.cpu_count() or 1
    impls = {
        "fastprep": (
            lambda t: fp.encode(t, add_special_tokens=False).ids,
            lambda ts: [e.ids for e in fp.encode_batch(ts, add_special_tokens=False)],
        ),
        "mistral_common": (
            lambda t: ref.encode(t, bos=False, eos=False),
            lambda ts: [ref.encode(t, bos=False, eos=False) for t in ts],
        ),
        # Unshifted ids: the timing is tiktoken's alone; parity is checked after the shift.
        "tiktoken": (
            tik.encode_ordinary,
            lambda ts: tik.encode_ordinary_batch(ts, num_threads=threads),
        ),
    }
    return impls, shift


def _checked(name: str, impl: str, docs: list[str], batch: bool) -> Callable[..., Any]:
    impls, shift = _impls(name)
    fn = impls[impl][1 if batch else 0]
    got = fn(docs[:200]) if batch else [fn(d) for d in docs[:200]]
    if impl == "tiktoken":
        got = [[i + shift for i in ids] for ids in got]
    assert got == [impls["mistral_common"][0](d) for d in docs[:200]]
    return fn


def _record(benchmark: Any, nbytes: int) -> None:
    if benchmark.stats is not None:
        benchmark.extra_info["MB/s"] = round(nbytes / benchmark.stats.stats.median / MB, 2)


def _rounds(benchmark: Any) -> dict[str, int]:
    return {"rounds": 1 if benchmark.disabled else 3, "iterations": 1, "warmup_rounds": 0 if benchmark.disabled else 1}


CASES = [(f, i) for f in FILES for i in ("fastprep", "mistral_common", "tiktoken")]


@pytest.mark.parametrize(("name", "impl"), CASES)
def test_single_thread_throughput(benchmark, docs, name, impl):
    encode = _checked(name, impl, docs, batch=False)
    benchmark.group = f"{name} single-thread encode loop"
    benchmark.pedantic(lambda: [encode(d) for d in docs], **_rounds(benchmark))
    _record(benchmark, sum(len(d.encode()) for d in docs))


@pytest.mark.parametrize(("name", "impl"), [c for c in CASES if c[1] != "mistral_common"])
def test_batch_throughput(benchmark, docs, name, impl):
    batch = _checked(name, impl, docs, batch=True)
    benchmark.group = f"{name} encode_batch (all cores)"
    benchmark.pedantic(lambda: batch(docs), **_rounds(benchmark))
    _record(benchmark, sum(len(d.encode()) for d in docs))
