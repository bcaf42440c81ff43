"""``fastprep images``: an image set in, model-ready ``.npy`` shards out.

Each shard ``shard-NAME.npy`` holds an (N, 3, H, W) uint8 or float16 (or float32) batch of the
evaluation transform (``fastprep.ImagePipeline``: resize the shorter side, center crop, normalize;
uint8 keeps the cropped pixels unnormalized), beside ``shard-NAME.labels.npy`` (int64, -1 where
there is no label) and ``shard-NAME.paths.txt`` (the source of each row). Bad images are left out
and listed in ``errors.jsonl``. Reading, preprocessing (Rust, GIL released, every core) and
writing run on three threads.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._core import __version__
from ..errors import DecodeError, DeviceUnavailableError
from .image_inputs import Item, list_items, read_items
from .shards import Manifest, atomic_file, crash_point, remove_temporaries, sync_some, write_errors
from .stats import JobStats, Progress
from .tokenize import JobError

__all__ = ["ImagesSettings", "run_images"]


@dataclass
class ImagesSettings:
    inputs: Sequence[str]
    out: str
    resize_shorter: int = 256
    crop: int = 224
    dtype: str = "uint8"
    device: str = "cpu"
    draft: bool = False
    shard_size: int = 256
    batch_size: int = 64
    num_threads: int | None = None
    strict: bool = False
    progress: bool | None = None


@dataclass
class Unit:
    name: str
    items: list[Item]


class ImagesJob:
    def __init__(self, s: ImagesSettings) -> None:
        if s.dtype not in ("uint8", "float16", "float32"):
            raise JobError(f"dtype must be uint8, float16 or float32, got {s.dtype!r}")
        if s.device not in ("cpu", "cuda"):
            raise JobError(f"device must be cpu or cuda, got {s.device!r}")
        for name in ("shard_size", "batch_size", "crop", "resize_shorter"):
            if getattr(s, name) is not None and getattr(s, name) < 1:
                raise JobError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(s, name)}")
        if s.device == "cuda":
            _check_cuda()
        self.s = s
        self.out = Path(s.out)
        groups, self.classes = list_items(s.inputs)
        self.units: list[Unit] = []
        for g, items in enumerate(groups):
            for k in range(0, len(items), s.shard_size):
                name = f"{g:05d}-{k // s.shard_size:05d}"
                self.units.append(Unit(name, items[k : k + s.shard_size]))
        self.settings: dict[str, Any] = {
            "resize_shorter": s.resize_shorter,
            "crop": s.crop,
            "dtype": s.dtype,
            "draft": s.draft,
            "layout": "NCHW",
            "on_error": "skip",
        }
        self.header = {
            "job": "images",
            "fastprep_version": __version__,
            "inputs": [str(p) for p in s.inputs],
            "classes": self.classes,
            "transform": self.settings,
            "shard_size": s.shard_size,
        }

    def preprocess(self, blobs: list[bytes]) -> tuple[Any, Any, Any]:
        """(batch on the host, ok mask, per-image (decode, resize, crop_normalize) seconds or None)."""
        if self.s.device == "cuda":
            from ..gpu import gpu_preprocess

            batch, ok = gpu_preprocess(blobs, num_threads=self.s.num_threads, **self.settings)
            return batch.get(), ok, None
        from ..pipeline import preprocess

        # The process-wide pipeline of these settings: its pool's blocks, touched once, serve
        # every job and shard of the process (a fresh pool faulted in ~100 MB of float16 blocks
        # per 256-image job, ~4% of its time on 2 cores).
        batch, ok, timings = preprocess(blobs, return_timings=True, num_threads=self.s.num_threads, **self.settings)
        return batch, ok, timings["per_image"]


def _check_cuda() -> None:
    try:
        import cupy

        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        raise DeviceUnavailableError(
            f"--device cuda needs CuPy and a CUDA device ({type(e).__name__}: {e}); install "
            "fastprep[cuda12] or fastprep[cuda13] on a GPU machine, or use --device cpu"
        ) from e
    if n < 1:
        raise DeviceUnavailableError("--device cuda found no CUDA device; use --device cpu")


def _reason(blob: bytes | None, read_error: str | None) -> str:
    if read_error is not None:
        return read_error
    from ..image import decode

    try:
        decode(blob or b"")
    except DecodeError as e:
        return f"{e.reason}: {e}"
    return "preprocessing failed"


def run_images(s: ImagesSettings, *, stats: JobStats | None = None) -> dict[str, Any]:
    """Runs the job on this machine; returns the summary (see ``JobStats.summary``)."""
    job = ImagesJob(s)
    job.out.mkdir(parents=True, exist_ok=True)
    remove_temporaries(job.out)
    manifest = Manifest(job.out, job.header)
    stats = stats or JobStats("images", "images", ("read", "decode", "resize", "crop_normalize", "write"))
    stats.skipped_shards = len(manifest.shards)
    todo = [u for u in job.units if not manifest.done(u.name)]
    stats.start = time.perf_counter()  # the figures are the run's, not the tokenizer load's
    bar = Progress(sum(len(u.items) for u in todo), "img", s.progress)
    try:
        if todo:
            _pipeline(job, todo, manifest, stats, bar)
    finally:
        bar.close()
    finish(job.out, manifest)
    stats.finish()
    return stats.summary()


def finish(out: Path, manifest: Manifest) -> None:
    errors = manifest.errors()
    write_errors(out, errors)
    keys = ("images", "bytes_in", "bytes_out")
    totals = {k: sum(int(e.get(k, 0)) for e in manifest.shards.values()) for k in keys}
    totals["errors"] = len(errors)
    totals["shards"] = len(manifest.shards)
    manifest.complete = True
    manifest.save(totals)


_DONE = object()


@dataclass
class Chunk:
    unit: Unit
    items: list[Item]
    last: bool
    read_s: float = 0.0
    batch: Any = None
    ok: Any = None


def process_unit(job: ImagesJob, unit: Unit) -> dict[str, Any]:
    """One shard, start to end, on this thread (the Ray engine's unit of work)."""
    w = ShardWriter(job)
    entry = None
    items = list(read_items(unit.items))
    try:
        for k in range(0, len(items), job.s.batch_size):
            c = Chunk(unit, items[k : k + job.s.batch_size], k + job.s.batch_size >= len(items))
            c.batch, c.ok, _ = job.preprocess([it.data or b"" for it in c.items])
            entry = w.write(c)
    except BaseException:
        w.abort()
        raise
    assert entry is not None
    return entry


class ShardWriter:
    """Writes a shard's rows to its temporary ``.npy`` as each batch arrives (no shard held in
    memory, no copy to save it) and renames it when the shard ends. The header, written first,
    is rewritten with the final row count: numpy pads every ``.npy`` header so that the first
    axis can grow in place, so both headers have the same length."""

    def __init__(self, job: ImagesJob) -> None:
        self.job = job
        self._reset()

    def _reset(self) -> None:
        self.labels: list[int] = []
        self.paths: list[str] = []
        self.errors: list[dict[str, Any]] = []
        self.bytes_in = self.rows = self.nbytes = 0
        self._cm: Any = None
        self._f: Any = None
        self._header: dict[str, Any] = {}
        self._synced = 0

    def write(self, c: Chunk) -> dict[str, Any] | None:
        import numpy as np

        ok = np.asarray(c.ok, dtype=bool)
        for it, good in zip(c.items, ok.tolist(), strict=True):
            self.bytes_in += len(it.data or b"")
            if good and it.error is None:
                self.labels.append(it.label)
                self.paths.append(it.source)
            else:
                self.errors.append({"file": it.source, "reason": _reason(it.data, it.error)})
                if self.job.s.strict:
                    e = self.errors[-1]
                    raise JobError(f"{e['file']}: {e['reason']} (--strict stops at the first)")
        if ok.any():
            rows = np.ascontiguousarray(c.batch if ok.all() else c.batch[ok])
            if self._f is None:
                self._open(c.unit, rows)
            self._f.write(rows.data)
            self.rows += len(rows)
            self.nbytes += rows.nbytes
            self._synced = sync_some(self._f, self._synced)
        return self._close(c.unit) if c.last else None

    def _base(self, unit: Unit) -> Path:
        return self.job.out / f"shard-{unit.name}"

    def _open(self, unit: Unit, rows: Any) -> None:
        import numpy as np

        base = self._base(unit)
        self._cm = atomic_file(base.with_name(base.name + ".npy"))
        self._f = self._cm.__enter__()
        npy: Any = np.lib.format  # documented (NEP 1), not typed
        self._header = npy.header_data_from_array_1_0(rows)
        npy.write_array_header_1_0(self._f, self._header)

    def _close(self, unit: Unit) -> dict[str, Any]:
        import numpy as np

        base = self._base(unit)
        with atomic_file(base.with_name(base.name + ".labels.npy")) as f:
            np.save(f, np.asarray(self.labels, dtype=np.int64))
        with atomic_file(base.with_name(base.name + ".paths.txt")) as f:
            f.write("".join(p + "\n" for p in self.paths).encode())
        crash_point("shard-written")
        if self._f is None:  # no image of the shard could be used
            with atomic_file(base.with_name(base.name + ".npy")) as f:
                np.save(f, np.zeros((0,), np.uint8))
        else:
            self._header["shape"] = (self.rows, *self._header["shape"][1:])
            self._f.seek(0)
            npy: Any = np.lib.format
            npy.write_array_header_1_0(self._f, self._header)
            self._cm.__exit__(None, None, None)
        crash_point("shard-renamed")
        entry = {
            "name": unit.name,
            "file": base.name + ".npy",
            "images": len(self.labels),
            "bytes_in": self.bytes_in,
            "bytes_out": self.nbytes,
            "errors": self.errors,
        }
        self._reset()
        return entry

    def abort(self) -> None:
        if self._cm is not None:
            self._cm.__exit__(RuntimeError, RuntimeError("aborted"), None)
            self._cm = self._f = None


# The job's first chunk: this many images, so that the cores start after a few reads instead of
# a whole batch's (~50 ms for 64 photos on 2 cores, 2-3% of a 256-image job).
FIRST_CHUNK = 8


def chunk_sizes(units: list[Unit], batch_size: int) -> list[list[int]]:
    """Per unit, the sizes of the chunks its images are preprocessed in: ``batch_size`` each,
    except the job's first chunk (``FIRST_CHUNK``, so that the cores start early) and its last
    batch, cut in two (3/4, 1/4) so that the last write and sync, which nothing overlaps, are a
    quarter of a batch. The output does not depend on these sizes: rows are appended in order."""
    plan = [[min(batch_size, len(u.items) - k) for k in range(0, len(u.items), batch_size)] for u in units]
    first = next((p for p in plan if p), None)
    if first is not None and first[0] > FIRST_CHUNK:
        first[0:1] = [FIRST_CHUNK, first[0] - FIRST_CHUNK]
    last = next((p for p in reversed(plan) if p), None)
    if last is not None and last[-1] >= 4:
        tail = last[-1] // 4
        last[-1:] = [last[-1] - tail, tail]
    return plan


def _pipeline(job: ImagesJob, units: list[Unit], manifest: Manifest, stats: JobStats, bar: Progress) -> None:
    """read -> preprocess -> write on three threads, each stage in order (the output does not
    depend on the timing). One chunk is preprocessed at a time, on every core: two at once
    shared the cores and ended together, so that the job's last two writes both came after the
    last image (its tail 70 ms instead of 40 on 2 cores), and the Python part between two calls
    is ~1 ms."""
    to_proc: queue.Queue[Any] = queue.Queue(maxsize=2)
    to_write: queue.Queue[Any] = queue.Queue(maxsize=2)
    failure: list[BaseException] = []
    stop = threading.Event()
    plan = chunk_sizes(units, job.s.batch_size)

    def reader() -> None:
        try:
            for u, sizes in zip(units, plan, strict=True):
                it = read_items(u.items)
                for k, n in enumerate(sizes):
                    t0 = time.perf_counter()
                    items = [next(it) for _ in range(n)]
                    c = Chunk(u, items, k == len(sizes) - 1, time.perf_counter() - t0)
                    while not stop.is_set():
                        try:
                            to_proc.put(c, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
        except BaseException as e:
            failure.append(e)
            stop.set()
        finally:
            to_proc.put(_DONE)

    def preprocess(c: Chunk) -> Chunk:
        stats.add_samples("read", [c.read_s / max(1, len(c.items))] * len(c.items), "image")
        c.batch, c.ok, per_image = job.preprocess([it.data or b"" for it in c.items])
        for i, it in enumerate(c.items):
            if it.error is not None:
                c.ok[i] = False
        if per_image is not None:
            good = per_image[c.ok]
            for i, stage in enumerate(("decode", "resize", "crop_normalize")):
                stats.add_samples(stage, good[:, i], "image")
        return c

    def writer() -> None:
        w = ShardWriter(job)
        try:
            while True:
                c = to_write.get()
                if c is _DONE:
                    return
                t0 = time.perf_counter()
                entry = w.write(c)
                if entry is not None:
                    manifest.add(entry)
                stats.add_samples("write", [time.perf_counter() - t0])
                stats.add(
                    items=int(c.ok.sum()),
                    bytes_in=sum(len(i.data or b"") for i in c.items),
                    bytes_out=entry["bytes_out"] if entry else 0,
                    errors=len(c.items) - int(c.ok.sum()),
                )
                bar.update(len(c.items))
        except BaseException as e:
            failure.append(e)
            stop.set()
            w.abort()
            while to_write.get() is not _DONE:
                pass

    threads = [
        threading.Thread(target=reader, name="fastprep-read", daemon=True),
        threading.Thread(target=writer, name="fastprep-write", daemon=True),
    ]
    for t in threads:
        t.start()
    try:
        while True:
            c = to_proc.get()
            if c is _DONE:
                break
            if stop.is_set():
                continue  # drain, so that the reader can finish
            try:
                preprocess(c)
            except BaseException as e:
                failure.append(e)
                stop.set()
                continue
            to_write.put(c)
    finally:
        to_write.put(_DONE)
        for t in threads:
            t.join()
    if failure:
        raise failure[0]
