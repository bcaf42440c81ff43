#!/usr/bin/env bash
# The GPU check, one entry point: on a machine with an NVIDIA GPU and no network, install the abi3
# wheel built on a CPU machine (dist/fastprep-*.whl, carried) next to the machine's own CuPy,
# PyTorch, torchvision and OpenCV, run the GPU tests, the GPU benchmarks and a compute-sanitizer
# memcheck of a small workload, and write the results to $OUT (default benches/results/):
# preflight.txt (what is there), gpu.txt (device, versions), gpu-tests.log/.xml,
# gpu-bench.json/.log, sanitizer.log, sass.txt.
# Each stage has its own time limit, so one that hangs leaves the others' results.
# Usage, from the repository root: bash benches/gpu/run.sh
#   PYTHON (python3), OUT, WHEEL (the first dist/fastprep-*.whl), SITE (/tmp/fastprep-site, where
#   the wheels are installed) may be set in the environment.
#
# Before the device run, on the CPU machine (the lent machine has no network):
#   maturin build --release --out dist     # the wheel of this commit: a stale one tests old code
#   python benches/gpu/gpu_bench.py --emulate --out /tmp/x.json   # and sanitize.py --emulate: the
#       scripts' own code on the CPU emulation (tests/test_gpu_bench_smoke.py runs them)
# and carry dist/ (ignored by git) and .whl/ with it. The lent machine has Python 3.12, CuPy
# (CUDA 13), torch, torchvision (so Pillow) and numpy; the tests run here also need pytest and the
# sample photos of scikit-learn and matplotlib (tests/image_data.py locates their files, imports
# neither, so --no-deps wheels do); pytest-timeout (else the per-test --timeout is dropped),
# hypothesis (only tests/conftest.py's profiles), cuda-bindings (NVRTC from Python:
# test_cuda_nvrtc.py skips without it, sass_check.py reports it) and opencv-python-headless (some
# entropy tests skip) are optional. preflight.py lists what is missing first and prints the
# command; to carry them all:
#   pip download --only-binary :all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
#       --no-deps -d .whl pytest pluggy iniconfig packaging pytest-timeout scikit-learn matplotlib \
#       'cuda-bindings>=13,<14' cuda-pathfinder
# (pytest's own dependencies listed since --no-deps; leave out what preflight finds there).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT="${OUT:-benches/results}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
SITE="${SITE:-/tmp/fastprep-site}"
WHEEL="${WHEEL:-$(ls dist/fastprep-*.whl 2>/dev/null | head -1)}"
[ -n "$WHEEL" ] && [ -f "$WHEEL" ] || { echo "no dist/fastprep-*.whl: build one with maturin build --release --out dist" >&2; exit 2; }
rm -rf "$SITE"
# Carried wheels the machine lacks (.whl/, optional), then fastprep itself; no index, no network.
if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --target "$SITE" .whl/*.whl || exit 3
fi
"$PY" -m pip install -q --no-index --no-deps --target "$SITE" "$WHEEL" || exit 3
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# What is there, before any device time goes: without fastprep, CuPy or a device nothing runs, and
# a wheel of other code (its Python or CUDA sources differ from this tree's) would measure that code.
"$PY" benches/gpu/preflight.py > "$OUT/preflight.txt" 2>&1
pre_rc=$?
cat "$OUT/preflight.txt"
[ "$pre_rc" -eq 0 ] || { echo "preflight failed (rc=$pre_rc): see $OUT/preflight.txt" >&2; exit 4; }
# pytest-timeout gives each test its own limit; without it the stage's timeout still holds.
per_test=()
"$PY" -c "import pytest_timeout" 2>/dev/null && per_test=(--timeout 90)
{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.memory,clocks.max.sm --format=csv
    "$PY" -c "import fastprep, json, cupy, sys; print(json.dumps({'fastprep': fastprep.build_info(), 'python': sys.version, 'cupy': cupy.__version__, 'cuda_runtime': cupy.cuda.runtime.runtimeGetVersion(), 'cuda_driver': cupy.cuda.runtime.driverGetVersion(), 'nvrtc': cupy.cuda.nvrtc.getVersion()}))"
} > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
# The tests that need a device, and the device-free kernel checks (NVRTC of this machine's CUDA,
# the CPU emulation) run here too.
timeout 120 "$PY" -m pytest tests/test_gpu_device.py tests/test_pool_device.py tests/test_cuda_nvrtc.py \
    tests/test_gpu_resize_emulated.py tests/test_gpu_jpeg_emulated.py tests/test_gpu_entropy_emulated.py \
    -q -p no:cacheprovider ${per_test[@]+"${per_test[@]}"} \
    --junitxml="$OUT/gpu-tests.xml" > "$OUT/gpu-tests.log" 2>&1
tests_rc=$?
tail -n 25 "$OUT/gpu-tests.log"
timeout 300 "$PY" benches/gpu/gpu_bench.py --out "$OUT/gpu-bench.json" > "$OUT/gpu-bench.log" 2>&1
bench_rc=$?
tail -c 6000 "$OUT/gpu-bench.log"
san_rc=skipped
export PATH="$PATH:/usr/local/cuda/bin"
if command -v compute-sanitizer >/dev/null 2>&1; then
    timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$PY" benches/gpu/sanitize.py \
        > "$OUT/sanitizer.log" 2>&1
    san_rc=$?
    tail -n 30 "$OUT/sanitizer.log"
fi
# The SASS of every kernel variant from this machine's NVRTC, searched for the VIMNMX form that
# miscompiled RGBA's unpremultiply under CUDA 13.0 (see sass_check.py).
timeout 60 "$PY" benches/gpu/sass_check.py > "$OUT/sass.txt" 2>&1
sass_rc=$?
cat "$OUT/sass.txt"
echo "tests rc=$tests_rc bench rc=$bench_rc sanitizer rc=$san_rc sass rc=$sass_rc"
exit $(( tests_rc || bench_rc || sass_rc ))
