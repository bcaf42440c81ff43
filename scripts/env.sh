# Sourced by scripts/demo.sh and scripts/test.sh: makes .venv, builds the release wheel and
# installs it with the test extras. Idempotent; re-running rebuilds only what cargo finds stale.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
VPY="$ROOT/.venv/bin/python"
"$VPY" -m pip install --quiet --upgrade pip
"$VPY" -m pip install --quiet "maturin>=1.9.4,<2"
command -v cargo >/dev/null || { echo "error: cargo (Rust) is needed to build fastprep: https://rustup.rs" >&2; exit 1; }
source "$ROOT/scripts/build_deps.sh"
rm -rf dist
# Release build: everything timed must be, and the benchmarks refuse a debug build.
"$VPY" -m maturin build --release --quiet --out dist
WHEEL="$(ls dist/fastprep-*.whl)"
"$VPY" -m pip install --quiet --force-reinstall --no-deps "$WHEEL"
"$VPY" -m pip install --quiet "$WHEEL[test,bench]"
# transformers' own tokenizer tests (the sdist of the installed release, from PyPI) for
# tests/test_transformers_upstream.py, which runs offline
"$VPY" tests/upstream_transformers/run.py --fetch >/dev/null
