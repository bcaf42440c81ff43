"""The pieces people put in a PyTorch DataLoader or a ``datasets.map``; torch stays optional.

- ``TokenizeCollate``: a DataLoader ``collate_fn`` that tokenizes and pads a batch of texts in one
  Rust call (``encode_batch_arrays``, GIL released) into ``input_ids`` / ``attention_mask``.
- ``EncodedImageDataset`` + ``ImageCollate``: the dataset hands out encoded files (bytes, label)
  and the collate turns the whole batch into one normalized array with ``fastprep.preprocess``
  (decode/resize/normalize in parallel), instead of one Pillow call per sample.
- ``DatasetsTokenize``: a function for ``datasets.Dataset.map(fn, batched=True, num_proc=N)``.

Each holds the tokenizer as its tokenizer.json text when pickled (spawned DataLoader workers and
``num_proc`` pickle the function), and rebuilds it on first use in the worker.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..tokenizer import Tokenizer

__all__ = ["DatasetsTokenize", "EncodedImageDataset", "ImageCollate", "TokenizeCollate"]


class _HoldsTokenizer:
    def __init__(self, tokenizer: Tokenizer | str | os.PathLike[str]) -> None:
        if isinstance(tokenizer, Tokenizer):
            self._tok: Tokenizer | None = tokenizer
            self._json: str | None = None
        else:
            from ..jobs.tokenize import load_tokenizer

            self._tok = load_tokenizer(str(tokenizer))
            self._json = None

    @property
    def tokenizer(self) -> Tokenizer:
        if self._tok is None:
            assert self._json is not None
            self._tok = Tokenizer.from_str(self._json)
        return self._tok

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_json"] = self._json if self._tok is None else self._tok.to_str()
        state["_tok"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def _text_of(sample: Any, key: str) -> str:
    if isinstance(sample, str):
        return sample
    if isinstance(sample, dict):
        return str(sample[key])
    raise TypeError(f"TokenizeCollate takes str samples or dicts with a {key!r} key, got {type(sample).__name__}")


class TokenizeCollate(_HoldsTokenizer):
    """``DataLoader(texts, batch_size=32, collate_fn=TokenizeCollate(tok, max_length=512))``.

    Samples are str, or dicts whose ``text_key`` holds the text (their other keys are collated as
    lists, or as a tensor for ``labels``). Returns torch tensors (int64), or numpy arrays with
    ``return_tensors="np"``.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | str | os.PathLike[str],
        *,
        text_key: str = "text",
        max_length: int | None = None,
        padding: str = "longest",
        pad_to_multiple_of: int | None = None,
        add_special_tokens: bool = True,
        return_tensors: str = "pt",
    ) -> None:
        super().__init__(tokenizer)
        if return_tensors not in ("pt", "np"):
            raise ValueError(f"return_tensors must be 'pt' or 'np', got {return_tensors!r}")
        if padding not in ("longest", "max_length"):
            raise ValueError(f"padding must be 'longest' or 'max_length', got {padding!r}")
        self.text_key = text_key
        self.max_length = max_length
        self.padding = padding
        self.pad_to_multiple_of = pad_to_multiple_of
        self.add_special_tokens = add_special_tokens
        self.return_tensors = return_tensors

    def __call__(self, samples: Sequence[Any]) -> dict[str, Any]:
        texts = [_text_of(s, self.text_key) for s in samples]
        out = dict(
            self.tokenizer.encode_batch_arrays(
                texts,
                max_length=self.max_length,
                padding=self.padding,  # type: ignore[arg-type]
                pad_to_multiple_of=self.pad_to_multiple_of,
                add_special_tokens=self.add_special_tokens,
            )
        )
        if samples and isinstance(samples[0], dict):
            for k in samples[0]:
                if k != self.text_key:
                    out[k] = [s[k] for s in samples]
        if "labels" in out:
            import numpy as np

            out["labels"] = np.asarray(out["labels"])
        if self.return_tensors == "pt":
            import torch

            out = {k: torch.from_numpy(v) if hasattr(v, "__array_interface__") else v for k, v in out.items()}
        return out


class EncodedImageDataset:
    """A map-style dataset over image files: ``ds[i]`` is ``(encoded bytes, label)``. Batch it
    with ``ImageCollate``; decoding happens there, a whole batch at a time.

    >>> ds = EncodedImageDataset.from_image_folder("train/")                # doctest: +SKIP
    >>> dl = DataLoader(ds, batch_size=64, collate_fn=ImageCollate(crop=224))  # doctest: +SKIP
    """

    def __init__(self, paths: Sequence[str | os.PathLike[str]], labels: Sequence[int] | None = None) -> None:
        self.paths = [str(p) for p in paths]
        self.labels = list(labels) if labels is not None else [-1] * len(self.paths)
        if len(self.labels) != len(self.paths):
            raise ValueError(f"{len(self.paths)} paths but {len(self.labels)} labels")
        self.classes: list[str] = []

    @classmethod
    def from_image_folder(cls, root: str | os.PathLike[str]) -> EncodedImageDataset:
        """torchvision's ImageFolder layout: one sub-directory per class, labels in sorted order."""
        from ..jobs.image_inputs import list_items

        groups, classes = list_items([str(Path(root))])
        ds = cls([it.source for it in groups[0]], [it.label for it in groups[0]])
        ds.classes = classes
        return ds

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> tuple[bytes, int]:
        return Path(self.paths[i]).read_bytes(), self.labels[i]


class ImageCollate:
    """``collate_fn`` for ``EncodedImageDataset``: ``(images, labels)`` where images is one
    (N, 3, H, W) batch from ``fastprep.preprocess(**settings)`` (torch tensors, or numpy with
    ``return_tensors="np"``)."""

    def __init__(self, *, return_tensors: str = "pt", **settings: Any) -> None:
        if return_tensors not in ("pt", "np"):
            raise ValueError(f"return_tensors must be 'pt' or 'np', got {return_tensors!r}")
        self.settings = settings
        self.return_tensors = return_tensors

    def __call__(self, samples: Sequence[tuple[bytes, int]]) -> tuple[Any, Any]:
        import numpy as np

        from ..pipeline import preprocess

        batch = preprocess([s[0] for s in samples], **self.settings)
        labels = np.asarray([s[1] for s in samples], dtype=np.int64)
        if self.return_tensors == "pt":
            import torch

            # A copy: the batch's memory goes back to fastprep's pool when the array is freed.
            return torch.from_numpy(np.array(batch)), torch.from_numpy(labels)
        return batch, labels


class DatasetsTokenize(_HoldsTokenizer):
    """``ds.map(DatasetsTokenize(tok), batched=True, num_proc=2)``: adds ``input_ids`` (and
    ``num_tokens``) from the ``text_key`` column. Same ids as ``tok.encode(text).ids``."""

    def __init__(
        self,
        tokenizer: Tokenizer | str | os.PathLike[str],
        *,
        text_key: str = "text",
        add_special_tokens: bool = False,
    ) -> None:
        super().__init__(tokenizer)
        self.text_key = text_key
        self.add_special_tokens = add_special_tokens

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, Any]:
        import numpy as np

        from .._batch import flat_arrays

        texts = batch[self.text_key]
        if not texts:
            return {"input_ids": [], "num_tokens": []}
        ids_b, lens_b, _ = self.tokenizer._core.encode_batch_flat(texts, self.add_special_tokens, None, False, None)
        ids, lens = flat_arrays(ids_b, lens_b)
        return {"input_ids": np.split(ids, np.cumsum(lens)[:-1]), "num_tokens": lens}
