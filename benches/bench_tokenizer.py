"""Tokenizer benchmarks: cl100k on the multilingual test corpus, side by side in one run.

    .venv/bin/pytest benches/bench_tokenizer.py --benchmark-group-by=group --benchmark-columns=min,median,ops
    FASTPREP_BENCH_CORPUS_MB=29 ...   # a bigger corpus

Every implementation's ids are compared with HF tokenizers' before it is timed; a peer whose ids
differ is still timed, and its parity (share of identical documents) is recorded in extra_info.
MB/s figures are in extra_info["MB/s"] (from the median). Peers that are not installed, or that
cannot load this tokenizer.json, are skipped with the reason.

Throughput is steady state: a warm-up round for every implementation (its caches filled), then
FASTPREP_BENCH_ROUNDS timed rounds (default 5: this runs on shared machines, where a round or two
of any implementation lands on someone else's load). The cold case, a fresh tokenizer's first
pass over the corpus, is its own group ("first pass"), and so is a fresh process up to its first
ids ("cold start": import, load, the first calls, and the RSS the vocabulary takes).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import pytest
import tokenizers

import fastprep
from tests import tokenizer_data as data

from . import tokenizer_peers

MB = 1_000_000


@pytest.fixture(scope="module")
def cl100k_json() -> str:
    return data.cl100k_tokenizer_json()


@pytest.fixture(scope="module")
def docs() -> list[str]:
    mb = float(os.environ.get("FASTPREP_BENCH_CORPUS_MB", "5"))
    return data.corpus_documents(int(mb * MB))


@pytest.fixture(scope="module")
def reference(cl100k_json: str, docs: list[str]) -> list[list[int]]:
    hf = tokenizers.Tokenizer.from_str(cl100k_json)
    return [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]


def _peers(js: str) -> dict[str, tuple[Callable[[str], list[int]], Callable[[list[str]], list[list[int]]] | None]]:
    """name -> (encode one text to ids, encode a batch to ids or None)."""
    out: dict[str, Any] = {}
    fp = fastprep.Tokenizer.from_str(js)
    out["fastprep"] = (
        lambda t: fp.encode(t, add_special_tokens=False).ids,
        lambda ts: [e.ids for e in fp.encode_batch(ts, add_special_tokens=False)],
    )
    out["fastprep.count_tokens"] = (None, lambda ts: fp.count_tokens(ts))
    hf = tokenizers.Tokenizer.from_str(js)
    out["tokenizers"] = (
        lambda t: hf.encode(t, add_special_tokens=False).ids,
        lambda ts: [e.ids for e in hf.encode_batch(ts, add_special_tokens=False)],
    )
    enc = data.tiktoken_cl100k()
    out["tiktoken"] = (enc.encode_ordinary, enc.encode_ordinary_batch)
    return out


def _ids(encoding: Any) -> list[int]:
    return encoding.ids


def _list_ids(encoding: Any) -> list[int]:
    return list(encoding.ids)


def _optional_peer(name: str, js: str) -> tuple[Callable[[str], list[int]], Callable | None]:
    try:
        if name == "fastokens":
            import fastokens

            ft = fastokens.Tokenizer.from_tiktoken(
                str(data.cl100k_file()), pattern=data.CL100K_PATTERN, special_tokens=data.CL100K_SPECIAL_TOKENS
            )
            # Its `.ids` is a new list (0.3.x): copied again only if some version returns
            # something else (a `list()` around a list cost it ~30% of a round here).
            ids = _ids if type(ft.encode_ordinary("a b").ids) is list else _list_ids
            return (
                lambda t: ids(ft.encode_ordinary(t)),
                lambda ts: [ids(e) for e in ft.encode_batch(ts, add_special_tokens=False)],
            )
        if name == "kitoken":
            import kitoken

            kt = kitoken.Kitoken.from_tokenizers(js.encode())
            return kt.encode, None
        if name == "tokie":
            import tempfile

            import tokie

            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                f.write(js)
            tt = tokie.Tokenizer.from_json(f.name)
            return lambda t: list(tt.encode(t, add_special_tokens=False).ids), None
        if name == "bpe-openai":
            import bpe_openai

            bo = bpe_openai.get_encoding("cl100k_base")
            return bo.encode, None
    except Exception as exc:  # a peer that cannot load this vocabulary is reported, not fatal
        pytest.skip(f"{name} could not load cl100k here: {exc}")
    pytest.skip(f"unknown peer {name}")


def _rounds(benchmark: Any) -> dict[str, int]:
    """pedantic's rounds for the throughput groups (one bare round with --benchmark-disable)."""
    if benchmark.disabled:
        return {"rounds": 1, "iterations": 1, "warmup_rounds": 0}
    return {"rounds": int(os.environ.get("FASTPREP_BENCH_ROUNDS", "5")), "iterations": 1, "warmup_rounds": 1}


