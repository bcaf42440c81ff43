"""Atomic shard files and the job manifest: nothing lost, nothing written twice.

A shard is written under a temporary name in the output directory and renamed when complete
(``os.replace`` is atomic on one filesystem), then the manifest (rewritten atomically the same
way) records it as done. A re-run skips every shard the manifest lists. A job killed anywhere
leaves at worst a temporary file (removed on the next run) or a finished shard the manifest does
not list yet (written again, with the same bytes: every shard's content depends only on its inputs
and the job's settings). The manifest holds no time stamps, so a resumed run and a clean one end
with byte-identical directories.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["Manifest", "atomic_file", "crash_point", "remove_temporaries", "sync_some"]

TMP_SUFFIX = ".fastprep-tmp"


def crash_point(name: str) -> None:
    """Die here with SIGKILL when FASTPREP_JOBS_CRASH_AT names this point (``name:count`` dies on
        the count-th pass; with FASTPREP_JOBS_CRASH_ONCE=PATH only the first process to create PATH
    dies). Only the tests set it: they kill a job between any two steps that matter
        (a temporary shard written, renamed, the manifest written) and check that a re-run repairs it."""
    spec = os.environ.get("FASTPREP_JOBS_CRASH_AT")
    if not spec:
        return
    point, _, count = spec.partition(":")
    if point != name:
        return
    seen = _CRASH_COUNTS.get(name, 0) + 1
    _CRASH_COUNTS[name] = seen
    if seen < int(count or 1):
        return
    once = os.environ.get("FASTPREP_JOBS_CRASH_ONCE")
    if once:
        # One death across processes (a Ray worker restarted in a fresh process would die again).
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
    os.kill(os.getpid(), signal.SIGKILL)


_CRASH_COUNTS: dict[str, int] = {}


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """Open ``path``'s temporary twin for writing; on success fsync it and rename it into place."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    f = open(tmp, "wb")  # noqa: SIM115 (closed below, before the rename)
    try:
        yield f
        f.flush()
        os.fsync(f.fileno())
        f.close()
        crash_point("before-rename")
        os.replace(tmp, path)
    except BaseException:
        f.close()
        tmp.unlink(missing_ok=True)
        raise


# Bytes of a shard written between two syncs (see sync_some). The last sync, at a shard's close,
# is the job's tail, when no core has work left: at 4 MiB it took ~7 ms of a 20 MB tokenize run
# (0.4 s), at 1 MiB ~0.7 ms; the syncs before it wait in the writer thread while the cores work.
SYNC_BYTES = 1 << 20
_datasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync


def sync_some(f: BinaryIO, synced: int) -> int:
    """Sends what a shard file has so far to the disk once ``SYNC_BYTES`` more were written since
    ``synced``, and returns the new synced length. Called after each batch while the next ones
    are worked on: the sync of a whole shard when it closed kept the cores idle at the end of a
    job (0.02-0.05 s of a 20 MB tokenize run; ~22 ms for a 19 MB float16 image shard). The
    shard's own sync at its close then writes only its tail."""
    f.flush()
    written = f.tell()
    if written - synced >= SYNC_BYTES:
        _datasync(f.fileno())
        return written
    return synced


def write_atomic(path: Path, data: bytes) -> None:
    with atomic_file(path) as f:
        f.write(data)


def remove_temporaries(root: Path) -> int:
    """Delete what a killed run left half-written; returns how many files."""
    n = 0
    for p in root.rglob("*" + TMP_SUFFIX):
        p.unlink(missing_ok=True)
        n += 1
    return n


class Manifest:
    """``manifest.json``: the job's settings, its inputs, and one entry per finished shard.

    ``settings`` are compared on a re-run: resuming a job with other settings (another tokenizer,
    another max length) would mix two outputs, so it is refused with a message saying what changed.
    """

    NAME = "manifest.json"

    def __init__(self, out: Path, header: dict[str, Any]) -> None:
        self.path = out / self.NAME
        self.header = header
        self.shards: dict[str, dict[str, Any]] = {}
        self.complete = False
        if self.path.is_file():
            old = json.loads(self.path.read_text(encoding="utf-8"))
            if old.get("header") != header:
                changed = sorted(k for k in {*header, *old.get("header", {})} if old["header"].get(k) != header.get(k))
                raise ValueError(
                    f"{out} holds the output of a job with other settings (differs in: {', '.join(changed)}); "
                    "use another --out directory, or delete this one to start over"
                )
            self.shards = {s["name"]: s for s in old.get("shards", [])}
            self.complete = bool(old.get("complete", False))

    def done(self, name: str) -> bool:
        return name in self.shards

    def add(self, entry: dict[str, Any]) -> None:
        self.shards[entry["name"]] = entry
        self.save()

    def save(self, totals: dict[str, Any] | None = None) -> None:
        doc: dict[str, Any] = {"header": self.header, "complete": self.complete}
        if totals is not None:
            doc["totals"] = totals
        doc["shards"] = [self.shards[k] for k in sorted(self.shards)]
        write_atomic(self.path, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())
        crash_point("after-manifest")

    def errors(self) -> list[dict[str, Any]]:
        return [e for k in sorted(self.shards) for e in self.shards[k].get("errors", [])]


def write_errors(out: Path, errors: list[dict[str, Any]]) -> Path:
    """``errors.jsonl``: one line per bad record (file, line or offset, reason), in input order."""
    path = out / "errors.jsonl"
    write_atomic(path, "".join(json.dumps(e, sort_keys=True) + "\n" for e in errors).encode())
    return path


def run_units(
    units: list[Any], manifest: Manifest, process: Callable[[Any], dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """Run ``process`` on each unit whose shard the manifest lacks, recording each as it ends."""
    for unit in units:
        if manifest.done(unit.name):
            continue
        entry = process(unit)
        manifest.add(entry)
        yield entry
