"""The tokenize job reads JSONL and text lines in Rust (``encode_lines_flat``) and leaves to
Python's ``json.loads`` every line it cannot certainly read alike: differential tests against
``parse_line`` (Python's reading) on odd and generated lines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastprep
from fastprep.jobs import TokenizeSettings, run_tokenize
from fastprep.jobs.text_inputs import parse_line

from .tokenizer_data_wordpiece import bert_file

TOK = fastprep.Tokenizer.from_file(bert_file())
TOK.no_truncation()
TOK.no_padding()

ODD_JSON = [
    b'{"text": "plain"}\n',
    b'{"text": "esc\\u00e9aped \\"q\\" \\n \\t \\\\"}\r\n',
    b'{"te\\u0078t": "key with an escape"}',
    b'{"text": "first", "text": "last wins"}',
    b'{"id": 1, "meta": {"text": "nested, not the field"}, "text": "outer"}',
    b'{"text": "surrogate pair \\ud83d\\ude00"}',
    b'{"text": "lone \\ud800 surrogate"}',
    b'{"text": "x", "n": NaN}',
    b'{"text": "x", "big": 1e999}',
    b'\xef\xbb\xbf{"text": "utf-8 BOM"}',
    b'{"text": "\xed\xa0\x80 encoded surrogate"}',
    b'{"text": "bad \xff byte"}',
    b'{"text": 3}',
    b'{"text": null}',
    b'{"other": "x"}',
    b'["text"]',
    b'"text"',
    b'{"text": "x"} trailing',
    b'{"text": "x",}',
    b'{"text": "raw\ttab"}',
    b"[" * 5000 + b"]" * 5000,
    b'  {"text": "spaces around"}  \n',
]


def _python_ids(line: bytes, fmt: str) -> list[int] | None:
    """What the job made of a line before the Rust reader: ids, or None for a bad record."""
    text, error = parse_line(line, fmt, "text")
    if error is not None:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None  # lone surrogate: the job reports it
    return TOK.encode(text, add_special_tokens=False).ids


def _encode_lines(lines: list[bytes], field: str | None) -> tuple[object, object, list[int]]:
    """``encode_lines_flat`` over ``lines`` laid end to end in one block."""
    ends = np.cumsum([len(x) for x in lines], dtype=np.uint64)
    starts = ends - np.array([len(x) for x in lines], dtype=np.uint64)
    return TOK._core.encode_lines_flat(b"".join(lines), starts, ends, field, False, None)


def _check(lines: list[bytes], fmt: str) -> None:
    ids_b, lens_b, left = _encode_lines(lines, "text" if fmt == "jsonl" else None)
    ids = np.frombuffer(ids_b, dtype="<u4")
    lens = np.frombuffer(lens_b, dtype="<u8")
    assert lens.size == len(lines)
    ends = np.cumsum(lens)
    for i, line in enumerate(lines):
        expected = _python_ids(line, fmt)
        if i in left:
            assert lens[i] == 0
            continue  # Python reads it: the same reading, by construction
        assert expected is not None, f"Rust read a line Python refuses: {line!r}"
        assert ids[ends[i] - lens[i] : ends[i]].tolist() == expected, line


def test_odd_json_lines_read_as_python_reads_them() -> None:
    _check(ODD_JSON, "jsonl")
    _, _, left = _encode_lines(ODD_JSON, "text")
    # The lines Rust reads itself: everything valid and plain (not the rare ones Python re-reads).
    read_in_rust = [ODD_JSON[i] for i in range(len(ODD_JSON)) if i not in left]
    assert b'{"text": "first", "text": "last wins"}' in read_in_rust
    assert b'{"te\\u0078t": "key with an escape"}' in read_in_rust
    assert b'{"text": "lone \\ud800 surrogate"}' not in read_in_rust


def test_text_lines() -> None:
    _check([b"one\n", b"two\r\n", b"\xe9t\xe9\n", b"trailing spaces  \n", b"no newline"], "text")


_values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from(["text", "id", "txt", "meta"]), st.one_of(_values, st.text()), max_size=4),
            st.booleans(),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_generated_json_lines(rows: list[tuple[dict[str, object], bool]]) -> None:
    lines = [json.dumps(obj, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass") for obj, ascii_only in rows]
    _check(lines, "jsonl")


def test_a_batch_of_many_lines_runs_on_the_pool() -> None:
    lines = [json.dumps({"text": f"document {i} " * (i % 7)}).encode() for i in range(500)]
    _check(lines, "jsonl")


def _python_records(data: bytes, fmt: str) -> list[tuple[int, int, int]]:
    """(start, end, line) of each record as a loop over the file's lines finds them."""
    out, pos = [], 0
    for n, line in enumerate(_lf_lines(data)):
        blank = line.isspace() and (fmt == "jsonl" or not line.rstrip(b"\r\n"))
        if line and not blank:
            out.append((pos, pos + len(line), n))
        pos += len(line)
    return out


