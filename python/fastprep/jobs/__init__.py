"""fastprep's jobs: whole datasets in, model-ready shards out, resumable.

- ``run_tokenize``: JSONL / Parquet / text to token shards (Parquet, or a flat ``.bin``).
- ``run_images``: an ImageFolder tree, a file list or WebDataset tars to ``.npy`` batches.

Both write a ``manifest.json`` (settings, inputs, one entry per finished shard) and an
``errors.jsonl``; a re-run skips the shards already done. ``python -m fastprep tokenize|images``
runs them from the command line; ``engine="ray"`` spreads the shards over a Ray cluster.
"""

from __future__ import annotations

from .images import ImagesSettings, run_images
from .tokenize import JobError, TokenizeSettings, load_tokenizer, run_tokenize

__all__ = ["ImagesSettings", "JobError", "TokenizeSettings", "load_tokenizer", "run_images", "run_tokenize"]
