"""Reading documents for the tokenize job: JSONL, Parquet and plain text, files or globs.

Every record has a stable place (the file and its line, or its row for Parquet), which names it
in the errors file and the output, and lets a re-run cut the input into the same shards.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["expand_inputs", "input_format", "parquet_texts", "parse_line", "read_blocks", "whole_file"]


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


def read_blocks(path: Path, size: int) -> Iterator[tuple[int, bytes]]:
    """The file as blocks of whole lines, ``(byte offset, bytes)``: ``size`` bytes each, then on
    to the end of the line they cut (one copy of the line's tail; a line longer than ``size`` makes
    a longer block). The tokenize job finds the records in a block in Rust (``line_spans``), with
    no Python object per line."""
    offset = 0
    with open(path, "rb") as f:
        while block := f.read(size):
            if not block.endswith(b"\n"):
                block += f.readline()
            yield offset, block
            offset += len(block)


def whole_file(path: Path) -> tuple[str | None, str | None, int]:
    """``--doc-per file``: the whole file as one document, ``(text, error, bytes)``."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8"), None, len(raw)
    except UnicodeDecodeError as e:
        return None, f"invalid UTF-8 at byte {e.start}", len(raw)


def parquet_texts(path: Path, field: str) -> Iterator[tuple[str | None, str | None, int]]:
    """A Parquet file's rows in order, each ``(text, error, bytes)``."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    if field not in pf.schema_arrow.names:
        raise ValueError(f"{path} has no column {field!r} (columns: {', '.join(pf.schema_arrow.names)})")
    for batch in pf.iter_batches(columns=[field], batch_size=8192):
        for value in batch.column(0).to_pylist():
            if isinstance(value, bytes):
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError as e:
                    yield None, f"invalid UTF-8 at byte {e.start}", len(value)
                    continue
            if isinstance(value, str):
                yield value, None, len(value)
            else:
                yield None, f"missing field {field!r}" if value is None else "not a string", 0
