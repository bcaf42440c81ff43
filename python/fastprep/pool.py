"""The fixed-block memory pool.

``BlockPool`` reserves its memory once and cuts it into blocks of one size, so a long-running
pipeline that takes and returns buffers keeps a flat footprint: blocks are never split or merged,
so there is nothing to fragment. Acquire and release are O(1), lock-free, and usable from Rust
worker threads without the GIL.

>>> import numpy as np
>>> pool = BlockPool(1 << 20, 4)
>>> with pool.acquire() as block:
...     arr = np.frombuffer(block, dtype=np.float32)   # zero-copy view, writable
...     arr[:] = 1.0
...     del arr                                        # views must be gone before release
>>> pool.stats()["in_use"]
0
"""

from __future__ import annotations

from typing import TypedDict

from ._core import Block, BlockPool

__all__ = ["Block", "BlockPool", "PoolStats"]


class PoolStats(TypedDict):
    """What ``BlockPool.stats()`` returns."""

    block_size: int
    capacity: int
    in_use: int
    high_water: int
    acquires: int
    releases: int
    waits: int
    exhausted: int
    grows: int
