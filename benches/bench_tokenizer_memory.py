"""Memory of real tokenizers: the RSS one loaded tokenizer takes, and what each encoding thread
adds (its per-thread caches) after a pass over the bench corpus, by default and under a cache
cap (``FASTPREP_TOKEN_CACHE_MB``); and from those, what 16 DataLoader workers with two threads
each would hold. Each case runs in a fresh process, so nothing else is in its RSS.

    .venv/bin/python -m benches.bench_tokenizer_memory          # the table (2 MB corpus)
    .venv/bin/python -m benches.bench_tokenizer_memory 20       # over 20 MB

Under pytest a small run checks that the cap holds: a capped thread's caches stay within it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests import tokenizer_data as data
from tests import tokenizer_data_o200k as o200k
from tests.tokenizer_data_spm import mistral_tokenizer_json
from tests.tokenizer_data_wordpiece import bert_file

MIB = 1 << 20

# A fresh process: import, load, one pass over the documents with FASTPREP_NUM_THREADS threads.
_CHILD = r"""
import json, os, sys
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
kind, path, docs_file = sys.argv[1:4]
docs = json.loads(open(docs_file, encoding="utf-8").read())
import fastprep
r0 = rss()
if kind == "tiktoken":
    from tests import tokenizer_data_o200k as o200k
    tok = fastprep.Tokenizer.from_tiktoken(path, pattern=o200k.O200K_PATTERN,
                                           special_tokens=o200k.O200K_SPECIAL_TOKENS)
elif kind == "tekken":
    tok = fastprep.Tokenizer.from_tekken(path)
else:
    tok = fastprep.Tokenizer.from_file(path)
r1 = rss()
tokens = sum(tok.count_tokens(docs))
r2 = rss()
print(json.dumps({"load": r1 - r0, "encode": r2 - r1, "tokens": tokens,
                  "calling_thread_cache": fastprep.token_cache_bytes()}))
"""


def tokenizers_under_test(tmp: Path) -> dict[str, tuple[str, str]]:
    """name -> (how to load it, file)."""
    cases: dict[str, tuple[str, str]] = {}
    cl100k = tmp / "cl100k.json"
    cl100k.write_text(data.cl100k_tokenizer_json(), encoding="utf-8")
    cases["cl100k_base (byte-level BPE)"] = ("json", str(cl100k))
    path = o200k.o200k_file()
    if path is not None:
        cases["o200k_base (byte-level BPE)"] = ("tiktoken", str(path))
    try:
        from mistral_common.tokens.tokenizers import tekken

        tekken_file = Path(tekken.__file__).parents[2] / "data" / "tekken_240911.json"
        cases["Tekken 240911 (byte-level BPE)"] = ("tekken", str(tekken_file))
    except ImportError:
        pass
    mistral = tmp / "mistral.json"
    mistral.write_text(mistral_tokenizer_json("legacy"), encoding="utf-8")
    cases["Mistral v1 (SentencePiece BPE)"] = ("json", str(mistral))
    cases["all-MiniLM-L6-v2 (WordPiece)"] = ("json", str(bert_file()))
    return cases


def measure(kind: str, path: str, docs_file: Path, threads: int, cap_mb: float | None) -> dict[str, Any]:
    env = dict(os.environ, FASTPREP_NUM_THREADS=str(threads))
    env.pop("FASTPREP_TOKEN_CACHE_MB", None)
    if cap_mb is not None:
        env["FASTPREP_TOKEN_CACHE_MB"] = str(cap_mb)
    root = Path(__file__).resolve().parents[1]
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, path, str(docs_file)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def figures(megabytes: float, cap_mb: float = 8.0) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        docs_file = tmp / "docs.json"
        docs_file.write_text(json.dumps(data.corpus_documents(int(megabytes * 1e6))), encoding="utf-8")
        for name, (kind, path) in tokenizers_under_test(tmp).items():
            one = measure(kind, path, docs_file, 1, None)
            two = measure(kind, path, docs_file, 2, None)
            capped = measure(kind, path, docs_file, 1, cap_mb)
            assert one["tokens"] == two["tokens"] == capped["tokens"], "a cache changed the ids"
            per_thread = max(one["encode"], two["encode"] / 2)
            rows.append(
                {
                    "name": name,
                    "load_mib": one["load"] / MIB,
                    "thread_mib": per_thread / MIB,
                    "thread_cache_mib": one["calling_thread_cache"] / MIB,
                    "capped_thread_mib": capped["encode"] / MIB,
                    "capped_cache_mib": capped["calling_thread_cache"] / MIB,
                    # 16 DataLoader workers, each a process with its tokenizer and two threads.
                    "workers16_mib": 16 * (one["load"] + 2 * per_thread) / MIB,
                    "workers16_capped_mib": 16 * (one["load"] + 2 * capped["encode"]) / MIB,
                }
            )
    return rows


def main(megabytes: float = 2.0, cap_mb: float = 8.0) -> None:
    rows = figures(megabytes, cap_mb)
    print(f"RSS in MiB, one pass over the {megabytes:g} MB bench corpus; cap = FASTPREP_TOKEN_CACHE_MB={cap_mb:g}")
    print(
        "| tokenizer | loaded | each encoding thread | its caches | thread, capped | caches, capped "
        "| 16 workers x 2 threads | same, capped |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['name']} | {r['load_mib']:.1f} | {r['thread_mib']:.1f} | {r['thread_cache_mib']:.1f} | "
            f"{r['capped_thread_mib']:.1f} | {r['capped_cache_mib']:.1f} | {r['workers16_mib']:.0f} | "
            f"{r['workers16_capped_mib']:.0f} |"
        )


def test_memory_figures_smoke(tmp_path: Path) -> None:
    """The cap holds on a real vocabulary: a capped thread's caches stay within it."""
    docs_file = tmp_path / "docs.json"
    docs_file.write_text(json.dumps(data.corpus_documents(300_000)), encoding="utf-8")
    cl100k = tmp_path / "cl100k.json"
    cl100k.write_text(data.cl100k_tokenizer_json(), encoding="utf-8")
    free = measure("json", str(cl100k), docs_file, 1, None)
    capped = measure("json", str(cl100k), docs_file, 1, 0.25)
    assert free["tokens"] == capped["tokens"]
    assert 0 < capped["calling_thread_cache"] <= 0.25 * MIB < free["calling_thread_cache"]


if __name__ == "__main__":
    main(*(float(a) for a in sys.argv[1:3]))
