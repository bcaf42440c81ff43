"""Each BERT-family component, with every option, against HF tokenizers on the same tokenizer.json:
the BertNormalizer (24 option combinations), StripAccents and Nmt; the BertPreTokenizer and
CharDelimiterSplit; the WordPiece model's options (prefix, max_input_chars_per_word, a missing unk
token, behind a ByteLevel pre-tokenizer); the WordPiece decoder (prefix, cleanup). Offsets check
the normalizers' alignments; decode of random id sequences checks the decoder's cleanup."""

from __future__ import annotations

import itertools
import json
import random

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import fastprep

from . import tokenizer_data as data
from . import tokenizer_data_wordpiece as wp
from .tokenizer_compare import diff

BERT_NORMALIZERS = {
    f"bert_c{int(c)}_z{int(z)}_s{s}_l{int(lo)}": {
        "type": "BertNormalizer",
        "clean_text": c,
        "handle_chinese_chars": z,
        "strip_accents": s,
        "lowercase": lo,
    }
    for c, z, s, lo in itertools.product((True, False), (True, False), (None, True, False), (True, False))
}
NORMALIZERS = {
    **BERT_NORMALIZERS,
    "strip_accents": {"type": "StripAccents"},
    "nfd_strip_accents": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]},
    "nfkd_strip_lower": {
        "type": "Sequence",
        "normalizers": [{"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"}],
    },
    "nmt": {"type": "Nmt"},
    "nmt_bert": {"type": "Sequence", "normalizers": [{"type": "Nmt"}, BERT_NORMALIZERS["bert_c1_z1_sNone_l1"]]},
}

PRE_TOKENIZERS = {
    "bert": {"type": "BertPreTokenizer"},
    "char_space": {"type": "CharDelimiterSplit", "delimiter": " "},
    "char_dash": {"type": "CharDelimiterSplit", "delimiter": "-"},
    "char_multibyte": {"type": "CharDelimiterSplit", "delimiter": "é"},
    "bert_digits": {
        "type": "Sequence",
        "pretokenizers": [{"type": "BertPreTokenizer"}, {"type": "Digits", "individual_digits": True}],
    },
}

TEXTS = [
    "Hello, World! It's 2024-05-17 -- ok?",
    "  leading and trailing  ",
    "ＡＢＣ ﬁne café Café CAFÉ e\u0301 naïve Ångström",
    "日本語のテキスト、句読点。「引用」中文字符𠀀𪜀",
    "tabs\tand\r\nCRLF\n\nnewlines\x0b\x0c\x85\u2028",
    "ctl\x00\x01\x07\x1b\x7f\u200b\u200d\ufeff\ufffd\U000e0001x",
    "x1y22z333 4444 ½ ² ٣",
    "emoji 👨‍👩‍👧‍👦 👍🏽!",
    "İstanbul ΣΑΣ ß ẞ ǅ \u0130\u0049",
    "Tiếng Việt có dấu: ậ ử ỡ, ำน\u0e49ำ",
    "한국어 텍스트와 カタカナ",
    "$100 + 5% = <tag> ^_^ ~`|\\",
    "a-b--c---d é-é",
    "",
    "   ",
    "supercalifragilisticexpialidocious" * 4,
]


@pytest.fixture(scope="module")
def bert_base() -> dict:
    return json.loads(wp.bert_tokenizer_json())


@pytest.fixture(scope="module")
def bytelevel_base() -> dict:
    return json.loads(data.trained_bytelevel_bpe(add_prefix_space=False))


def _pair(base: dict, **parts):
    obj = dict(base, truncation=None, padding=None)
    obj.update(parts)
    js = json.dumps(obj)
    return tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)


def _same(hf, fp, texts=TEXTS):
    for text in texts:
        assert diff(hf.encode(text), fp.encode(text)) is None, text
        ids = hf.encode(text).ids
        assert fp.decode(ids) == hf.decode(ids), text


@pytest.mark.parametrize("norm", list(NORMALIZERS))
def test_normalizers_with_wordpiece(bert_base, norm):
    _same(*_pair(bert_base, normalizer=NORMALIZERS[norm]))


@pytest.mark.parametrize("norm", list(NORMALIZERS))
def test_normalizers_with_byte_level(bytelevel_base, norm):
    """Byte-level tokens cut chars into bytes, so every alignment byte shows in the offsets."""
    pre = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "BertPreTokenizer"},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ],
    }
    _same(*_pair(bytelevel_base, normalizer=NORMALIZERS[norm], pre_tokenizer=pre))


