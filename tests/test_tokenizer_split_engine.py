"""Split regexes against HF tokenizers (Oniguruma): the PCRE2 fast path must cut every text where
Oniguruma does, for real patterns (tests/data/split_patterns.json, collected from public
tokenizer.json files and tokenizer libraries) and random ones from the same grammar, with every
behavior and invert, alone, in Sequences and fused with byte-level BPE.

fastprep's pieces are read through a WordLevel model whose vocabulary is only [UNK]: each piece
becomes one token whose offsets are the piece's, in both libraries.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastprep

from . import tokenizer_data as data
from .tokenizer_compare import diff

PATTERNS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "split_patterns.json").read_text(encoding="utf-8")
)["patterns"]
BEHAVIORS = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]

# Code points where Unicode tables or folding rules of regex engines part ways: White_Space edges
# (U+0085, U+180E, U+200B, U+FEFF, U+2028), Oniguruma's \w (², Ⅰ, Ⓐ, runic numbers), letters and
# digits new in Unicode 16 (Garay U+10D4A, Todhri U+105C0, Tulu-Tigalari U+11380, Sunuwar
# U+11BC0, Gurung Khema U+16100, Ol Onal U+1E5D0, Kirat Rai digit U+16D70), case folds (ſ, K
# Kelvin, ß, ﬆ, İ, ı), marks, format chars, private use and unassigned.
TRICKY = (
    "\u0085\u180e\u200b\ufeff\u2028\u2029\u00a0\u3000\u1680\u202f\u205f\x0b\x0c\x1c\x1f"
    "\u00b2\u00b9\u2160\u24b6\u16ee\u00aa\u00ba\u02b0\u0345\u05b0"
    "\U00010d4a\U000105c0\U00011380\U00011bc0\U00016100\U0001e5d0\U00016d70\U00011f50"
    "\u017f\u212a\u00df\ufb06\ufb00\u0130\u0131\u1e9e\u03c2\u0390"
    "\u0301\u0308\u20dd\u0e31\u0f71\u200c\u200d\u00ad\u2060\ue000\U000f0000\u0378\U0002a6e0"
)
APOSTROPHES = ["'s", "'S", "'ll", "'LL", "'re", "'ve", "'d", "'m", "'t", "’s", "ʼs", "'ſ", "'K", "'ﬆ", "'ß"]
WORDS = [
    "Hello",
    "WORLD",
    "naïve",
    "Ça",
    "l'été",
    "don't",
    "DON'T",
    "Привет",
    "Ελλάδα",
    "שָׁלוֹם",
    "مرحبا",
    "नमस्ते",
    "ภาษาไทย",
    "日本語",
    "カタカナ",
    "한국어",
    "ǅemal",
    "ﬁne",
    "https://x.io/a/b",
]
DIGITS = ["0", "42", "12345", "٠١٢٣", "०१२", "๑๒๓", "𝟘𝟙𝟚", "①②", "½", "Ⅻ", "²³", "፩፪"]
EMOJI = ["👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "❤️", "#️⃣", "🙂"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\n\n\n", "\r\r\n", " \n ", "   \n", "\u3000", "\u00a0 "]

TEXT = st.lists(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(TRICKY),
        st.sampled_from(APOSTROPHES + WORDS + DIGITS + EMOJI + SPACES),
        st.sampled_from(list(" \t\r\n'.,!?/-_0123456789aAsStT")),
    ),
    max_size=40,
).map("".join)


def _json(pre_tokenizer: dict[str, Any]) -> str:
    return json.dumps(
        {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [],
            "normalizer": None,
            "pre_tokenizer": pre_tokenizer,
            "post_processor": None,
            "decoder": None,
            "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
        }
    )


def _split(pattern: str, behavior: str, invert: bool) -> dict[str, Any]:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": invert}


@functools.lru_cache(maxsize=256)
def _pair(js: str) -> tuple[tokenizers.Tokenizer, fastprep.Tokenizer]:
    return tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)


def _same_pieces(js: str, text: str) -> None:
    hf, fp = _pair(js)
    want = hf.encode(text, add_special_tokens=False).offsets
    got = fp.encode(text, add_special_tokens=False).offsets
    assert got == want, f"{json.loads(js)['pre_tokenizer']} on {text!r}"


REAL = list(PATTERNS)


@pytest.mark.parametrize("entry", REAL, ids=[p["name"] for p in REAL])
def test_real_patterns_every_behavior(entry: dict[str, Any]) -> None:
    """Each collected pattern, with each behavior and invert, on fixed tricky texts."""
    texts = [
        "",
        " ",
        TRICKY,
        " ".join(WORDS + DIGITS + EMOJI),
        "".join(APOSTROPHES),
        "x" + "".join(SPACES) + "y\n",
        "I'M HERE, you're there; it'S 12345 o'clock\r\n\r\n  \tend  ",
    ]
    for behavior in BEHAVIORS:
        for invert in (False, True):
            js = _json(_split(entry["pattern"], behavior, invert))
            for text in texts:
                _same_pieces(js, text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, behavior=st.sampled_from(BEHAVIORS), invert=st.booleans(), data_=st.data())
def test_hyp_real_patterns(text: str, behavior: str, invert: bool, data_: st.DataObject) -> None:
    entry = data_.draw(st.sampled_from(REAL))
    _same_pieces(_json(_split(entry["pattern"], behavior, invert)), text)


@pytest.mark.parametrize("entry", REAL, ids=[p["name"] for p in REAL])
def test_hyp_texts_per_real_pattern(entry: dict[str, Any]) -> None:
    """Hypothesis texts for every collected pattern (Isolated, the shape of real files)."""
    js = _json(_split(entry["pattern"], "Isolated", False))

    @settings(max_examples=40, deadline=None, database=None)
    @given(text=TEXT)
    def check(text: str) -> None:
        _same_pieces(js, text)

    check()


# Random patterns from the grammar of the collected ones.
ATOMS = [
    "'s",
    "'t",
    "'re",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)",
    "(?:'[sS]|'[tT])",
    " ",
    r"\s",
    r"\S",
    r"\p{L}",
    r"\p{N}",
    r"\p{Lu}",
    r"\p{Ll}",
    r"\p{M}",
    r"\p{P}",
    r"\p{S}",
    r"\d",
    r"\w",
    r"\h",
    r"[^\s\p{L}\p{N}]",
    r"[^\r\n\p{L}\p{N}]",
    r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
    r"[\r\n]",
    r"[\r\n/]",
    "[0-9]",
    "[A-Za-z]",
    "[一-龥]",
    ".",
    r"\.",
    "/",
    "[.,!?…。，、]",
    r"[^(\s|[.,!?…])]",
    r"[-a-c[x-z]]",
    "[a-c-]",
    "[--/]",
]
QUANTS = [
    "",
    "",
    "?",
    "+",
    "*",
    "{1,3}",
    "{2}",
    "{2,}",
    "{,2}",
    "++",
    "*+",
    "?+",
    "+?",
    "*?",
    "{1,3}+",
    "{1,2}+?",
    "{2}?",
]
TAILS = ["", "", "", r"(?!\S)", r"(?=\s)", "$", r"\z"]
# Look-behinds of single chars and classes run on PCRE2; a quantified one stays on Oniguruma.
HEADS = [
    "",
    "",
    "",
    "",
    r"(?<=\p{L})",
    r"(?<!\s)",
    r"(?<=[a-z]|\d|\r\n)",
    r"(?<![\p{N}'])",
    r"(?i:(?<=s|k))",
    r"(?<=\s+)",
]


@st.composite
def random_patterns(draw: st.DrawFn) -> str:
    alts = []
    for _ in range(draw(st.integers(1, 4))):
        seq = "".join(
            draw(st.sampled_from(ATOMS)) + draw(st.sampled_from(QUANTS)) for _ in range(draw(st.integers(1, 3)))
        )
        alts.append(draw(st.sampled_from(HEADS)) + seq + draw(st.sampled_from(TAILS)))
    return "|".join(alts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=random_patterns(), text=TEXT, behavior=st.sampled_from(BEHAVIORS), invert=st.booleans())
def test_hyp_random_patterns(pattern: str, text: str, behavior: str, invert: bool) -> None:
    try:
        tokenizers.Regex(pattern)
    except Exception:  # a pattern Oniguruma refuses: fastprep must refuse it too
        with pytest.raises(fastprep.errors.FastprepError):
            fastprep.Tokenizer.from_str(_json(_split(pattern, behavior, invert)))
        return
    _same_pieces(_json(_split(pattern, behavior, invert)), text)


def test_sequences_of_pre_tokenizers() -> None:
    """Splits in Sequences with the other pre-tokenizers, as open models' files chain them."""
    p = {e["name"]: e["pattern"] for e in PATTERNS}
    deepseek3 = [p[f"DeepSeek-V3 split {i}"] for i in (1, 2, 3)]
    sequences = [
        [_split(x, "Isolated", False) for x in deepseek3]
        + [{"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}],
        [{"type": "Digits", "individual_digits": True}, _split(p["BLOOM"], "Isolated", False)],
        [{"type": "Punctuation", "behavior": "Contiguous"}, _split(p["Falcon digits"], "Isolated", False)],
        [_split(p["o200k (GPT-4o, gpt-oss)"], "Isolated", False), {"type": "Whitespace"}],
        [
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
            _split(r"\p{N}", "Isolated", False),
        ],
        [{"type": "WhitespaceSplit"}, _split(p["Tekken (Mistral Nemo, Pixtral)"], "MergedWithNext", True)],
    ]
    texts = ["", TRICKY, " ".join(WORDS + DIGITS + EMOJI + APOSTROPHES), "a  b\n\nc 123456 d'ss"]
    for seq in sequences:
        js = _json({"type": "Sequence", "pretokenizers": seq})
        for t in texts:
            _same_pieces(js, t)


@pytest.fixture(scope="module")
def bpe_json() -> dict[str, Any]:
    return json.loads(data.trained_bytelevel_bpe(add_prefix_space=False))


@pytest.mark.parametrize(
    "name",
    [
        "o200k (GPT-4o, gpt-oss)",
        "Tekken (Mistral Nemo, Pixtral)",
        "BLOOM",
        "word chars",
        "lookbehinds of two widths, negative",
        "variable-width lookbehind (onig fallback)",
    ],
)
def test_fused_byte_level_bpe(bpe_json: dict[str, Any], name: str) -> None:
    """An Isolated Split + ByteLevel(use_regex=False) + BPE runs the fused ids loop: ids and
    offsets equal tokenizers', on the corpus and on tricky text."""
    pattern = next(e["pattern"] for e in PATTERNS if e["name"] == name)
    s = _then_byte_level(bpe_json, _split(pattern, "Isolated", False), False)
    hf, fp = tokenizers.Tokenizer.from_str(s), fastprep.Tokenizer.from_str(s)
    assert fp.describe()["encode_path"] == "fused, regex split"
    docs = [*data.corpus_documents(200000)[:300], TRICKY, " ".join(WORDS + DIGITS + EMOJI + APOSTROPHES)]
    for d in docs:
        want = hf.encode(d, add_special_tokens=False)
        got = fp.encode(d, add_special_tokens=False)
        assert got.ids == want.ids, d[:80]
        assert got.offsets == want.offsets, d[:80]
    assert fp.count_tokens(docs) == [len(hf.encode(d, add_special_tokens=False).ids) for d in docs]


def _fused_sequence(bpe_json: dict[str, Any], patterns: list[str]) -> str:
    js = dict(bpe_json)
    js["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [
            *(_split(p, "Isolated", False) for p in patterns),
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ],
    }
    return json.dumps(js)


def test_fused_sequence_of_splits(bpe_json: dict[str, Any]) -> None:
    """DeepSeek-V3's three Isolated Splits + ByteLevel run the fused ids loop, each Split
    splitting the pieces of the one before: ids equal tokenizers'."""
    names = {e["name"]: e["pattern"] for e in PATTERNS}
    s = _fused_sequence(bpe_json, [names[f"DeepSeek-V3 split {i}"] for i in (1, 2, 3)])
    hf, fp = tokenizers.Tokenizer.from_str(s), fastprep.Tokenizer.from_str(s)
    assert fp.describe()["encode_path"] == "fused, regex split"
    docs = [*data.corpus_documents(200000)[:300], TRICKY, " ".join(WORDS + DIGITS + EMOJI + APOSTROPHES)]
    for d in docs:
        assert fp.encode(d, add_special_tokens=False).ids == hf.encode(d, add_special_tokens=False).ids, d[:80]
    assert fp.count_tokens(docs) == [len(hf.encode(d, add_special_tokens=False).ids) for d in docs]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, picked=st.lists(st.sampled_from(REAL), min_size=2, max_size=3))
