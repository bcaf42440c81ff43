"""``preprocess(device="cuda")`` in chunks on two streams (fastprep/gpu/streams.py), without a GPU:
the kernels run by the CPU emulation, the streams stood in for by objects that record which
stream each launch, upload and staging release was queued on. The batch must equal the CPU
pipeline's whatever the chunking; every chunk's work must be queued on its own stream, the
streams forked from the caller's once and joined back once (also when a chunk raises); and
CupyBackend's fork/join must make the CUDA calls that order them."""

from __future__ import annotations

import itertools
import threading
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fastprep
from fastprep import gpu
from fastprep.gpu import streams

from . import image_data as data
from .cuda_emu import EmuBackend


@given(st.integers(0, 300), st.integers(0, 40))
def test_chunks_cover_the_batch_once_in_order_with_sizes_within_one(n, chunk):
    bounds = streams.chunk_bounds(n, chunk)
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    sizes = [hi - lo for lo, hi in bounds]
    if chunk == 0 or n <= chunk:
        assert bounds == [(0, n)]
    else:
        assert max(sizes) - min(sizes) <= 1 and min(sizes) >= chunk // 2 and max(sizes) <= chunk + chunk // 2 + 1


class _Stream:
    def __init__(self, be: StreamRecorder, name: str) -> None:
        self.be, self.name, self.ptr = be, name, hash(name)

    def record(self) -> SimpleNamespace:
        return SimpleNamespace(done=False, stream=self.name)

    def __enter__(self) -> _Stream:
        self.be.current.append(self.name)
        self.be.log.append(("enter", self.name))
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self.be.current.pop() == self.name
        self.be.log.append(("exit", self.name))


class StreamRecorder(EmuBackend):
    """The emulation with streams that record what is queued on which (the caller's is "caller")."""

    def __init__(self) -> None:
        super().__init__()
        self.current = ["caller"]
        self.log: list[tuple[str, Any]] = []

    def fork(self, count: int) -> list[_Stream]:
        self.log.append(("fork", count))
        return [_Stream(self, f"s{k}") for k in range(count)]

    def join(self, lanes: list[_Stream]) -> None:
        self.log.append(("join", [s.name for s in lanes]))

    def stream(self) -> _Stream:
        return _Stream(self, self.current[-1])

    def mark(self) -> str:
        return self.current[-1]  # the event: the stream it was recorded on

    def wait(self, event: str) -> None:
        self.log.append(("wait", (self.current[-1], event)))

    def launch(self, source: str, defines: dict[str, int], kernel: str, *args: Any, **kw: Any) -> None:
        self.log.append((kernel, self.current[-1]))
        super().launch(source, defines, kernel, *args, **kw)

    def upload(self, dst: np.ndarray, host: np.ndarray, start: int, end: int) -> None:
        self.log.append(("upload", self.current[-1]))
        dst[start:end] = host[start:end]

    def staging(self, nbytes: int) -> tuple[np.ndarray, Any]:
        self.log.append(("staging", self.current[-1]))
        return np.zeros(max(nbytes, 1), np.uint8), lambda: self.log.append(("release", self.current[-1]))


def _batch() -> list[bytes]:
    v = data.jpeg_variants()
    names = ["china-q75-420", "flower-prog-422", "grace_hopper-gray", "china-odd-420", "flower-restart"]
    blobs = [v[k] for k in names] + [data.png_variants()["rgb8"], v["china-cmyk"], v["flower-q95-444"]]
    return blobs


KW = {"crop": 96, "resize_shorter": 100}


@pytest.mark.parametrize(("layout", "dtype"), [("NCHW", "float32"), ("NHWC", "uint8"), ("NCHW", "uint8")])
def test_chunks_on_two_streams_give_the_cpu_pipelines_batch(monkeypatch, layout, dtype):
    blobs = _batch()
    monkeypatch.setattr(streams, "CHUNK", 3)  # 8 images: chunks of 3, 3, 2
    be = StreamRecorder()
    got = gpu.gpu_preprocess(blobs, backend=be, layout=layout, dtype=dtype, **KW)
    np.testing.assert_array_equal(got, fastprep.preprocess(blobs, layout=layout, dtype=dtype, **KW))
    log = be.log
    assert log[0] == ("fork", 2) and log[-1] == ("join", ["s0", "s1"])
    assert [e for e in log if e[0] in ("fork", "join")] == [log[0], log[-1]]
    # chunk k's work entered on stream k % 2, and everything it queued is on that stream
    assert [name for what, name in log if what == "enter"] == ["s0", "s1", "s0"]
    segments: list[list[str]] = []
    chunk = None
    for what, where in log[1:-1]:
        if what == "enter":
            chunk = where
            segments.append([])
        elif what == "exit":
            chunk = None
        else:
            on = where[0] if what == "wait" else where
            assert on == chunk, (what, where, chunk)  # nothing on the caller's stream meanwhile
            segments[-1].append(what)
    # each chunk stages its own upload and lets the block go, on its stream, after the copies
    for seg in segments:
        copies = [w for w in seg if w in ("staging", "upload", "release")]
        assert copies[0] == "staging" and copies[-1] == "release" and "upload" in copies, copies
        assert copies.count("staging") == copies.count("release") == 1, copies


