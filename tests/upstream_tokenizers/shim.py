"""Side-by-side objects for running ``tokenizers``' own binding tests against fastprep.

``Tokenizer``, ``Encoding``, ``AddedToken`` and ``DecodeStream`` here hold one object of each
library; every call is made on both, the results are compared (encodings field by field,
overflowing windows included), and fastprep's result (or exception) is what the test sees, so the
upstream assertions check fastprep. Differences are recorded in ``MISMATCHES`` (the runner
reports them); a call fastprep lacks is recorded and raises AttributeError.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import tokenizers as tk
import tokenizers.decoders as tk_decoders

import fastprep
import fastprep.decoders as fp_decoders

MISMATCHES: list[str] = []
CALLS = {"n": 0}
_TK_TOKENIZER = tk.Tokenizer
_TK_ENCODING = tk.Encoding
_TK_ADDED = tk.AddedToken
_TK_STREAM = tk_decoders.DecodeStream

ENC_FIELDS = (
    "ids",
    "tokens",
    "offsets",
    "type_ids",
    "attention_mask",
    "special_tokens_mask",
    "word_ids",
    "sequence_ids",
    "n_sequences",
)


def _record(what: str) -> None:
    MISMATCHES.append(what)


def _norm(v: Any) -> Any:
    """A comparable form of a result of either library."""
    if isinstance(v, (Encoding, _TK_ENCODING, fastprep.Encoding)):
        e = v.fp if isinstance(v, Encoding) else v
        return {f: getattr(e, f) for f in ENC_FIELDS} | {"overflowing": [_norm(o) for o in e.overflowing]}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, (_TK_ADDED, fastprep.AddedToken, AddedToken)):
        t = v.fp if isinstance(v, AddedToken) else v
        return ("AddedToken", t.content, t.single_word, t.lstrip, t.rstrip, t.normalized, t.special)
    mod = type(v).__module__ or ""
    if mod.startswith("tokenizers") and hasattr(v, "__getstate__"):
        return json.loads(v.__getstate__())
    return v


def _side(v: Any, side: str) -> Any:
    """An argument as one library takes it."""
    if isinstance(v, (Tokenizer, Encoding, AddedToken, DecodeStream)):
        return getattr(v, side)
    if isinstance(v, list):
        return [_side(x, side) for x in v]
    if isinstance(v, tuple):
        return tuple(_side(x, side) for x in v)
    return v


def _wrap(tk_v: Any, fp_v: Any) -> Any:
    if isinstance(fp_v, fastprep.Encoding):
        return Encoding._pair(tk_v, fp_v)
    if isinstance(fp_v, list) and fp_v and all(isinstance(x, fastprep.Encoding) for x in fp_v):
        return [Encoding._pair(a, b) for a, b in zip(tk_v, fp_v, strict=True)]
    return fp_v


def _both(label: str, tk_call: Any, fp_call: Any) -> Any:
    CALLS["n"] += 1
    tk_err = fp_err = None
    try:
        tk_v = tk_call()
    except Exception as e:
        tk_err = e
    try:
        fp_v = fp_call()
    except Exception as e:
        fp_err = e
    if tk_err or fp_err:
        if tk_err is None or fp_err is None:
            _record(
                f"{label}: tokenizers {'raised ' + repr(tk_err) if tk_err else 'returned'}, fastprep "
                f"{'raised ' + repr(fp_err) if fp_err else 'returned'}"
            )
        elif not isinstance(fp_err, type(tk_err)) and type(tk_err).__name__ != "PanicException":
            _record(f"{label}: tokenizers raised {type(tk_err).__name__}, fastprep {type(fp_err).__name__}")
        if fp_err:
            raise fp_err
        return _wrap(None, fp_v)
    a, b = _norm(tk_v), _norm(fp_v)
    if a != b:
        _record(f"{label}: tokenizers {str(a)[:300]} != fastprep {str(b)[:300]}")
    return _wrap(tk_v, fp_v)


class _Dual:
    """Calls every method on both sides (``tk`` and ``fp``)."""

    tk: Any
    fp: Any

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        tk_attr = getattr(self.tk, name)
        if not hasattr(type(self.fp), name) and name not in getattr(self.fp, "__dict__", {}):
            _record(f"{type(self).__name__}.{name}: missing in fastprep")
            raise AttributeError(f"fastprep has no {type(self).__name__}.{name}")
        if callable(tk_attr) and not isinstance(tk_attr, type):

            def call(*args: Any, **kwargs: Any) -> Any:
                label = f"{type(self).__name__}.{name}{_short(args, kwargs)}"
                tk_args, fp_args = _side(args, "tk"), _side(args, "fp")
                tk_kw = {k: _side(v, "tk") for k, v in kwargs.items()}
                fp_kw = {k: _side(v, "fp") for k, v in kwargs.items()}
                if name in ("train", "train_from_iterator"):
                    return _train_both(self, name, label, tk_args, tk_kw, fp_args, fp_kw)
                if name.startswith("async_"):
                    return _both_async(label, tk_attr, getattr(self.fp, name), tk_args, tk_kw, fp_args, fp_kw)
                return _both(
                    label, lambda: tk_attr(*tk_args, **tk_kw), lambda: getattr(self.fp, name)(*fp_args, **fp_kw)
                )

            return call
        return _both(f"{type(self).__name__}.{name}", lambda: tk_attr, lambda: getattr(self.fp, name))

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("tk", "fp"):
            object.__setattr__(self, name, value)
            return
        if not hasattr(type(self.fp), name):
            _record(f"{type(self).__name__}.{name} = ...: missing in fastprep")
            raise AttributeError(f"fastprep has no settable {type(self).__name__}.{name}")
        _both(
            f"{type(self).__name__}.{name} = {value!r:.60}",
            lambda: setattr(self.tk, name, _side(value, "tk")),
            lambda: setattr(self.fp, name, _side(value, "fp")),
        )


def _train_both(tok: Any, name: str, label: str, tk_args: Any, tk_kw: Any, fp_args: Any, fp_kw: Any) -> None:
    """Training runs on both (fastprep's goes through tokenizers' trainer), but two trainings
    need not give the same ids (tokenizers' trainers run in parallel and break ties by arrival),
    so only the vocabulary's size is compared; fastprep then takes tokenizers' trained model,
    so that the calls after it compare encodings of one model."""
    fp_args = [
        list(a) if not isinstance(a, (str, list, tuple, dict)) and hasattr(a, "__iter__") else a for a in fp_args
    ]
    tk_args = list(fp_args) if tk_args and tk_args[0] is not fp_args[0] else tk_args
    _both(label, lambda: getattr(tok.tk, name)(*tk_args, **tk_kw), lambda: getattr(tok.fp, name)(*fp_args, **fp_kw))
    _both(f"{label}: vocabulary size", lambda: tok.tk.get_vocab_size(), lambda: tok.fp.get_vocab_size())
    object.__setattr__(tok, "fp", fastprep.Tokenizer.from_str(tok.tk.to_str()))


async def _both_async(label, tk_fn, fp_fn, tk_args, tk_kw, fp_args, fp_kw):  # type: ignore[no-untyped-def]
    tk_v = await tk_fn(*tk_args, **tk_kw)
    fp_v = await fp_fn(*fp_args, **fp_kw)
    return _both(label, lambda: tk_v, lambda: fp_v)


def _tk_state(obj: Any) -> Any:
    """tokenizers' own pickled state of ``obj`` (its classes are replaced in the module, so
    pickling them by reference would find the side-by-side class)."""
    return obj.__getstate__()


def _tk_from_state(cls: Any, state: Any) -> Any:
    if cls is _TK_TOKENIZER:
        return _TK_TOKENIZER.from_buffer(state)
    obj = cls.__new__(cls)
    obj.__setstate__(state)
    return obj


def _rebuild(kind: str, tk_state: Any, fp_obj: Any) -> Any:
    cls = {"Tokenizer": Tokenizer, "Encoding": Encoding, "AddedToken": AddedToken}[kind]
    tk_cls = {"Tokenizer": _TK_TOKENIZER, "Encoding": _TK_ENCODING, "AddedToken": _TK_ADDED}[kind]
    return cls._pair(_tk_from_state(tk_cls, tk_state), fp_obj)  # type: ignore[attr-defined]


def _short(args: Any, kwargs: Any) -> str:
    text = ", ".join([repr(a)[:40] for a in args] + [f"{k}={v!r:.30}" for k, v in kwargs.items()])
    return f"({text})"


class Tokenizer(_Dual):
    def __init__(self, model: Any) -> None:
        self.tk = _TK_TOKENIZER(model)
        self.fp = fastprep.Tokenizer(model)

    @classmethod
    def _pair(cls, tk_tok: Any, fp_tok: Any) -> Tokenizer:
        obj = cls.__new__(cls)
        object.__setattr__(obj, "tk", tk_tok)
        object.__setattr__(obj, "fp", fp_tok)
        return obj

    @classmethod
    def from_str(cls, s: str) -> Tokenizer:
        return cls._pair(_TK_TOKENIZER.from_str(s), fastprep.Tokenizer.from_str(s))

    @classmethod
    def from_file(cls, path: str) -> Tokenizer:
        return cls._pair(_TK_TOKENIZER.from_file(path), fastprep.Tokenizer.from_file(path))

    @classmethod
    def from_buffer(cls, buf: bytes) -> Tokenizer:
        return cls._pair(_TK_TOKENIZER.from_buffer(buf), fastprep.Tokenizer.from_buffer(buf))

    @classmethod
    def from_pretrained(cls, identifier: str, revision: str = "main", token: str | None = None) -> Tokenizer:
        return cls._pair(
            _TK_TOKENIZER.from_pretrained(identifier, revision=revision),
            fastprep.Tokenizer.from_pretrained(identifier, revision=revision),
        )

    def __reduce__(self) -> Any:
        return (_rebuild, ("Tokenizer", self.tk.to_str().encode(), self.fp))

    def __copy__(self) -> Tokenizer:
        return Tokenizer._pair(copy.copy(self.tk), copy.copy(self.fp))

    def __deepcopy__(self, memo: Any) -> Tokenizer:
        return Tokenizer._pair(copy.deepcopy(self.tk), copy.deepcopy(self.fp))

    def __repr__(self) -> str:
        return repr(self.fp)


class Encoding(_Dual):
    def __init__(self) -> None:
        self.tk = _TK_ENCODING()
        self.fp = fastprep.Encoding()

    @classmethod
    def _pair(cls, tk_enc: Any, fp_enc: Any) -> Encoding:
        obj = cls.__new__(cls)
        object.__setattr__(obj, "tk", tk_enc)
        object.__setattr__(obj, "fp", fp_enc)
        return obj

    @staticmethod
    def merge(encodings: list[Any], growing_offsets: bool = True) -> Encoding:
        return _both(  # type: ignore[no-any-return]
            "Encoding.merge",
            lambda: _TK_ENCODING.merge(_side(encodings, "tk"), growing_offsets),
            lambda: fastprep.Encoding.merge(_side(encodings, "fp"), growing_offsets),
        )

    def __len__(self) -> int:
        return _both("len(Encoding)", lambda: len(self.tk), lambda: len(self.fp))  # type: ignore[no-any-return]

    def __reduce__(self) -> Any:
        return (_rebuild, ("Encoding", _tk_state(self.tk), self.fp))

    def __repr__(self) -> str:
        return repr(self.fp)


class AddedToken(_Dual):
    def __init__(self, content: str | None = None, **kwargs: Any) -> None:
        self.tk = _TK_ADDED(content, **kwargs)
        self.fp = fastprep.AddedToken(content, **kwargs)

    def __eq__(self, other: object) -> bool:
        o_tk, o_fp = _side(other, "tk"), _side(other, "fp")
        return _both("AddedToken ==", lambda: self.tk == o_tk, lambda: self.fp == o_fp)  # type: ignore[no-any-return]

    def __hash__(self) -> int:
        return hash(self.fp)

    def __str__(self) -> str:
        return _both("str(AddedToken)", lambda: str(self.tk), lambda: str(self.fp))  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return _both("repr(AddedToken)", lambda: repr(self.tk), lambda: repr(self.fp))  # type: ignore[no-any-return]

    def __reduce__(self) -> Any:
        return (_rebuild, ("AddedToken", _tk_state(self.tk), self.fp))

    @classmethod
    def _pair(cls, a: Any, b: Any) -> AddedToken:
        obj = cls.__new__(cls)
        object.__setattr__(obj, "tk", a)
        object.__setattr__(obj, "fp", b)
        return obj


class DecodeStream(_Dual):
    def __init__(self, ids: Any = None, skip_special_tokens: bool = False) -> None:
        self.tk = _TK_STREAM(ids, skip_special_tokens=skip_special_tokens)
        self.fp = fp_decoders.DecodeStream(ids, skip_special_tokens=skip_special_tokens)

    def __copy__(self) -> DecodeStream:
        obj = DecodeStream.__new__(DecodeStream)
        object.__setattr__(obj, "tk", copy.copy(self.tk))
        object.__setattr__(obj, "fp", copy.copy(self.fp))
        return obj
