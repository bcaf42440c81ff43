"""``fastprep images``: shards equal ``fastprep.preprocess`` on the same files (which the image
tests hold to Pillow/torchvision), for an ImageFolder tree, a file list and WebDataset tars."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

import fastprep
from fastprep.errors import DeviceUnavailableError
from fastprep.jobs import ImagesSettings, JobError, run_images
from fastprep.jobs.cli import DATA

PHOTOS = sorted((DATA / "images").glob("*.jpg"))
CORRUPT = b"\xff\xd8\xff\xe0 truncated"


def _png(seed: int) -> bytes:
    from PIL import Image

    arr = np.random.default_rng(seed).integers(0, 255, (50, 70, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "PNG")
    return buf.getvalue()


def _load(out: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    names = [s["name"] for s in json.loads((out / "manifest.json").read_text())["shards"]]
    data = np.concatenate([np.load(out / f"shard-{n}.npy") for n in names])
    labels = np.concatenate([np.load(out / f"shard-{n}.labels.npy") for n in names])
    paths = [p for n in names for p in (out / f"shard-{n}.paths.txt").read_text().splitlines()]
    return data, labels, paths


@pytest.mark.parametrize("dtype", ["uint8", "float16"])
def test_image_folder_matches_preprocess(tmp_path: Path, dtype: str) -> None:
    tree = tmp_path / "set"
    files = {"a/1.jpg": PHOTOS[0].read_bytes(), "a/2.png": _png(1), "b/3.jpg": PHOTOS[1].read_bytes()}
    files |= {"b/4.jpg": CORRUPT, "c/5.png": _png(2)}
    for name, blob in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(blob)
    summary = run_images(ImagesSettings([str(tree)], str(tmp_path / "out"), dtype=dtype, shard_size=2, batch_size=1))
    data, labels, paths = _load(tmp_path / "out")
    good = [k for k in files if files[k] != CORRUPT]
    expected = fastprep.preprocess([files[k] for k in good], resize_shorter=256, crop=224, dtype=dtype)
    assert data.dtype == np.dtype(dtype) and data.shape == (4, 3, 224, 224)
    np.testing.assert_array_equal(data, expected)
    assert labels.tolist() == [0, 0, 1, 2]
    assert paths == [str(tree / k) for k in good]
    errors = [json.loads(x) for x in (tmp_path / "out" / "errors.jsonl").read_text().splitlines()]
    assert [e["file"] for e in errors] == [str(tree / "b/4.jpg")]
    assert errors[0]["reason"].startswith(("truncated", "corrupt"))
    assert summary["images"] == 4 and summary["errors"] == 1
    assert set(summary["stages"]) == {"read", "decode", "resize", "crop_normalize", "write"}
    header = json.loads((tmp_path / "out" / "manifest.json").read_text())["header"]
    assert header["classes"] == ["a", "b", "c"]


def test_file_list_and_webdataset_tars(tmp_path: Path) -> None:
    blobs = [PHOTOS[0].read_bytes(), _png(3), PHOTOS[1].read_bytes()]
    for i, b in enumerate(blobs):
        (tmp_path / f"{i}.img").write_bytes(b)
    (tmp_path / "list.txt").write_text("0.img 7\n# a comment\n1.img\n2.img 3\n", encoding="utf-8")
    run_images(ImagesSettings([str(tmp_path / "list.txt")], str(tmp_path / "out1"), crop=64, resize_shorter=80))
    data, labels, _ = _load(tmp_path / "out1")
    np.testing.assert_array_equal(data, fastprep.preprocess(blobs, resize_shorter=80, crop=64, dtype="uint8"))
    assert labels.tolist() == [7, -1, 3]

    shards = []
    for s in range(2):
        path = tmp_path / f"train-{s}.tar"
        with tarfile.open(path, "w") as tf:
            for i, b in enumerate(blobs):
                for name, payload in ((f"s{s}/{i:04d}.jpg", b), (f"s{s}/{i:04d}.cls", str(i + 10 * s).encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(payload)
                    tf.addfile(info, io.BytesIO(payload))
        shards.append(str(path))
    run_images(ImagesSettings(shards, str(tmp_path / "out2"), crop=64, resize_shorter=80))
    data, labels, paths = _load(tmp_path / "out2")
    np.testing.assert_array_equal(data, fastprep.preprocess(blobs * 2, resize_shorter=80, crop=64, dtype="uint8"))
    assert labels.tolist() == [0, 1, 2, 10, 11, 12]
    assert paths[4] == f"{shards[1]}:s1/0001.jpg"


def test_strict_and_device_errors(tmp_path: Path) -> None:
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "bad.jpg").write_bytes(CORRUPT)
    with pytest.raises(JobError, match=r"bad\.jpg: .*--strict"):
        run_images(ImagesSettings([str(tmp_path / "set")], str(tmp_path / "out"), strict=True))
    try:
        import cupy

        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_gpu = False
    if not has_gpu:
        with pytest.raises(DeviceUnavailableError, match="--device cuda needs CuPy and a CUDA device"):
            run_images(ImagesSettings([str(tmp_path / "set")], str(tmp_path / "out"), device="cuda"))
    cli = subprocess.run(
        [sys.executable, "-m", "fastprep", "images", str(tmp_path / "nope"), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 1 and "images takes one ImageFolder directory" in cli.stderr


@pytest.mark.parametrize("setting", ["shard_size", "batch_size", "crop", "resize_shorter"])
def test_sizes_below_one_are_refused(tmp_path: Path, setting: str) -> None:
    with pytest.raises(JobError, match=f"--{setting.replace('_', '-')} must be at least 1"):
        run_images(ImagesSettings([str(DATA)], str(tmp_path / "out"), progress=False, **{setting: 0}))


def test_chunk_plan_covers_every_image_once() -> None:
    from fastprep.jobs.images import FIRST_CHUNK, Unit, chunk_sizes

    def units(*sizes: int) -> list[Unit]:
        return [Unit(str(k), [None] * n) for k, n in enumerate(sizes)]  # type: ignore[list-item]

    for sizes in [(0,), (1,), (3,), (100,), (64, 64, 7), (0, 200, 0), (9, 0, 5)]:
        for bs in (1, 2, 7, 64):
            plan = chunk_sizes(units(*sizes), bs)
            assert [sum(p) for p in plan] == list(sizes)
            assert all(0 < n <= bs for p in plan for n in p)
    plan = chunk_sizes(units(256, 100), 64)
    assert plan[0][0] == FIRST_CHUNK and plan[0][1] == 64 - FIRST_CHUNK  # the cores start early
    assert plan[1][-2:] == [27, 9]  # the last batch (36) is cut 3/4 + 1/4: a short final write


def test_many_chunks_and_shards_match_one_image_at_a_time(tmp_path: Path) -> None:
    """Shards and rows are the same whatever the chunking (a short first chunk, the last batch
    cut in two) and equal ``preprocess`` on the files."""
    tree = tmp_path / "set"
    blobs = {f"{'ab'[k % 2]}/{k:03d}.png": _png(k) for k in range(30)}
    blobs["a/bad.jpg"] = CORRUPT
    for name, blob in blobs.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(blob)
    outs = {}
    for bs in (1, 10, 64):
        out = tmp_path / f"out{bs}"
        run_images(ImagesSettings([str(tree)], str(out), crop=32, resize_shorter=40, shard_size=12, batch_size=bs))
        outs[bs] = _load(out)
        assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (tmp_path / "out1").iterdir())
    for bs in (10, 64):
        np.testing.assert_array_equal(outs[bs][0], outs[1][0])
        assert outs[bs][1].tolist() == outs[1][1].tolist() and outs[bs][2] == outs[1][2]
    good = [str(tree / k) for k in sorted(blobs) if blobs[k] != CORRUPT]
    assert outs[1][2] == good
    expected = fastprep.preprocess([Path(p).read_bytes() for p in good], resize_shorter=40, crop=32, dtype="uint8")
    np.testing.assert_array_equal(outs[64][0], expected)
