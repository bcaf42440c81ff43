"""Run Pillow's own resize tests with every resize also computed by fastprep, and compare.

    .venv/bin/python tests/upstream_pillow/resize_shim.py PATH [--json OUT] [pytest args...]

PATH is a checkout of github.com/python-pillow/Pillow (or its bare git directory). Its ``Tests``
(the .py files and ``Tests/images``) are copied to a temporary directory and
``test_image_resize.py``, ``test_image_resample.py``, ``test_image_reduce.py`` and
``test_image_thumbnail.py`` run there by pytest with ``PIL.Image.Image.resize`` wrapped: each
call returns Pillow's result (so Pillow's assertions keep checking Pillow) and is also computed
with ``fastprep.resize`` from ``np.asarray(image)``, and the bytes are compared. The core-level
calls of ``TestImagingCoreResize`` (``im.im.resize``, no premultiplication) are compared too
(RGBA as fastprep's ``mode="RGBa"``). A call fastprep cannot express (a ``box`` other than the
whole image, a ``reducing_gap`` that reduces, unless ``fastprep.resize`` takes ``box=`` /
``reducing_gap=``; the MKS filters, modes fastprep does not have) is counted
as unsupported with its reason. Prints pytest's summary, the counts and every difference. Not
part of the CI suite (it needs the Pillow sources).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep import _extract

import fastprep

FILES = ("test_image_resize.py", "test_image_resample.py", "test_image_reduce.py", "test_image_thumbnail.py")
# box= and reducing_gap= (Pillow's names) are passed on once fastprep.resize takes them
FASTPREP_RESIZE_ARGS = set(inspect.signature(fastprep.resize).parameters)
U8_MODES = ("L", "LA", "La", "RGB", "RGBA", "RGBX", "CMYK", "YCbCr", "RGBa")


class Recorder:
    """Compares each wrapped call and keeps the counts and the differences."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.unsupported: Counter[str] = Counter()
        self.identical: Counter[str] = Counter()
        self.differences: list[dict[str, Any]] = []
        self.by_file: Counter[str] = Counter()
        self.test = ""
        self.depth = threading.local()

    def _count(self, kind: str) -> None:
        self.counts[kind] += 1
        self.by_file[f"{self.test.split('::')[0].removeprefix('Tests/')} {kind}"] += 1

    def _unsupported(self, reason: str) -> None:
        self._count("unsupported")
        self.unsupported[reason] += 1

    def compare(
        self, im: Image.Image, size: Any, resample: Any, box: Any, reducing_gap: Any, out: Image.Image, core: bool
    ) -> None:
        size = tuple(int(v) for v in size)
        name = Image.Resampling(resample).name.lower() if resample is not None else "bicubic"
        if im.mode in ("1", "P"):
            name = "nearest"
        w, h = im.size
        kwargs: dict[str, Any] = {}
        if box is not None and tuple(box) != (0, 0, w, h):
            if "box" not in FASTPREP_RESIZE_ARGS:
                return self._unsupported("box= other than the whole image")
            kwargs["box"] = tuple(box)
        if reducing_gap is not None and "reducing_gap" in FASTPREP_RESIZE_ARGS:
            kwargs["reducing_gap"] = reducing_gap
        elif reducing_gap is not None and name != "nearest":
            fx = int(w / size[0] / reducing_gap) or 1
            fy = int(h / size[1] / reducing_gap) or 1
            if fx > 1 or fy > 1:
                return self._unsupported("reducing_gap= that reduces first")
        if name not in ("nearest", "box", "bilinear", "hamming", "bicubic", "lanczos"):
            return self._unsupported(f"filter {name.upper()}")
        mode = im.mode
        if core and mode in ("RGBA", "LA"):  # the core resizes without premultiplying
            mode = "RGBa" if mode == "RGBA" else "La"
        if mode not in (*U8_MODES, "F", "1", "P", "I", "I;16", "I;16L", "I;16B", "I;16N"):
            return self._unsupported(f"mode {im.mode}")
        arr = np.asarray(im)
        try:
            got = fastprep.resize(arr, size, filter=name, mode=mode, **kwargs)
        except Exception as exc:
            return self._unsupported(f"fastprep raised {type(exc).__name__}: {str(exc)[:80]}")
        want = np.asarray(out)
        key = f"{im.mode} {name}"
        if want.dtype == np.bool_:  # Pillow's "1" arrays hold 0/255 bytes as bool: compare the values
            same = got.shape == want.shape and got.dtype == want.dtype and bool((got == want).all())
        else:
            same = got.shape == want.shape and got.dtype == want.dtype and got.tobytes() == want.tobytes()
        if same:
            self._count("identical")
            self.identical[key] += 1
            return None
        self._count("differing")
        diff = None
        if got.shape == want.shape:
            d = np.abs(got.astype(np.float64) - want.astype(np.float64))
            diff = {"max_diff": float(np.nanmax(d)), "count": int((d != 0).sum()), "of": int(d.size)}
        self.differences.append(
            {
                "test": self.test,
                "mode": im.mode,
                "core": core,
                "from": [w, h],
                "to": list(size),
                "filter": name,
                "fastprep_shape": list(got.shape),
                "pillow_shape": list(want.shape),
                **(diff or {}),
            }
        )
        return None

    def guarded(self, *args: Any) -> None:
        try:
            self.compare(*args)
        except Exception as exc:  # the shim must not change Pillow's test outcome
            self._unsupported(f"shim error {type(exc).__name__}: {str(exc)[:80]}")


