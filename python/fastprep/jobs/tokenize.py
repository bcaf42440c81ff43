"""``fastprep tokenize``: a corpus in, token shards out (Parquet, or one flat ``.bin`` file).

Each input file is cut into shards of ``docs_per_shard`` records (counted in the file, bad records
included), so a shard's content depends only on its file and the settings. Three threads form a
pipeline: reading (blocks of lines, or Parquet rows: ``batches``), tokenizing (one Rust call per batch, GIL
released, on fastprep's thread pool; JSONL and text lines are parsed there too, in parallel, with
no Python str per document) and writing; the GIL is free while the tokenizer runs, so reading
and writing overlap it. Batches end at ``batch_size`` documents or ``batch_bytes`` of input.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _core
from .._core import __version__
from ..tokenizer import Tokenizer
from .batches import Batch, file_batches
from .shards import TMP_SUFFIX, Manifest, atomic_file, crash_point, remove_temporaries, sync_some, write_errors
from .stats import JobStats, Progress
from .text_inputs import expand_inputs, input_format, parse_line

__all__ = ["JobError", "TokenizeSettings", "load_tokenizer", "run_tokenize"]

from ..errors import FastprepError


class JobError(FastprepError, ValueError):
    """A bad record met with ``strict=True``, or settings a job cannot run with."""


@dataclass
class TokenizeSettings:
    inputs: Sequence[str]
    tokenizer: str
    out: str
    text_field: str = "text"
    input_format: str | None = None
    doc_per: str = "line"
    format: str = "parquet"
    compression: str = "delta"
    dtype: str = "auto"
    bos: str | None = None
    eos: str | None = None
    add_special_tokens: bool = False
    max_length: int | None = None
    docs_per_shard: int = 100_000
    batch_size: int = 2048
    # A batch also ends at this many bytes of input: small batches keep the three stages busy
    # from the first megabyte to the last (2048 long documents were a quarter of a 20 MB run,
    # spent filling and draining the pipeline).
    batch_bytes: int = 1 << 20
    num_threads: int | None = None
    strict: bool = False
    progress: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def load_tokenizer(spec: str) -> Tokenizer:
    """A tokenizer.json, a ``.tiktoken`` file, a SentencePiece ``.model``, a local model directory,
    or a model name already in the Hugging Face cache."""
    p = Path(spec)
    if p.is_file():
        name = p.name.lower()
        if name.endswith(".tiktoken"):
            # The file holds no special tokens; cl100k's are known (so that --eos "<|endoftext|>" works).
            from .._demo_tokenizer import CL100K_SPECIALS

            specials = CL100K_SPECIALS if name.startswith("cl100k_base") else None
            return Tokenizer.from_tiktoken(p, special_tokens=specials)
        if name.endswith(".model") or name.startswith("tokenizer.model"):
            return Tokenizer.from_sentencepiece(p)
        return Tokenizer.from_file(p)
    return Tokenizer.from_pretrained(spec)


def _tokenizer_sha256(spec: str, tok: Tokenizer) -> str:
    """The file's bytes where the tokenizer is one file (to_str() of cl100k takes 0.1 s), else
    the tokenizer.json text it was loaded as."""
    path = Path(spec)
    data = path.read_bytes() if path.is_file() else tok.to_str().encode()
    return hashlib.sha256(data).hexdigest()


def _token_id(tok: Tokenizer, spec: str | None, what: str) -> int | None:
    if spec is None:
        return None
    if spec.isdigit():
        return int(spec)
    tid = tok.token_to_id(spec)
    if tid is None:
        raise JobError(f"--{what} {spec!r} is not a token of this tokenizer; pass the token's text or its id")
    return tid


class TokenizeJob:
    """The parts of the job that every engine shares: settings, the tokenizer, one shard's work."""

    def __init__(self, s: TokenizeSettings, tok: Tokenizer | None = None) -> None:
        """``tok``: the tokenizer ``s.tokenizer`` names, already loaded (a Ray worker keeps one
        between units and jobs: loading cl100k takes 0.2 s)."""
        import numpy as np

        if s.format not in ("parquet", "bin"):
            raise JobError(f"format must be 'parquet' or 'bin', got {s.format!r}")
        if s.compression not in COMPRESSIONS:
            raise JobError(f"compression must be one of {', '.join(COMPRESSIONS)}, got {s.compression!r}")
        if s.max_length is not None and s.max_length < 1:
            raise JobError("--max-length must be at least 1")
        for name in ("docs_per_shard", "batch_size", "batch_bytes"):
            if getattr(s, name) < 1:
                raise JobError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(s, name)}")
        self.s = s
        self.tok = tok if tok is not None else load_tokenizer(s.tokenizer)
        # Whole documents: a tokenizer.json's own truncation (e.g. 128 for a sentence encoder)
        # would silently cut a corpus; --max-length windows instead. Padding has no place in a
        # flat token stream.
        self.tok.no_truncation()
        self.tok.no_padding()
        self.bos = _token_id(self.tok, s.bos, "bos")
        self.eos = _token_id(self.tok, s.eos, "eos")
        vocab = self.tok.get_vocab_size(True)
        dtype = s.dtype if s.dtype != "auto" else ("uint16" if vocab <= 65536 else "uint32")
        if dtype not in ("uint16", "uint32"):
            raise JobError(f"dtype must be uint16, uint32 or auto, got {s.dtype!r}")
        if dtype == "uint16" and vocab > 65536:
            raise JobError(f"the vocabulary has {vocab} ids: uint16 cannot hold them; use --dtype uint32")
        self.dtype = np.dtype(dtype)
        self.files = expand_inputs(s.inputs)
        self.out = Path(s.out)
        self.header = {
            "job": "tokenize",
            "fastprep_version": __version__,
            "inputs": [str(f) for f in self.files],
            "tokenizer": s.tokenizer,
            "tokenizer_sha256": _tokenizer_sha256(s.tokenizer, self.tok),
            "format": s.format,
            "compression": s.compression if s.format == "parquet" else None,
            "dtype": dtype if s.format == "bin" else "uint32",
            "text_field": s.text_field,
            "doc_per": s.doc_per,
            "bos": self.bos,
            "eos": self.eos,
            "add_special_tokens": s.add_special_tokens,
            "max_length": s.max_length,
            "docs_per_shard": s.docs_per_shard,
            "batch_size": s.batch_size,
        }

    # -- reading -------------------------------------------------------------------------------
    def batches(self, file_index: int, skip: Callable[[str], bool]) -> Iterator[Batch]:
        """The batches of one input file, shard by shard; shards ``skip`` accepts are read past."""
        path = self.files[file_index]
        fmt = input_format(path, self.s.input_format)
        return file_batches(path, fmt, self.s, lambda no: _shard_name(file_index, no), skip)

    # -- tokenizing ------------------------------------------------------------------------------
    def tokenize(self, b: Batch) -> None:
        """Fills ``b.ids`` (flat, with BOS/EOS) and ``b.rows`` (one row per document or window);
        a record that is no document gets its reason in ``b.errors``."""
        if b.block is not None:
            ids, lens = self._encode_lines(b)
        else:
            assert b.texts is not None
            which = [k for k, t in enumerate(b.texts) if t is not None]
            ids, lens = self._encode_texts(b, which, [b.texts[k] for k in which])  # type: ignore[misc]
            b.texts = None
        extra = (self.bos is not None) + (self.eos is not None)
        if extra:
            ids, lens = _add_bos_eos(ids, lens, self.bos, self.eos)
        b.ids, b.lens = ids, lens
        b.rows = _windows(lens, self.s.max_length)
        if self.s.strict and (bad := self.errors_of(b)):
            raise JobError(f"{_where(bad[0])}: {bad[0]['reason']} (--strict stops at the first)")

    def errors_of(self, b: Batch) -> list[dict[str, Any]]:
        out = []
        for k in sorted(b.errors):
            e: dict[str, Any] = {"file": b.source, "reason": b.errors[k]}
            if b.offset is not None:
                e["line"], e["offset"] = int(b.index[k]), int(b.offset[k])
            else:
                e["row"] = int(b.index[k])
            out.append(e)
        return out

    def _encode_texts(self, b: Batch, which: list[int], texts: list[str]) -> tuple[Any, Any]:
        """Ids of ``texts``, those of records ``which`` of ``b``; a text that UTF-8 cannot hold
        becomes an error of ``b`` and has no ids."""
        from .._batch import flat_arrays

        try:
            ids_b, lens_b, _ = self.tok._core.encode_batch_flat(
                texts, self.s.add_special_tokens, None, False, self.s.num_threads
            )
        except UnicodeEncodeError:
            # A JSON escape gave a lone surrogate, which UTF-8 cannot hold: find it, mark it
            # bad, and encode the rest (the common case pays nothing for this check).
            keep = []
            for k, t in zip(which, texts, strict=True):
                if _utf8_ok(t):
                    keep.append(k)
                else:
                    b.errors[k] = _LONE_SURROGATE
            return self._encode_texts(b, keep, [t for t in texts if _utf8_ok(t)])
        return flat_arrays(ids_b, lens_b)

    def _encode_lines(self, b: Batch) -> tuple[Any, Any]:
        """JSONL or text lines, read and tokenized in Rust; the few lines it leaves (bad ones,
        and JSON it does not certainly read as Python does) are read by ``parse_line``."""
        import numpy as np

        from .._batch import flat_arrays

        block, starts, ends = b.block, b.starts, b.ends
        assert block is not None
        b.block = None  # read: the block's bytes need not wait for the writer
        field = self.s.text_field if b.fmt == "jsonl" else None
        ids_b, lens_b, left = self.tok._core.encode_lines_flat(
            block, starts, ends, field, self.s.add_special_tokens, self.s.num_threads
        )
        ids, lens = flat_arrays(ids_b, lens_b)
        if not left:
            return ids, lens
        parts = np.split(ids, np.cumsum(lens)[:-1])
        which, texts = [], []
        for k in left:
            text, error = parse_line(block[starts[k] : ends[k]], b.fmt, self.s.text_field)
            if text is None:
                b.errors[k] = error or "unreadable"
            else:
                which.append(k)
                texts.append(text)
        if which:
            more, more_lens = self._encode_texts(b, which, texts)  # marks lone surrogates
            encoded = [k for k in which if k not in b.errors]
            for k, end, n in zip(encoded, np.cumsum(more_lens), more_lens, strict=True):
                parts[k] = more[end - n : end]
        kept = [parts[k] for k in range(b.n) if k not in b.errors]
        return (np.concatenate(kept) if kept else ids[:0]), np.array([p.size for p in kept], dtype=np.int64)


