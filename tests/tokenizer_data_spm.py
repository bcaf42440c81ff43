"""Tokenizer files of the SentencePiece families for the parity tests, all built offline:

- Mistral v1's SentencePiece BPE model (``tokenizer.model.v1``, shipped inside the ``mistral-common``
  package), converted to tokenizer.json by transformers' converters three ways: ``LlamaConverter``
  in its legacy form (Prepend + Replace normalizer, no pre-tokenizer), its non-legacy form
  (Metaspace pre-tokenizer, prepend_scheme "first") and ``SpmConverter.build_tokenizer_from_spm_proto``
  (the converter that follows the model's own normalizer spec: Replace regexes, Metaspace "always").

Conversions are cached like the other artifacts (see tokenizer_data.py), keyed by the model file,
the transformers version and the converting code.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import tempfile
import types
from pathlib import Path
from typing import Any

from . import tokenizer_data as data

MISTRAL_VARIANTS = ("legacy", "metaspace", "spm")


def mistral_model_file() -> Path:
    """Mistral v1's SentencePiece model, located through the installed mistral-common's RECORD."""
    dist = importlib.metadata.distribution("mistral-common")
    for f in dist.files or ():
        if f.name == "tokenizer.model.v1":
            return Path(str(dist.locate_file(f)))
    raise FileNotFoundError("mistral-common does not ship tokenizer.model.v1")


def _model_proto(path: Path) -> Any:
    from transformers.convert_slow_tokenizer import import_protobuf

    proto = import_protobuf().ModelProto()
    proto.ParseFromString(path.read_bytes())
    return proto


def _convert_llama(path: Path, legacy: bool) -> Any:
    """transformers' LlamaConverter on a stand-in for the slow LlamaTokenizer (transformers 5 no
    longer has one that loads the .model file). transformers 5.x's LlamaConverter hands its piece
    scores to ``SentencePieceExtractor.extract`` where a model class is expected; the extractor
    below restores the call as it was meant (vocab and merges of the BPE model)."""
    import sentencepiece as spm
    import transformers.convert_slow_tokenizer as conv

    class Extractor(conv.SentencePieceExtractor):  # type: ignore[misc]
        def extract(self, vocab_scores: Any = None, **kwargs: Any) -> tuple[dict[str, int], list[tuple[str, str]]]:
            out = super().extract(None)
            return out["vocab"], out["merges"]

    class Converter(conv.LlamaConverter):  # type: ignore[misc]
        SpmExtractor = Extractor

    sp = spm.SentencePieceProcessor(model_file=str(path))
    slow = types.SimpleNamespace(
        vocab_file=str(path), legacy=legacy, add_prefix_space=True, convert_ids_to_tokens=sp.id_to_piece
    )
    return Converter(slow).converted()


def _convert(variant: str) -> str:
    import transformers.convert_slow_tokenizer as conv
    from tokenizers import processors

    path = mistral_model_file()
    if variant == "spm":
        proto = _model_proto(path)
        vocab = {piece.piece: i for i, piece in enumerate(proto.pieces)}
        tok = conv.SpmConverter.build_tokenizer_from_spm_proto(proto, vocab)
    else:
        tok = _convert_llama(path, legacy=variant == "legacy")
    if variant == "legacy":
        # LlamaTokenizerFast's own post-processor: a BOS in front of each sequence.
        tok.post_processor = processors.TemplateProcessing(
            single="<s>:0 $A:0", pair="<s>:0 $A:0 <s>:1 $B:1", special_tokens=[("<s>", 1)]
        )
    return str(tok.to_str())


def mistral_tokenizer_json(variant: str) -> str:
    """Mistral v1 converted to tokenizer.json; ``variant`` is one of MISTRAL_VARIANTS."""
    import transformers

    if variant not in MISTRAL_VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {MISTRAL_VARIANTS}")
    model = mistral_model_file().read_bytes()
    code = inspect.getsource(_convert) + inspect.getsource(_convert_llama)
    key = data._digest("mistral", variant, hashlib.sha256(model).hexdigest(), transformers.__version__, code)
    return data._cached(f"mistral-v1-{variant}", key, lambda: _convert(variant))


def mistral_config(variant: str) -> dict[str, Any]:
    """The components of a converted file (for the tests that say which pipeline they cover)."""
    js = json.loads(mistral_tokenizer_json(variant))
    return {k: js[k] for k in ("normalizer", "pre_tokenizer", "decoder", "post_processor")}


# ---------------------------------------------------------------------------------------------- Unigram

UNIGRAM_KINDS = ("hf_unigram", "sp_unigram_spm", "sp_unigram_converter", "sp_unigram_plain")
_SP_UNIGRAM_ARGS = {
    # SentencePiece's defaults (nmt_nfkc charsmap, dummy prefix, extra whitespace removal) with
    # byte fallback: the Precompiled normalizer and <0xAB> tokens.
    "nfkc_bytes": {"byte_fallback": True},
    # No charsmap, whitespace kept, no byte fallback: unknown chars go to <unk>.
    "plain": {"normalization_rule_name": "identity", "remove_extra_whitespaces": False, "byte_fallback": False},
}


def _unigram_docs() -> list[str]:
    return data.corpus_documents(1_000_000)


def _train_sentencepiece(variant: str) -> bytes:
    import sentencepiece as spm

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        # SentencePiece reads lines; newlines inside documents become line breaks, which it never
        # sees at encode time anyway (they stay in the text and go through the charsmap).
        corpus.write_text("\n".join(_unigram_docs()), encoding="utf-8")
        spm.SentencePieceTrainer.train(
            input=str(corpus),
            model_prefix=str(Path(tmp) / "m"),
            model_type="unigram",
            vocab_size=4000,
            character_coverage=0.9995,
            num_threads=1,
            seed_sentencepiece_size=200_000,
            max_sentence_length=1 << 20,
            minloglevel=2,
            **_SP_UNIGRAM_ARGS[variant],
        )
        return (Path(tmp) / "m.model").read_bytes()


def sentencepiece_unigram_file(variant: str = "nfkc_bytes") -> Path:
    """A SentencePiece Unigram model trained here (SentencePieceTrainer, model_type=unigram) on
    1 MB of the corpus; the .model file, cached."""
    import base64

    import sentencepiece

    docs = _unigram_docs()
    code = inspect.getsource(_train_sentencepiece) + repr(_SP_UNIGRAM_ARGS)
    key = data._digest("sp-unigram", variant, sentencepiece.__version__, code)
    key = data._digest(key, *docs)
    text = data._cached(
        f"sp-unigram-{variant}",
        key,
        lambda: json.dumps({"model": base64.b64encode(_train_sentencepiece(variant)).decode()}),
    )
    path = data.cache_dir() / f"sp-unigram-{variant}-{key[:32]}.model"
    if not path.exists():
        path.write_bytes(base64.b64decode(json.loads(text)["model"]))
    return path


def _convert_unigram(kind: str) -> str:
    import sentencepiece as spm
    import transformers.convert_slow_tokenizer as conv

    path = sentencepiece_unigram_file("plain" if kind == "sp_unigram_plain" else "nfkc_bytes")
    proto = _model_proto(path)
    if kind == "sp_unigram_converter":
        # The classic SpmConverter (what T5/ALBERT-style converters build on): Precompiled, Strip,
        # Replace, Metaspace (split) and the Metaspace decoder.
        sp = spm.SentencePieceProcessor(model_file=str(path))
        slow = types.SimpleNamespace(vocab_file=str(path), add_prefix_space=True, convert_ids_to_tokens=sp.id_to_piece)
        return str(conv.SpmConverter(slow).converted().to_str())
    vocab = [(piece.piece, piece.score) for piece in proto.pieces]
    return str(conv.SpmConverter.build_tokenizer_from_spm_proto(proto, vocab).to_str())


def _train_hf_unigram() -> str:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(
        vocab_size=4000, special_tokens=["<unk>", "<s>", "</s>"], unk_token="<unk>", show_progress=False
    )
    docs = _unigram_docs()
    tok.train_from_iterator(docs, trainer=trainer, length=len(docs))
    return str(tok.to_str())


def unigram_tokenizer_json(kind: str) -> str:
    """A Unigram tokenizer.json; ``kind`` is one of UNIGRAM_KINDS: trained by tokenizers'
    UnigramTrainer (NFKC, Metaspace), or trained by SentencePiece and converted by transformers
    (``build_tokenizer_from_spm_proto`` with and without charsmap and byte fallback, or the classic
    ``SpmConverter``)."""
    import tokenizers
    import transformers

    if kind not in UNIGRAM_KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {UNIGRAM_KINDS}")
    if kind == "hf_unigram":
        key = data._digest("hf-unigram", tokenizers.__version__, inspect.getsource(_train_hf_unigram))
        return data._cached("hf-unigram", data._digest(key, *_unigram_docs()), _train_hf_unigram)
    model = sentencepiece_unigram_file("plain" if kind == "sp_unigram_plain" else "nfkc_bytes").read_bytes()
    code = inspect.getsource(_convert_unigram)
    key = data._digest(kind, hashlib.sha256(model).hexdigest(), transformers.__version__, code)
    return data._cached(kind, key, lambda: _convert_unigram(kind))
