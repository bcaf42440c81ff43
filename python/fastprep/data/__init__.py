"""``fastprep.data``: DataLoader and ``datasets.map`` pieces (see ``loaders``). The folder also
holds the bundled sample data (``sample_text.txt``, ``images/``) that the demos use."""

from __future__ import annotations

from .loaders import DatasetsTokenize, EncodedImageDataset, ImageCollate, TokenizeCollate

__all__ = ["DatasetsTokenize", "EncodedImageDataset", "ImageCollate", "TokenizeCollate"]
