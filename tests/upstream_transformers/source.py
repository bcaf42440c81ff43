"""Where transformers' own tokenizer tests come from: the source distribution of the installed
transformers release on PyPI (it carries ``tests/test_tokenization_common.py`` and the backend
mixins), kept in fastprep's test cache, or a transformers checkout / bare git directory.

The sdist is fetched with pip (``fetch()``; ``scripts/env.sh`` does it while it installs the test
extra), so the tests themselves run offline.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

# What the run needs from upstream's tests/ (test_tokenization_common.py imports the other two).
FILES = ("test_tokenization_common.py", "test_tokenizers_backend_mixin.py", "test_sentencepiece_backend_mixin.py")


def version() -> str:
    return importlib.metadata.version("transformers")


def cache_dir() -> Path:
    # the same folder as tests/tokenizer_data.py's artifacts
    return Path(os.environ.get("FASTPREP_TEST_CACHE") or Path.home() / ".cache" / "fastprep-tests")


def sdist_path() -> Path:
    return cache_dir() / f"transformers-{version()}.tar.gz"


def fetch() -> Path:
    """Downloads the installed transformers' sdist from PyPI into the cache (once)."""
    path = sdist_path()
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".transformers-{version()}-download"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:"),
            *("--dest", str(tmp), f"transformers=={version()}"),
        ],
        check=True,
    )
    os.replace(tmp / path.name, path)
    shutil.rmtree(tmp, ignore_errors=True)
    return path


def missing_message() -> str:
    return (
        f"transformers {version()}'s tests are not in {sdist_path()}: run "
        "`python tests/upstream_transformers/run.py --fetch` (pip downloads the sdist from PyPI; "
        "scripts/env.sh does it too) or pass a transformers checkout"
    )


def extract(src: Path | None, dest: Path) -> Path:
    """Writes upstream's test files into ``dest/tests``; ``src`` is the sdist (default: the cached
    one), a checkout or a bare git directory (read at the tag of the installed version)."""
    src = src or sdist_path()
    if not src.exists():
        raise FileNotFoundError(missing_message())
    out = dest / "tests"
    out.mkdir(parents=True)
    if src.is_file():
        with tarfile.open(src) as tar:
            for name in FILES:
                member = tar.getmember(f"transformers-{version()}/tests/{name}")
                data = tar.extractfile(member)
                assert data is not None, member
                (out / name).write_bytes(data.read())
    elif (src / "tests" / FILES[0]).is_file():
        for name in FILES:
            shutil.copyfile(src / "tests" / name, out / name)
    else:
        for name in FILES:
            blob = subprocess.run(
                ["git", f"--git-dir={src}", "show", f"v{version()}:tests/{name}"], check=True, capture_output=True
            ).stdout
            (out / name).write_bytes(blob)
    (out / "__init__.py").write_text("")
    return out
