"""Functions run in child processes by the pickling tests (a small module: spawn imports it)."""

from __future__ import annotations

from typing import Any


def encode_fields(tok: Any, item: Any) -> tuple[Any, ...]:
    """Encode ``item`` (a text or a pair) and return every field, for comparison in the parent."""
    enc = tok.encode(*item) if isinstance(item, tuple) else tok.encode(item)
    return (
        enc.ids,
        enc.tokens,
        enc.offsets,
        enc.attention_mask,
        enc.type_ids,
        [o.ids for o in enc.overflowing],
        tok.padding,
        tok.truncation,
    )


class TextDataset:
    """A map-style dataset as a PyTorch ``Dataset``: holds the tokenizer, tokenizes on access."""

    def __init__(self, tok: Any, texts: list[str]) -> None:
        self.tok = tok
        self.texts = texts

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, i: int) -> tuple[int, list[int]]:
        return i, self.tok.encode(self.texts[i]).ids


def worker_loop(dataset: TextDataset, index_queue: Any, data_queue: Any) -> None:
    """DataLoader's worker protocol (torch.utils.data._utils.worker._worker_loop, reduced): the
    dataset arrives pickled with the process, indices come in batches until None, results go out."""
    while True:
        batch = index_queue.get()
        if batch is None:
            break
        data_queue.put([dataset[i] for i in batch])


def unpickled_encoding(enc: Any) -> Any:
    """An Encoding that crossed the process boundary twice (pickled both ways)."""
    return enc