_LONE_SURROGATE = "lone surrogate (a \\ud800-\\udfff escape): not valid Unicode text"


def _utf8_ok(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shard_name(file_index: int, shard_no: int) -> str:
    return f"{file_index:05d}-{shard_no:05d}"


def _add_bos_eos(ids: Any, lens: Any, bos: int | None, eos: int | None) -> tuple[Any, Any]:
    import numpy as np

    extra = (bos is not None) + (eos is not None)
    new_lens = lens + extra
    new_starts = np.cumsum(new_lens) - new_lens
    out = np.empty(int(new_lens.sum()), dtype=np.uint32)
    starts = np.cumsum(lens) - lens
    body = np.arange(ids.size) - np.repeat(starts, lens) + np.repeat(new_starts + (bos is not None), lens)
    out[body] = ids
    if bos is not None:
        out[new_starts] = bos
    if eos is not None:
        out[new_starts + new_lens - 1] = eos
    return out, new_lens


def _windows(lens: Any, max_length: int | None) -> tuple[Any, Any, Any]:
    """Row lengths, the document of each row, and its window number: each document cut into
    consecutive windows of ``max_length`` tokens (the last one shorter; an empty document keeps
    one empty row)."""
    import numpy as np

    n = lens.size
    if max_length is None:
        return lens, np.arange(n), np.zeros(n, dtype=np.int64)
    count = np.maximum(1, -(-lens // max_length))
    doc = np.repeat(np.arange(n), count)
    first = np.cumsum(count) - count
    window = np.arange(doc.size) - np.repeat(first, count)
    row_len = np.minimum(max_length, lens[doc] - window * max_length)
    return np.maximum(row_len, 0), doc, window


class ShardWriter:
    """Writes one shard's batches under a temporary name and renames it when the shard is done."""

    def __init__(self, job: TokenizeJob) -> None:
        self.job = job
        self.out = job.out
        self.current: str | None = None
        self.counts: dict[str, int] = {}
        self.errors: list[dict[str, Any]] = []
        self._cm: Any = None
        self._f: Any = None
        self._pq: Any = None
        self._shard: Any = None
        self._lens: list[Any] = []
        self._synced = 0

    def path(self, shard: str) -> Path:
        if self.job.s.format == "parquet":
            return self.out / f"shard-{shard}.parquet"
        return self.out / "parts" / f"{shard}.bin"

    def write(self, b: Batch) -> dict[str, Any] | None:
        """Adds a batch; returns the shard's manifest entry when ``b`` ends it."""
        if self.current != b.shard:
            self._open(b.shard, b.source)
        n_docs = b.docs
        self.counts["records"] += b.n
        self.counts["docs"] += n_docs
        self.counts["tokens"] += int(b.ids.size)
        self.counts["bytes_in"] += b.nbytes
        self.errors.extend(self.job.errors_of(b))
        if n_docs:
            self._write_rows(b)
            self._synced = sync_some(self._f, self._synced)
        return self._close(b) if b.last else None

    def _open(self, shard: str, source: str) -> None:
        self.current = shard
        self.counts = {"records": 0, "docs": 0, "rows": 0, "tokens": 0, "bytes_in": 0}
        self.errors = []
        self._lens = []
        self._synced = 0
        path = self.path(shard)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._cm = atomic_file(path)
        self._f = self._cm.__enter__()
        if self.job.s.format == "parquet":
            compression = self.job.s.compression
            if compression in OWN_WRITER:
                self._shard = _core.TokenShardWriter(source, *OWN_WRITER[compression], _arrow_schema(), _created_by())
                self._f.write(self._shard.start())
                return
            import pyarrow.parquet as pq

            # Token ids get neither a dictionary nor min/max statistics: both cost 3x the
            # compression itself (measured on cl100k ids) and help no reader of token lists.
            self._pq = pq.ParquetWriter(
                self._f,
                _schema(),
                compression=compression,
                compression_level=1 if compression == "zstd" else None,
                use_dictionary=["source"],
                write_statistics=["index", "window", "num_tokens"],
            )

    def _write_rows(self, b: Batch) -> None:
        import numpy as np

        row_len, row_doc, row_window = b.rows
        self.counts["rows"] += int(row_len.size)
        if self.job.s.format == "bin":
            self._f.write(b.ids.astype(self.job.dtype, copy=False).data)  # no bytes copy
            self._lens.append(row_len)
            return
        index = b.good()
        if self._shard is not None:
            self._f.write(
                self._shard.row_group(
                    index[row_doc], row_window.astype(np.int32), row_len.astype(np.int32), _u32(b.ids)
                )
            )
            return
        import pyarrow as pa

        offsets = np.zeros(row_len.size + 1, dtype=np.int32)
        np.cumsum(row_len, out=offsets[1:])
        table = pa.table(
            {
                "source": pa.DictionaryArray.from_arrays(
                    pa.array(np.zeros(row_len.size, np.int32)), pa.array([b.source])
                ),
                "index": pa.array(index[row_doc]),
                "window": pa.array(row_window.astype(np.int32)),
                "input_ids": pa.ListArray.from_arrays(pa.array(offsets), pa.array(b.ids), type=_ids_type()),
                "num_tokens": pa.array(row_len.astype(np.int32)),
            },
            schema=_schema(),
        )
        self._pq.write_table(table)

    def _close(self, b: Batch) -> dict[str, Any]:
        import numpy as np

        if self._pq is not None:
            self._pq.close()
            self._pq = None
        if self._shard is not None:
            self._f.write(self._shard.footer())
            self._shard = None
        crash_point("shard-written")
        self._cm.__exit__(None, None, None)
        crash_point("shard-renamed")
        path = self.path(b.shard)
        entry: dict[str, Any] = {"name": b.shard, "file": str(path.relative_to(self.out)), "source": b.source}
        if self.job.s.format == "bin":
            lens = np.concatenate(self._lens) if self._lens else np.zeros(0, np.int64)
            with atomic_file(path.with_suffix(".lens.npy")) as f:
                np.save(f, lens.astype(np.int64))
        entry.update(self.counts)
        entry["bytes_out"] = path.stat().st_size
        entry["errors"] = self.errors
        self.current = None
        return entry

    def abort(self) -> None:
        if self._cm is not None and self.current is not None:
            if self._pq is not None:
                self._pq.close()
            self._shard = None
            self._cm.__exit__(RuntimeError, RuntimeError("aborted"), None)


# --compression: "delta" (the default) stores the ids DELTA_BINARY_PACKED with no codec (~57% of
# their plain size on cl100k ids, for ~2 ns an id, where Snappy takes ~50% for ~10 ns); "none"
# and "snappy" store them plain. These three are written by fastprep's own Parquet writer
# (rust/src/parquet: pyarrow's level encoding of a list column cost ~10 ns a token); zstd and lz4
# go through pyarrow.
OWN_WRITER = {"delta": ("none", "delta"), "none": ("none", "plain"), "snappy": ("snappy", "plain")}
COMPRESSIONS = (*OWN_WRITER, "zstd", "lz4")


def _u32(ids: Any) -> Any:
    import numpy as np

    return np.ascontiguousarray(ids, dtype=np.uint32)


# pyarrow's ``ARROW:schema`` footer entry for ``_schema()`` (an IPC Schema message, base64), put in
# our shards so Arrow readers get exactly the types of pyarrow-written ones. A constant, so that
# the job imports no pyarrow (~0.3 CPU-s) when it neither reads nor writes through it;
# tests/test_jobs_parquet.py checks it against what the installed pyarrow writes.
ARROW_SCHEMA = (
    "/////6gBAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAEAAAApP7//wQAAAAFAAAAKAEAAOQAAACgAAAAPAAAAAQAAAA8////"
    "AAAAAhAAAAAcAAAABAAAAAAAAAAKAAAAbnVtX3Rva2VucwAA3P7//wAAAAEgAAAAcP///wAAAAwUAAAAIAAAAAQAAAABAAAA"
    "GAAAAAkAAABpbnB1dF9pZHMAAAAA////oP///wAAAAIQAAAAHAAAAAQAAAAAAAAABAAAAGl0ZW0AAAYACAAEAAYAAAAgAAAA"
    "0P///wAAAAIQAAAAGAAAAAQAAAAAAAAABgAAAHdpbmRvdwAAbP///wAAAAEgAAAAEAAUAAgAAAAHAAwAAAAQABAAAAAAAAAC"
    "EAAAABgAAAAEAAAAAAAAAAUAAABpbmRleAAAAKz///8AAAABQAAAABAAGAAIAAAABwAMABAAFAAQAAAAAAAABRQAAABEAAAA"
    "IAAAAAQAAAAAAAAABgAAAHNvdXJjZQAACAAIAAAABAAIAAAADAAAAAgADAAIAAcACAAAAAAAAAEgAAAABAAEAAQAAAAAAAAA"
)


def _arrow_schema() -> list[tuple[str, str]]:
    return [("ARROW:schema", ARROW_SCHEMA)]


def _created_by() -> str:
    return f"fastprep version {__version__}"


def _ids_type() -> Any:
    import pyarrow as pa

    return pa.list_(pa.field("item", pa.uint32(), nullable=False))


def _schema() -> Any:
    """No column is ever null: saying so spares Parquet the definition levels of 7M ids per 20 MB
    of text (a third of the cost of writing them uncompressed)."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("source", pa.dictionary(pa.int32(), pa.string()), nullable=False),
            pa.field("index", pa.int64(), nullable=False),
            pa.field("window", pa.int32(), nullable=False),
            pa.field("input_ids", _ids_type(), nullable=False),
            pa.field("num_tokens", pa.int32(), nullable=False),
        ]
    )


def finish_bin(job: TokenizeJob, manifest: Manifest) -> None:
    """Joins the per-shard parts into ``tokens.bin`` and ``offsets.npy`` (the nanoGPT layout: one
    flat token stream; ``offsets[i]:offsets[i + 1]`` is row i), then removes the parts."""
    import numpy as np

    names = sorted(manifest.shards)
    parts = job.out / "parts"
    lens = [np.load(parts / f"{n}.lens.npy") for n in names]
    all_lens = np.concatenate(lens) if lens else np.zeros(0, np.int64)
    offsets = np.zeros(all_lens.size + 1, dtype=np.int64)
    np.cumsum(all_lens, out=offsets[1:])
    tokens = job.out / "tokens.bin"
    if len(names) == 1 and _link_into_place(parts / f"{names[0]}.bin", tokens):
        pass  # one part (a file under ``docs_per_shard`` documents) is the stream already
    else:
        with atomic_file(tokens) as f:
            for n in names:
                with open(parts / f"{n}.bin", "rb") as src:
                    _copy_file(src, f)
    with atomic_file(job.out / "offsets.npy") as f:
        np.save(f, offsets)


def _link_into_place(src: Path, dst: Path) -> bool:
    """``dst`` as a second name of ``src`` (already written and synced): no copy of the stream
    (a tenth of a 20 MB job's time went to copying it and syncing the copy). The part keeps its
    name until the job is complete, so a job killed before then finds it on the re-run. False
    where the filesystem has no hard links."""
    if dst.exists() and os.path.samefile(src, dst):
        # Linked by a run killed later on: done. (Renaming a second link of the same file onto
        # it would do nothing, leaving the temporary name behind.)
        return True
    tmp = dst.with_name(dst.name + TMP_SUFFIX)
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        return False
    crash_point("before-rename")
    os.replace(tmp, dst)
    return True


def _copy_file(src: Any, dst: Any) -> None:
    """All of ``src`` appended to ``dst``, in the kernel where it can (no copy through Python)."""
    dst.flush()
    try:
        while os.copy_file_range(src.fileno(), dst.fileno(), 1 << 30):
            pass
        return
    except (AttributeError, OSError):
        pass  # not Linux, or a filesystem pair that cannot: the portable loop below
    while chunk := src.read(1 << 24):
        dst.write(chunk)


def run_tokenize(s: TokenizeSettings, *, stats: JobStats | None = None) -> dict[str, Any]:
    """Runs the job on this machine; returns the summary (see ``JobStats.summary``)."""
    job = TokenizeJob(s)
    job.out.mkdir(parents=True, exist_ok=True)
    remove_temporaries(job.out)
    manifest = Manifest(job.out, job.header)
    stats = stats or JobStats("tokenize", "docs", ("read", "tokenize", "write"))
    if manifest.complete:
        stats.skipped_shards = len(manifest.shards)
        stats.finish()
        return stats.summary()
    stats.skipped_shards = len(manifest.shards)
    total_bytes = sum(f.stat().st_size for f in job.files)
    stats.start = time.perf_counter()  # the figures are the run's, not the tokenizer load's
    bar = Progress(total_bytes, "B", s.progress)
    try:
        _pipeline(job, manifest, stats, bar)
    finally:
        bar.close()
    if s.format == "bin":
        finish_bin(job, manifest)
    _finish(job.out, manifest)
    stats.finish()
    return stats.summary()


def _finish(out: Path, manifest: Manifest) -> None:
    errors = manifest.errors()
    write_errors(out, errors)
    keys = ("records", "docs", "rows", "tokens", "bytes_in", "bytes_out")
    totals = {k: sum(int(e.get(k, 0)) for e in manifest.shards.values()) for k in keys}
    totals["errors"] = len(errors)
    totals["shards"] = len(manifest.shards)
    manifest.complete = True
    manifest.save(totals)
    parts = out / "parts"
    if parts.is_dir():
        for p in sorted(parts.iterdir()):
            p.unlink()
        parts.rmdir()


_DONE = object()
# Batches tokenized at once (see _pipeline).
TOKENIZE_IN_FLIGHT = 2


def _pipeline(job: TokenizeJob, manifest: Manifest, stats: JobStats, bar: Progress) -> None:
    """read -> tokenize -> write on their own threads, each stage in order (so the output is the
    same whatever the timing). Two batches are tokenized at once: while one call's Python part
    runs (its ids handed back, its rows counted), the pool's threads work on the other instead
    of waiting (a quarter of the job's time, with one batch at a time on 2 cores)."""
    from concurrent.futures import Future, ThreadPoolExecutor

    to_tok: queue.Queue[Any] = queue.Queue(maxsize=2)
    to_write: queue.Queue[Any] = queue.Queue(maxsize=2)
    failure: list[BaseException] = []
    stop = threading.Event()

    def put(q: queue.Queue[Any], item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def reader() -> None:
        try:
            for i in range(len(job.files)):
                it = job.batches(i, manifest.done)
                while True:
                    t0 = time.perf_counter()
                    b = next(it, None)
                    if b is None:
                        break
                    stats.add_samples("read", [time.perf_counter() - t0])
                    if not put(to_tok, b):
                        return
        except BaseException as e:
            failure.append(e)
            stop.set()
        finally:
            to_tok.put(_DONE)  # the tokenize loop drains until it sees this

    def tokenize(b: Batch) -> Batch:
        t0 = time.perf_counter()
        job.tokenize(b)
        stats.add_samples("tokenize", [time.perf_counter() - t0])
        return b

    def writer() -> None:
        w = ShardWriter(job)
        try:
            while True:
                item = to_write.get()
                if item is _DONE:
                    return
                b = item.result()  # in order: a batch that failed stops the job here
                t0 = time.perf_counter()
                entry = w.write(b)
                stats.add_samples("write", [time.perf_counter() - t0])
                if entry is not None:
                    manifest.add(entry)
                stats.add(
                    items=b.docs,
                    tokens=int(b.ids.size),
                    bytes_in=b.nbytes,
                    bytes_out=entry["bytes_out"] if entry else 0,
                    errors=len(b.errors),
                )
                bar.update(b.nbytes)
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
    pool = ThreadPoolExecutor(max_workers=TOKENIZE_IN_FLIGHT, thread_name_prefix="fastprep-tokenize")
    try:
        while True:
            b = to_tok.get()
            if b is _DONE:
                break
            if stop.is_set():
                continue  # drain, so that the reader can finish
            fut: Future[Batch] = pool.submit(tokenize, b)
            to_write.put(fut)  # bounded: at most a few batches tokenized ahead of the writer
    finally:
        to_write.put(_DONE)
        for t in threads:
            t.join()
        pool.shutdown(wait=True)
    if failure:
        raise failure[0]


def _where(e: dict[str, Any]) -> str:
    if "line" in e:
        return f"{e['file']}:{e['line']} (byte {e['offset']})"
    return f"{e['file']} row {e['row']}"


def process_file(
    job: TokenizeJob, file_index: int, done: set[str]
) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    """One input file start to end on this thread, skipping the shards in ``done`` (the Ray
    engine's unit of work): the manifest entries of the shards written, and stage timings."""
    w = ShardWriter(job)
    entries: list[dict[str, Any]] = []
    samples: dict[str, list[float]] = {"read": [], "tokenize": [], "write": []}
    it = job.batches(file_index, done.__contains__)
    try:
        while True:
            t0 = time.perf_counter()
            b = next(it, None)
            if b is None:
                break
            t1 = time.perf_counter()
            job.tokenize(b)
            t2 = time.perf_counter()
            entry = w.write(b)
            t3 = time.perf_counter()
            samples["read"].append(t1 - t0)
            samples["tokenize"].append(t2 - t1)
            samples["write"].append(t3 - t2)
            if entry is not None:
                entries.append(entry)
    except BaseException:
        w.abort()
        raise
    return entries, samples
