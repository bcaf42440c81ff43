"""The tokenize job's batches: an input file's records cut into shards, and shards into batches.

A batch holds its records as columns, not as an object per record: the lines of a block of a
JSONL or text file are the block's bytes and each record's span in it (found in Rust), so that
reading 20 MB of JSONL costs a few milliseconds of Python instead of a few microseconds a line.
Parquet rows and whole-file documents come as texts. (numpy is imported where it is used: the
command line keeps numpy's OpenBLAS threads down before numpy's first import.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _core
from .text_inputs import parquet_texts, read_blocks, whole_file

__all__ = ["Batch", "file_batches"]


@dataclass
class Batch:
    """Consecutive records of one shard, in file order."""

    shard: str
    source: str
    fmt: str
    index: Any  # int64 per record: its line (1-based; JSONL, text), or its row (0-based; Parquet)
    offset: Any  # int64 per record: its line's byte offset in the file; None where there is none
    nbytes: int
    block: bytes | None = None  # lines: the block holding them (shared by the block's batches)
    starts: Any = None  # lines: each record's span in ``block`` (uint64)
    ends: Any = None
    texts: list[str | None] | None = None  # Parquet rows, a whole file: the text, None if bad
    sizes: Any = None  # texts: each record's size in the file (int64)
    errors: dict[int, str] = field(default_factory=dict)  # record -> why it is no document
    last: bool = False  # the shard's last batch
    ids: Any = None
    lens: Any = None
    rows: Any = None  # (row_lengths, row_doc, row_window) after windowing

    @property
    def n(self) -> int:
        return len(self.index)

    @property
    def docs(self) -> int:
        return self.n - len(self.errors)

    def good(self) -> Any:
        """The index of each record that is a document."""
        import numpy as np

        if not self.errors:
            return self.index
        keep = np.ones(self.n, dtype=bool)
        keep[list(self.errors)] = False
        return self.index[keep]

    def part(self, i: int, j: int, shard: str) -> Batch:
        """Records ``i:j`` as a batch of ``shard`` (the block is shared, not copied)."""
        if self.sizes is not None:
            nbytes = int(self.sizes[i:j].sum())
        else:
            nbytes = int((self.ends[i:j] - self.starts[i:j]).sum())
        return Batch(
            shard,
            self.source,
            self.fmt,
            self.index[i:j],
            None if self.offset is None else self.offset[i:j],
            nbytes,
            self.block,
            None if self.starts is None else self.starts[i:j],
            None if self.ends is None else self.ends[i:j],
            None if self.texts is None else self.texts[i:j],
            None if self.sizes is None else self.sizes[i:j],
            {k - i: why for k, why in self.errors.items() if i <= k < j},
        )


def file_batches(
    path: Path,
    fmt: str,
    settings: Any,
    shard_name: Callable[[int], str],
    skip: Callable[[str], bool],
) -> Iterator[Batch]:
    """The batches of one input file: shards of ``docs_per_shard`` records (bad ones included,
    so that a shard's content depends only on the file), batches of at most ``batch_size``
    records and about ``batch_bytes`` bytes; the shards ``skip`` accepts are read past."""
    per_shard, in_shard, shard_no = settings.docs_per_shard, 0, 0
    held: Batch | None = None
    for run in _runs(path, fmt, settings):
        i = 0
        while i < run.n:
            if in_shard == per_shard:
                shard_no, in_shard = shard_no + 1, 0
            take = min(run.n - i, per_shard - in_shard, settings.batch_size)
            b = run.part(i, i + take, shard_name(shard_no))
            in_shard, i = in_shard + take, i + take
            # A batch is its shard's last when the next one is of another shard: hold one back.
            if held is not None:
                held.last = held.shard != b.shard
                if not skip(held.shard):
                    yield held
            held = b
    if held is not None:
        held.last = True
        if not skip(held.shard):
            yield held


def _runs(path: Path, fmt: str, s: Any) -> Iterator[Batch]:
    """The file's records in runs that ``file_batches`` cuts at shard boundaries."""
    source = str(path)
    if fmt == "jsonl" or (fmt == "text" and s.doc_per == "line"):
        yield from _line_runs(path, fmt, source, s.batch_bytes)
    elif fmt == "text":
        text, error, nbytes = whole_file(path)
        yield _text_run(source, fmt, 0, [(text, error, nbytes)], offsets=True)
    elif fmt == "parquet":
        run: list[Rec] = []
        row = size = 0
        for rec in parquet_texts(path, s.text_field):
            run.append(rec)
            size += rec[2]
            if len(run) == s.batch_size or size >= s.batch_bytes:
                yield _text_run(source, fmt, row, run, offsets=False)
                row, run, size = row + len(run), [], 0
        if run:
            yield _text_run(source, fmt, row, run, offsets=False)
    else:
        raise ValueError(f"unknown input format {fmt!r}: use jsonl, parquet or text")


def _line_runs(path: Path, fmt: str, source: str, block_bytes: int) -> Iterator[Batch]:
    import numpy as np

    line = 0
    for offset, block in read_blocks(path, block_bytes):
        starts_b, ends_b, lines_b, count = _core.line_spans(block, fmt == "jsonl")
        starts = np.frombuffer(memoryview(starts_b), dtype="<u8")
        ends = np.frombuffer(memoryview(ends_b), dtype="<u8")
        index = np.frombuffer(memoryview(lines_b), dtype="<u8").astype(np.int64) + (line + 1)
        yield Batch(
            "", source, fmt, index, starts.astype(np.int64) + offset, int((ends - starts).sum()), block, starts, ends
        )
        line += count


Rec = tuple[str | None, str | None, int]  # (text, error, bytes)


def _text_run(source: str, fmt: str, row: int, recs: list[Rec], *, offsets: bool) -> Batch:
    import numpy as np

    n = len(recs)
    return Batch(
        "",
        source,
        fmt,
        np.arange(row, row + n, dtype=np.int64) + (1 if offsets else 0),
        np.zeros(n, dtype=np.int64) if offsets else None,
        sum(r[2] for r in recs),
        texts=[r[0] for r in recs],
        sizes=np.array([r[2] for r in recs], dtype=np.int64),
        errors={k: r[1] for k, r in enumerate(recs) if r[1] is not None},
    )
