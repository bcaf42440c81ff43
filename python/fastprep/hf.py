"""transformers on fastprep: a fast tokenizer of ``transformers`` whose tokenization runs on
fastprep's Rust core.

``transformers``' fast tokenizers (``PreTrainedTokenizerFast``, ``TokenizersBackend`` in
transformers 5) do their work through one object, ``tok._tokenizer``, a ``tokenizers.Tokenizer``.
``patch(tok)`` puts a fastprep backend in its place: encoding, batches, padding, truncation and
decoding go to ``fastprep.Tokenizer`` (same results, GIL released, parallel batches); everything
else transformers reads or changes there (``post_processor``, ``decoder``, ``normalizer``,
``pre_tokenizer``, ``model``, added tokens) stays on the original ``tokenizers.Tokenizer``, and a
change to it is carried over to fastprep before the next call. So ``tok(texts, padding=True,
truncation=True, max_length=..., return_tensors="np")``, ``tok.decode`` and ``tok.batch_decode``
give what transformers gives, from the same files.

>>> from fastprep import hf                                   # doctest: +SKIP
>>> tok = hf.from_pretrained("path/to/model_dir")             # doctest: +SKIP
>>> tok(["a text", "another"], padding=True, return_tensors="np")   # doctest: +SKIP

A tokenizer.json that fastprep does not support raises ``UnsupportedTokenizerError`` in
``patch``: fastprep refuses rather than tokenize differently. ``split_special_tokens=True``
(special tokens read as text: ``encode_special_tokens`` on the backend) is carried over to
fastprep before each call.
"""

from __future__ import annotations

import copy
import inspect
import os
from typing import Any

from .tokenizer import Tokenizer

__all__ = ["FastprepBackend", "from_pretrained", "patch", "unpatch"]

# What transformers reads and sets on the backend beyond the tokenizer API: components of the
# pipeline, kept on the original tokenizers.Tokenizer. Setting one rebuilds fastprep's copy.
_COMPONENTS = frozenset({"post_processor", "decoder", "normalizer", "pre_tokenizer", "model"})
# tokenizers' model classes, whose state is their vocabulary plus a few settable attributes
_MODELS = frozenset({"BPE", "WordPiece", "WordLevel", "Unigram"})
_PROPERTIES: dict[type, tuple[str, ...]] = {}


def _properties(cls: type) -> tuple[str, ...]:
    """The settable attributes of a tokenizers component class (``BPE.dropout``, ...)."""
    names = _PROPERTIES.get(cls)
    if names is None:
        names = tuple(n for n, v in vars(cls).items() if not n.startswith("_") and inspect.isdatadescriptor(v))
        _PROPERTIES[cls] = names
    return names


def _state(component: Any) -> Any:
    """What can change in place on a component: a model's attributes (its vocabulary and merges
    cannot be set from Python), the whole JSON state of the smaller pipeline components."""
    if component is None:
        return None
    if type(component).__module__.startswith("tokenizers") and type(component).__name__ in _MODELS:
        return (type(component), tuple(getattr(component, n, None) for n in _properties(type(component))))
    return component.__getstate__()


