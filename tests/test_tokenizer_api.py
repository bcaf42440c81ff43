"""fastprep.Tokenizer beyond parity: loading, errors with their messages, numpy batch outputs,
bucketing, token counts, from_tiktoken."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tokenizers

import fastprep
from fastprep import Tokenizer

from . import tokenizer_data as data
from .tokenizer_compare import diff


@pytest.fixture(scope="module")
def cl100k_json():
    return data.cl100k_tokenizer_json()


@pytest.fixture(scope="module")
def tok(cl100k_json):
    return Tokenizer.from_str(cl100k_json)


def test_file_round_trips(tmp_path, cl100k_json, tok):
    path = tmp_path / "tokenizer.json"
    path.write_text(cl100k_json)
    loaded = Tokenizer.from_file(path)
    tok2 = Tokenizer.from_str(loaded.to_str())
    loaded.enable_truncation(8)
    loaded.enable_padding(length=10, pad_id=5)
    loaded.save(tmp_path / "again.json")
    again = Tokenizer.from_file(tmp_path / "again.json")
    assert again.truncation == loaded.truncation and again.padding == loaded.padding
    text = "Round trips keep every setting: 12345 ünïcödé"
    assert again.encode(text).ids == loaded.encode(text).ids
    assert tok2.encode(text).ids == tok.encode(text).ids
    # HF reads what we write
    hf = tokenizers.Tokenizer.from_str(again.to_str())
    assert diff(hf.encode(text), again.encode(text)) is None


def test_from_pretrained_local_dir_and_hf_cache(tmp_path, monkeypatch, cl100k_json):
    d = tmp_path / "model"
    d.mkdir()
    (d / "tokenizer.json").write_text(cl100k_json)
    assert Tokenizer.from_pretrained(d).encode("hi").ids == [6151]
    hub = tmp_path / "hf" / "hub" / "models--acme--tiny"
    snap = hub / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "tokenizer.json").write_text(cl100k_json)
    (hub / "refs").mkdir()
    (hub / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    assert Tokenizer.from_pretrained("acme/tiny").get_vocab_size() == 100261
    with pytest.raises(FileNotFoundError, match=r"not in the Hugging Face cache.*never downloads"):
        Tokenizer.from_pretrained("acme/missing")
    with pytest.raises(FileNotFoundError, match=r"has no tokenizer\.json"):
        Tokenizer.from_pretrained(tmp_path)


def _with(js: str, path: list, value) -> str:
    obj = json.loads(js)
    node = obj
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(obj)


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        (["model", "type"], "Magic", 'model "Magic" at model'),
        (["normalizer"], {"type": "Magic"}, 'normalizer "Magic" at normalizer'),
        (
            ["pre_tokenizer", "pretokenizers", 0],
            {"type": "Magic"},
            'pre-tokenizer "Magic" at pre_tokenizer.pretokenizers[0]',
        ),
        (["decoder"], {"type": "Magic", "suffix": "</w>"}, 'decoder "Magic" at decoder'),
        (["post_processor"], {"type": "Magic"}, 'post-processor "Magic" at post_processor'),
        (["model", "dropout"], 0.1, "BPE dropout 0.1"),
    ],
)
def test_unsupported_components_are_refused_by_name_and_place(cl100k_json, path, value, needle):
    with pytest.raises(fastprep.UnsupportedTokenizerError) as info:
        Tokenizer.from_str(_with(cl100k_json, path, value))
    assert needle in str(info.value)
    assert "refuses it rather than tokenize differently" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_invalid_files_say_where(cl100k_json):
    with pytest.raises(fastprep.TokenizerFileError, match=r"invalid tokenizer at \(file\)"):
        Tokenizer.from_str("{not json")
    obj = json.loads(cl100k_json)
    obj["model"]["merges"][0] = ["Ġ", "not-a-token"]
    with pytest.raises(fastprep.TokenizerFileError, match=r"model\.merges\[0\].*not-a-token"):
        Tokenizer.from_str(json.dumps(obj))
    with pytest.raises(fastprep.TokenizerFileError, match=r"pre_tokenizer\.pretokenizers\[0\]\.pattern"):
        Tokenizer.from_str(_with(cl100k_json, ["pre_tokenizer", "pretokenizers", 0, "pattern"], {"Regex": "(unclosed"}))


def test_type_errors_say_what_to_do(tok):
    with pytest.raises(TypeError, match="for pre-split words pass is_pretokenized=True"):
        tok.encode(["a", "b"])
    with pytest.raises(TypeError, match="is str while is_pretokenized=True: pass a list of words"):
        tok.encode("ab", is_pretokenized=True)
    with pytest.raises(TypeError, match="for one text call encode"):
        tok.encode_batch_arrays("one text")
    # Messages start as tokenizers' (its tests match them); a batch names the item at fault.
    with pytest.raises(TypeError, match=r"^TextEncodeInput must be Union.*\(input 2 is int\)"):
        tok.encode_batch(["a", "b", 7])
    with pytest.raises(TypeError, match=r"^TextEncodeInput must be Union.*\(input 1 is tuple\)"):
        tok.encode_batch(["a", ("b", "c", "d")])
    with pytest.raises(TypeError, match=r"^TextInputSequence must be str \(pair is int"):
        tok.encode("a", 7)
    with pytest.raises(ValueError, match="strategy must be"):
        tok.enable_truncation(8, strategy="middle_out")


def test_truncation_setting_errors(tok):
    with pytest.raises(ValueError, match="stride set to 9, which is greater than or equal"):
        tok.enable_truncation(8, stride=9)
    assert tok.truncation is None


def test_encode_batch_arrays_matches_encode_batch(tok):
    texts = ["short", "a somewhat longer text with more tokens in it", "", "日本語とemoji 👍🏽"]
    ref = [e.ids for e in tok.encode_batch(texts)]
    out = tok.encode_batch_arrays(texts)
    width = max(len(r) for r in ref)
    assert out["input_ids"].shape == (4, width) and out["input_ids"].dtype == np.int64
    for row, ids, mask in zip(ref, out["input_ids"], out["attention_mask"], strict=True):
        assert list(ids[: len(row)]) == row and mask.sum() == len(row)
        assert (ids[len(row) :] == 0).all()
    offs = tok.encode_batch_arrays(texts, return_offsets=True)["offsets"]
    assert [tuple(o) for o in offs[3][: len(ref[3])]] == tok.encode(texts[3]).offsets
    out8 = tok.encode_batch_arrays(texts, max_length=4, padding="max_length", pad_to_multiple_of=8)
    assert out8["input_ids"].shape == (4, 8)
    assert list(out8["input_ids"][1][:4]) == ref[1][:4]


def test_left_padding_follows_the_tokenizer_setting(cl100k_json):
    t = Tokenizer.from_str(cl100k_json)
    t.enable_padding(direction="left", pad_id=7)
    out = t.encode_batch_arrays(["a b c d", "a"])
    assert out["input_ids"][1][-1] == t.encode("a").ids[-1] and out["input_ids"][1][0] == 7
    assert list(out["attention_mask"][1]) == [0] * (out["input_ids"].shape[1] - 1) + [1]


def test_bucketing_reports_padding_saved(tok):
    rng = np.random.default_rng(0)
    texts = [" ".join(["word"] * int(n)) for n in rng.integers(1, 200, size=256)]
    out = tok.encode_batch_arrays(texts, padding="bucket", bucket_size=32)
    longest = tok.encode_batch_arrays(texts)
    assert out["padding_saved"] > 0
    assert out["padded_tokens"] + out["padding_saved"] == longest["input_ids"].size
    seen = np.concatenate([b["indices"] for b in out["buckets"]])
    assert sorted(seen.tolist()) == list(range(256))
    for b in out["buckets"]:
        for i, row, mask in zip(b["indices"], b["input_ids"], b["attention_mask"], strict=True):
            n = int(mask.sum())
            assert list(row[:n]) == list(longest["input_ids"][i][: int(longest["attention_mask"][i].sum())])


def test_flat_outputs_are_owned_buffers_that_outlive_their_names(tok):
    """The flat ids come back as Rust-owned buffers (no copy): a numpy view keeps the memory
    alive after the buffer's own name is gone, however much is allocated and freed meanwhile;
    an empty result still views as u32."""
    import gc

    texts = [f"document {i} " + "tokens " * (i % 50) for i in range(500)]
    want = [tok.encode(t, add_special_tokens=False).ids for t in texts]
    ids_b, lens_b, _ = tok._core.encode_batch_flat(texts, False, None, False, None)
    assert isinstance(ids_b, fastprep._core.OwnedBuffer) and ids_b.shape == (4 * sum(map(len, want)),)
    ids = np.frombuffer(memoryview(ids_b), dtype="<u4")
    lens = np.frombuffer(memoryview(lens_b), dtype="<u8")
    del ids_b, lens_b
    gc.collect()
    churn = [bytes(1 << 16) for _ in range(256)]  # reuse freed memory, if any was freed
    del churn
    assert lens.tolist() == [len(w) for w in want]
    assert ids.tolist() == [i for w in want for i in w]
    empty, empty_lens, _ = tok._core.encode_batch_flat([""], False, None, False, None)
    assert np.frombuffer(memoryview(empty), dtype="<u4").size == 0
    assert np.frombuffer(memoryview(empty_lens), dtype="<u8").tolist() == [0]


def test_count_tokens(tok):
    texts = ["hello world", "", "日本語", "x" * 1000]
    assert tok.count_tokens(texts) == [len(tok.encode(t, add_special_tokens=False).ids) for t in texts]
    # Any sequence of str; many texts take the thread pool, the counts stay in order.
    many = [t * (i % 7) for i, t in enumerate(texts * 64)]
    assert tok.count_tokens(tuple(many)) == [len(tok.encode(t, add_special_tokens=False).ids) for t in many]


@pytest.mark.parametrize("call", ["count_tokens", "encode_batch_arrays"])
def test_batch_of_str_calls_name_the_bad_item(tok, call):
    with pytest.raises(TypeError, match="item 2 is bytes"):
        getattr(tok, call)(["a", "b", b"c"])
    with pytest.raises(TypeError, match="list of str"):
        getattr(tok, call)("one text")


def test_encoding_mappings_match_hf(cl100k_json):
    hf, fp = tokenizers.Tokenizer.from_str(cl100k_json), Tokenizer.from_str(cl100k_json)
    a, b = "Hello wonderful world, ça va?", "Second sequence here"
    ref, got = hf.encode(a, b), fp.encode(a, b)
    for i in range(len(ref.ids)):
        assert got.token_to_chars(i) == ref.token_to_chars(i)
        assert got.token_to_word(i) == ref.token_to_word(i)
        assert got.token_to_sequence(i) == ref.token_to_sequence(i)
    for seq in (0, 1):
        for c in range(30):
            assert got.char_to_token(c, seq) == ref.char_to_token(c, seq), (c, seq)
            assert got.char_to_word(c, seq) == ref.char_to_word(c, seq), (c, seq)
        for w in range(6):
            assert got.word_to_tokens(w, seq) == ref.word_to_tokens(w, seq)
            assert got.word_to_chars(w, seq) == ref.word_to_chars(w, seq)
    assert len(got) == len(ref) and "Encoding(num_tokens=" in repr(got)


def test_from_tiktoken_matches_tiktoken():
    specials = dict(data.CL100K_SPECIAL_TOKENS)
    t = Tokenizer.from_tiktoken(data.cl100k_file(), special_tokens=specials)
    enc = data.tiktoken_cl100k()
    for text in [*data.short_texts(), *data.corpus_documents(1_000_000)[:200]]:
        for special in specials:  # encode_ordinary reads them as text; a tokenizer.json cuts them out
            text = text.replace(special, "")
        assert t.encode(text).ids == enc.encode_ordinary(text)
    assert t.encode("a<|endoftext|>b").ids == enc.encode("a<|endoftext|>b", allowed_special="all")
    assert t.decode(enc.encode("round trip ✓")) == "round trip ✓"


def test_lone_surrogates_are_refused_with_the_reason(cl100k_json):
    tok = Tokenizer.from_str(cl100k_json)
    with pytest.raises(TypeError, match="lone surrogates"):
        tok.encode("a\ud800b")
