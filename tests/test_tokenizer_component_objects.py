"""Pipelines built from ``tokenizers``' component objects: ``Tokenizer(model)``, the
``normalizer``/``pre_tokenizer``/``model``/``post_processor``/``decoder`` properties (get and
set), training through tokenizers' trainers, and every component class of the installed
tokenizers release: each one loads and gives tokenizers' results, or is refused with
UnsupportedTokenizerError and a reason."""

from __future__ import annotations

import base64
import json

import pytest
import tokenizers
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

import fastprep
from fastprep import Tokenizer
from fastprep.errors import UnsupportedTokenizerError

from . import tokenizer_data as data
from . import tokenizer_data_spm as spm_data
from .tokenizer_compare import diff

TEXTS = [
    "Hello  World! ﬁne naïve café 123-456 kuća <s> [CLS] 我今天 ✓",
    "  leading and trailing spaces  ",
    "",
    "ALL CAPS, tabs\tand\nnew lines",
]


def _members(mod, base) -> list[str]:
    return sorted(
        n
        for n in dir(mod)
        if not n.startswith("_") and isinstance(getattr(mod, n), type) and issubclass(getattr(mod, n), base)
        if getattr(mod, n) is not base
    )


# One instance of every component class (arguments where the class needs some).
NORMALIZERS = {
    "BertNormalizer": normalizers.BertNormalizer(),
    "ByteLevel": normalizers.ByteLevel(),
    "Lowercase": normalizers.Lowercase(),
    "NFC": normalizers.NFC(),
    "NFD": normalizers.NFD(),
    "NFKC": normalizers.NFKC(),
    "NFKD": normalizers.NFKD(),
    "Nmt": normalizers.Nmt(),
    "Precompiled": None,  # built on first use (see _precompiled): it needs a trained charsmap
    "Prepend": normalizers.Prepend("▁"),
    "Replace": normalizers.Replace(" ", "_"),
    "Sequence": normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]),
    "Strip": normalizers.Strip(),
    "StripAccents": normalizers.StripAccents(),
}
PRE_TOKENIZERS = {
    "BertPreTokenizer": pre_tokenizers.BertPreTokenizer(),
    "ByteLevel": pre_tokenizers.ByteLevel(),
    "CharDelimiterSplit": pre_tokenizers.CharDelimiterSplit(" "),
    "Digits": pre_tokenizers.Digits(individual_digits=True),
    "FixedLength": pre_tokenizers.FixedLength(3),
    "Metaspace": pre_tokenizers.Metaspace(),
    "Punctuation": pre_tokenizers.Punctuation(),
    "Sequence": pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Digits()]),
    "Split": pre_tokenizers.Split(" ", "removed"),
    "UnicodeScripts": pre_tokenizers.UnicodeScripts(),
    "Whitespace": pre_tokenizers.Whitespace(),
    "WhitespaceSplit": pre_tokenizers.WhitespaceSplit(),
}
PROCESSORS = {
    "BertProcessing": processors.BertProcessing(("[SEP]", 1), ("[CLS]", 0)),
    "ByteLevel": processors.ByteLevel(),
    "RobertaProcessing": processors.RobertaProcessing(("</s>", 1), ("<s>", 0)),
    "Sequence": processors.Sequence([processors.ByteLevel(), processors.BertProcessing(("[SEP]", 1), ("[CLS]", 0))]),
    "TemplateProcessing": processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 0), ("[SEP]", 1)]
    ),
}
DECODERS = {
    "BPEDecoder": decoders.BPEDecoder(),
    "ByteFallback": decoders.ByteFallback(),
    "ByteLevel": decoders.ByteLevel(),
    "CTC": decoders.CTC(),
    "Fuse": decoders.Fuse(),
    "Metaspace": decoders.Metaspace(),
    "Replace": decoders.Replace("_", " "),
    "Sequence": decoders.Sequence([decoders.Replace("_", " "), decoders.Fuse()]),
    "Strip": decoders.Strip(" ", 1, 0),
    "WordPiece": decoders.WordPiece(),
}
KINDS = {
    "normalizer": (normalizers, normalizers.Normalizer, NORMALIZERS),
    "pre_tokenizer": (pre_tokenizers, pre_tokenizers.PreTokenizer, PRE_TOKENIZERS),
    "post_processor": (processors, processors.PostProcessor, PROCESSORS),
    "decoder": (decoders, decoders.Decoder, DECODERS),
}