class Plugin:
    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.outcomes: Counter[str] = Counter()

    def pytest_configure(self, config: object) -> None:
        rec = self.rec
        original = Image.Image.resize

        def resize(self: Image.Image, size: Any, resample: Any = None, box: Any = None, reducing_gap: Any = None):
            depth = getattr(rec.depth, "n", 0)
            rec.depth.n = depth + 1
            try:
                out = original(self, size, resample, box, reducing_gap)
            except Exception:
                if depth == 0:
                    rec._count("Pillow raised (not compared)")
                raise
            finally:
                rec.depth.n = depth
            if depth == 0:  # Pillow resizes RGBA through a nested call on RGBa: compare the outer one
                rec.guarded(self, size, resample, box, reducing_gap, out, False)
            return out

        Image.Image.resize = resize  # type: ignore[method-assign]

    def pytest_collection_modifyitems(self, session: object, config: object, items: list) -> None:
        rec = self.rec
        for item in items:
            cls = getattr(item, "cls", None)
            if cls is not None and cls.__name__ == "TestImagingCoreResize" and "resize" in cls.__dict__:
                original = cls.__dict__["resize"]
                if getattr(original, "_shim", False):
                    continue

                def core(self: Any, im: Image.Image, size: Any, f: Any, _orig: Any = original) -> Image.Image:
                    out = _orig(self, im, size, f)
                    rec.guarded(im, size, f, None, None, out, True)
                    return out

                core._shim = True  # type: ignore[attr-defined]
                cls.resize = core

    def pytest_runtest_setup(self, item: Any) -> None:
        self.rec.test = item.nodeid

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or report.outcome != "passed":
            self.outcomes["xfailed" if hasattr(report, "wasxfail") else report.outcome] += 1


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--json", type=Path, help="write the counts and differences here")
    args, extra = ap.parse_known_args(argv)
    rec = Recorder()
    plugin = Plugin(rec)
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp)
        if (args.path / "Tests").is_dir():
            shutil.copytree(args.path / "Tests", dest / "Tests", ignore=shutil.ignore_patterns("fonts", "icc"))
        else:
            missing = _extract(args.path, "Tests", dest, lambda p: p.count("/") == 1 or p.startswith("Tests/images/"))
            if missing:
                print(f"{len(missing)} files of Tests/ are not in the clone (the tests that need them fail)")
        (dest / "pytest.ini").write_text("[pytest]\naddopts = -ra -p no:cacheprovider\n")
        os.chdir(dest)  # Pillow's tests open Tests/images/... relative to the checkout
        try:
            code = pytest.main(["-q", "--rootdir", str(dest), *[f"Tests/{f}" for f in FILES], *extra], plugins=[plugin])
        finally:
            os.chdir(cwd)
    print(f"\npytest outcomes (Pillow's assertions on Pillow's results): {dict(plugin.outcomes)} (exit {int(code)})")
    print(f"resize calls: {dict(rec.counts)}")
    for key, n in sorted(rec.by_file.items()):
        print(f"  {key}: {n}")
    print("identical by mode and filter: " + ", ".join(f"{k} {v}" for k, v in sorted(rec.identical.items())))
    print("unsupported by fastprep:")
    for reason, n in rec.unsupported.most_common():
        print(f"  {n:5}  {reason}")
    print(f"differing: {len(rec.differences)}")
    for d in rec.differences:
        print(f"  {d}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "pytest": dict(plugin.outcomes),
                    "pytest_exit": int(code),
                    "counts": dict(rec.counts),
                    "by_file": dict(rec.by_file),
                    "identical": dict(rec.identical),
                    "unsupported": dict(rec.unsupported),
                    "differences": rec.differences,
                },
                indent=1,
            )
        )
    return 1 if rec.differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