@pytest.mark.parametrize("pre", list(PRE_TOKENIZERS))
def test_pre_tokenizers(bert_base, pre):
    _same(*_pair(bert_base, pre_tokenizer=PRE_TOKENIZERS[pre]))


@pytest.mark.parametrize(
    "model_opts",
    [
        {"max_input_chars_per_word": 5},
        {"max_input_chars_per_word": 1},
        {"max_input_chars_per_word": 0},
        {"continuing_subword_prefix": "@@"},
        {"continuing_subword_prefix": ""},
    ],
    ids=["max5", "max1", "max0", "prefix_at", "prefix_empty"],
)
def test_wordpiece_model_options(bert_base, model_opts):
    _same(*_pair(bert_base, model=dict(bert_base["model"], **model_opts)))


def test_wordpiece_missing_unk_raises_like_hf(bert_base):
    vocab = {k: v for k, v in bert_base["model"]["vocab"].items() if k != "[UNK]"}
    hf, fp = _pair(bert_base, model=dict(bert_base["model"], vocab=vocab), added_tokens=[])
    assert diff(hf.encode("hello world"), fp.encode("hello world")) is None
    with pytest.raises(Exception, match="Missing"):
        hf.encode("hello ⟁⟁⟁")
    with pytest.raises(fastprep.TokenizeError, match=r"Missing \[UNK\]"):
        fp.encode("hello ⟁⟁⟁")


def test_wordlevel_missing_unk_raises_like_hf():
    obj = json.loads(wp.trained_wordlevel())
    obj["model"]["unk_token"] = "<nope>"
    js = json.dumps(obj)
    hf, fp = tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)
    assert diff(hf.encode("the"), fp.encode("the")) is None
    with pytest.raises(Exception, match="Missing"):
        hf.encode("qqqqzzzz")
    with pytest.raises(fastprep.TokenizeError, match="Missing <nope>"):
        fp.encode("qqqqzzzz")


def test_wordpiece_behind_byte_level(bert_base):
    pre = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    _same(*_pair(bert_base, pre_tokenizer=pre, normalizer=None))


DECODERS = {
    "wordpiece": {"type": "WordPiece", "prefix": "##", "cleanup": True},
    "wordpiece_no_cleanup": {"type": "WordPiece", "prefix": "##", "cleanup": False},
    "wordpiece_other_prefix": {"type": "WordPiece", "prefix": "un", "cleanup": True},
    "sequence": {
        "type": "Sequence",
        "decoders": [
            {"type": "WordPiece", "prefix": "##", "cleanup": True},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ],
    },
    "none": None,
}


@pytest.mark.parametrize("dec", list(DECODERS))
def test_decoders_on_random_ids(bert_base, dec):
    hf, fp = _pair(bert_base, decoder=DECODERS[dec])
    vocab = hf.get_vocab()
    # Punctuation, contraction pieces, "##" pieces and specials: what the cleanup rewrites.
    picks = [vocab[t] for t in (".", "?", "!", ",", "'", "n", "t", "m", "s", "ve", "re", "do", "not", "[CLS]", "[SEP]")]
    picks += [i for t, i in vocab.items() if t.startswith("##")][:200]
    rng = random.Random(7)
    for n in range(300):
        ids = [rng.choice(picks) if rng.random() < 0.6 else rng.randrange(len(vocab)) for _ in range(n % 40)]
        for skip in (True, False):
            assert fp.decode(ids, skip_special_tokens=skip) == hf.decode(ids, skip_special_tokens=skip), ids
    for text in ["i do not know , he ' s here . isn ' t it ?", "you ' re we ' ve i ' m don ' t"]:
        ids = hf.encode(text).ids
        assert fp.decode(ids) == hf.decode(ids)


@settings(max_examples=200)
@given(
    text=st.text(st.characters(codec="utf-8"), max_size=40),
    norm=st.sampled_from(list(NORMALIZERS)),
    pre=st.sampled_from(list(PRE_TOKENIZERS)),
)
def test_hyp_components(bert_base, text, norm, pre):
    hf, fp = _pair(bert_base, normalizer=NORMALIZERS[norm], pre_tokenizer=PRE_TOKENIZERS[pre])
    assert diff(hf.encode(text), fp.encode(text)) is None
