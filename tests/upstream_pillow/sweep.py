"""Decode every JPEG/PNG/APNG/MPO test image of Pillow with Pillow and with fastprep, and compare.

    .venv/bin/python tests/upstream_pillow/sweep.py PATH [--json OUT] [--batch N] [--max-pixels N]

PATH is a checkout of github.com/python-pillow/Pillow (or its bare git directory); the files
are ``Tests/images/**/*.{jpg,jpeg,png,apng,mpo}``. Each file is decoded in modes RGB, L, RGBA and
"unchanged" by fastprep's contract (``ImageOps.exif_transpose(Image.open(f)).convert(mode)``
with Pillow's default limits, which fastprep's default mirrors: a warning over ``MAX_IMAGE_PIXELS``,
a refusal over twice it; ``--max-pixels`` lowers both limits, to try the boundary on these
files, and then Pillow's warning is taken as a refusal, as fastprep's explicit limit refuses) and by
``fastprep.decode``. The fastprep side runs in subprocesses of ``--batch`` files
each; a batch that dies is rerun file by file so a crash is pinned to its file and counted.
Each case is classified: identical / both refuse / fastprep refuses / Pillow refuses /
pixel difference / crash. Then every file is decoded again with ``fastprep.decode_batch`` in a
shuffled order (1 and 2 threads) to check the pixels do not depend on the images before them.
Prints a table of counts and every case that is not identical (``SWEEP_ABORT_ON=NAME`` makes the
worker abort on that file, to see the crash guard work). Not part of the CI suite (it
needs the Pillow sources).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

MODES = ("RGB", "L", "RGBA", "unchanged")
SUFFIXES = (".jpg", ".jpeg", ".png", ".apng", ".mpo")
# Pillow's mode for fastprep's "unchanged": the file's own channels, palettes expanded
UNCHANGED = {
    "1": "L",
    "L": "L",
    "I": "L",
    "I;16": "L",
    "I;16B": "L",
    "LA": "LA",
    "La": "LA",
    "RGB": "RGB",
    "RGBA": "RGBA",
    "CMYK": "CMYK",
    "P": "RGB",
    "PA": "RGBA",
}


def _extract(src: Path, tree: str, dest: Path, keep: Any = lambda name: True) -> list[str]:
    """Writes the blobs under ``tree`` of the bare git dir ``src`` to ``dest``; returns the paths whose
    blob the (partial) clone lacks."""
    listing = subprocess.run(
        ["git", f"--git-dir={src}", "ls-tree", "-r", "HEAD", tree], check=True, capture_output=True, text=True
    ).stdout
    missing = []
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        _, kind, sha = meta.split()
        if kind != "blob" or not keep(path):
            continue
        blob = subprocess.run(["git", f"--git-dir={src}", "cat-file", "blob", sha], capture_output=True)
        if blob.returncode != 0:
            missing.append(path)
            continue
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        (dest / path).write_bytes(blob.stdout)
    return missing


def _images(src: Path, dest: Path) -> tuple[Path, list[str]]:
    """Tests/images of the checkout (or bare git dir) ``src``, copied under ``dest`` if need be, and
    the image files a partial clone lacks."""
    if (src / "Tests" / "images").is_dir():
        return src / "Tests" / "images", []
    missing = _extract(src, "Tests/images", dest, lambda p: p.lower().endswith(SUFFIXES))
    return dest / "Tests" / "images", missing


def _pillow(data: bytes, mode: str, hard_limit: bool) -> Any:
    """Pillow's pixels as (H, W, C) uint8, or raises what Pillow raises (with ``hard_limit``, its
    DecompressionBombWarning too)."""
    import numpy as np
    from PIL import Image, ImageOps

    with warnings.catch_warnings():
        warnings.simplefilter("error" if hard_limit else "ignore", Image.DecompressionBombWarning)
        img = Image.open(io.BytesIO(data))
        img = ImageOps.exif_transpose(img)
        if mode == "unchanged":
            target = UNCHANGED.get(img.mode)
            if target is None:
                raise ValueError(f"no unchanged mapping for Pillow mode {img.mode}")
            if "transparency" in img.info and target in ("L", "RGB"):
                target = {"L": "LA", "RGB": "RGBA"}[target]
            img = img.convert(target)
        else:
            img = img.convert(mode)
        arr = np.asarray(img)
    if arr.dtype == bool:
        arr = arr.astype(np.uint8) * 255
    return arr[..., None] if arr.ndim == 2 else arr


def _refusal(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    text = str(exc).splitlines()[0][:120] if str(exc) else ""
    text = re.sub(r"<_io.BytesIO object at 0x[0-9a-f]+>", "<BytesIO>", text)
    return f"{type(exc).__name__}{'(' + reason + ')' if reason else ''}: {text}"


def _digest(arr: Any) -> str:
    return hashlib.sha1(f"{arr.shape}{arr.dtype}".encode() + arr.tobytes()).hexdigest()


def _compare_file(path: Path, name: str, max_pixels: int | None) -> list[dict[str, Any]]:
    import numpy as np
    from PIL import Image

    import fastprep

    if max_pixels is not None:
        Image.MAX_IMAGE_PIXELS = max_pixels
    limit = {} if max_pixels is None else {"max_pixels": max_pixels}

    data = path.read_bytes()
    try:
        with Image.open(io.BytesIO(data)) as im:
            info = f"{im.format} {im.mode} {im.size[0]}x{im.size[1]}"
    except Exception as exc:
        info = f"open: {type(exc).__name__}"
    rows = []
    for mode in MODES:
        row: dict[str, Any] = {"file": name, "mode": mode, "pillow": info}
        try:
            ref = _pillow(data, mode, max_pixels is not None)
            pil_err = None
        except Exception as exc:
            ref, pil_err = None, _refusal(exc)
        try:
            got = fastprep.decode(data, mode=mode, **limit)
            fp_err = None
            row["digest"] = _digest(got)
        except Exception as exc:
            got, fp_err = None, _refusal(exc)
        if pil_err and fp_err:
            row.update(kind="both refuse", reason=f"Pillow {pil_err} | fastprep {fp_err}")
        elif fp_err:
            row.update(kind="fastprep refuses", reason=fp_err)
        elif pil_err:
            row.update(kind="Pillow refuses", reason=pil_err, shape=list(got.shape))
        elif got.shape != ref.shape:
            row.update(kind="pixel difference", reason=f"shape fastprep {got.shape} Pillow {ref.shape}")
        else:
            diff = np.abs(got.astype(np.int16) - ref.astype(np.int16))
            if diff.any():
                row.update(
                    kind="pixel difference",
                    reason=f"max abs diff {int(diff.max())}, {int((diff != 0).sum())} of {diff.size} values",
                    max_diff=int(diff.max()),
                    count=int((diff != 0).sum()),
                )
            else:
                row.update(kind="identical")
        rows.append(row)
    return rows


def _worker(root: Path, names: list[str], max_pixels: int | None) -> None:
    """Compares ``names`` and prints one JSON line per file as soon as it is done."""
    crash_on = os.environ.get("SWEEP_ABORT_ON")  # to check the crash guard: abort on this file
    for name in names:
        if name == crash_on:
            os.abort()
        print(json.dumps(_compare_file(root / name, name, max_pixels)), flush=True)


def _run_worker(root: Path, names: list[str], max_pixels: int | None) -> tuple[list[dict[str, Any]], int, str]:
    limit = [] if max_pixels is None else ["--max-pixels", str(max_pixels)]
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", *limit, str(root)],
        input="\n".join(names),
        capture_output=True,
        text=True,
    )
    rows = [r for line in proc.stdout.splitlines() if line.startswith("[") for r in json.loads(line)]
    return rows, proc.returncode, proc.stderr[-2000:]


def _batch_check(root: Path, names: list[str], seed: int, max_pixels: int | None) -> None:
    """decode_batch in shuffled orders; prints {file|mode: digest or error} as JSON."""
    import fastprep

    limit = {} if max_pixels is None else {"max_pixels": max_pixels}
    out: dict[str, str] = {}
    blobs = {n: (root / n).read_bytes() for n in names}
    for mode in MODES:
        for threads in (1, 2):
            order = list(names)
            random.Random(seed + threads).shuffle(order)
            res = fastprep.decode_batch(
                [blobs[n] for n in order], mode=mode, num_threads=threads, on_error="skip", **limit
            )
            for n, arr in zip(order, res, strict=True):
                key = f"{n}|{mode}|{threads}"
                out[key] = "refused" if arr is None else _digest(arr)
    print(json.dumps(out))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--json", type=Path, help="write every case here")
    ap.add_argument("--batch", type=int, default=40, help="files per subprocess")
    ap.add_argument(
        "--max-pixels", type=int, default=None, help="a lower limit for both (Image.MAX_IMAGE_PIXELS, max_pixels=)"
    )
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--batch-check", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _worker(args.path, [n for n in sys.stdin.read().splitlines() if n], args.max_pixels)
        return 0
    if args.batch_check is not None:
        _batch_check(args.path, [n for n in sys.stdin.read().splitlines() if n], args.batch_check, args.max_pixels)
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        root, missing = _images(args.path, Path(tmp))
        names = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.suffix.lower() in SUFFIXES)
        rows: list[dict[str, Any]] = []
        crashes: list[dict[str, Any]] = []
        for i in range(0, len(names), args.batch):
            chunk = names[i : i + args.batch]
            got, code, _err = _run_worker(root, chunk, args.max_pixels)
            if code != 0:  # rerun the files not reported, one per process, to pin the crash
                done = {r["file"] for r in got}
                for name in chunk:
                    if name in done:
                        continue
                    one, code1, err1 = _run_worker(root, [name], args.max_pixels)
                    if code1 != 0 and not one:
                        tail = err1.strip().splitlines()[-1:] or [f"exit code {code1}"]
                        crash = {"kind": "crash", "reason": f"exit {code1}: {tail[0][:200]}"}
                        one = [{"file": name, "mode": m, **crash} for m in MODES]
                        crashes.append({"file": name, "code": code1})
                    got.extend(one)
            rows.extend(got)
            print(f"  {min(i + args.batch, len(names))}/{len(names)} files", file=sys.stderr, flush=True)

        # decode_batch, shuffled, against the single-image digests
        ok = [n for n in names if n not in {c["file"] for c in crashes}]
        limit = [] if args.max_pixels is None else ["--max-pixels", str(args.max_pixels)]
        proc = subprocess.run(
            [sys.executable, __file__, "--batch-check", "1234", *limit, str(root)],
            input="\n".join(ok),
            capture_output=True,
            text=True,
        )
        batch_mismatch: list[str] = []
        batch_compared = 0
        if proc.returncode != 0:
            batch_mismatch.append(f"decode_batch process failed (exit {proc.returncode}): {proc.stderr[-500:]}")
        else:
            batch = json.loads(proc.stdout)
            single = {(r["file"], r["mode"]): r.get("digest", "refused") for r in rows}
            batch_compared = len(batch)
            for key, digest in batch.items():
                name, mode, threads = key.split("|")
                want = single[(name, mode)]
                if digest != want:
                    batch_mismatch.append(f"{name} {mode} threads={threads}: batch {digest[:12]} single {want[:12]}")

    counts = Counter(r["kind"] for r in rows)
    by_mode = {m: Counter(r["kind"] for r in rows if r["mode"] == m) for m in MODES}
    kinds = ["identical", "both refuse", "fastprep refuses", "Pillow refuses", "pixel difference", "crash"]
    if missing:
        print(f"{len(missing)} image files are not in the clone: {', '.join(missing)}")
    print(f"{len(names)} files x {len(MODES)} modes = {len(rows)} cases")
    print(f"{'':18}" + "".join(f"{m:>11}" for m in MODES) + f"{'total':>8}")
    for k in kinds:
        print(f"{k:18}" + "".join(f"{by_mode[m][k]:>11}" for m in MODES) + f"{counts[k]:>8}")
    print(
        f"decode_batch (shuffled, 1 and 2 threads) vs decode: {batch_compared} results compared, "
        f"{len(batch_mismatch)} mismatches"
    )
    for line in batch_mismatch:
        print("  " + line)
    kinds_seen = Counter(" ".join(r.get("pillow", "").split()[:2]) for r in rows if r["mode"] == "RGB")
    print("files by Pillow's format and mode: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds_seen.items())))
    print("\nNot identical:")
    for r in rows:
        if r["kind"] not in ("identical",):
            print(f"  {r['kind']:17} {r['mode']:9} {r['file']} [{r.get('pillow', '')}]: {r.get('reason', '')}")
    if args.json:
        for r in rows:
            r.pop("digest", None)
        args.json.write_text(
            json.dumps(
                {
                    "files": len(names),
                    "missing": missing,
                    "counts": dict(counts),
                    "by_mode": {m: dict(c) for m, c in by_mode.items()},
                    "files_by_format_mode": dict(kinds_seen),
                    "batch_compared": batch_compared,
                    "batch_mismatches": batch_mismatch,
                    "cases": [r for r in rows if r["kind"] != "identical"],
                    "identical": sorted({r["file"] for r in rows if r["kind"] == "identical"}),
                },
                indent=1,
            )
        )
    bad = counts["pixel difference"] + counts["crash"] + len(batch_mismatch)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