def _parity(encode: Callable[[str], list[int]], docs: list[str], ref: list[list[int]]) -> float:
    same = sum(1 for d, r in zip(docs, ref, strict=True) if list(encode(d)) == r)
    return same / len(docs)


def _record(benchmark: Any, nbytes: int) -> None:
    if benchmark.stats is not None:
        med = benchmark.stats.stats.median
        benchmark.extra_info["MB/s"] = round(nbytes / med / MB, 2)


@pytest.mark.parametrize("impl", ["fastprep", "tokenizers", "tiktoken", "fastokens", "kitoken", "tokie", "bpe-openai"])
def test_single_thread_throughput(benchmark, cl100k_json, docs, reference, impl):
    peers = _peers(cl100k_json)
    encode = peers[impl][0] if impl in peers else _optional_peer(impl, cl100k_json)[0]
    if impl not in peers:
        # A peer must get through the whole corpus before it is timed (some panic on a document).
        tokenizer_peers.guarded(impl, lambda ds: [encode(d) for d in ds], docs)
    parity = _parity(encode, docs[:200], reference[:200])
    benchmark.extra_info["parity"] = parity
    if impl in ("fastprep", "tokenizers"):
        assert parity == 1.0
    nbytes = sum(len(d.encode()) for d in docs)
    benchmark.group = "cl100k single-thread encode loop"
    benchmark.pedantic(
        lambda: [encode(d) for d in docs],
        **_rounds(benchmark),
    )
    _record(benchmark, nbytes)


@pytest.mark.parametrize("impl", ["fastprep", "fastprep.count_tokens", "tokenizers", "tiktoken", "fastokens"])
def test_batch_throughput(benchmark, cl100k_json, docs, reference, impl):
    peers = _peers(cl100k_json)
    batch = peers[impl][1] if impl in peers else _optional_peer(impl, cl100k_json)[1]
    got = batch(docs[:200])
    if impl == "fastprep.count_tokens":
        assert got == [len(r) for r in reference[:200]]
    else:
        assert got == reference[:200]
    nbytes = sum(len(d.encode()) for d in docs)
    benchmark.group = "cl100k batch encode (all cores)"
    benchmark.pedantic(
        lambda: batch(docs),
        **_rounds(benchmark),
    )
    _record(benchmark, nbytes)


@pytest.mark.parametrize("impl", ["fastprep", "fastokens"])
def test_first_pass_throughput(benchmark, cl100k_json, docs, reference, impl):
    """A fresh tokenizer's first pass over the corpus, single thread: every distinct piece is
    new to its caches (a one-off job over a dataset). The load is not timed."""
    current: list[Callable[[str], list[int]]] = []

    def fresh() -> tuple[tuple, dict]:
        if impl == "fastprep":
            fp = fastprep.Tokenizer.from_str(cl100k_json)
            current[:] = [lambda t: fp.encode(t, add_special_tokens=False).ids]
        else:
            current[:] = [_optional_peer(impl, cl100k_json)[0]]
        return (), {}

    fresh()
    assert _parity(current[0], docs[:200], reference[:200]) == 1.0
    benchmark.group = "cl100k first pass, single thread (fresh tokenizer)"
    benchmark.pedantic(
        lambda: [current[0](d) for d in docs],
        setup=fresh,
        rounds=1 if benchmark.disabled else 3,
        iterations=1,
    )
    _record(benchmark, sum(len(d.encode()) for d in docs))


