"""The UnicodeScripts pre-tokenizer against HF tokenizers.

Its pieces are read through a WordLevel model whose only token is [UNK]: every piece becomes one
[UNK] with the piece's offsets. The script table is checked on every code point (every Unicode
scalar value): the cuts between consecutive code points, which code points are ``Any`` (never a
cut), and which runs share a script. Then full encodes (ids, tokens, offsets, words) of a Unigram
model trained here, with UnicodeScripts alone and in sequences, on multilingual text and fuzzing.
"""

from __future__ import annotations

import json

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import models, normalizers, pre_tokenizers, trainers

import fastprep

from . import tokenizer_data as data
from .tokenizer_compare import diff

SCRIPTS = {"type": "UnicodeScripts"}
CHUNK = 1 << 16

TEXTS = [
    "どこで生れ。Yes",
    "Apples are りんご 林檎",
    "カタカナとひらがなと漢字ーー長音 ｶﾀｶﾅ",
    "Hello мир مرحبا שלום नमस्ते สวัสดี γειά 안녕 世界",
    "abc123def 4.5 ٣٫١٤ ١٢٣ ½ ①",
    "  leading, trailing  ",
    "   ",
    "",
    " \t\n\u3000\u00a0 mixed\u2009spaces \u3000x",
    "e\u0301 \u0301abc a\u0300\u0301 ก\u0e33 \u0915\u094d\u0937",
    "emoji 👨\u200d👩\u200d👧 👍🏽 🇯🇵! ok",
    "a\U00030000b \U000e0001x \U0010ffff",
    "Ελληνικά; Кириллица, ქართული, Հայերեն",
    "x-y_z (a) [b] {c} @#$%^&*",
    "ㄅㄆㄇ ᄀ가 ꓐꓑ 𓀀𓀁 \U00016fe0\U00017000",
]

PRE_TOKENIZERS = {
    "alone": SCRIPTS,
    "whitespace_split": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, SCRIPTS]},
    "whitespace": {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, SCRIPTS]},
    "scripts_first": {"type": "Sequence", "pretokenizers": [SCRIPTS, {"type": "WhitespaceSplit"}]},
    "metaspace": {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
            SCRIPTS,
        ],
    },
    "digits": {"type": "Sequence", "pretokenizers": [SCRIPTS, {"type": "Digits", "individual_digits": True}]},
}
NORMALIZERS = {
    "none": None,
    "nfkc": {"type": "NFKC"},
    "nfd_lower": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}]},
}


def _unk_only(pre_tokenizer) -> str:
    tok = tokenizers.Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    obj = json.loads(tok.to_str())
    obj["pre_tokenizer"] = pre_tokenizer
    return json.dumps(obj)


@pytest.fixture(scope="module")
def scalars() -> str:
    """Every Unicode scalar value (all code points but the surrogates), in order."""
    return "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


@pytest.fixture(scope="module")
def pieces():
    """(HF, fastprep) tokenizers that encode each UnicodeScripts piece as one [UNK]."""
    js = _unk_only(SCRIPTS)
    return tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)


def _same_offsets(pieces, texts: list[str]) -> list[list[tuple[int, int]]]:
    hf, fp = pieces
    ref = [e.offsets for e in hf.encode_batch(texts)]
    got = [e.offsets for e in fp.encode_batch(texts)]
    for text, a, b in zip(texts, ref, got, strict=True):
        assert a == b, f"{text[:40]!r}...: tokenizers {a[:8]} != fastprep {b[:8]}"
    return ref


def test_pieces_equal_pre_tokenize_str(pieces):
    hf_pre = pre_tokenizers.UnicodeScripts()
    for text in TEXTS:
        want = [off for _, off in hf_pre.pre_tokenize_str(text)]
        assert pieces[1].encode(text).offsets == want, text
    # Leading Any chars (spaces, unassigned code points) are dropped; Any-only text has no piece.
    assert pieces[1].encode("  ab").offsets == [(2, 4)]
    assert pieces[1].encode(" \U00030000 ").offsets == []
    assert pieces[1].encode("a ー").offsets == [(0, 2), (2, 3)]


