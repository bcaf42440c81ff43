"""The tokenize job reads JSONL and text lines in Rust (``encode_lines_flat``) and leaves to
Python's ``json.loads`` every line it cannot certainly read alike: differential tests against
``parse_line`` (Python's reading) on odd and generated lines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
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


def _check(lines: list[bytes], fmt: str) -> None:
    ids_b, lens_b, left = TOK._core.encode_lines_flat(lines, "text" if fmt == "jsonl" else None, False, None)
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
    _, _, left = TOK._core.encode_lines_flat(ODD_JSON, "text", False, None)
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
