"""Hypothesis state machine: random acquire / write / view / release sequences on one pool.

Invariants: no block is handed out twice, `in_use` always equals the blocks held, every block comes
back at the end, and writes to one block never change another.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule

from fastprep import BlockPool, PoolExhaustedError

BLOCK = 96


class PoolMachine(RuleBasedStateMachine):
    blocks = Bundle("blocks")

    def __init__(self):
        super().__init__()
        self.pool = None
        self.held = {}  # index -> (Block, expected bytes)
        self.views = []  # (Block, numpy view)

    @rule(num_blocks=st.integers(1, 6), grow=st.booleans(), alignment=st.sampled_from([1, 16, 64, 4096]))
    @precondition(lambda self: self.pool is None)
    def create(self, num_blocks, grow, alignment):
        self.num_blocks, self.grow = num_blocks, grow
        self.pool = BlockPool(BLOCK, num_blocks, grow=grow, alignment=alignment, max_blocks=4 * num_blocks)

    @rule(target=blocks, fill=st.integers(0, 255))
    @precondition(lambda self: self.pool is not None)
    def acquire(self, fill):
        block = self.pool.try_acquire()
        cap = 4 * self.num_blocks if self.grow else self.num_blocks
        if block is None:
            assert len(self.held) == cap, "try_acquire failed while blocks were free"
            return None
        assert block.index not in self.held, f"block {block.index} handed out twice"
        assert block.address % self.pool.alignment == 0
        memoryview(block)[:] = bytes([fill]) * BLOCK
        self.held[block.index] = (block, bytearray([fill]) * BLOCK)
        return block

    @rule(block=blocks, offset=st.integers(0, BLOCK - 1), value=st.integers(0, 255))
    def write(self, block, offset, value):
        if block is None or block.released:
            return
        np.frombuffer(block, dtype=np.uint8)[offset] = value
        self.held[block.index][1][offset] = value

    @rule(block=blocks)
    def open_view(self, block):
        if block is None or block.released:
            return
        self.views.append((block, np.frombuffer(block, dtype=np.uint8)))

    @rule()
    def close_views(self):
        self.views.clear()

    @rule(block=consumes(blocks), via_pool=st.booleans())
    def release(self, block, via_pool):
        if block is None:
            return
        open_views = sum(1 for b, _ in self.views if b is block)
        release = self.pool.release if via_pool else (lambda b: b.release())
        if block.released:
            release(block)  # a second release is a no-op
            return
        if open_views:
            try:
                release(block)
            except BufferError:
                pass
            else:
                raise AssertionError("release with open views must raise BufferError")
            assert not block.released
            self.views = [(b, v) for b, v in self.views if b is not block]
            release(block)
        else:
            release(block)
        assert block.released
        del self.held[block.index]

    @rule()
    @precondition(lambda self: self.pool is not None and not self.grow)
    def acquire_when_full_times_out(self):
        if len(self.held) < self.num_blocks:
            return
        try:
            self.pool.acquire(timeout=0)
        except PoolExhaustedError:
            return
        raise AssertionError("acquire on a full pool must raise")

    @invariant()
    def bookkeeping_is_right(self):
        if self.pool is None:
            return
        s = self.pool.stats()
        assert s["in_use"] == len(self.held)
        assert s["acquires"] - s["releases"] == s["in_use"]
        assert s["high_water"] >= s["in_use"]
        assert s["capacity"] >= s["in_use"]

    @invariant()
    def writes_never_leak_into_other_blocks(self):
        for block, expected in self.held.values():
            assert bytes(memoryview(block)) == bytes(expected), f"block {block.index} changed"

    def teardown(self):
        if self.pool is None:
            return
        self.views.clear()
        for block, _ in list(self.held.values()):
            block.release()
        s = self.pool.stats()
        assert s["in_use"] == 0 and s["releases"] == s["acquires"], s
        # every block comes back: the whole capacity can be taken again
        again = [self.pool.try_acquire() for _ in range(s["capacity"])]
        assert all(b is not None for b in again)
        assert len({b.index for b in again}) == s["capacity"]


TestPoolStateMachine = PoolMachine.TestCase
