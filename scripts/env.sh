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
# libjpeg-turbo is built from source: cmake is needed (from PyPI if the system has none), and nasm
# for its SIMD code (from Debian's packages when we may install them; without it the JPEG decoder
# is plain C: same pixels, about half the speed).
if ! command -v cmake >/dev/null; then
    "$VPY" -m pip install --quiet "cmake>=3.18"
    export PATH="$ROOT/.venv/bin:$PATH"
fi
if ! command -v nasm >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        (apt-get install -y -q nasm >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q nasm >/dev/null 2>&1; }) \
            || echo "note: could not install nasm; building libjpeg-turbo without SIMD" >&2
    else
        echo "note: nasm not found; libjpeg-turbo is built without SIMD (install nasm for ~2x faster JPEG decoding)" >&2
    fi
fi
rm -rf dist
# Release build: everything timed must be, and the benchmarks refuse a debug build.
"$VPY" -m maturin build --release --quiet --out dist
WHEEL="$(ls dist/fastprep-*.whl)"
"$VPY" -m pip install --quiet --force-reinstall --no-deps "$WHEEL"
"$VPY" -m pip install --quiet "$WHEEL[test,bench]"