# A fresh process: import, load cl100k, encode two ~100-byte texts; prints what each step took.
_COLD_START_CHILD = r"""
import json, os, sys, time
impl, path, pattern, specials, first, second = sys.argv[1:7]
specials = json.loads(specials)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
t0 = time.perf_counter()
if impl == "fastprep":
    import fastprep
    r0, t1 = rss(), time.perf_counter()
    tok = fastprep.Tokenizer.from_file(path)
    encode = lambda t: tok.encode(t, add_special_tokens=False).ids
elif impl == "tokenizers":
    import tokenizers
    r0, t1 = rss(), time.perf_counter()
    tok = tokenizers.Tokenizer.from_file(path)
    encode = lambda t: tok.encode(t, add_special_tokens=False).ids
elif impl == "tiktoken":
    import tiktoken, tiktoken.load
    r0, t1 = rss(), time.perf_counter()
    ranks = tiktoken.load.load_tiktoken_bpe(path)
    tok = tiktoken.Encoding("cl100k_base", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    encode = tok.encode_ordinary
else:
    import fastokens
    r0, t1 = rss(), time.perf_counter()
    tok = fastokens.Tokenizer.from_tiktoken(path, pattern=pattern, special_tokens=specials)
    encode = lambda t: list(tok.encode_ordinary(t).ids)
r1, t2 = rss(), time.perf_counter()
a = encode(first)
t3 = time.perf_counter()
b = encode(second)
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "first": t3 - t2, "second": t4 - t3,
                  "rss": r1 - r0, "ids": [a, b]}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads RSS from /proc (Linux)")
@pytest.mark.parametrize("impl", ["fastprep", "tokenizers", "tiktoken", "fastokens"])
def test_cold_start(benchmark, cl100k_json, impl, tmp_path):
    """A fresh process up to its first ids (a server's or a data-loader worker's start): the
    interpreter, the import, the load of cl100k (each from its own file format) and two ~100-byte
    encodes. The round is the whole process; extra_info splits it: load and first-call ms, and
    the RSS the loaded vocabulary takes (MB)."""
    import json
    import subprocess
    import sys

    if impl == "fastokens":
        pytest.importorskip("fastokens")
    path = str(data.cl100k_file())
    if impl in ("fastprep", "tokenizers"):
        path = str(tmp_path / "cl100k.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(cl100k_json)
    first = "The quick brown fox jumps over the lazy dog; it costs $12.50 — ça va? 日本語も少し。 🙂 ok."
    second = "Une autre phrase, avec d'autres mots: 42 façons de dire « bonjour » — 你好, مرحبا, hello!"
    hf = tokenizers.Tokenizer.from_str(cl100k_json)
    want = [hf.encode(t, add_special_tokens=False).ids for t in (first, second)]
    argv = [sys.executable, "-c", _COLD_START_CHILD, impl, path, data.CL100K_PATTERN]
    argv += [json.dumps(data.CL100K_SPECIAL_TOKENS), first, second]
    runs: list[dict[str, Any]] = []

    def start() -> None:
        out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120)
        runs.append(json.loads(out.stdout))

    benchmark.group = "cl100k cold start: a fresh process to its first ids"
    benchmark.pedantic(start, rounds=1 if benchmark.disabled else 5, iterations=1)
    assert all(r["ids"] == want for r in runs), f"{impl}: ids differ from tokenizers'"
    for key in ("load", "first", "second"):
        benchmark.extra_info[f"{key}_ms"] = round(1e3 * statistics.median(r[key] for r in runs), 2)
    benchmark.extra_info["vocab_rss_MB"] = round(statistics.median(r["rss"] for r in runs) / MB, 1)


# A fresh process: import and load (not timed), then one pass over the corpus (timed): the case of
# tokenizing a training corpus, where every process meets its text once, with no memory left by
# an earlier tokenizer of the same process to reuse.
_FIRST_PASS_CHILD = r"""
import hashlib, json, sys, time
impl, path, tiktoken_path, pattern, specials, corpus = sys.argv[1:7]
docs = json.load(open(corpus, encoding="utf-8"))
if impl == "fastprep":
    import fastprep
    tok = fastprep.Tokenizer.from_file(path)
    encode = lambda t: tok.encode(t, add_special_tokens=False).ids
else:
    import fastokens
    tok = fastokens.Tokenizer.from_tiktoken(tiktoken_path, pattern=pattern, special_tokens=json.loads(specials))
    encode = lambda t: tok.encode_ordinary(t).ids