def _precompiled() -> normalizers.Precompiled:
    """The charsmap of a SentencePiece model trained here (nmt_nfkc), as transformers converts it."""
    doc = json.loads(spm_data.unigram_tokenizer_json("sp_unigram_converter"))
    parts = doc["normalizer"].get("normalizers", [doc["normalizer"]])
    charsmap = next(p for p in parts if p["type"] == "Precompiled")["precompiled_charsmap"]
    return normalizers.Precompiled(base64.b64decode(charsmap))


# What fastprep refuses, and why (the reason must appear in the error).
REFUSED: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("kind", KINDS)
def test_every_component_class_is_covered(kind):
    mod, base, table = KINDS[kind]
    assert _members(mod, base) == sorted(table)


@pytest.fixture(scope="module")
def base_json():
    return data.trained_bytelevel_bpe(add_prefix_space=False, vocab_size=4000)


def _pipelines(base_json: str, kind: str, component) -> tuple[tokenizers.Tokenizer, Tokenizer]:
    hf, fp = tokenizers.Tokenizer.from_str(base_json), Tokenizer.from_str(base_json)
    for tok in (hf, fp):
        tok.add_special_tokens(["[CLS]", "[SEP]", "<s>", "</s>"])
        setattr(tok, kind, component)
    return hf, fp


@pytest.mark.parametrize(("kind", "name"), [(k, n) for k, (_, _, t) in KINDS.items() for n in t])
def test_component_loads_and_matches_tokenizers(base_json, kind, name):
    component = KINDS[kind][2][name] or _precompiled()
    if (kind, name) in REFUSED:
        with pytest.raises(UnsupportedTokenizerError, match=REFUSED[kind, name]):
            _pipelines(base_json, kind, component)
        return
    hf, fp = _pipelines(base_json, kind, component)
    got = getattr(fp, kind)
    assert type(got) is type(component) and got.__getstate__() == component.__getstate__()
    for text in TEXTS:
        for args in [(text,), (text, "and a pair")]:
            ref = hf.encode(*args)
            assert diff(ref, fp.encode(*args)) is None, (args, diff(ref, fp.encode(*args)))
            assert fp.decode(ref.ids, False) == hf.decode(ref.ids, False)
            assert fp.decode(ref.ids) == hf.decode(ref.ids)


@pytest.mark.parametrize("model", ["BPE", "WordPiece", "WordLevel", "Unigram"])
def test_tokenizer_from_every_model(model):
    m = {
        "BPE": models.BPE({"a": 0, "b": 1, "ab": 2, "[UNK]": 3}, [("a", "b")], unk_token="[UNK]"),
        "WordPiece": models.WordPiece({"a": 0, "##b": 1, "[UNK]": 2}, unk_token="[UNK]"),
        "WordLevel": models.WordLevel({"a": 0, "ab": 1, "[UNK]": 2}, unk_token="[UNK]"),
        "Unigram": models.Unigram([("<unk>", 0.0), ("a", -1.0), ("b", -1.5), ("ab", -1.0)], 0),
    }[model]
    hf, fp = tokenizers.Tokenizer(m), Tokenizer(m)
    for tok in (hf, fp):
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    assert type(fp.model) is type(m)
    for text in ["ab a b", "abc ba", ""]:
        assert diff(hf.encode(text), fp.encode(text)) is None


