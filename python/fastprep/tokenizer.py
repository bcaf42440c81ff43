"""``fastprep.Tokenizer``: a drop-in for ``tokenizers.Tokenizer`` on HF tokenizer.json files.

Same ids, tokens, offsets, masks, padding, truncation and decode as HF tokenizers, computed by
fastprep's Rust core with the GIL released; batches run in parallel on fastprep's thread pool
(``num_threads`` or ``FASTPREP_NUM_THREADS``), and so does one long text (64 KB or more, with a
byte-level BPE on the GPT-2 or cl100k split pattern), cut into parts where a piece ends anyway.

>>> tok = Tokenizer.from_file("tokenizer.json")        # doctest: +SKIP
>>> enc = tok.encode("Hello world")                     # doctest: +SKIP
>>> enc.ids, enc.tokens, enc.offsets                    # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from . import _components, _core
from ._core import Encoding
from .added_token import AddedToken, _added

__all__ = ["AddedToken", "Encoding", "Tokenizer"]


def _unpickle(cls: type[Tokenizer], json: str, encode_special_tokens: bool = False) -> Tokenizer:
    tok = cls.from_str(json)
    # Not in the tokenizer.json, but part of how it encodes (``from_tekken`` turns it on).
    tok.encode_special_tokens = encode_special_tokens
    return tok


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Runs ``fn(*args)`` on the event loop's default executor (the core releases the GIL)."""
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args))


def _hf_cache_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("HF_HUB_CACHE"):
        dirs.append(Path(os.environ["HF_HUB_CACHE"]))
    hf_home = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface"))
    dirs.append(hf_home / "hub")
    return dirs


