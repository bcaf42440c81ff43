"""The cap on each thread's tokenizer caches (byte-level BPE's piece caches; see
docs/tokenizer-pipeline.md, "Per-thread caches"). Smaller caches only miss more: ids never change."""

from __future__ import annotations

from . import _core

_MIB = 1024 * 1024


def set_token_cache_mb(mb: float | None) -> None:
    """Cap each thread's BPE caches (per tokenizer) at about ``mb`` MiB; ``None`` lifts the cap.

    Overrides ``FASTPREP_TOKEN_CACHE_MB``. Caches grow up to the cap from then on; a table already
    larger keeps its size until its tokenizer is dropped (a new tokenizer starts within it).
    """
    if mb is not None and not mb >= 0:
        raise ValueError(f"the cache cap must be a size in MiB of at least 0, not {mb!r}")
    _core.set_token_cache_cap(None if mb is None else int(mb * _MIB))


def token_cache_mb() -> float | None:
    """The cap in MiB (from ``set_token_cache_mb`` or ``FASTPREP_TOKEN_CACHE_MB``), or None."""
    cap = _core.token_cache_cap()
    return None if cap is None else cap / _MIB


def token_cache_bytes() -> int:
    """Bytes the calling thread's BPE caches hold now (all tokenizers it has used)."""
    return _core.token_cache_bytes()
