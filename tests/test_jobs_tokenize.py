"""``fastprep tokenize``: outputs against HF tokenizers, every input format, bad records, windows,
the bin layout, and the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tokenizers

from fastprep.jobs import JobError, TokenizeSettings, run_tokenize

from .tokenizer_data_wordpiece import bert_file

DOCS = [
    "Hello world, this is a test.",
    "Tokenizers cut text into pieces: état, naïve, 東京, emoji 🙂.",
    "",
    "A longer document " * 40,
    "Short one.",
]


@pytest.fixture(scope="module")
def hf() -> tokenizers.Tokenizer:
    tok = tokenizers.Tokenizer.from_file(str(bert_file()))
    tok.no_truncation()  # the file sets 128: the job keeps whole documents
    tok.no_padding()
    return tok


def _jsonl(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _good_lines() -> list[bytes]:
    return [json.dumps({"text": d, "id": i}).encode() for i, d in enumerate(DOCS)]


def _read_rows(out: Path) -> pa.Table:
    files = sorted(out.glob("shard-*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files])


def test_jsonl_to_parquet_matches_hf_tokenizers(tmp_path: Path, hf: tokenizers.Tokenizer) -> None:
    src = _jsonl(tmp_path / "a.jsonl", _good_lines())
    summary = run_tokenize(
        TokenizeSettings([str(src)], str(bert_file()), str(tmp_path / "out"), docs_per_shard=2, batch_size=1)
    )
    table = _read_rows(tmp_path / "out")
    expected = [hf.encode(d, add_special_tokens=False).ids for d in DOCS]
    assert table.column("input_ids").to_pylist() == expected
    assert table.schema.field("input_ids").type == pa.list_(pa.field("item", pa.uint32(), nullable=False))
    assert table.column("num_tokens").to_pylist() == [len(e) for e in expected]
    assert table.column("index").to_pylist() == [1, 2, 3, 4, 5]  # JSONL line numbers
    assert set(table.column("source").to_pylist()) == {str(src)}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["complete"] and manifest["totals"]["docs"] == 5
    assert manifest["totals"]["tokens"] == sum(map(len, expected)) == summary["tokens"]
    assert [s["name"] for s in manifest["shards"]] == ["00000-00000", "00000-00001", "00000-00002"]
    assert manifest["header"]["tokenizer_sha256"] and manifest["header"]["fastprep_version"]


def test_shards_load_in_hf_datasets(tmp_path: Path, hf: tokenizers.Tokenizer) -> None:
    """The usual next step: ``datasets.load_dataset("parquet")`` over the shards."""
    import datasets

    src = _jsonl(tmp_path / "a.jsonl", _good_lines())
    run_tokenize(TokenizeSettings([str(src)], str(bert_file()), str(tmp_path / "out"), docs_per_shard=2))
    ds = datasets.load_dataset(
        "parquet",
        data_files=str(tmp_path / "out" / "shard-*.parquet"),
        split="train",
        cache_dir=str(tmp_path / "hf"),
    )
    assert ds["input_ids"] == [hf.encode(d, add_special_tokens=False).ids for d in DOCS]
    assert ds["index"] == [1, 2, 3, 4, 5]


def test_bad_records_go_to_the_errors_file(tmp_path: Path, hf: tokenizers.Tokenizer) -> None:
    lines = _good_lines()
    lines.insert(1, b'{"text": "bad \xff\xfe bytes"}')
    lines.insert(3, b'{"body": "no text field"}')
    lines.insert(4, b"{not json")
    lines.insert(5, b'{"text": "lone \\ud800 surrogate"}')
    src = _jsonl(tmp_path / "a.jsonl", lines)
    summary = run_tokenize(TokenizeSettings([str(src)], str(bert_file()), str(tmp_path / "out")))
    errors = [json.loads(x) for x in (tmp_path / "out" / "errors.jsonl").read_text().splitlines()]
    assert [e["line"] for e in errors] == [2, 4, 5, 6]
    assert "invalid UTF-8" in errors[0]["reason"]
    assert "missing field 'text'" in errors[1]["reason"]
    assert "invalid JSON" in errors[2]["reason"]
    assert "surrogate" in errors[3]["reason"]
    assert errors[1]["offset"] == sum(len(x) + 1 for x in lines[:3])
    assert summary["errors"] == 4 and summary["docs"] == len(DOCS)
    table = _read_rows(tmp_path / "out")
    assert table.column("input_ids").to_pylist() == [hf.encode(d, add_special_tokens=False).ids for d in DOCS]


def test_strict_stops_at_the_first_bad_record(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "a.jsonl", [*_good_lines(), b'{"other": 1}'])
    with pytest.raises(JobError, match=r"a\.jsonl:6 .*missing field 'text'.*--strict"):
        run_tokenize(TokenizeSettings([str(src)], str(bert_file()), str(tmp_path / "out"), strict=True))


def test_parquet_text_and_globs(tmp_path: Path, hf: tokenizers.Tokenizer) -> None:
    pq.write_table(pa.table({"content": [*DOCS[:3], None]}), tmp_path / "b.parquet")
    (tmp_path / "c.txt").write_text("first line\n\nsecond line\n", encoding="utf-8")
    run_tokenize(
        TokenizeSettings(
            [str(tmp_path / "*.parquet"), str(tmp_path / "c.txt")],
            str(bert_file()),
            str(tmp_path / "out"),
            text_field="content",
        )
    )
    table = _read_rows(tmp_path / "out")
    texts = [*DOCS[:3], "first line", "second line"]
    assert table.column("input_ids").to_pylist() == [hf.encode(t, add_special_tokens=False).ids for t in texts]
    assert table.column("index").to_pylist() == [0, 1, 2, 1, 3]  # Parquet rows, text lines
    errors = (tmp_path / "out" / "errors.jsonl").read_text()
    assert '"row": 3' in errors and "missing field 'content'" in errors


def test_bin_format_with_eos_bos_and_windows(tmp_path: Path, hf: tokenizers.Tokenizer) -> None:
    src = _jsonl(tmp_path / "a.jsonl", _good_lines())
    run_tokenize(
        TokenizeSettings(
            [str(src)],
            str(bert_file()),
            str(tmp_path / "out"),
            format="bin",
            bos="[CLS]",
            eos="[SEP]",
            docs_per_shard=3,
        )
    )
    cls, sep = hf.token_to_id("[CLS]"), hf.token_to_id("[SEP]")
    docs = [[cls, *hf.encode(d, add_special_tokens=False).ids, sep] for d in DOCS]
    tokens = np.fromfile(tmp_path / "out" / "tokens.bin", dtype=np.uint16)  # vocab 30522: uint16
    offsets = np.load(tmp_path / "out" / "offsets.npy")
    assert tokens.tolist() == [t for d in docs for t in d]
    assert offsets.tolist() == np.concatenate([[0], np.cumsum([len(d) for d in docs])]).tolist()
    assert not (tmp_path / "out" / "parts").exists()

    run_tokenize(TokenizeSettings([str(src)], str(bert_file()), str(tmp_path / "win"), eos="[SEP]", max_length=7))
    table = _read_rows(tmp_path / "win")
    want = []
    for i, d in enumerate(DOCS):
        ids = [*hf.encode(d, add_special_tokens=False).ids, sep]
        want += [(i + 1, k, ids[k * 7 : k * 7 + 7]) for k in range(max(1, -(-len(ids) // 7)))]
    got = list(
        zip(
            table.column("index").to_pylist(),
            table.column("window").to_pylist(),
            table.column("input_ids").to_pylist(),
            strict=True,
        )
    )
    assert got == want


def test_tiktoken_file_and_rerun_refuses_other_settings(tmp_path: Path) -> None:
    from .tokenizer_data import cl100k_file, tiktoken_cl100k

    src = _jsonl(tmp_path / "a.jsonl", _good_lines())
    run_tokenize(TokenizeSettings([str(src)], str(cl100k_file()), str(tmp_path / "out"), eos="<|endoftext|>"))
    enc = tiktoken_cl100k()
    assert _read_rows(tmp_path / "out").column("input_ids").to_pylist() == [
        [*enc.encode_ordinary(d), 100257] for d in DOCS
    ]
    with pytest.raises(ValueError, match=r"other settings.*max_length"):
        run_tokenize(TokenizeSettings([str(src)], str(cl100k_file()), str(tmp_path / "out"), max_length=8))


def test_command_line_errors_and_summary(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "a.jsonl", _good_lines())
    cmd = [sys.executable, "-m", "fastprep", "tokenize", str(src), "--tokenizer", str(bert_file())]
    ok = subprocess.run([*cmd, "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "5 docs" in ok.stderr and "P99" in ok.stderr and "\r" not in ok.stderr  # no bar in a pipe
    bad = subprocess.run(
        [*cmd, "--out", str(tmp_path / "o2"), "--eos", "<nope>"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 1 and "--eos '<nope>' is not a token" in bad.stderr


@pytest.mark.parametrize("setting", ["docs_per_shard", "batch_size", "batch_bytes"])
def test_sizes_below_one_are_refused_not_looped_on(tmp_path: Path, setting: str) -> None:
    src = _jsonl(tmp_path / "a.jsonl", _good_lines())
    s = TokenizeSettings([str(src)], str(bert_file()), str(tmp_path / "out"), progress=False, **{setting: 0})
    with pytest.raises(JobError, match=f"--{setting.replace('_', '-')} must be at least 1"):
        run_tokenize(s)
