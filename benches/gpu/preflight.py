"""What benches/gpu/run.sh needs on the GPU machine, checked before it spends device time: each
module with what it is for, whether it is there, and the one command that would carry the missing
ones. Exit status: 4 without fastprep or CuPy or a device, or with a wheel that is not this
tree's (nothing of the GPU check can run, or it would measure other code), else 0 (a missing
optional module costs only the stages or tests that use it, as listed).

Modules are looked up with importlib.util.find_spec (not imported), except fastprep and CuPy,
whose import is the check."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

# module -> (PyPI name, what needs it, required)
NEEDS: dict[str, tuple[str, str, bool]] = {
    "fastprep": ("fastprep", "everything (dist/fastprep-*.whl, carried)", True),
    "cupy": ("cupy-cuda13x", "everything on the GPU", True),
    "numpy": ("numpy", "everything", True),
    "pytest": ("pytest", "the GPU tests", False),
    "hypothesis": ("hypothesis", "only tests/conftest.py's profiles", False),
    "pytest_timeout": ("pytest-timeout", "the tests' per-test --timeout (run.sh drops it without)", False),
    "PIL": ("pillow", "the tests' images (tests/image_data.py)", False),
    "sklearn": ("scikit-learn", "the tests' sample photos (files only: a --no-deps wheel does)", False),
    "matplotlib": ("matplotlib", "the tests' sample photos (files only: a --no-deps wheel does)", False),
    "cv2": ("opencv-python-headless", "JPEG samplings Pillow cannot write (tests skip without), bench peer", False),
    "torch": ("torch", "bench peer, copy counts (CUPTI)", False),
    "torchvision": ("torchvision", "bench peer (nvJPEG decode, resize)", False),
    "cuda.bindings": ("cuda-bindings", "tests/test_cuda_nvrtc.py (skips without), sass_check.py", False),
}


def _present(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing (cuda for cuda.bindings)
        return False


def _stale_wheel() -> list[str]:
    """The files of the installed fastprep that differ from this tree's: its Python modules, and
    the CUDA sources built into its extension against cuda/. A wheel built from another commit
    would spend the device run on old code."""
    import fastprep

    root = Path(__file__).resolve().parents[2]
    installed = Path(fastprep.__file__).resolve().parent
    tree = root / "python" / "fastprep"
    if installed == tree.resolve():
        return []
    out = []
    for path in sorted(tree.rglob("*.py")):
        rel = path.relative_to(tree)
        other = installed / rel
        if not other.exists() or other.read_bytes() != path.read_bytes():
            out.append(f"fastprep/{rel}")
    for name in fastprep.kernel_names():
        src = root / "cuda" / name
        if src.exists() and fastprep.kernel_source(name) != src.read_text():
            out.append(f"cuda/{name}")
    return out


def main() -> int:
    missing: list[str] = []
    fatal: list[str] = []
    for module, (dist, why, required) in NEEDS.items():
        ok = _present(module)
        if ok and module in ("fastprep", "cupy"):
            try:
                __import__(module)
            except Exception as e:  # an extension built for another Python or CUDA: say so here
                ok = False
                why += f" (import failed: {e!r})"
        print(f"{'ok     ' if ok else 'MISSING'} {module:15} {why}")
        if not ok:
            missing.append(dist)
            if required:
                fatal.append(module)
    if "fastprep" not in fatal:
        stale = _stale_wheel()
        if stale:
            print(f"STALE   fastprep        the installed wheel is not this tree's: {', '.join(stale[:8])} differ")
            if os.environ.get("FASTPREP_ALLOW_STALE") != "1":
                fatal.append(
                    "a wheel of this tree (maturin build --release --out dist; FASTPREP_ALLOW_STALE=1 to go on)"
                )
    if "cupy" not in fatal:
        try:
            import cupy

            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # no driver: CUDARuntimeError
            count, why = 0, repr(e)
        else:
            why = f"{count} visible"
        print(f"{'ok     ' if count else 'MISSING'} {'CUDA device':15} {why}")
        if not count:
            fatal.append("a CUDA device")
    optional = [d for d in missing if d not in ("fastprep", "cupy-cuda13x", "numpy")]
    if optional:
        print(
            "to carry them: pip download --only-binary :all: --python-version 3.12 --no-deps -d .whl "
            + " ".join(optional)
        )
    if fatal:
        print(f"preflight: {', '.join(fatal)} missing or broken: the GPU check cannot run on {sys.executable}")
        return 4
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
