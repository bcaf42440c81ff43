"""Reading documents for the tokenize job: JSONL, Parquet and plain text, files or globs.

Every record has a stable place (the file and its line, or its row for Parquet), which names it
in the errors file and the output, and lets a re-run cut the input into the same shards.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Record", "expand_inputs", "input_format", "parse_line", "read_records"]


@dataclass(slots=True)
class Record:
    """One input record: ``text``, or ``error`` (reason) when it cannot be used; with
    ``read_records(raw=True)``, a JSONL or text line is read later, from ``raw``."""

    index: int  # line number (1-based) for text and JSONL, row number (0-based) for Parquet
    offset: int  # byte offset of the line (text, JSONL); -1 for Parquet
    text: str | None
    error: str | None = None
    nbytes: int = 0
    raw: bytes | None = None  # the line, line break included, not parsed yet


def expand_inputs(patterns: Sequence[str]) -> list[Path]:
    """Files named or matched (globs, ``**`` too), in sorted order, each once."""
    files: list[Path] = []
    for pattern in patterns:
        if glob.has_magic(pattern):
            matched = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
            if not matched:
                raise FileNotFoundError(f"no file matches {pattern!r}")
            files.extend(matched)
        else:
            p = Path(pattern)
            if p.is_dir():
                raise IsADirectoryError(f"{p} is a directory; pass a glob such as '{p}/*.jsonl'")
            if not p.is_file():
                raise FileNotFoundError(f"input {p} does not exist")
            files.append(p)
    seen: set[Path] = set()
    return [f for f in files if not (f.resolve() in seen or seen.add(f.resolve()))]  # type: ignore[func-returns-value]


def input_format(path: Path, forced: str | None = None) -> str:
    if forced:
        return forced
    name = path.name.lower()
    for suffix in (".gz", ".zst"):
        if name.endswith(suffix):
            raise ValueError(f"{path}: compressed input is not read yet; decompress it first")
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    return "text"


def read_records(
    path: Path, fmt: str, text_field: str, doc_per: str = "line", *, raw: bool = False
) -> Iterator[Record]:
    """The file's records in order. With ``raw``, JSONL and text lines come unparsed (``text``
    None, ``raw`` the line): the tokenize job reads them in Rust, off the GIL, and hands back
    to ``parse_line`` only the lines it cannot certainly read as Python does."""
    if fmt == "parquet":
        yield from _parquet(path, text_field)
    elif fmt in ("jsonl", "text") and (fmt == "jsonl" or doc_per == "line"):
        for n, offset, line in _lines(path):
            # A blank line is no record. isspace() answers at a line's first byte that is not
            # white space, with no copy (strip() copied every line: 20 MB per 20 MB read).
            if not line or (line.isspace() and (fmt == "jsonl" or not line.rstrip(b"\r\n"))):
                continue
            if raw:
                yield Record(n, offset, None, None, len(line), line)
            else:
                text, error = parse_line(line, fmt, text_field)
                yield Record(n, offset, text, error, len(line))
    elif fmt == "text":
        yield from _text_file(path)
    else:
        raise ValueError(f"unknown input format {fmt!r}: use jsonl, parquet or text")


def parse_line(line: bytes, fmt: str, field: str) -> tuple[str | None, str | None]:
    """A JSONL or text line's (text, None), or (None, the reason it is not a record)."""
    if fmt == "text":
        try:
            return line.rstrip(b"\r\n").decode("utf-8"), None
        except UnicodeDecodeError as e:
            return None, f"invalid UTF-8 at byte {e.start} of the line"
    try:
        obj = json.loads(line)
    except UnicodeDecodeError as e:
        return None, f"invalid UTF-8 at byte {e.start} of the line"
    except ValueError as e:
        return None, f"invalid JSON: {e}"
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
    value = obj.get(field) if isinstance(obj, dict) else None
    if not isinstance(value, str):
        why = "missing field" if value is None else f"field is {type(value).__name__}, not a string"
        return None, f"{why} {field!r}"
    return value, None


def _lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    offset = 0
    with open(path, "rb", buffering=1 << 20) as f:
        for n, raw in enumerate(f, start=1):
            yield n, offset, raw
            offset += len(raw)


def _text_file(path: Path) -> Iterator[Record]:
    """``--doc-per file``: the whole file is one document."""
    raw = path.read_bytes()
    try:
        yield Record(1, 0, raw.decode("utf-8"), None, len(raw))
    except UnicodeDecodeError as e:
        yield Record(1, 0, None, f"invalid UTF-8 at byte {e.start}", len(raw))


def _parquet(path: Path, field: str) -> Iterator[Record]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    if field not in pf.schema_arrow.names:
        raise ValueError(f"{path} has no column {field!r} (columns: {', '.join(pf.schema_arrow.names)})")
    row = 0
    for batch in pf.iter_batches(columns=[field], batch_size=8192):
        col = batch.column(0)
        for value in col.to_pylist():
            if isinstance(value, bytes):
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError as e:
                    yield Record(row, -1, None, f"invalid UTF-8 at byte {e.start}", len(value))
                    row += 1
                    continue
            if isinstance(value, str):
                yield Record(row, -1, value, None, len(value))
            else:
                yield Record(row, -1, None, f"missing field {field!r}" if value is None else "not a string", 0)
            row += 1
