"""The pipeline's parts as ``tokenizers`` objects, for ``Tokenizer(model)``, the ``normalizer``,
``pre_tokenizer``, ``model``, ``post_processor`` and ``decoder`` properties, and training.

fastprep's core is built from a tokenizer.json; ``tokenizers``' component objects serialize to
the same JSON (their pickled state). So a component set on a fastprep tokenizer is written into
the tokenizer.json and the core is rebuilt from it (added tokens are matched anew, as tokenizers
refreshes them); a component read back is made by ``tokenizers`` from that JSON. Reading one gives
a new object each time: changing its attributes does not change the tokenizer; set it back
(``tok.pre_tokenizer = pre``) to apply the change. Training runs ``tokenizers``' trainers.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import UnsupportedTokenizerError

COMPONENTS = ("normalizer", "pre_tokenizer", "model", "post_processor", "decoder")

_EMPTY_MODEL = {"type": "BPE", "vocab": {}, "merges": []}


def _tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError:
        raise ImportError(
            "this needs the `tokenizers` package (pip install tokenizers): fastprep builds a pipeline "
            "from tokenizers' component objects and trains with its trainers"
        ) from None
    return tokenizers


def _hf_class() -> Any:
    """``tokenizers.Tokenizer`` (a function, so that a test harness can supply the class)."""
    return _tokenizers().Tokenizer


def component_json(obj: Any, kind: str) -> Any:
    """The tokenizer.json section of a ``tokenizers`` component object (or None)."""
    if obj is None:
        if kind == "model":
            raise TypeError("a tokenizer needs a model; None is not one")
        return None
    getstate = getattr(obj, "__getstate__", None)
    mod = type(obj).__module__ or ""
    if getstate is None or not mod.startswith("tokenizers"):
        raise TypeError(
            f"{kind} must be a tokenizers.{kind.replace('_', '')}s object (e.g. "
            f"tokenizers.normalizers.NFKC()), got {type(obj).__name__}"
        )
    state = getstate()
    return json.loads(state if isinstance(state, (str, bytes, bytearray)) else bytes(state))


def tokenizer_json(model: Any) -> str:
    """The tokenizer.json of ``tokenizers.Tokenizer(model)``."""
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": None,
        "model": component_json(model, "model"),
    }
    return json.dumps(doc, ensure_ascii=False)


def with_component(doc_text: str, kind: str, value: Any) -> str:
    """``doc_text`` (a tokenizer.json) with its ``kind`` section replaced by ``value``'s."""
    doc = json.loads(doc_text)
    doc[kind] = component_json(value, kind)
    return json.dumps(doc, ensure_ascii=False)


def get_component(doc_text: str, kind: str) -> Any:
    """The ``kind`` section of a tokenizer.json as a ``tokenizers`` object (None when unset)."""
    doc = json.loads(doc_text)
    section = doc.get(kind)
    if section is None:
        return None
    # A small tokenizer.json holding just this part (the model's vocabulary is only read for
    # the model itself).
    small: dict[str, Any] = {
        "version": "1.0",
        "added_tokens": [],
        "model": doc["model"] if kind == "model" else _EMPTY_MODEL,
    }
    small[kind] = section
    cls = _hf_class()
    try:
        hf = cls.from_str(json.dumps(small, ensure_ascii=False))
    except Exception as e:
        raise UnsupportedTokenizerError(f"tokenizers cannot build this {kind} ({section.get('type')}): {e}") from e
    return getattr(hf, kind)


def train(doc_text: str, run: Any) -> str:
    """Trains with ``tokenizers``: loads ``doc_text`` there, calls ``run(hf_tokenizer)``, and
    returns the trained tokenizer.json."""
    hf = _hf_class().from_str(doc_text)
    run(hf)
    return str(hf.to_str())
