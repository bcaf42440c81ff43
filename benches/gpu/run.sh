#!/usr/bin/env bash
# The GPU check, one entry point: on a machine with an NVIDIA GPU and no network, install the abi3
# wheel built on a CPU machine (dist/fastprep-*.whl, carried) next to the machine's own CuPy,
# PyTorch, torchvision and OpenCV, run the GPU tests, the GPU benchmarks and a compute-sanitizer
# memcheck of a small workload, and write the results to $OUT (default benches/results/):
# gpu.txt (device, versions), gpu-tests.log/.xml, gpu-bench.json/.log, sanitizer.log, sass.txt.
# Each stage has its own time limit, so one that hangs leaves the others' results.
# Usage, from the repository root: bash benches/gpu/run.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT="${OUT:-benches/results}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
WHEEL="$(ls dist/fastprep-*.whl 2>/dev/null | head -1)"
[ -n "$WHEEL" ] || { echo "no dist/fastprep-*.whl: build one with maturin build --release --out dist" >&2; exit 2; }
rm -rf /tmp/fastprep-site
# Carried wheels the machine lacks (.whl/, optional), then fastprep itself; no index, no network.
if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --target /tmp/fastprep-site .whl/*.whl || exit 3
fi
"$PY" -m pip install -q --no-index --no-deps --target /tmp/fastprep-site "$WHEEL" || exit 3
export PYTHONPATH="/tmp/fastprep-site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.memory,clocks.max.sm --format=csv
    "$PY" -c "import fastprep, json, cupy, sys; print(json.dumps({'fastprep': fastprep.build_info(), 'python': sys.version, 'cupy': cupy.__version__, 'cuda_runtime': cupy.cuda.runtime.runtimeGetVersion(), 'cuda_driver': cupy.cuda.runtime.driverGetVersion(), 'nvrtc': cupy.cuda.nvrtc.getVersion()}))"
} > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
# The tests that need a device, and the device-free kernel checks (NVRTC of this machine's CUDA,
# the CPU emulation) run here too.
timeout 120 "$PY" -m pytest tests/test_gpu_device.py tests/test_pool_device.py tests/test_cuda_nvrtc.py \
    tests/test_gpu_resize_emulated.py tests/test_gpu_jpeg_emulated.py tests/test_gpu_entropy_emulated.py -q -p no:cacheprovider --timeout 90 \
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