class FastprepBackend:
    """Stands in for ``tokenizers.Tokenizer`` inside a transformers fast tokenizer."""

    _hf: Any
    _fp: Tokenizer
    _views: dict[str, Any]

    def __init__(self, hf: Any) -> None:
        object.__setattr__(self, "_hf", hf)
        object.__setattr__(self, "_fp", None)
        object.__setattr__(self, "_views", {})
        self._rebuild()

    # -- keeping the two in step -------------------------------------------------------------
    def _rebuild(self) -> None:
        fp = Tokenizer.from_str(self._hf.to_str())  # carries padding and truncation too
        object.__setattr__(self, "_fp", fp)
        for name in list(self._views):
            self._views[name] = _state(getattr(self._hf, name))

    def _current(self) -> Tokenizer:
        """fastprep's tokenizer, rebuilt first if a component handed out has been changed in
        place since (``backend_tokenizer.normalizer.lowercase = False``)."""
        # a snapshot: another thread may add a view meanwhile (transformers reads .model in decode)
        for name, seen in tuple(self._views.items()):
            if _state(getattr(self._hf, name)) != seen:
                self._rebuild()
                break
        return self._fp

    def __getattr__(self, name: str) -> Any:
        # Only called for what this class does not define: the original answers. Its own
        # fields are absent only on an object that copy or pickle made without __init__.
        if name in ("_hf", "_fp", "_views"):
            raise AttributeError(name)
        value = getattr(self._hf, name)
        if name in _COMPONENTS and name not in self._views:
            # tokenizers' components are views of the tokenizer: a setter on one changes it.
            # From now on each call compares that component's settable state with the one
            # fastprep was built from (a few attribute reads; the vocabulary is not settable).
            self._views[name] = _state(value)
        return value

    # -- copies and pickles: transformers deep-copies tokenizers, DataLoader workers and
    # datasets.map(num_proc=) pickle them. A copy is a backend over a copy of the original
    # (tokenizers' copies are independent, padding and truncation included), fastprep's side
    # rebuilt from it.
    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._hf,))

    def __copy__(self) -> FastprepBackend:
        return type(self)(copy.copy(self._hf))

    def __deepcopy__(self, memo: dict[int, Any]) -> FastprepBackend:
        return type(self)(copy.deepcopy(self._hf, memo))

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._hf, name, value)
        if name in _COMPONENTS:
            self._rebuild()

    @property
    def original(self) -> Any:
        """The ``tokenizers.Tokenizer`` this backend stands in for."""
        return self._hf

    def _sync_specials(self) -> None:
        """transformers sets ``encode_special_tokens`` on the original around a call with
        ``split_special_tokens``; fastprep follows it (a change rebuilds fastprep's copy of the
        settings, so it is only made when the value differs)."""
        want = bool(getattr(self._hf, "encode_special_tokens", False))
        fp = self._current()
        if fp.encode_special_tokens != want:
            fp.encode_special_tokens = want

    # -- encoding ----------------------------------------------------------------------------
    def encode(
        self, sequence: Any, pair: Any = None, is_pretokenized: bool = False, add_special_tokens: bool = True
    ) -> Any:
        self._sync_specials()
        # transformers reads every attribute of what it gets: build them all up front.
        return self._current().encode(
            sequence, pair, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens, lazy=False
        )

    def encode_batch(self, inputs: Any, is_pretokenized: bool = False, add_special_tokens: bool = True) -> Any:
        self._sync_specials()
        return self._current().encode_batch(
            inputs, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens, lazy=False
        )

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return self._current().decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_batch(self, sequences: Any, skip_special_tokens: bool = True) -> list[str]:
        return self._current().decode_batch(sequences, skip_special_tokens=skip_special_tokens)

    # -- settings, applied to both -----------------------------------------------------------
    def enable_truncation(
        self, max_length: int, stride: int = 0, strategy: str = "longest_first", direction: str = "right"
    ) -> None:
        self._hf.enable_truncation(max_length, stride=stride, strategy=strategy, direction=direction)
        self._fp.enable_truncation(max_length, stride=stride, strategy=strategy, direction=direction)

    def no_truncation(self) -> None:
        self._hf.no_truncation()
        self._fp.no_truncation()

    def enable_padding(self, **kwargs: Any) -> None:
        self._hf.enable_padding(**kwargs)
        self._fp.enable_padding(**kwargs)

    def no_padding(self) -> None:
        self._hf.no_padding()
        self._fp.no_padding()

    @property
    def truncation(self) -> dict[str, Any] | None:
        return self._hf.truncation  # type: ignore[no-any-return]

    @property
    def padding(self) -> dict[str, Any] | None:
        return self._hf.padding  # type: ignore[no-any-return]

    def add_tokens(self, tokens: Any) -> int:
        n = int(self._hf.add_tokens(tokens))
        self._rebuild()
        return n

    def add_special_tokens(self, tokens: Any) -> int:
        n = int(self._hf.add_special_tokens(tokens))
        self._rebuild()
        return n

    # -- lookups (fastprep's answers equal the original's) -----------------------------------
    def token_to_id(self, token: str) -> int | None:
        return self._current().token_to_id(token)

    def id_to_token(self, id: int) -> str | None:
        return self._current().id_to_token(id)

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        return self._current().num_special_tokens_to_add(is_pair)

    def __repr__(self) -> str:
        return f"FastprepBackend({self._fp!r})"


def patch(tok: Any) -> Any:
    """Puts fastprep under the transformers fast tokenizer ``tok`` (in place; returns ``tok``)."""
    hf = getattr(tok, "_tokenizer", None)
    if isinstance(hf, FastprepBackend):
        return tok
    if hf is None or not hasattr(hf, "encode_batch") or not hasattr(hf, "to_str"):
        raise TypeError(
            f"{type(tok).__name__} is not a transformers fast tokenizer (no tokenizers.Tokenizer "
            "backend): load it with AutoTokenizer.from_pretrained(..., use_fast=True) from a "
            "directory with a tokenizer.json"
        )
    tok._tokenizer = FastprepBackend(hf)
    return tok


def unpatch(tok: Any) -> Any:
    """Puts the original ``tokenizers.Tokenizer`` back under ``tok``; returns ``tok``."""
    backend = getattr(tok, "_tokenizer", None)
    if isinstance(backend, FastprepBackend):
        tok._tokenizer = backend.original
    return tok


def from_pretrained(path: str | os.PathLike[str], **kwargs: Any) -> Any:
    """``transformers.AutoTokenizer.from_pretrained(path, **kwargs)`` running on fastprep.

    ``path`` is a local directory (or a name already in the local Hugging Face cache); nothing
    is downloaded unless ``local_files_only=False`` is passed."""
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise ImportError("fastprep.hf needs transformers: pip install transformers") from e
    kwargs.setdefault("local_files_only", True)
    return patch(AutoTokenizer.from_pretrained(os.fspath(path), **kwargs))
