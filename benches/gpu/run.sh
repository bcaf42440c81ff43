#!/usr/bin/env bash
# The GPU check, one entry point: on a machine with an NVIDIA GPU and no network, install the abi3
# wheel built on a CPU machine (dist/fastprep-*.whl, carried) next to the machine's own CuPy,
# PyTorch, torchvision and OpenCV, run the GPU tests and the GPU benchmarks, and write the results
# to $OUT (default benches/results/): gpu.txt, gpu-tests.log, gpu-tests.xml, gpu-bench.json.
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
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.memory --format=csv > "$OUT/gpu.txt" 2>&1
"$PY" -c "import fastprep, json; print(json.dumps(fastprep.build_info()))" >> "$OUT/gpu.txt"
timeout 240 "$PY" -m pytest tests/test_gpu_device.py tests/test_gpu_resize_emulated.py -q -p no:cacheprovider \
    --junitxml="$OUT/gpu-tests.xml" 2>&1 | tee "$OUT/gpu-tests.log"
tests_rc=${PIPESTATUS[0]}
timeout 240 "$PY" benches/gpu/gpu_bench.py --out "$OUT/gpu-bench.json"
bench_rc=$?
echo "tests rc=$tests_rc bench rc=$bench_rc"
exit $(( tests_rc || bench_rc ))