def test_a_failing_chunk_raises_with_the_batch_index_and_the_streams_are_joined(monkeypatch):
    v = data.jpeg_variants()
    good = v["china-q75-420"]
    blobs = [good, good, good, good, good[: len(good) // 2], good]  # the fifth is in chunk 2
    monkeypatch.setattr(streams, "CHUNK", 2)
    be = StreamRecorder()
    with pytest.raises(fastprep.DecodeError, match="image 4") as e:
        gpu.gpu_preprocess(blobs, backend=be, **KW)
    assert e.value.index == 4
    assert be.log[-1] == ("join", ["s0", "s1"]) and be.current == ["caller"]
    batch, ok = gpu.gpu_preprocess(blobs, backend=StreamRecorder(), on_error="skip", **KW)
    want, want_ok = fastprep.preprocess(blobs, on_error="skip", **KW)
    assert ok.tolist() == want_ok.tolist() == [True] * 4 + [False, True]
    np.testing.assert_array_equal(batch, want)


def test_small_batches_and_backends_without_streams_stay_on_the_current_stream(monkeypatch):
    blobs = _batch()[:3]
    be = StreamRecorder()
    np.testing.assert_array_equal(gpu.gpu_preprocess(blobs, backend=be, **KW), fastprep.preprocess(blobs, **KW))
    assert not [e for e in be.log if e[0] in ("fork", "join", "enter")]
    # (a wait: for a cached plan an earlier call built, on whichever stream it was then)
    assert {where[0] if what == "wait" else where for what, where in be.log} == {"caller"}
    monkeypatch.setattr(streams, "CHUNK", 1)
    plain = EmuBackend()  # no fork: the chunks in turn, on the one stream there is
    np.testing.assert_array_equal(gpu.gpu_preprocess(blobs, backend=plain, **KW), fastprep.preprocess(blobs, **KW))
    assert [k for k, _, _ in plain.launches].count("jpeg_unstuff_count") == 2  # chunks 0 and 2: baseline


def test_cupy_backend_fork_and_join_order_the_streams_with_events():
    # CupyBackend's fork/join with CuPy's stream API stood in for: the streams are made once per
    # device, non-blocking, wait for an event the caller's stream recorded, and the caller's
    # stream waits for an event each of them records.
    calls: list[tuple[str, ...]] = []

    class Stream:
        made = 0

        def __init__(self, non_blocking: bool = False, name: str | None = None) -> None:
            assert non_blocking
            Stream.made += 1
            self.name = name or f"s{Stream.made}"

        def record(self) -> str:
            calls.append(("record", self.name))
            return f"event@{self.name}"

        def wait_event(self, event: str) -> None:
            calls.append(("wait", self.name, event))

    caller = Stream(True, "caller")
    Stream.made = 0
    be = gpu.CupyBackend.__new__(gpu.CupyBackend)
    be.xp = SimpleNamespace(
        cuda=SimpleNamespace(get_current_stream=lambda: caller, Stream=Stream, Device=lambda: SimpleNamespace(id=0))
    )
    be._lock, be._streams = threading.Lock(), {}
    lanes = be.fork(2)
    assert [s.name for s in lanes] == ["s1", "s2"]
    assert calls == [("record", "caller"), ("wait", "s1", "event@caller"), ("wait", "s2", "event@caller")]
    calls.clear()
    be.join(lanes)
    assert calls == [("record", "s1"), ("wait", "caller", "event@s1"), ("record", "s2"), ("wait", "caller", "event@s2")]
    assert be.fork(2) == lanes and be.fork(1) == lanes[:1] and Stream.made == 2  # kept, not remade
    calls.clear()
    assert be.stream() is caller
    be.wait(be.mark())  # a plan's event: recorded on the stream current then, waited for by another
    assert calls == [("record", "caller"), ("wait", "caller", "event@caller")]


def test_scans_the_gpu_flags_are_read_once_after_every_chunk_and_decoded_again_on_the_cpu(monkeypatch):
    # A scan cut short: the GPU decoder flags it, libjpeg-turbo refuses it (no EOI) or decodes it
    # with its fill (closed by an EOI). The status words are read once, after the last chunk is
    # queued and the streams joined; the flagged images then go through the CPU decoder on the
    # caller's stream, into their rows of the batch.
    good = data.jpeg(data.photos()["china.jpg"][:120, :160], quality=90)
    sos = good.index(b"\xff\xda")
    short = good[: sos + (len(good) - sos) // 2]
    blobs = [good, short, good, short + b"\xff\xd9", good, good]
    monkeypatch.setattr(streams, "CHUNK", 2)
    be = StreamRecorder()
    batch, ok = gpu.gpu_preprocess(blobs, backend=be, on_error="skip", **KW)
    want, want_ok = fastprep.preprocess(blobs, on_error="skip", **KW)
    assert ok.tolist() == want_ok.tolist() == [True, False, True, True, True, True]
    np.testing.assert_array_equal(batch, want)
    join = be.log.index(("join", ["s0", "s1"]))
    assert [w for w, _ in be.log[:join]].count("jpeg_write") == 3  # each chunk's scans on the GPU
    after = be.log[join + 1 :]
    assert ("staging", "caller") in after and "jpeg_write" not in [w for w, _ in after]  # the CPU decodes
    # `short` (no EOI) is refused by the host's reading of it, in chunk 0: raised there; a flagged
    # scan the CPU decoder refuses too is raised with its index once every chunk has gone
    be = StreamRecorder()
    with pytest.raises(fastprep.DecodeError, match="image 1"):
        gpu.gpu_preprocess(blobs, backend=be, **KW)
    assert [w for w, _ in be.log].count("enter") == 1

    def refusing(blobs: list[bytes], idx: list[int], *args: Any) -> tuple[dict[int, Any], set[int]]:
        return {i: None for i in idx}, set()  # as if libjpeg-turbo refused them

    monkeypatch.setattr(gpu.plan, "_cpu_decode", refusing)
    blobs[1] = good
    be = StreamRecorder()
    with pytest.raises(fastprep.DecodeError, match="image 3") as e:
        gpu.gpu_preprocess(blobs, backend=be, **KW)
    assert e.value.index == 3 and [w for w, _ in be.log].count("enter") == 3


def test_a_plan_built_on_one_stream_is_waited_for_on_the_other(monkeypatch):
    # Four copies of one JPEG in chunks of two: both chunks lay their buffers out alike, so the
    # second chunk (stream s1) finds the launch plans the first built on s0, whose tables were
    # copied to the device on s0: s1 must wait for an event s0 recorded after those copies.
    good = data.jpeg(data.photos()["china.jpg"][:120, :160], quality=90)
    monkeypatch.setattr(streams, "CHUNK", 2)
    gpu.jpeg_fused._FUSED_PLANS._plans.clear()
    gpu.resize._PLANS._plans.clear()
    be = StreamRecorder()
    got = gpu.gpu_preprocess([good] * 4, backend=be, **KW)
    np.testing.assert_array_equal(got, fastprep.preprocess([good] * 4, **KW))
    waits = [w for what, w in be.log if what == "wait"]
    assert ("s1", "s0") in waits, be.log
    kernels = [k for k, (what, w) in enumerate(be.log) if w == "s1" and what.startswith(("jpeg_f", "resize"))]
    assert be.log.index(("wait", ("s1", "s0"))) < kernels[0]


def test_an_evicted_plan_is_kept_until_every_stream_that_used_it_is_past_it():
    # Its tables return to the pool of the stream that built them; another stream's kernels may
    # still read them: the plan stays referenced until an event on each user stream is done.
    from fastprep.gpu.resize import PlanCache

    events: list[SimpleNamespace] = []

    class S:
        def __init__(self, ptr: int) -> None:
            self.ptr = ptr

        def record(self) -> SimpleNamespace:
            events.append(SimpleNamespace(done=False, ptr=self.ptr))
            return events[-1]

    current = [S(1)]
    be = SimpleNamespace(stream=lambda: current[0], mark=lambda: "ready", wait=lambda e: None)
    cache = PlanCache(1)
    plan_a = cache.get(("a",), lambda: ["a's tables"], be)
    current[0] = S(2)
    assert cache.get(("a",), lambda: ["rebuilt"], be) is plan_a  # used on a second stream
    events.clear()
    cache.get(("b",), lambda: ["b's tables"], be)  # evicts a: an event on each of its streams
    assert sorted(e.ptr for e in events) == [1, 2]
    assert [p for p, _ in cache._retired] == [plan_a]
    events[0].done = True
    cache.get(("c",), lambda: ["c's tables"], be)
    assert plan_a in [p for p, _ in cache._retired]  # one stream may still read it
    events[1].done = True
    cache.get(("d",), lambda: ["d's tables"], be)
    assert plan_a not in [p for p, _ in cache._retired]