class Tokenizer:
    """A tokenizer loaded from a HF ``tokenizer.json``; thread-safe, fork-safe, picklable.

    ``Tokenizer(model)`` with a ``tokenizers.models`` object (``BPE``, ``WordPiece``...) starts a
    pipeline as ``tokenizers.Tokenizer(model)`` does (needs ``tokenizers``); the other ways in are
    ``from_file``, ``from_str``, ``from_pretrained``, ``from_sentencepiece``, ``from_tiktoken`` and
    ``from_tekken``.
    Pickling (and ``copy.copy``/``copy.deepcopy``) carries the tokenizer.json with the current
    padding, truncation and added tokens, not the caches, so it is as small as that file.
    """

    # `__dict__` holds the per-instance shortcut set in `_set_core`.
    __slots__ = ("__dict__", "__weakref__", "_core")

    def __init__(self, model: Any) -> None:
        if not isinstance(model, _core.Tokenizer):
            model = _core.Tokenizer.from_str(_components.tokenizer_json(model))
        self._set_core(model)

    def _set_core(self, core: _core.Tokenizer) -> None:
        old = getattr(self, "_core", None)
        if old is not None:
            # A rebuilt core (a component set) keeps this setting, which the tokenizer.json
            # it is rebuilt from does not hold (``from_tekken`` turns it on).
            core.encode_special_tokens = old.encode_special_tokens
        self._core = core
        if type(self) is Tokenizer:
            # `tok.encode(...)` goes straight to the Rust method (same parameters and defaults
            # as `encode` below): the Python frame in between was ~0.17 us, 15% of a short
            # call. Subclasses keep their own `encode`.
            self.encode = core.encode  # type: ignore[method-assign]

    # -- pickling and copies ------------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, ...]:
        # The tokenizer.json (with padding, truncation and added tokens) is the whole state; a
        # copy gets its own core, so settings changed on it leave the original alone.
        return (_unpickle, (type(self), self.to_str(), self.encode_special_tokens))

    def __copy__(self) -> Tokenizer:
        return _unpickle(type(self), self.to_str(), self.encode_special_tokens)

    def __deepcopy__(self, memo: dict[int, Any]) -> Tokenizer:
        return _unpickle(type(self), self.to_str(), self.encode_special_tokens)

    # -- loading -----------------------------------------------------------------------------
    @classmethod
    def from_str(cls, json: str) -> Tokenizer:
        """Load from the text of a tokenizer.json."""
        return cls(_core.Tokenizer.from_str(json))

    @classmethod
    def from_buffer(cls, buffer: bytes) -> Tokenizer:
        """Load from the bytes of a tokenizer.json."""
        return cls.from_str(bytes(buffer).decode("utf-8"))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load a tokenizer.json file."""
        return cls.from_str(Path(path).read_text(encoding="utf-8"))

    @classmethod
    def from_sentencepiece(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load a SentencePiece ``.model`` file (BPE or Unigram) directly: the pipeline that
        transformers' converter builds from it (``to_str`` gives that tokenizer.json), with
        ``SentencePieceProcessor.encode``'s ids (no BOS/EOS, as ``encode`` adds none by default).
        Where HF tokenizers on that tokenizer.json would differ from SentencePiece, SentencePiece's
        way is taken: Unigram scores summed in float32, its own normalization for a text the
        converter's normalizers turn into another string (the charsmap by longest match), and
        control, unknown and byte pieces never matched from text."""
        return cls(_core.Tokenizer.from_sentencepiece(Path(path).read_bytes()))

    @classmethod
    def from_pretrained(
        cls, identifier: str | os.PathLike[str], revision: str | None = None, token: str | None = None
    ) -> Tokenizer:
        """Load from a local directory holding tokenizer.json, or a model already in the local HF
        cache (``org/name``). Never downloads (so ``token`` is unused): a missing model raises
        FileNotFoundError saying how to get it."""
        path = Path(identifier)
        if path.is_dir():
            if (path / "tokenizer.json").is_file():
                return cls.from_file(path / "tokenizer.json")
            raise FileNotFoundError(f"{path} has no tokenizer.json")
        if path.is_file() and path.name.endswith(".json"):
            return cls.from_file(path)
        name = str(identifier)
        repo = "models--" + name.replace("/", "--")
        for cache in _hf_cache_dirs():
            snapshots = cache / repo / "snapshots"
            if not snapshots.is_dir():
                continue
            ref = cache / repo / "refs" / (revision or "main")
            candidates = [snapshots / ref.read_text().strip()] if ref.is_file() else sorted(snapshots.iterdir())
            for snap in candidates:
                if (snap / "tokenizer.json").is_file():
                    return cls.from_file(snap / "tokenizer.json")
        raise FileNotFoundError(
            f"no tokenizer.json for {name!r}: not a local directory and not in the Hugging Face cache "
            f"({', '.join(str(c) for c in _hf_cache_dirs())}); fastprep never downloads. Fetch it once "
            f"with `huggingface-cli download {name} tokenizer.json`, or pass a directory"
        )

    @classmethod
    def from_tiktoken(
        cls,
        path: str | os.PathLike[str],
        *,
        pattern: str | None = None,
        special_tokens: dict[str, int] | None = None,
    ) -> Tokenizer:
        """Load a tiktoken ``.tiktoken`` vocabulary (base64 token and rank per line).

        ``pattern`` is the pre-tokenization regex (default: cl100k's, as HF tokenizer.json files
        spell it); ``special_tokens`` maps special strings to their ids, e.g.
        ``{"<|endoftext|>": 100257}``. The result behaves like the tokenizer.json that
        transformers' converter writes for the same file.
        """
        text = Path(path).read_text(encoding="utf-8")
        specials = sorted((special_tokens or {}).items(), key=lambda kv: kv[1])
        return cls(_core.Tokenizer.from_tiktoken(text, pattern, specials))

    @classmethod
    def from_tekken(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load a Mistral Tekken file (``tekken_*.json``, as mistral-common ships them).

        Ids are mistral-common's: ``encode(s).ids`` is ``Tekkenizer.encode(s, bos=True, eos=False)``
        and ``encode(s, add_special_tokens=False).ids`` is ``bos=False``; ``decode(ids)`` (special
        tokens skipped) is its ``decode``. As in mistral-common, special strings such as
        ``[INST]`` in the text are read as text (``encode_special_tokens`` is on; set it to
        False to cut them out as control tokens, as HF's Tekken tokenizer.json files do).
        """
        text = Path(path).read_text(encoding="utf-8")
        return cls(_core.Tokenizer.from_tekken(text))

    def describe(self) -> dict[str, Any]:
        """How this tokenizer runs: the encode loop and, for each pre-tokenizer, its engine.

        Engines: "hand-written cl100k" / "hand-written gpt2" (tuned matchers), "dfa, class bytes"
        (any other regex that translates exactly and has a DFA form), "pcre2-jit, class bytes"
        (PCRE2's JIT, the classes run as one byte per char), "pcre2-jit" (the same in UTF mode,
        where the classes cut Unicode into more than 128 parts), "onig fallback (<why>)"
        (Oniguruma itself).

        >>> Tokenizer.from_tiktoken("cl100k_base.tiktoken").describe()["pre_tokenizers"][0]["engine"]
        'hand-written cl100k'
        """
        path, items = self._core.describe()
        return {
            "encode_path": path,
            "pre_tokenizers": [{"pre_tokenizer": p, "engine": e} for p, e in items],
        }

    def to_str(self, pretty: bool = False) -> str:
        """The tokenizer.json text (with the current padding, truncation and added tokens)."""
        return str(self._core.to_str(pretty))

    def save(self, path: str | os.PathLike[str], pretty: bool = True) -> None:
        """Write tokenizer.json to ``path``."""
        Path(path).write_text(self.to_str(pretty), encoding="utf-8")

    # -- encoding ----------------------------------------------------------------------------
    def encode(
        self,
        sequence: str | Sequence[str],
        pair: str | Sequence[str] | None = None,
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
        *,
        lazy: bool = True,
    ) -> Encoding:
        """Encode one input (or a pair) into an Encoding, as ``tokenizers.Tokenizer.encode``.

        A single text without padding computes its ids first and the rest of the Encoding
        (offsets, tokens, words...) on first access, with identical results; ``lazy=False``
        builds everything up front, for callers that read every attribute. A text of 64 KB or
        more (byte-level BPE on the GPT-2 or cl100k pattern) is encoded on the thread pool
        (``FASTPREP_NUM_THREADS``, else every core), in parts cut where a piece ends anyway.
        """
        return self._core.encode(sequence, pair, is_pretokenized, add_special_tokens, lazy=lazy)

    def encode_batch(
        self,
        input: Iterable[Any],
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
        *,
        num_threads: int | None = None,
        lazy: bool = True,
    ) -> list[Encoding]:
        """Encode many inputs (str, or (str, str) pairs) in parallel, GIL released.

        Single texts without padding compute their ids first; the first access to anything else
        builds every encoding of the batch in full, in parallel (identical results).
        ``lazy=False`` builds everything up front, for callers that read every attribute.
        """
        if not isinstance(input, (list, tuple)):
            input = list(input)
        return self._core.encode_batch(input, is_pretokenized, add_special_tokens, num_threads, True, lazy)

    def encode_batch_fast(
        self,
        input: Iterable[Any],
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
        *,
        num_threads: int | None = None,
    ) -> list[Encoding]:
        """``encode_batch`` keeping only the ids and masks, as ``tokenizers``' ``encode_batch_fast``:
        offsets ``(0, 0)``, token strings empty (those the post-processor adds, such as
        ``[CLS]``, excepted), no word ids, and type id 0 before the post-processor."""
        if not isinstance(input, (list, tuple)):
            input = list(input)
        return self._core.encode_batch(input, is_pretokenized, add_special_tokens, num_threads, False, True)

    async def async_encode(
        self,
        sequence: str | Sequence[str],
        pair: str | Sequence[str] | None = None,
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
    ) -> Encoding:
        """``encode`` on the event loop's executor (the GIL is released while it runs)."""
        return await _in_thread(self._core.encode, sequence, pair, is_pretokenized, add_special_tokens)  # type: ignore[no-any-return]

    async def async_encode_batch(
        self, input: Iterable[Any], is_pretokenized: bool = False, add_special_tokens: bool = True
    ) -> list[Encoding]:
        """``encode_batch`` on the event loop's executor."""
        return await _in_thread(self.encode_batch, input, is_pretokenized, add_special_tokens)  # type: ignore[no-any-return]

    async def async_encode_batch_fast(
        self, input: Iterable[Any], is_pretokenized: bool = False, add_special_tokens: bool = True
    ) -> list[Encoding]:
        """``encode_batch_fast`` on the event loop's executor."""
        return await _in_thread(self.encode_batch_fast, input, is_pretokenized, add_special_tokens)  # type: ignore[no-any-return]

    async def async_decode_batch(
        self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = True
    ) -> list[str]:
        """``decode_batch`` on the event loop's executor."""
        return await _in_thread(self.decode_batch, sequences, skip_special_tokens)  # type: ignore[no-any-return]

    def post_process(
        self, encoding: Encoding, pair: Encoding | None = None, add_special_tokens: bool = True
    ) -> Encoding:
        """Truncate, post-process and pad ``encoding`` (and ``pair``) with this tokenizer's
        settings, as ``tokenizers.Tokenizer.post_process``."""
        return self._core.post_process(encoding, pair, add_special_tokens)

    def encode_batch_arrays(
        self,
        texts: Sequence[str],
        *,
        max_length: int | None = None,
        padding: Literal["longest", "max_length", "bucket"] = "longest",
        pad_to_multiple_of: int | None = None,
        return_offsets: bool = False,
        add_special_tokens: bool = True,
        bucket_size: int = 64,
        num_threads: int | None = None,
    ) -> Any:
        """Encode a batch straight into numpy arrays: ``input_ids`` and ``attention_mask``
        (int64, shape (N, L)), and ``offsets`` ((N, L, 2)) when asked. No per-token Python objects.

        ``padding="longest"`` pads to the longest text, ``"max_length"`` to ``max_length``, and
        ``"bucket"`` sorts the batch by length into buckets of ``bucket_size`` texts, each padded to
        its own longest: it returns ``{"buckets": [{"indices", "input_ids", "attention_mask"...}],
        "padding_saved": tokens of padding avoided against "longest"}``.
        """
        import numpy as np

        from ._batch import bucketize, flat_arrays

        if isinstance(texts, str):
            raise TypeError("encode_batch_arrays() takes a list of str; for one text call encode()")
        if padding == "max_length" and max_length is None:
            raise ValueError('padding="max_length" needs max_length')
        if padding not in ("longest", "max_length", "bucket"):
            raise ValueError(f"padding must be 'longest', 'max_length' or 'bucket', got {padding!r}")
        pad = self._core.padding
        pad_id = pad["pad_id"] if pad else 0
        left = bool(pad and pad["direction"] == "left")
        texts = list(texts)
        if padding == "bucket":
            ids_b, lens_b, offs_b = self._core.encode_batch_flat(
                texts, add_special_tokens, max_length, return_offsets, num_threads
            )
            ids, lens = flat_arrays(ids_b, lens_b)
            offs = np.frombuffer(offs_b, dtype="<u4").reshape(-1, 2) if offs_b is not None else None
            return bucketize(ids, lens, offs, pad_id, left, pad_to_multiple_of, bucket_size)
        ids_ba, mask_ba, offs_ba, rows, width = self._core.encode_batch_padded(
            texts,
            add_special_tokens,
            max_length,
            padding == "max_length",
            pad_to_multiple_of,
            pad_id,
            left,
            return_offsets,
            num_threads,
        )
        # Zero-copy, writable views of the bytearrays Rust filled.
        out: dict[str, Any] = {
            "input_ids": np.frombuffer(ids_ba, dtype="<i8").reshape(rows, width),
            "attention_mask": np.frombuffer(mask_ba, dtype="<i8").reshape(rows, width),
        }
        if offs_ba is not None:
            out["offsets"] = np.frombuffer(offs_ba, dtype="<i8").reshape(rows, width, 2)
        return out

    def count_tokens(self, texts: Sequence[str], *, add_special_tokens: bool = False) -> list[int]:
        """Number of tokens of each text (ids only, no offsets), in parallel."""
        return self._core.count_tokens(texts, add_special_tokens)

    # -- decoding ----------------------------------------------------------------------------
    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return str(self._core.decode(list(ids), skip_special_tokens))

    def decode_batch(self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = True) -> list[str]:
        return list(self._core.decode_batch([list(s) for s in sequences], skip_special_tokens))

    # -- vocabulary --------------------------------------------------------------------------
    def token_to_id(self, token: str) -> int | None:
        return self._core.token_to_id(token)

    def id_to_token(self, id: int) -> str | None:
        return self._core.id_to_token(id)

    def get_vocab(self, with_added_tokens: bool = True) -> dict[str, int]:
        return dict(self._core.get_vocab(with_added_tokens))

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        return int(self._core.get_vocab_size(with_added_tokens))

    def add_tokens(self, tokens: Sequence[Any]) -> int:
        """Add tokens: str (normalized, not special), or AddedToken of fastprep or tokenizers;
        returns how many were new."""
        return int(self._core.add_tokens([_added(t, special=False) for t in tokens]))

    def add_special_tokens(self, tokens: Sequence[Any]) -> int:
        """Add special tokens: str (special, not normalized), or AddedToken (marked special in
        place; unnormalized unless it says otherwise), as tokenizers; returns how many were new."""
        return int(self._core.add_tokens([_added(t, special=True) for t in tokens]))

    def get_added_tokens_decoder(self) -> dict[int, AddedToken]:
        """The added tokens by id, as ``tokenizers``' ``get_added_tokens_decoder``."""
        return {
            i: AddedToken(c, single_word=sw, lstrip=ls, rstrip=rs, normalized=n, special=sp)
            for i, c, sw, ls, rs, n, sp in self._core.added_tokens()
        }

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        return int(self._core.num_special_tokens_to_add(is_pair))

    # -- padding and truncation --------------------------------------------------------------
    def enable_padding(
        self,
        direction: str = "right",
        pad_id: int = 0,
        pad_type_id: int = 0,
        pad_token: str = "[PAD]",
        length: int | None = None,
        pad_to_multiple_of: int | None = None,
    ) -> None:
        self._core.enable_padding(direction, pad_id, pad_type_id, pad_token, length, pad_to_multiple_of)

    def no_padding(self) -> None:
        self._core.no_padding()

    @property
    def padding(self) -> dict[str, Any] | None:
        return self._core.padding

    def enable_truncation(
        self, max_length: int, stride: int = 0, strategy: str = "longest_first", direction: str = "right"
    ) -> None:
        self._core.enable_truncation(max_length, stride, strategy, direction)

    def no_truncation(self) -> None:
        self._core.no_truncation()

    @property
    def truncation(self) -> dict[str, Any] | None:
        return self._core.truncation

    @property
    def encode_special_tokens(self) -> bool:
        """When True, special tokens in the input are not cut out but encoded as text (as
        tokenizers' ``encode_special_tokens``; like there, not saved in the tokenizer.json)."""
        return bool(self._core.encode_special_tokens)

    @encode_special_tokens.setter
    def encode_special_tokens(self, value: bool) -> None:
        self._core.encode_special_tokens = bool(value)

    # -- components (tokenizers' objects; see fastprep._components) -----------------------------
    def _get_part(self, kind: str) -> Any:
        return _components.get_component(self.to_str(), kind)

    def _set_part(self, kind: str, value: Any) -> None:
        self._set_core(_core.Tokenizer.from_str(_components.with_component(self.to_str(), kind, value)))

    normalizer = property(
        lambda self: self._get_part("normalizer"),
        lambda self, v: self._set_part("normalizer", v),
        doc="The normalizer as a ``tokenizers.normalizers`` object (a new one per read), or None.",
    )
    pre_tokenizer = property(
        lambda self: self._get_part("pre_tokenizer"),
        lambda self, v: self._set_part("pre_tokenizer", v),
        doc="The pre-tokenizer as a ``tokenizers.pre_tokenizers`` object (a new one per read), or None.",
    )
    model = property(
        lambda self: self._get_part("model"),
        lambda self, v: self._set_part("model", v),
        doc="The model as a ``tokenizers.models`` object (a new one per read).",
    )
    post_processor = property(
        lambda self: self._get_part("post_processor"),
        lambda self, v: self._set_part("post_processor", v),
        doc="The post-processor as a ``tokenizers.processors`` object (a new one per read), or None.",
    )
    decoder = property(
        lambda self: self._get_part("decoder"),
        lambda self, v: self._set_part("decoder", v),
        doc="The decoder as a ``tokenizers.decoders`` object (a new one per read), or None.",
    )

    # -- training (delegated to tokenizers' trainers) -----------------------------------------
    def train(self, files: Sequence[str], trainer: Any = None) -> None:
        """Train the model on ``files`` with ``tokenizers``' trainer (needs ``tokenizers``); the
        trained tokenizer.json is then loaded into fastprep's core."""
        doc = _components.train(self.to_str(), lambda hf: hf.train(list(files), trainer))
        self._set_core(_core.Tokenizer.from_str(doc))

    def train_from_iterator(self, iterator: Iterable[Any], trainer: Any = None, length: int | None = None) -> None:
        """As ``train``, from an iterator of texts (or of batches of texts)."""
        doc = _components.train(self.to_str(), lambda hf: hf.train_from_iterator(iterator, trainer, length))
        self._set_core(_core.Tokenizer.from_str(doc))

    def __repr__(self) -> str:
        # tokenizers' repr is its Rust Debug dump of the whole pipeline (vocabulary included):
        # that exact text when tokenizers is installed and reads the file, a short form otherwise.
        try:
            return repr(_components._hf_class().from_str(self.to_str()))
        except Exception:
            return f"fastprep.Tokenizer(vocab_size={self.get_vocab_size()})"
