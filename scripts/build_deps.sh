# Sourced by scripts/env.sh and .ci/run (before clippy builds the crate): the tools the crate's
# build needs besides cargo. Expects $ROOT and $VPY (the project's .venv python).
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
# The PyTurboJPEG benchmark peer loads the system's libturbojpeg (optional: left out without it).
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! ldconfig -p 2>/dev/null | grep -q libturbojpeg.so; then
    (apt-get install -y -q libturbojpeg0 >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q libturbojpeg0 >/dev/null 2>&1; }) \
        || echo "note: libturbojpeg0 not installed; the PyTurboJPEG peer is left out" >&2
fi