t0 = time.perf_counter()
ids = [encode(d) for d in docs]
t1 = time.perf_counter()
print(json.dumps({"first_pass": t1 - t0, "sha": hashlib.sha256(json.dumps(ids).encode()).hexdigest()}))
"""


def first_pass_fresh_processes(js: str, docs: list[str], rounds: int, tmp: Any) -> dict[str, list[float]]:
    """Alternates fastprep and fastokens, a fresh process each round, each timing its first pass
    over ``docs``; asserts every process's ids equal HF tokenizers'. Returns the seconds per impl."""
    import hashlib
    import json
    import subprocess
    import sys

    import fastokens  # noqa: F401  (skip early where it is missing)

    tok_path, corpus = tmp / "cl100k.json", tmp / "corpus.json"
    tok_path.write_text(js, encoding="utf-8")
    corpus.write_text(json.dumps(docs), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_str(js)
    ids = [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
    want = hashlib.sha256(json.dumps(ids).encode()).hexdigest()
    times: dict[str, list[float]] = {"fastprep": [], "fastokens": []}
    for _ in range(rounds):
        for impl in times:
            argv = [sys.executable, "-c", _FIRST_PASS_CHILD, impl, str(tok_path), str(data.cl100k_file())]
            argv += [data.CL100K_PATTERN, json.dumps(data.CL100K_SPECIAL_TOKENS), str(corpus)]
            out = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True, timeout=300).stdout)
            assert out["sha"] == want, f"{impl}: ids differ from tokenizers'"
            times[impl].append(out["first_pass"])
    return times


def test_first_pass_fresh_process(benchmark, cl100k_json, docs, tmp_path):
    """fastprep's first pass over the corpus in fresh processes, alternating with fastokens';
    extra_info has both medians and the ratio (fastokens' time / fastprep's)."""
    pytest.importorskip("fastokens")
    runs: list[dict[str, list[float]]] = []
    benchmark.group = "cl100k first pass, fresh process per round (fastprep and fastokens alternating)"
    benchmark.pedantic(
        lambda: runs.append(first_pass_fresh_processes(cl100k_json, docs, 1, tmp_path)),
        rounds=1 if benchmark.disabled else 5,
        iterations=1,
    )
    fp = statistics.median(r["fastprep"][0] for r in runs)
    ft = statistics.median(r["fastokens"][0] for r in runs)
    benchmark.extra_info.update(fastprep_ms=round(1e3 * fp, 1), fastokens_ms=round(1e3 * ft, 1))
    benchmark.extra_info["fastprep_vs_fastokens"] = round(ft / fp, 2)


@pytest.mark.parametrize("impl", ["fastprep", "tokenizers", "tiktoken", "fastokens"])
def test_short_call_latency(benchmark, cl100k_json, impl):
    peers = _peers(cl100k_json)
    encode = peers[impl][0] if impl in peers else _optional_peer(impl, cl100k_json)[0]
    text = "The quick brown fox jumps over the lazy dog; it costs $12.50 — ça va? 日本語も少し。 🙂 ok."
    assert len(text.encode()) >= 100
    if impl != "fastokens":
        assert list(encode(text)) == tokenizers.Tokenizer.from_str(cl100k_json).encode(text).ids
    benchmark.group = "cl100k ~100-byte call"
    benchmark(encode, text)


def test_load_time_and_rss(benchmark, cl100k_json):
    import psutil

    proc = psutil.Process()
    before = proc.memory_info().rss
    tok = benchmark.pedantic(lambda: fastprep.Tokenizer.from_str(cl100k_json), rounds=3, iterations=1)
    benchmark.group = "cl100k load"
    benchmark.extra_info["rss_delta_MB"] = round((proc.memory_info().rss - before) / MB, 1)
    assert tok.get_vocab_size() == 100261


@pytest.mark.parametrize("unit", ["a", "🙂", "7", " "])
def test_pathological_input_is_linear(benchmark, cl100k_json, unit):
    """10x the input costs about 10x the time (a quadratic BPE would cost 100x)."""
    fp = fastprep.Tokenizer.from_str(cl100k_json)
    hf = tokenizers.Tokenizer.from_str(cl100k_json)
    small, big = unit * 20_000, unit * 200_000
    assert fp.encode(small).ids == hf.encode(small).ids

    def best(text: str) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fp._core.encode(text, None, False, False, offsets=False)
            times.append(time.perf_counter() - t0)
        return min(times)

    benchmark.group = "pathological input"
    benchmark.pedantic(lambda: fp._core.encode(big, None, False, False, offsets=False), rounds=1, iterations=1)
    if not benchmark.disabled:
        ratio = statistics.median(best(big) / best(small) for _ in range(3))
        benchmark.extra_info["10x_input_time_ratio"] = round(ratio, 1)
        assert ratio < 25, f"10x the input took {ratio:.1f}x the time: not linear"


@pytest.mark.parametrize("impl", ["fastprep", "fastprep, one thread", "fastokens", "tiktoken", "tokenizers"])
def test_long_text_latency(benchmark, cl100k_json, docs, impl, monkeypatch):
    """One ~1 MB text (a long prompt): fastprep cuts it into parts on the pool from 64 KB
    (fastokens does too); "one thread" pins fastprep's pool to the calling thread."""
    import random

    text = "".join(random.Random(3).sample(docs, len(docs)))[:1_000_000]
    if impl == "fastprep, one thread":
        monkeypatch.setenv("FASTPREP_NUM_THREADS", "1")
    name = impl.split(",")[0]
    peers = _peers(cl100k_json)
    encode = peers[name][0] if name in peers else _optional_peer(name, cl100k_json)[0]
    want = tokenizers.Tokenizer.from_str(cl100k_json).encode(text, add_special_tokens=False).ids
    assert list(encode(text)) == want
    benchmark.group = "cl100k one 1 MB text"
    benchmark.pedantic(
        encode,
        args=(text,),
        rounds=1 if benchmark.disabled else 5,
        iterations=1,
        warmup_rounds=0 if benchmark.disabled else 1,
    )
    _record(benchmark, len(text.encode()))
