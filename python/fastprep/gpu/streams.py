"""Chunks of a ``preprocess(device="cuda")`` batch on streams, so that the stages of consecutive
chunks overlap: while the device runs chunk k's pixel kernels (IDCT, resize, normalize) on one
stream, the host plans chunk k+1 (headers, CPU decodes), its scans go up and are entropy-decoded
on the other stream. Each chunk's own stages stay in order on its stream; the streams start after
the work the caller's stream had queued (an event it records) and the caller's stream waits for
both at the end (an event each records), so the batch is ready in the caller's stream order, as
if everything had run on it. Chunks share only the batch, each writing its own rows.

A batch of up to 1.5 ``CHUNK`` images (serving sizes) is one chunk on the caller's stream: no
fork, no join."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .backend import Backend

# Images per chunk; 0 runs every batch as one chunk on the caller's stream. Two streams: chunk
# k+1's upload and entropy decoding overlap chunk k's pixel stage, and a third would only wait.
CHUNK = 16
LANES = 2


def chunk_bounds(n: int, chunk: int) -> list[tuple[int, int]]:
    """[lo, hi) of each chunk: `chunk` images each, the remainder spread over all of them (so that
    65 images are 4 chunks of 16-17, not 4 of 16 and one of 1)."""
    if chunk <= 0 or n <= chunk:
        return [(0, n)]
    count = -(-n // chunk) if n % chunk > chunk // 2 else n // chunk
    base, extra = divmod(n, count)
    bounds, lo = [], 0
    for k in range(count):
        hi = lo + base + (k < extra)
        bounds.append((lo, hi))
        lo = hi
    return bounds


def run_chunks(be: Backend, n: int, body: Callable[[int, int], None]) -> None:
    """body(lo, hi) for each chunk of a batch of n images, chunk k on stream k % LANES where the
    backend has streams (CuPy: ``fork``/``join``), else in turn on the current one. The caller's
    stream waits for every chunk, also when a chunk raises."""
    bounds = chunk_bounds(n, CHUNK)
    fork = getattr(be, "fork", None)
    if len(bounds) == 1 or fork is None:
        for lo, hi in bounds:
            body(lo, hi)
        return
    streams: list[Any] = fork(min(LANES, len(bounds)))
    try:
        for k, (lo, hi) in enumerate(bounds):
            with streams[k % len(streams)]:  # the current stream while the chunk's work is queued
                body(lo, hi)
    finally:
        be.join(streams)  # type: ignore[attr-defined]
