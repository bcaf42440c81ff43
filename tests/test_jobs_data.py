"""``fastprep.data``: the DataLoader collates and dataset, and the ``datasets.map`` recipe,
against HF tokenizers and ``fastprep.preprocess``."""

from __future__ import annotations

import pickle
from pathlib import Path

import datasets
import numpy as np
import pytest
import tokenizers
import torch
from torch.utils.data import DataLoader

import fastprep
from fastprep.data import DatasetsTokenize, EncodedImageDataset, ImageCollate, TokenizeCollate

from .tokenizer_data_wordpiece import bert_file

TEXTS = ["a short one", "a somewhat longer text with more words in it", "", "naïve café 東京 🙂"] * 5


@pytest.fixture
def hf() -> tokenizers.Tokenizer:
    tok = tokenizers.Tokenizer.from_file(str(bert_file()))
    tok.no_truncation()
    tok.no_padding()
    return tok


def _tok() -> fastprep.Tokenizer:
    tok = fastprep.Tokenizer.from_file(bert_file())
    tok.no_truncation()
    tok.no_padding()
    return tok


def test_tokenize_collate_pads_like_hf(hf: tokenizers.Tokenizer) -> None:
    collate = TokenizeCollate(_tok(), return_tensors="np")
    out = collate([{"text": t, "labels": i} for i, t in enumerate(TEXTS[:4])])
    encs = hf.encode_batch(TEXTS[:4])
    width = max(len(e.ids) for e in encs)
    want = [e.ids + [0] * (width - len(e.ids)) for e in encs]
    assert out["input_ids"].tolist() == want
    assert out["attention_mask"].tolist() == [[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in encs]
    assert out["labels"].tolist() == [0, 1, 2, 3]


def test_tokenize_collate_in_a_dataloader_with_workers(hf: tokenizers.Tokenizer) -> None:
    collate = pickle.loads(pickle.dumps(TokenizeCollate(_tok(), max_length=8, padding="max_length")))
    loader = DataLoader(TEXTS, batch_size=4, collate_fn=collate, num_workers=2)
    rows = [r for batch in loader for r in batch["input_ids"].tolist()]
    assert all(isinstance(b["input_ids"], torch.Tensor) for b in DataLoader(TEXTS[:4], collate_fn=collate))
    hf.enable_truncation(8)
    hf.enable_padding(length=8, pad_id=0)
    assert rows == [e.ids for e in hf.encode_batch(TEXTS)]


def test_image_dataset_and_collate(tmp_path: Path) -> None:
    from fastprep.jobs.cli import DATA

    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        for p in sorted((DATA / "images").glob("*.jpg")):
            (tmp_path / cls / p.name).write_bytes(p.read_bytes())
    ds = EncodedImageDataset.from_image_folder(tmp_path)
    assert ds.classes == ["a", "b"] and len(ds) == 4
    loader = DataLoader(ds, batch_size=3, collate_fn=ImageCollate(crop=64, resize_shorter=72), num_workers=2)
    images, labels = zip(*loader, strict=True)
    got = torch.cat(images).numpy()
    blobs = [ds[i][0] for i in range(len(ds))]
    np.testing.assert_array_equal(got, fastprep.preprocess(blobs, crop=64, resize_shorter=72))
    assert torch.cat(labels).tolist() == [0, 0, 1, 1]


def test_datasets_map_recipe_num_proc_2(hf: tokenizers.Tokenizer) -> None:
    ds = datasets.Dataset.from_dict({"text": TEXTS})
    out = ds.map(DatasetsTokenize(_tok()), batched=True, batch_size=3, num_proc=2)
    assert list(out["input_ids"]) == [e.ids for e in hf.encode_batch(TEXTS, add_special_tokens=False)]
    assert list(out["num_tokens"]) == [len(x) for x in out["input_ids"]]