def test_hyp_fused_sequences(bpe_json: dict[str, Any], text: str, picked: list[dict[str, Any]]) -> None:
    """Random Sequences of collected patterns (Isolated) + ByteLevel + BPE: the fused ids loop
    gives tokenizers' ids."""
    hf, fp = _pair(_fused_sequence(bpe_json, [e["pattern"] for e in picked]))
    assert fp.encode(text, add_special_tokens=False).ids == hf.encode(text, add_special_tokens=False).ids


CLIP_PATTERN = r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"


def _then_byte_level(bpe_json: dict[str, Any], split: dict[str, Any], use_regex: bool) -> str:
    js = dict(bpe_json)
    js["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [
            split,
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex},
        ],
    }
    return json.dumps(js)


@pytest.mark.parametrize("use_regex", [False, True])
@pytest.mark.parametrize("split", ["clip-removed-inverted", "o200k-isolated"])
def test_fused_split_shapes(bpe_json: dict[str, Any], split: str, use_regex: bool) -> None:
    """Removed + inverted Splits (the matches alone, CLIP's) and a last ByteLevel with its own
    GPT-2 split (use_regex) also run the fused ids loop: ids equal tokenizers'."""
    names = {e["name"]: e["pattern"] for e in PATTERNS}
    first = (
        _split(CLIP_PATTERN, "Removed", True)
        if split.startswith("clip")
        else _split(names["o200k (GPT-4o, gpt-oss)"], "Isolated", False)
    )
    hf, fp = _pair(_then_byte_level(bpe_json, first, use_regex))
    assert fp.describe()["encode_path"] == "fused, regex split", fp.describe()
    docs = [*data.corpus_documents(200000)[:200], TRICKY, " ".join(WORDS + DIGITS + EMOJI + APOSTROPHES)]
    for d in docs:
        assert fp.encode(d, add_special_tokens=False).ids == hf.encode(d, add_special_tokens=False).ids, d[:80]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, use_regex=st.booleans())
