"""SentencePiece-family benchmarks on the multilingual test corpus, fastprep against HF tokenizers
and the peers that load the same files (kitoken: Mistral's ``.model`` file through
``kitoken.Kitoken.from_sentencepiece_file``, as it refuses the converted tokenizer.json files;
tokie: the tokenizer.json), in the same run. Peers are timed even where their ids differ; their
parity is in extra_info["identical_docs"]:

- ``mistral``: Mistral v1's SentencePiece BPE (byte fallback), converted by transformers'
  ``build_tokenizer_from_spm_proto`` (the pipeline ``Tokenizer.from_sentencepiece`` builds);
- ``unigram``: the SentencePiece Unigram trained in the tests (charsmap, byte fallback),
  converted the same way;
- ``unigram_hf``: the Unigram trained by tokenizers' UnigramTrainer (NFKC, Metaspace split).

    .venv/bin/pytest benches/bench_tokenizer_sentencepiece.py -p no:cacheprovider --benchmark-columns=min,median
    FASTPREP_BENCH_CORPUS_MB=29 ...   # a bigger corpus

Ids are compared with HF tokenizers' before anything is timed. MB/s figures are in
extra_info["MB/s"] (from the median).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
import tokenizers

import fastprep
from tests import tokenizer_data as data
from tests import tokenizer_data_spm as spm_data

from . import tokenizer_peers as peers

MB = 1_000_000
FAMILIES = {
    "mistral": lambda: spm_data.mistral_tokenizer_json("spm"),
    "unigram": lambda: spm_data.unigram_tokenizer_json("sp_unigram_spm"),
    "unigram_hf": lambda: spm_data.unigram_tokenizer_json("hf_unigram"),
}


@pytest.fixture(scope="module")
def docs() -> list[str]:
    mb = float(os.environ.get("FASTPREP_BENCH_CORPUS_MB", "2"))
    return data.corpus_documents(int(mb * MB))


def _impls(family: str) -> dict[str, tuple[Callable[[str], Any], Callable[[list[str]], Any]]]:
    """name -> (encode one text to ids, encode a batch to a list of id lists)."""
    js = FAMILIES[family]()
    hf, fp = tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)
    return {
        "fastprep": (lambda t: fp.encode(t).ids, lambda ts: [e.ids for e in fp.encode_batch(ts)]),
        "tokenizers": (lambda t: hf.encode(t).ids, lambda ts: [e.ids for e in hf.encode_batch(ts)]),
    }


def _peer(family: str, name: str) -> tuple[Callable[[str], Any], Callable[[list[str]], Any]]:
    # kitoken refuses the converted tokenizer.json files but loads Mistral's .model itself.
    model = spm_data.mistral_model_file() if (family, name) == ("mistral", "kitoken") else None
    return peers.load(name, FAMILIES[family](), model)


def _record(benchmark: Any, nbytes: int) -> None:
    if benchmark.stats is not None:
        benchmark.extra_info["MB/s"] = round(nbytes / benchmark.stats.stats.median / MB, 2)


def _rounds(benchmark: Any) -> dict[str, int]:
    return {"rounds": 1 if benchmark.disabled else 3, "iterations": 1, "warmup_rounds": 0 if benchmark.disabled else 1}


def _checked(family: str, impl: str, docs: list[str], batch: bool, benchmark: Any) -> Callable[..., Any]:
    """The encoder, its ids checked against tokenizers' first on 200 documents; a peer runs on
    all of them (skipped if it crashes on one) and its parity is recorded."""
    impls = _impls(family)
    fn = (impls[impl] if impl in impls else _peer(family, impl))[1 if batch else 0]
    run = fn if batch else (lambda ds: [fn(d) for d in ds])
    if impl in impls:
        assert run(docs[:200]) == impls["tokenizers"][1](docs[:200])
    else:
        got = peers.guarded(impl, run, docs)
        peers.record_parity(benchmark, got, tokenizers.Tokenizer.from_str(FAMILIES[family]()), docs)
    return fn


CASES = [(f, i) for f in FAMILIES for i in ("fastprep", "tokenizers", *peers.PEERS)]


@pytest.mark.parametrize(("family", "impl"), CASES)
def test_single_thread_throughput(benchmark, docs, family, impl):
    encode = _checked(family, impl, docs, batch=False, benchmark=benchmark)
    benchmark.group = f"{family} single-thread encode(...).ids loop"
    benchmark.pedantic(lambda: [encode(d) for d in docs], **_rounds(benchmark))
    _record(benchmark, sum(len(d.encode()) for d in docs))


@pytest.mark.parametrize(("family", "impl"), CASES)
def test_batch_throughput(benchmark, docs, family, impl):
    batch = _checked(family, impl, docs, batch=True, benchmark=benchmark)
    benchmark.group = f"{family} encode_batch (all cores)"
    benchmark.pedantic(lambda: batch(docs), **_rounds(benchmark))
    _record(benchmark, sum(len(d.encode()) for d in docs))
