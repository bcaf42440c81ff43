"""Parity with HF tokenizers for Unigram models and the Precompiled normalizer: ids, tokens,
offsets, masks, overflowing windows, padding, pairs and decode must be identical, on a 1.25 MB
sample of the multilingual corpus (every script category), edge cases and hypothesis fuzzing, for
(see tokenizer_data_spm.py):

- ``hf_unigram``: trained here by tokenizers' UnigramTrainer (NFKC, Metaspace split, unk);
- ``sp_unigram_spm``: trained here by SentencePiece (nmt_nfkc charsmap, byte fallback) and
  converted by transformers' ``build_tokenizer_from_spm_proto`` (Precompiled, Replace regexes,
  Metaspace, byte fallback);
- ``sp_unigram_converter``: the same model through the classic ``SpmConverter`` (Precompiled,
  Strip, Replace, Metaspace split and decoder, no byte fallback: unknown chars are <unk>);
- ``sp_unigram_plain``: a SentencePiece model without charsmap or byte fallback.

The SentencePiece-trained files are also checked against ``sentencepiece`` itself: fastprep
must equal HF there too, and every document where both differ from SentencePiece must be one
whose normalized text differs (HF applies the charsmap grapheme cluster by grapheme cluster,
SentencePiece by longest match over the bytes; see rust/src/tokenize/precompiled.rs).
"""

from __future__ import annotations

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import fastprep

from . import tokenizer_data as data
from . import tokenizer_data_spm as spm_data
from .tokenizer_compare import check_batch, check_pair_with_settings, check_pairs, diff, settings_applied

KINDS = list(spm_data.UNIGRAM_KINDS)
EDGE = [
    *("<unk>", "<s>x</s>", "▁", "▁▁x", " ▁x", "  two  spaces  ", "ｆｕｌｌ ｗｉｄｔｈ", "ﬁ ﬂ ㍿ ① Ⅻ"),
    *("e\u0301\u0302\u0303", "ก\u0e33", "각\u11a8", "👨\u200d👩\u200d👧", "\U0001f1ef\U0001f1f5\U0001f1fa", "𓀀🀄"),
    *("\x00a\x01", "a\u200bb", "\u3000x\u3000", "tab\there\n", "ǅ", "\ufdfa", "x" * 3000),
]


def _load(kind: str) -> tuple[tokenizers.Tokenizer, fastprep.Tokenizer]:
    js = spm_data.unigram_tokenizer_json(kind)
    return tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)


@pytest.fixture(scope="module", params=KINDS)
def pair(request):
    hf, fp = _load(request.param)
    return request.param, hf, fp


@pytest.fixture(scope="module")
def corpus():
    return data.corpus_documents(5_000_000)[1::4]


def test_corpus_parity(pair, corpus):
    kind, hf, fp = pair
    bad = [(i, d) for i, doc in enumerate(corpus) if (d := diff(hf.encode(doc), fp.encode(doc)))]
    assert not bad, f"{kind}: {len(bad)}/{len(corpus)} documents differ; first: {bad[:3]}"


def test_batch_parity_and_decode(pair, corpus):
    _, hf, fp = pair
    docs = corpus[:300]
    ref, got = hf.encode_batch(docs), fp.encode_batch(docs)
    assert [diff(a, b) for a, b in zip(ref, got, strict=True)] == [None] * len(docs)
    ids = [e.ids for e in ref]
    for skip in (True, False):
        assert fp.decode_batch(ids, skip_special_tokens=skip) == hf.decode_batch(ids, skip_special_tokens=skip)


def test_edge_cases(pair):
    kind, hf, fp = pair
    for text in [*data.short_texts(), *EDGE]:
        d = diff(hf.encode(text), fp.encode(text))
        assert d is None, f"{kind} on {text[:60]!r}: {d}"
        ids = hf.encode(text).ids
        assert fp.decode(ids) == hf.decode(ids), text[:60]


def test_files_use_the_components():
    import json

    spm = json.loads(spm_data.unigram_tokenizer_json("sp_unigram_spm"))
    assert spm["model"]["type"] == "Unigram" and spm["model"]["byte_fallback"]
    assert spm["normalizer"]["normalizers"][0]["type"] == "Precompiled"
    conv = json.loads(spm_data.unigram_tokenizer_json("sp_unigram_converter"))
    assert conv["decoder"]["type"] == "Metaspace" and conv["pre_tokenizer"]["split"]


