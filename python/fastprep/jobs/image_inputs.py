"""Listing images for the images job: an ImageFolder tree, a file list, or WebDataset tar shards.

Items come in a fixed order (sorted), so a re-run cuts them into the same shards.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["IMAGE_EXTS", "Item", "list_items", "read_items"]

IMAGE_EXTS = (".jpg", ".jpeg", ".png")


@dataclass
class Item:
    source: str  # a path, or "shard.tar:member"
    label: int
    data: bytes | None = None
    error: str | None = None  # why the bytes could not be read


def list_items(inputs: Sequence[str]) -> tuple[list[list[Item]], list[str]]:
    """Groups of items (one group per tar shard; one group for a tree or a list) and the class
    names (ImageFolder: the sorted sub-directory names, label = position)."""
    paths = [Path(p) for p in inputs]
    if len(paths) == 1 and paths[0].is_dir():
        return [_image_folder(paths[0])], sorted(d.name for d in paths[0].iterdir() if d.is_dir())
    if all(p.name.endswith(".tar") for p in paths):
        for p in paths:
            if not p.is_file():
                raise FileNotFoundError(f"tar shard {p} does not exist")
        return [_tar_members(p) for p in sorted(paths)], []
    if len(paths) == 1 and paths[0].is_file() and paths[0].suffix in (".txt", ".lst", ".tsv"):
        return [_file_list(paths[0])], []
    raise ValueError(
        "images takes one ImageFolder directory (one sub-directory per class), one file list "
        "(.txt: a path and an optional integer label per line), or WebDataset .tar shards"
    )


def _image_folder(root: Path) -> list[Item]:
    classes = sorted(d.name for d in root.iterdir() if d.is_dir())
    if not classes:
        # A flat folder of images: no labels.
        files = sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_EXTS)
        return [Item(str(p), -1) for p in files]
    items = []
    for label, name in enumerate(classes):
        for p in sorted((root / name).rglob("*")):
            if p.is_file() and p.suffix.lower() in IMAGE_EXTS:
                items.append(Item(str(p), label))
    return items


def _file_list(path: Path) -> list[Item]:
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.strip().rsplit(maxsplit=1)
        if not parts or parts[0].startswith("#"):
            continue
        label = -1
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            label = int(parts[1])
        else:
            parts = [line.strip()]
        p = Path(parts[0])
        if not p.is_absolute():
            p = path.parent / p
        items.append(Item(str(p), label))
    return items


def _tar_members(path: Path) -> list[Item]:
    """WebDataset grouping: members sharing a key (the name up to the first dot of its base name)
    are one sample; its image is the jpg/jpeg/png member, its label the ``cls`` member."""
    samples: dict[str, dict[str, str]] = {}
    order: list[str] = []
    labels: dict[str, int] = {}
    with tarfile.open(path) as tf:
        for m in tf:
            if not m.isfile():
                continue
            base = m.name.rsplit("/", 1)[-1]
            stem, _, ext = base.partition(".")
            key = m.name[: len(m.name) - len(base)] + stem
            if key not in samples:
                samples[key] = {}
                order.append(key)
            samples[key][ext.lower()] = m.name
            if ext.lower() in ("cls", "label"):
                f = tf.extractfile(m)
                text = f.read().decode("utf-8", "replace").strip() if f else ""
                labels[key] = int(text) if text.lstrip("-").isdigit() else -1
    items = []
    for key in order:
        member = next((samples[key][e] for e in ("jpg", "jpeg", "png") if e in samples[key]), None)
        if member is not None:
            items.append(Item(f"{path}:{member}", labels.get(key, -1)))
    return items


def read_items(items: Sequence[Item]) -> Iterator[Item]:
    """The items with their bytes (one open per tar, members read in order)."""
    tars: dict[str, tarfile.TarFile] = {}
    try:
        for it in items:
            if ".tar:" in it.source:
                tar_path, member = it.source.split(".tar:", 1)
                tf = tars.get(tar_path)
                if tf is None:
                    tf = tars[tar_path] = tarfile.open(tar_path + ".tar")  # noqa: SIM115 (closed below)
                f = tf.extractfile(member)
                data = f.read() if f else b""
            else:
                try:
                    data = Path(it.source).read_bytes()
                except OSError as e:
                    yield Item(it.source, it.label, None, f"cannot read: {e.strerror or e}")
                    continue
            yield Item(it.source, it.label, data)
    finally:
        for tf in tars.values():
            tf.close()