def test_components_read_back_none_and_set_to_none():
    fp = Tokenizer(models.BPE())
    assert fp.normalizer is None and fp.pre_tokenizer is None
    assert fp.post_processor is None and fp.decoder is None
    assert isinstance(fp.model, models.Model)
    fp.normalizer = normalizers.Strip()
    assert isinstance(fp.normalizer, normalizers.Strip)
    fp.normalizer = None
    assert fp.normalizer is None
    fp.pre_tokenizer = pre_tokenizers.Metaspace()
    fp.pre_tokenizer = None
    assert fp.pre_tokenizer is None
    with pytest.raises(TypeError, match="normalizer must be"):
        fp.normalizer = "lowercase"
    with pytest.raises(TypeError, match="needs a model"):
        fp.model = None


def test_setting_a_component_keeps_settings_and_refreshes_added_tokens():
    hf, fp = tokenizers.Tokenizer(models.BPE()), Tokenizer(models.BPE())
    for tok in (hf, fp):
        tok.decoder = decoders.ByteLevel()
        tok.add_tokens([tokenizers.AddedToken("kuća"), tokenizers.AddedToken("međa")])
        tok.enable_padding(length=8)
        tok.normalizer = normalizers.ByteLevel()
    assert fp.padding == hf.padding
    for text in ["kuća međa", "Začnimo kuća"]:
        ref = hf.encode(text)
        assert diff(ref, fp.encode(text)) is None
        assert fp.decode(ref.ids, False) == hf.decode(ref.ids, False)
    for tok in (hf, fp):
        tok.normalizer = None
    assert diff(hf.encode("kuća međa"), fp.encode("kuća međa")) is None
    assert fp.decode(fp.encode("kuća međa").ids, False) == hf.decode(hf.encode("kuća međa").ids, False)


def test_added_tokens_with_byte_level_normalizer_decode_to_their_content():
    hf, fp = tokenizers.Tokenizer(models.BPE()), Tokenizer(models.BPE())
    for tok in (hf, fp):
        tok.normalizer = normalizers.ByteLevel()
        tok.decoder = decoders.ByteLevel()
        tok.add_tokens(
            [tokenizers.AddedToken("Začnimo", normalized=False, special=True), tokenizers.AddedToken("kuća")]
        )
    ref, got = hf.encode("Začnimokuća"), fp.encode("Začnimokuća")
    assert diff(ref, got) is None
    assert fp.decode(got.ids, False) == hf.decode(ref.ids, False)
    assert fp.get_added_tokens_decoder()[got.ids[0]].content == "Začnimo"


@pytest.mark.parametrize("how", ["train", "train_from_iterator"])
def test_training_goes_through_tokenizers(tmp_path, how):
    docs = ["A first sentence", "Another sentence", "And a last one"] * 20
    hf, fp = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]")), Tokenizer(models.BPE(unk_token="[UNK]"))
    for tok in (hf, fp):
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=60, special_tokens=["[UNK]"], show_progress=False)
    if how == "train":
        path = tmp_path / "docs.txt"
        path.write_text("\n".join(docs))
        hf.train([str(path)], trainer)
        fp.train([str(path)], trainer)
    else:
        hf.train_from_iterator(docs, trainer)
        fp.train_from_iterator(iter(docs), trainer)
    assert fp.get_vocab() == hf.get_vocab()
    assert diff(hf.encode("A last sentence, another one"), fp.encode("A last sentence, another one")) is None


def test_components_without_tokenizers_say_what_is_needed(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tokenizers(name, *args, **kwargs):
        if name == "tokenizers" or name.startswith("tokenizers."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    fp = fastprep.Tokenizer.from_str(data.trained_bytelevel_bpe(add_prefix_space=False, vocab_size=4000))
    monkeypatch.setattr(builtins, "__import__", no_tokenizers)
    assert fp.normalizer is None  # an unset part needs nothing
    with pytest.raises(ImportError, match="pip install tokenizers"):
        _ = fp.pre_tokenizer
    with pytest.raises(ImportError, match="pip install tokenizers"):
        fp.train_from_iterator(["text"])