@pytest.mark.parametrize("kind", ["sp_unigram_spm", "sp_unigram_plain"])
def test_sentencepiece_ids(kind, corpus):
    """fastprep equals HF on the SentencePiece-trained files; where both differ from SentencePiece
    the cause is one of the known ones:

    - normalization: the normalized texts differ (the charsmap applied per grapheme cluster, see
      the module docstring);
    - a tie: both segmentations score the same up to float rounding (SentencePiece sums float32
      scores, HF float64 ones, so near-ties such as "form"+"ation" vs "format"+"ion" fall either way);
    - a control piece written in the text (``<unk>``, ``<s>``, ``</s>``): HF's Unigram vocabulary
      holds them and matches them, SentencePiece never produces them from text.
    """
    import json

    import sentencepiece

    variant = "plain" if kind == "sp_unigram_plain" else "nfkc_bytes"
    sp = sentencepiece.SentencePieceProcessor(model_file=str(spm_data.sentencepiece_unigram_file(variant)))
    hf, fp = _load(kind)
    docs = [*corpus, *EDGE]
    want = sp.encode(docs)
    got = [e.ids for e in fp.encode_batch(docs)]
    assert got == [e.ids for e in hf.encode_batch(docs)]
    scores = [score for _, score in json.loads(spm_data.unigram_tokenizer_json(kind))["model"]["vocab"]]
    unk_score = min(scores) - 10.0

    def total(ids: list[int]) -> float:
        return sum(unk_score if i == sp.unk_id() else scores[i] for i in ids)

    def explained(i: int) -> bool:
        doc = docs[i]
        if any(t in doc for t in ("<unk>", "<s>", "</s>")):
            return True
        if abs(total(want[i]) - total(got[i])) <= 1e-3 * max(1.0, abs(total(want[i]))):
            return True
        # The plain model has no charsmap: only the nfkc one can normalize differently.
        return (
            variant == "nfkc_bytes"
            and hf.normalizer.normalize_str(doc).replace("▁", " ").strip()
            != sp.normalize(doc).replace("▁", " ").strip()
        )

    differ = [i for i, (w, g) in enumerate(zip(want, got, strict=True)) if w != g]
    unexplained = [i for i in differ if not explained(i)]
    assert not unexplained, f"{len(unexplained)}/{len(docs)}: {[docs[i][:40] for i in unexplained[:3]]}"
    assert len(differ) < len(docs) // 10, f"{len(differ)}/{len(docs)} differ from sentencepiece"


SETTINGS = [
    {"truncation": {"max_length": 16, "stride": 4, "strategy": "longest_first", "direction": "left"}},
    {"truncation": {"max_length": 9, "stride": 2, "strategy": "only_first", "direction": "right"}},
    {
        "padding": {"direction": "right", "pad_id": 0, "pad_token": "<unk>", "pad_to_multiple_of": 8},
        "truncation": {"max_length": 20, "stride": 5, "strategy": "longest_first", "direction": "right"},
    },
]


@pytest.mark.parametrize("settings_", SETTINGS, ids=[str(i) for i in range(len(SETTINGS))])
def test_pairs_truncation_padding(pair, settings_):
    _, hf, fp = pair
    texts = [t[:200] for t in [*data.short_texts()[:60], *EDGE]]
    pairs = list(zip(texts[::2], texts[1::2], strict=False))
    with settings_applied(hf, fp, settings_):
        check_pairs(hf, fp, pairs, singles=False)
        check_batch(hf, fp, texts[:40])


def test_vocab_api(pair):
    _, hf, fp = pair
    assert fp.get_vocab_size() == hf.get_vocab_size()
    assert fp.get_vocab() == hf.get_vocab()
    for i in [*range(0, hf.get_vocab_size(), 53), hf.get_vocab_size() + 5]:
        assert fp.id_to_token(i) == hf.id_to_token(i)


CHAR = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(list("日本語中文한국어éñüç\u0301\u0308▁ \t\n\u3000\xa0ｆＡ①ﬁ㍿\u200b\u200d")),
    st.sampled_from(["𓀀", "🀄", "\U0001f9d1", "\x00", "\x7f", "\ufffd", "\U0001f1ef"]),
)
PIECE = st.one_of(st.text(CHAR, max_size=6), st.sampled_from(["<unk>", "<s>", " the", "  ", "▁▁", "ing", "tion"]))
TEXT = st.lists(PIECE, max_size=16).map("".join)


@settings(max_examples=250, deadline=None)
@given(text=TEXT, kind=st.sampled_from(KINDS))
def test_hyp_single(text, kind):
    hf, fp = _hyp_pairs()[kind]
    assert diff(hf.encode(text), fp.encode(text)) is None
    ids = hf.encode(text).ids
    assert fp.decode(ids) == hf.decode(ids)


@settings(max_examples=100, deadline=None)
@given(
    a=TEXT,
    b=TEXT,
    kind=st.sampled_from(KINDS),
    max_length=st.integers(1, 24),
    stride=st.integers(0, 6),
    direction=st.sampled_from(["left", "right"]),
)
def test_hyp_pairs_truncated(a, b, kind, max_length, stride, direction):
    hf, fp = _hyp_pairs()[kind]
    check_pair_with_settings(hf, fp, a, b, {"max_length": max_length, "stride": stride, "direction": direction})


_HYP: dict[str, tuple[tokenizers.Tokenizer, fastprep.Tokenizer]] = {}


def _hyp_pairs() -> dict[str, tuple[tokenizers.Tokenizer, fastprep.Tokenizer]]:
    if not _HYP:
        _HYP.update({k: _load(k) for k in KINDS})
    return _HYP
