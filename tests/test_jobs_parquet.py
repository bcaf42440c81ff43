"""The tokenize job's own Parquet writer (rust/src/parquet) against pyarrow: every layout reads
back, with pyarrow, as the table pyarrow itself writes from the same rows (schema, types and
values), whatever the row lengths (empty documents, pages cut at document ends, ids past 2**31)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastprep import _core
from fastprep.jobs import TokenizeSettings, run_tokenize
from fastprep.jobs.tokenize import ARROW_SCHEMA, COMPRESSIONS, OWN_WRITER, _arrow_schema, _ids_type, _schema

from .tokenizer_data_wordpiece import bert_file

SOURCE = "/data/part-0.jsonl"


def _reference(groups: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> pa.Table:
    """The rows as pyarrow builds them (the table the job wrote with pyarrow before)."""
    tables = []
    source = pa.array([SOURCE])
    for index, window, lens, ids in groups:
        offsets = np.zeros(lens.size + 1, np.int32)
        np.cumsum(lens, out=offsets[1:])
        tables.append(
            pa.table(
                {
                    "source": pa.DictionaryArray.from_arrays(pa.array(np.zeros(lens.size, np.int32)), source),
                    "index": pa.array(index),
                    "window": pa.array(window),
                    "input_ids": pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids), type=_ids_type()),
                    "num_tokens": pa.array(lens),
                },
                schema=_schema(),
            )
        )
    return pa.concat_tables(tables)


def _write(groups: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], codec: str, enc: str) -> bytes:
    w = _core.TokenShardWriter(SOURCE, codec, enc, _arrow_schema(), "fastprep test")
    parts = [w.start()]
    parts += [w.row_group(*g) for g in groups]
    parts.append(w.footer())
    return b"".join(parts)


def _group(rng: np.random.Generator, lens: list[int], first: int, high: int) -> tuple[np.ndarray, ...]:
    n = np.array(lens, dtype=np.int32)
    ids = rng.integers(0, high, int(n.sum()), dtype=np.uint64).astype(np.uint32)
    index = np.arange(first, first + n.size, dtype=np.int64)
    window = rng.integers(0, 3, n.size).astype(np.int32)
    return index, window, n, ids


LAYOUTS = sorted(set(OWN_WRITER.values()))


@pytest.mark.parametrize(("codec", "enc"), LAYOUTS)
def test_shards_read_back_as_pyarrow_writes_them(codec: str, enc: str) -> None:
    rng = np.random.default_rng(7)
    groups = [
        _group(rng, [0, 3, 0, 0, 1, 1, 500], 0, 100_000),
        _group(rng, [300_000, 0, 2], 7, 200_000),  # past a page's 2**18 ids: cut after the first row
        _group(rng, [5, 700_000, 0, 3], 100, 200_000),  # a document across three pages
        _group(rng, [0], 10, 10),  # a group of one empty document
        _group(rng, [40] * 2000, 11, 2**32),  # ids of the whole uint32 range: deltas wrap
    ]
    data = _write(groups, codec, enc)
    got = pq.read_table(io.BytesIO(data))
    want = _reference(groups)
    assert got.schema == want.schema
    assert got.equals(want)
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    assert meta.num_row_groups == len(groups)
    stats = meta.row_group(4).column(1).statistics
    assert (stats.min, stats.max) == (11, 2010)
    assert meta.row_group(2).column(3).num_values == 5 + 700_000 + 1 + 3
    ids_col = meta.row_group(1).column(3)
    assert ids_col.path_in_schema == "input_ids.list.element"
    assert ("DELTA_BINARY_PACKED" in ids_col.encodings) == (enc == "delta")
    assert ids_col.compression == ("SNAPPY" if codec == "snappy" else "UNCOMPRESSED")


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.lists(st.integers(0, 300), min_size=1, max_size=40), min_size=1, max_size=4),
    high=st.sampled_from([2, 300, 200_000, 2**31, 2**32]),
    layout=st.sampled_from(LAYOUTS),
)
def test_any_rows_round_trip(rows: list[list[int]], high: int, layout: tuple[str, str]) -> None:
    rng = np.random.default_rng(len(rows))
    groups, first = [], 0
    for lens in rows:
        groups.append(_group(rng, lens, first, high))
        first += len(lens)
    got = pq.read_table(io.BytesIO(_write(groups, *layout)))
    assert got.equals(_reference(groups))


def test_bad_rows_are_refused() -> None:
    w = _core.TokenShardWriter(SOURCE, "none", "delta", [], "t")
    i64, i32 = np.zeros(2, np.int64), np.zeros(2, np.int32)
    with pytest.raises(ValueError, match="num_tokens sum to 3, but there are 2 ids"):
        w.row_group(i64, i32, np.array([1, 2], np.int32), np.zeros(2, np.uint32))
    with pytest.raises(ValueError, match="one value a row"):
        w.row_group(i64, np.zeros(3, np.int32), i32, np.zeros(0, np.uint32))
    with pytest.raises(ValueError, match="negative"):
        w.row_group(i64, i32, np.array([-1, 1], np.int32), np.zeros(0, np.uint32))
    with pytest.raises(ValueError, match="at least one row"):
        w.row_group(i64[:0], i32[:0], i32[:0], np.zeros(0, np.uint32))
    with pytest.raises(ValueError, match="codec must be"):
        _core.TokenShardWriter(SOURCE, "gzip", "delta", [], "t")
    with pytest.raises(BufferError, match="not compatible with u32"):
        w.row_group(i64, i32, i32, np.zeros(0, np.float32))


def test_every_compression_gives_the_same_rows(tmp_path: Path) -> None:
    """The job through each --compression (ours and pyarrow's codecs): identical tables, with
    windows, BOS/EOS and an empty document."""
    docs = ["Hello world, this is a test.", "", "A longer document " * 40, "état naïve 東京 🙂"]
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    tables = {}
    for comp in COMPRESSIONS:
        out = tmp_path / comp
        run_tokenize(
            TokenizeSettings(
                [str(src)], str(bert_file()), str(out), compression=comp, max_length=16, bos="[CLS]", batch_size=2
            )
        )
        tables[comp] = pa.concat_tables([pq.read_table(f) for f in sorted(out.glob("shard-*.parquet"))])
    first = tables["delta"]
    assert first.num_rows > len(docs)  # windows
    for comp, t in tables.items():
        assert t.schema == first.schema, comp
        assert t.equals(first), comp


def test_arrow_schema_is_what_pyarrow_writes() -> None:
    buf = io.BytesIO()
    pq.write_table(_schema().empty_table(), buf)
    meta = pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata.metadata
    assert meta[b"ARROW:schema"].decode() == ARROW_SCHEMA