def test_hyp_fused_removed_inverted(bpe_json: dict[str, Any], text: str, use_regex: bool) -> None:
    hf, fp = _pair(_then_byte_level(bpe_json, _split(CLIP_PATTERN, "Removed", True), use_regex))
    assert fp.encode(text, add_special_tokens=False).ids == hf.encode(text, add_special_tokens=False).ids


NORMALIZERS = [
    {"type": "NFC"},  # Qwen2 / Qwen3's files
    {"type": "NFKC"},
    {"type": "NFD"},
    {"type": "Lowercase"},
    {"type": "Sequence", "normalizers": []},  # DeepSeek-V4's file
    {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
    {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "Lowercase"}]},
]


def _qwen_like(bpe_json: dict[str, Any], normalizer: dict[str, Any]) -> str:
    names = {e["name"]: e["pattern"] for e in PATTERNS}
    js = json.loads(_fused_sequence(bpe_json, [names["Qwen2 / Qwen3"]]))
    js["normalizer"] = normalizer
    return json.dumps(js)


@pytest.mark.parametrize("normalizer", NORMALIZERS, ids=lambda n: json.dumps(n))
def test_fused_after_a_normalizer(bpe_json: dict[str, Any], normalizer: dict[str, Any]) -> None:
    """A normalizer in front of the Splits keeps the fused ids loop (it runs on the normalized
    text); ids equal tokenizers' on text in and out of the normal form (NFD-decomposed, combining
    marks in every order, compatibility chars)."""
    hf, fp = _pair(_qwen_like(bpe_json, normalizer))
    assert fp.describe()["encode_path"].startswith("fused"), fp.describe()
    docs = data.corpus_documents(200000)[:200]
    odd = [
        "cafe\u0301 caf\u00e9 \u212bngstr\u00f6m \ufb01ve \u2460 \uff21BC",
        "a\u0316\u0301 a\u0301\u0316 e\u0301\u0300 \u1100\u1161\u11a8 \u30ab\u3099",
        "\u0958 \u0915\u093c \u03b9\u0308\u0301 \u0439 \u0438\u0306 \uf900 \U0002f800",
    ]
    texts = [*docs, *(unicodedata.normalize("NFD", d) for d in docs[:50]), *odd, TRICKY]
    for t in texts:
        assert fp.encode(t, add_special_tokens=False).ids == hf.encode(t, add_special_tokens=False).ids, t[:80]
    assert fp.count_tokens(texts) == [len(hf.encode(t, add_special_tokens=False).ids) for t in texts]
    # Offsets too (the full encode), where the normal-form check leaves a text alone or not.
    for t in [*odd, *texts[:20], *texts[200:210]]:
        assert diff(hf.encode(t), fp.encode(t)) is None, (t[:60], diff(hf.encode(t), fp.encode(t)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, normalizer=st.sampled_from(NORMALIZERS[:3]))
def test_hyp_fused_after_a_normalizer(bpe_json: dict[str, Any], text: str, normalizer: dict[str, Any]) -> None:
    hf, fp = _pair(_qwen_like(bpe_json, normalizer))
    assert fp.encode(text, add_special_tokens=False).ids == hf.encode(text, add_special_tokens=False).ids


def test_describe_names_the_engine() -> None:
    def engine(pattern: str) -> str:
        fp = fastprep.Tokenizer.from_str(_json(_split(pattern, "Isolated", False)))
        [item] = fp.describe()["pre_tokenizers"]
        return str(item["engine"])

    names = {e["name"]: e["pattern"] for e in PATTERNS}
    assert engine(names["o200k (GPT-4o, gpt-oss)"]) == "dfa, class bytes"
    assert engine(names["Tekken (Mistral Nemo, Pixtral)"]) == "dfa, class bytes"
    assert engine(names["gpt2"]) == "hand-written gpt2"
    assert engine(names["cl100k / Llama-3 / GLM-4 / OLMo-2 (HF tokenizer.json)"]) == "hand-written cl100k"
    assert engine(names["lookbehind"]) == "pcre2-jit, class bytes"
    for fallback in ("variable-width lookbehind (onig fallback)", "backreference (onig fallback)"):
        assert engine(names[fallback]).startswith("onig fallback ("), fallback
    # Every other collected pattern runs on a fast engine.
    for e in PATTERNS:
        if "fallback" not in e["name"]:
            assert not engine(e["pattern"]).startswith("onig"), e["name"]


def test_o200k_file_matches_tiktoken_and_tokenizers() -> None:
    """The real o200k_base vocabulary (GPT-4o, gpt-oss) through from_tiktoken: ids equal to
    tiktoken's and to tokenizers' (on fastprep's own tokenizer.json of it), on the corpus."""
    from . import tokenizer_data_o200k as o200k

    path = o200k.o200k_file()
    if path is None:
        pytest.skip("o200k_base.tiktoken is not here: install quicktok-v1 or set FASTPREP_O200K_TIKTOKEN")
    fp = fastprep.Tokenizer.from_tiktoken(path, pattern=o200k.O200K_PATTERN, special_tokens=o200k.O200K_SPECIAL_TOKENS)
    assert fp.describe()["pre_tokenizers"][0]["engine"] == "dfa, class bytes"
    assert fp.describe()["encode_path"] == "fused, regex split"
    hf = tokenizers.Tokenizer.from_str(fp.to_str())
    tt = o200k.tiktoken_o200k()
    docs = [*data.corpus_documents(300000), TRICKY, " ".join(WORDS + DIGITS + EMOJI + APOSTROPHES)]
    for d in docs:
        want = tt.encode_ordinary(d)
        assert fp.encode(d, add_special_tokens=False).ids == want, d[:80]
        assert hf.encode(d, add_special_tokens=False).ids == want, d[:80]