def test_every_code_point_cut_between_neighbours(pieces, scalars):
    """All scalar values in order: a cut wherever consecutive (non-Any) code points differ."""
    (offsets,) = _same_offsets(pieces, [scalars])
    assert len(offsets) > 300  # 371 runs in HF's table


def test_every_code_point_any_or_not(pieces, scalars):
    """Between two Latin letters and between two Han chars: only an Any code point (or one of
    that script) joins its neighbours; both at once mean Any."""
    for lo in range(0, len(scalars), CHUNK):
        chunk = scalars[lo : lo + CHUNK]
        _same_offsets(pieces, ["".join(f"a{c}a京" for c in chunk), "".join(f"京{c}京a" for c in chunk)])


def test_every_run_against_every_other(pieces, scalars):
    """The first code point of each piece of the ordered scalars (one per run of a script)
    next to every other's: the runs that share a script must be the same ones."""
    firsts = [scalars[s] for s, _ in pieces[0].encode(scalars).offsets]
    _same_offsets(pieces, ["".join(a + b for b in firsts) for a in firsts])


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return data.corpus_documents(1_000_000)


@pytest.fixture(scope="module")
def unigram(docs) -> dict:
    """A Unigram model trained here by tokenizers' UnigramTrainer, with UnicodeScripts."""
    tok = tokenizers.Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.UnicodeScripts()])
    trainer = trainers.UnigramTrainer(vocab_size=2000, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False)
    sample = docs[::8]
    tok.train_from_iterator(sample, trainer=trainer, length=len(sample))
    return json.loads(tok.to_str())


def _pair(base: dict, normalizer, pre_tokenizer):
    obj = dict(base, normalizer=normalizer, pre_tokenizer=pre_tokenizer)
    js = json.dumps(obj)
    return tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)


@pytest.mark.parametrize("norm", list(NORMALIZERS))
@pytest.mark.parametrize("pre", list(PRE_TOKENIZERS))
def test_encode_parity(unigram, norm, pre):
    hf, fp = _pair(unigram, NORMALIZERS[norm], PRE_TOKENIZERS[pre])
    for text in TEXTS + data.short_texts():
        assert diff(hf.encode(text), fp.encode(text)) is None, (pre, norm, text)


def test_corpus_parity(unigram, docs):
    hf, fp = _pair(unigram, NORMALIZERS["nfkc"], PRE_TOKENIZERS["whitespace_split"])
    sample = docs[1::4]
    bad = [(i, d) for i, doc in enumerate(sample) if (d := diff(hf.encode(doc), fp.encode(doc)))]
    assert not bad, f"{len(bad)}/{len(sample)} documents differ; first: {bad[:3]}"


def test_to_str_round_trip(unigram):
    _, fp = _pair(unigram, None, PRE_TOKENIZERS["whitespace"])
    js = fp.to_str()
    assert json.loads(js)["pre_tokenizer"] == PRE_TOKENIZERS["whitespace"]
    again, hf = fastprep.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    for text in TEXTS:
        assert diff(hf.encode(text), again.encode(text)) is None, text


@settings(max_examples=300)
@given(
    text=st.text(st.characters(codec="utf-8"), max_size=40),
    norm=st.sampled_from(list(NORMALIZERS)),
    pre=st.sampled_from(list(PRE_TOKENIZERS)),
)
def test_hyp_unicode_scripts(unigram, text, norm, pre):
    hf, fp = _pair(unigram, NORMALIZERS[norm], PRE_TOKENIZERS[pre])
    assert diff(hf.encode(text), fp.encode(text)) is None


@settings(max_examples=300)
@given(text=st.text(st.sampled_from(" a1-ー京かカ\u0301\U00030000мب"), max_size=30))
def test_hyp_script_boundaries(pieces, text):
    """Few chars of many scripts (space and unassigned ones Any), so cuts and Any runs abound."""
    want = [off for _, off in pre_tokenizers.UnicodeScripts().pre_tokenize_str(text)]
    assert pieces[1].encode(text).offsets == want
    assert pieces[0].encode(text).offsets == want
