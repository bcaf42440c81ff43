"""WordPiece benchmarks: all-MiniLM-L6-v2's BERT tokenizer.json on the multilingual test corpus,
fastprep against HF tokenizers and the peers that load the same file (kitoken, tokie) in the same
run. fastprep's ids are compared with HF tokenizers' before anything is timed; peers are timed
even where their ids differ, with their parity in extra_info["identical_docs"].

    .venv/bin/pytest benches/bench_tokenizer_wordpiece.py -p no:cacheprovider --benchmark-columns=min,median
    FASTPREP_BENCH_CORPUS_MB=29 ...   # a bigger corpus

"full documents" runs with the
file's truncation and padding turned off (every token of every document); "as shipped" keeps
them (128-token windows, padded), what an embedding service runs. MB/s figures are in
extra_info["MB/s"] (from the median).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest
import tokenizers

import fastprep
from tests import tokenizer_data as data
from tests import tokenizer_data_wordpiece as wp

from . import tokenizer_peers as peers

MB = 1_000_000


@pytest.fixture(scope="module")
def bert_json() -> str:
    return wp.bert_tokenizer_json()


@pytest.fixture(scope="module")
def docs() -> list[str]:
    mb = float(os.environ.get("FASTPREP_BENCH_CORPUS_MB", "5"))
    return data.corpus_documents(int(mb * MB))


def _load(js: str, shipped: bool) -> tuple[tokenizers.Tokenizer, fastprep.Tokenizer]:
    hf, fp = tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)
    if not shipped:
        for tok in (hf, fp):
            tok.no_truncation()
            tok.no_padding()
    return hf, fp


def _impls(js: str, shipped: bool) -> dict[str, tuple[Callable[[str], Any], Callable[[list[str]], Any]]]:
    """name -> (encode one text to ids, encode a batch to a list of id lists)."""
    hf, fp = _load(js, shipped)
    return {
        "fastprep": (lambda t: fp.encode(t).ids, lambda ts: [e.ids for e in fp.encode_batch(ts)]),
        "tokenizers": (lambda t: hf.encode(t).ids, lambda ts: [e.ids for e in hf.encode_batch(ts)]),
    }


def _record(benchmark: Any, nbytes: int) -> None:
    if benchmark.stats is not None:
        benchmark.extra_info["MB/s"] = round(nbytes / benchmark.stats.stats.median / MB, 2)


def _rounds(benchmark: Any) -> dict[str, int]:
    return {"rounds": 1 if benchmark.disabled else 3, "iterations": 1, "warmup_rounds": 0 if benchmark.disabled else 1}


def _encoders(js: str, impl: str) -> tuple[Callable[[str], Any], Callable[[list[str]], Any]]:
    impls = _impls(js, shipped=False)
    if impl in impls:
        return impls[impl]
    # Peers get the file with truncation and padding off, as "full documents" runs the others.
    full = json.loads(js) | {"truncation": None, "padding": None}
    return peers.load(impl, json.dumps(full))


def _check(benchmark: Any, js: str, impl: str, run: Callable[[list[str]], list[list[int]]], docs: list[str]) -> None:
    """fastprep must equal tokenizers on the first 300 documents; a peer runs on all of them
    (skipped if it crashes on one) and its parity is recorded."""
    if impl in ("fastprep", "tokenizers"):
        assert run(docs[:300]) == _impls(js, shipped=False)["tokenizers"][1](docs[:300])
    else:
        peers.record_parity(benchmark, peers.guarded(impl, run, docs), _load(js, shipped=False)[0], docs)


@pytest.mark.parametrize("impl", ["fastprep", "tokenizers", *peers.PEERS])
def test_single_thread_throughput(benchmark, bert_json, docs, impl):
    encode = _encoders(bert_json, impl)[0]
    _check(benchmark, bert_json, impl, lambda ds: [encode(d) for d in ds], docs)
    benchmark.group = "BERT single-thread encode(...).ids loop, full documents"
    benchmark.pedantic(lambda: [encode(d) for d in docs], **_rounds(benchmark))
    _record(benchmark, sum(len(d.encode()) for d in docs))


@pytest.mark.parametrize("impl", ["fastprep", "fastprep.count_tokens", "tokenizers", *peers.PEERS])
def test_batch_throughput(benchmark, bert_json, docs, impl):
    impls = _impls(bert_json, shipped=False)
    if impl == "fastprep.count_tokens":
        fp = _load(bert_json, shipped=False)[1]
        batch: Callable[[list[str]], Any] = lambda ts: fp.count_tokens(ts, add_special_tokens=True)  # noqa: E731
        assert batch(docs[:300]) == [len(r) for r in impls["tokenizers"][1](docs[:300])]
    else:
        batch = _encoders(bert_json, impl)[1]
        _check(benchmark, bert_json, impl, batch, docs)
    benchmark.group = "BERT encode_batch (all cores), full documents"
    benchmark.pedantic(lambda: batch(docs), **_rounds(benchmark))
    _record(benchmark, sum(len(d.encode()) for d in docs))


@pytest.mark.parametrize("impl", ["fastprep", "fastprep.arrays", "tokenizers"])
def test_batch_as_shipped(benchmark, bert_json, docs, impl):
    """The file's truncation (128, overflowing windows kept) and padding to 128."""
    hf, fp = _load(bert_json, shipped=True)
    ref = [e.ids for e in hf.encode_batch(docs[:300])]
    if impl == "fastprep.arrays":
        # Rows without overflowing windows: the first 128 tokens of each text, padded.
        def batch(ts: list[str]) -> Any:
            return fp.encode_batch_arrays(ts, max_length=128, padding="max_length")["input_ids"]

        assert [list(r) for r in batch(docs[:300])] == ref
    else:
        batch = _impls(bert_json, shipped=True)[impl][1]
        assert batch(docs[:300]) == ref
    benchmark.group = "BERT encode_batch (all cores), as shipped: 128-token windows, padded"
    benchmark.pedantic(lambda: batch(docs), **_rounds(benchmark))
    _record(benchmark, sum(len(d.encode()) for d in docs))


@pytest.mark.parametrize("impl", ["fastprep", "tokenizers"])
def test_short_call_latency(benchmark, bert_json, impl):
    encode = _impls(bert_json, shipped=True)[impl][0]
    text = "The quick brown fox jumps over the lazy dog; it costs $12.50 — ça va? 日本語も少し。 🙂 ok."
    assert encode(text) == _impls(bert_json, shipped=True)["tokenizers"][0](text)
    benchmark.group = "BERT ~100-byte call (padded to 128)"
    benchmark(encode, text)