def _lf_lines(data: bytes) -> list[bytes]:
    """The lines a binary file's ``for line in f`` gives: cut after each b"\\n" only."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"x", b" ", b"\t", b"\r", b"\n", b"\x0b", b"\x0c", b"{}", b"\xe9"]), max_size=40))
def test_line_spans_find_the_records_pythons_line_loop_finds(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    for fmt in ("jsonl", "text"):
        starts, ends, lines, count = fastprep._core.line_spans(data, fmt == "jsonl")
        found = list(
            zip(
                np.frombuffer(starts, "<u8").tolist(),
                np.frombuffer(ends, "<u8").tolist(),
                np.frombuffer(lines, "<u8").tolist(),
                strict=True,
            )
        )
        assert found == _python_records(data, fmt), (data, fmt)
        assert count == len(_lf_lines(data))


def test_spans_outside_the_block_are_refused() -> None:
    with pytest.raises(ValueError, match="outside the block"):
        TOK._core.encode_lines_flat(b"abc", np.array([0], np.uint64), np.array([4], np.uint64), None, False, None)
    with pytest.raises(ValueError, match="differ in length"):
        TOK._core.encode_lines_flat(b"abc", np.array([0, 1], np.uint64), np.array([1], np.uint64), None, False, None)


@pytest.mark.parametrize("block_bytes", [1, 7, 64, 1 << 20])
def test_the_output_does_not_depend_on_where_blocks_end(tmp_path: Path, block_bytes: int) -> None:
    """Blocks end at the next line break after ``batch_bytes``: the documents, their lines and
    byte offsets, and the errors are the same for any block size (blank lines, a long line, a
    last line without a line break)."""
    body = b'{"text": "a"}\n\n  \n{"text": "' + b"long " * 50 + b'"}\r\n{bad\n\t\n{"text": "end"}'
    src = tmp_path / "a.jsonl"
    src.write_bytes(body)
    out = tmp_path / f"out{block_bytes}"
    run_tokenize(TokenizeSettings([str(src)], str(bert_file()), str(out), batch_bytes=block_bytes, progress=False))
    table = pq.read_table(sorted(out.glob("shard-*.parquet"))[0])
    assert table.column("index").to_pylist() == [1, 4, 7]
    assert table.column("input_ids").to_pylist() == [
        TOK.encode(t, add_special_tokens=False).ids for t in ["a", "long " * 50, "end"]
    ]
    errors = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert [(e["line"], e["offset"]) for e in errors] == [(5, body.index(b"{bad"))]


def test_the_job_keeps_the_lines_python_reads_and_reports_the_bad(tmp_path: Path) -> None:
    """Lines Rust leaves to Python that are still records (NaN elsewhere in the object, a BOM)
    are tokenized in their place; bad ones go to the errors file; in several batch sizes."""
    docs = ["first document", "second, after a NaN", "third, with a BOM", "fourth", "fifth"]
    lines = [
        json.dumps({"text": docs[0]}).encode(),
        b'{"text": "second, after a NaN", "score": NaN}',
        b"\xef\xbb\xbf" + json.dumps({"text": docs[2]}).encode(),
        b'{"text": "lone \\udc00"}',
        json.dumps({"text": docs[3]}).encode(),
        b"{broken",
        json.dumps({"text": docs[4]}).encode(),
    ]
    src = tmp_path / "a.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    expected = [TOK.encode(d, add_special_tokens=False).ids for d in docs]
    for batch_size in (1, 2, 3, 100):
        out = tmp_path / f"out{batch_size}"
        summary = run_tokenize(
            TokenizeSettings([str(src)], str(bert_file()), str(out), batch_size=batch_size, progress=False)
        )
        table = pq.read_table(sorted(out.glob("shard-*.parquet"))[0])
        assert table.column("input_ids").to_pylist() == expected
        assert table.column("index").to_pylist() == [1, 2, 3, 5, 7]
        errors = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
        assert [e["line"] for e in errors] == [4, 6]
        assert "surrogate" in errors[0]["reason"] and "invalid JSON" in errors[1]["reason"]
        assert summary["docs"] == 5 and summary["errors"] == 2


_LINE_KINDS = st.one_of(
    st.builds(lambda t: json.dumps({"text": t}).encode(), st.text(max_size=12)),
    st.builds(lambda t: json.dumps({"text": t}, ensure_ascii=False).encode(), st.text(max_size=12)),
    st.sampled_from([b"", b" ", b"\t \r", b"\x0b\x0c", b"{bad", b'{"other": 1}', b'{"text": "\xff"}', b"[]"]),
)


def _reference(data: bytes, per_shard: int) -> tuple[dict[int, list[tuple[int, list[int]]]], list[tuple[int, int]]]:
    """What the job must write, from a plain loop over the file's lines and ``json.loads``:
    per shard, (line, ids) of each document; and (line, byte offset) of each bad record."""
    shards: dict[int, list[tuple[int, list[int]]]] = {}
    errors = []
    records = offset = 0
    for n, line in enumerate(_lf_lines(data), start=1):
        if not (line.isspace() or not line):
            shard = records // per_shard
            records += 1
            shards.setdefault(shard, [])
            text, error = parse_line(line, "jsonl", "text")
            if error is None and _python_ids(line, "jsonl") is not None:
                shards[shard].append((n, TOK.encode(text, add_special_tokens=False).ids))
            else:
                errors.append((n, offset))
        offset += len(line)
    return shards, errors


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_LINE_KINDS, max_size=14),
    st.sampled_from([b"\n", b"\r\n"]),
    st.booleans(),
    st.integers(1, 5),
    st.integers(1, 4),
    st.integers(1, 120),
)
def test_generated_files_shard_and_batch_as_a_plain_line_loop(
    lines: list[bytes], eol: bytes, final_eol: bool, per_shard: int, batch_size: int, batch_bytes: int
) -> None:
    """Any cut of a file into blocks, batches and shards gives the documents, line numbers, shard
    contents and errors of a plain line loop over the file."""
    import tempfile

    data = eol.join(lines) + (eol if final_eol and lines else b"")
    shards, errors = _reference(data, per_shard)
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.jsonl"
        src.write_bytes(data)
        out = Path(d) / "out"
        settings_ = TokenizeSettings(
            [str(src)],
            str(bert_file()),
            str(out),
            docs_per_shard=per_shard,
            batch_size=batch_size,
            batch_bytes=batch_bytes,
            progress=False,
        )
        run_tokenize(settings_)
        written = {int(f.name.split("-")[-1].split(".")[0]): pq.read_table(f) for f in out.glob("shard-*.parquet")}
        assert sorted(written) == sorted(shards)
        for k, table in written.items():
            assert table.column("index").to_pylist() == [n for n, _ in shards[k]]
            assert table.column("input_ids").to_pylist() == [ids for _, ids in shards[k]]
        got = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()] if errors else []
        assert [(e["line"], e["offset"]) for e in got] == errors
