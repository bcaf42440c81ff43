"""Local stand-ins for the Hub models transformers' tokenizer tests load by name.

The Hub is not reachable from the machines these tests run on, so each name is served from a
Hugging Face cache of its own (``HF_HUB_OFFLINE=1``) holding local files of the same kind:
all-MiniLM-L6-v2's BERT tokenizer (uncased WordPiece with bert-base-uncased's vocabulary) for
google-bert/bert-base-uncased, a byte-level BPE trained here for GPT-2, RoBERTa and Qwen2 (each
class builds its own pipeline around it), Mistral v1's
SentencePiece BPE converted as LlamaTokenizer builds it for a Llama tokenizer, a SentencePiece
Unigram trained here for T5, and a Unigram and a WordLevel tokenizer.json for
PreTrainedTokenizerFast. Their ids differ from the real models', so a test that asserts a real
model's exact ids fails with either backend alike.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = "0" * 40

# The Hub names served (cases.py tests each).
BERT = "google-bert/bert-base-uncased"
GPT2 = "openai-community/gpt2"
LLAMA = "hf-internal-testing/llama-tokenizer"
ROBERTA = "FacebookAI/roberta-base"
QWEN2 = "Qwen/Qwen2-0.5B"
T5 = "google-t5/t5-base"
UNIGRAM = "robot-test/dummy-tokenizer-fast"
WORDLEVEL = "robot-test/dummy-tokenizer-wordlevel"


def _files() -> dict[str, dict[str, str | bytes | Path]]:
    """Each stand-in model's files: text, bytes, or a path to copy."""
    # fastprep's test data helpers (this process never imports upstream's ``tests`` package:
    # the upstream tests run in a pytest subprocess of their own)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests import tokenizer_data as data
    from tests import tokenizer_data_spm as spm
    from tests import tokenizer_data_wordpiece as wp

    bert_dir = wp.bert_file().parent
    gpt2 = {
        "tokenizer_class": "GPT2Tokenizer",
        "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>",
        "add_prefix_space": False,
        "model_max_length": 1024,
    }
    llama = {
        "tokenizer_class": "LlamaTokenizer",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "legacy": True,
        "add_bos_token": True,
        "add_eos_token": False,
        "model_max_length": 2048,
    }
    fast = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 512}
    return {
        BERT: {
            name: bert_dir / name
            for name in (
                "config.json",
                "tokenizer.json",
                "tokenizer_config.json",
                "vocab.txt",
                "special_tokens_map.json",
            )
        },
        GPT2: {
            "tokenizer.json": data.trained_bytelevel_bpe(add_prefix_space=False),
            "tokenizer_config.json": json.dumps(gpt2),
            "config.json": json.dumps({"model_type": "gpt2"}),
        },
        ROBERTA: {
            # RobertaTokenizer adds <s>, </s>, <pad>, <mask> (lstrip) and <unk> to the BPE
            "tokenizer.json": data.trained_bytelevel_bpe(add_prefix_space=True),
            "tokenizer_config.json": json.dumps({"tokenizer_class": "RobertaTokenizer", "model_max_length": 512}),
            "config.json": json.dumps({"model_type": "roberta"}),
        },
        QWEN2: {
            # Qwen2Tokenizer puts its own Split pattern (single digits) before ByteLevel
            "tokenizer.json": data.trained_bytelevel_bpe(add_prefix_space=False),
            "tokenizer_config.json": json.dumps(
                {
                    "tokenizer_class": "Qwen2Tokenizer",
                    "eos_token": "<|endoftext|>",
                    "pad_token": "<|endoftext|>",
                    "model_max_length": 32768,
                }
            ),
            "config.json": json.dumps({"model_type": "qwen2"}),
        },
        LLAMA: {
            "tokenizer.json": spm.mistral_tokenizer_json("legacy"),
            "tokenizer_config.json": json.dumps(llama),
            "config.json": json.dumps({"model_type": "llama"}),
        },
        T5: {
            "spiece.model": spm.sentencepiece_unigram_file("nfkc_bytes"),
            "tokenizer_config.json": json.dumps({"tokenizer_class": "T5Tokenizer", "model_max_length": 512}),
            "config.json": json.dumps({"model_type": "t5"}),
        },
        UNIGRAM: {
            "tokenizer.json": spm.unigram_tokenizer_json("sp_unigram_converter"),
            "tokenizer_config.json": json.dumps(fast | {"unk_token": "<unk>", "pad_token": "<pad>"}),
            # AutoTokenizer reads a config.json first; these repositories' name no model type
            "config.json": "{}",
        },
        WORDLEVEL: {
            "tokenizer.json": wp.trained_wordlevel(),
            "tokenizer_config.json": json.dumps(
                fast | {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]"}
            ),
            "config.json": "{}",
        },
    }


def build(dest: Path) -> Path:
    """Writes the stand-ins as a Hugging Face cache under ``dest``; returns the hub folder."""
    hub = dest / "hub"
    for name, files in _files().items():
        repo = hub / ("models--" + name.replace("/", "--"))
        snap = repo / "snapshots" / SNAPSHOT
        snap.mkdir(parents=True)
        for fname, content in files.items():
            if isinstance(content, Path):
                shutil.copyfile(content, snap / fname)
            elif isinstance(content, bytes):
                (snap / fname).write_bytes(content)
            else:
                (snap / fname).write_text(content, encoding="utf-8")
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(SNAPSHOT)
    return hub
