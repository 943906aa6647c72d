#!/usr/bin/env bash
# Everything that needs a GPU, in one command (on a machine with an NVIDIA GPU
# and the CUDA toolkit; nothing here runs in CI):
#   1. the C++ device-loader tests, plain and under compute-sanitizer
#      memcheck and racecheck;
#   2. the Python GPU tests (tests/python/test_py_cuda.py);
#   3. the GPU benchmark, written to docs/benchmarks-gpu.md.
# Set SKIP_SETUP=1 on a machine where scripts/setup.sh cannot run (no network)
# and the build dependencies are already there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
[ "${SKIP_SETUP:-0}" = 1 ] || "$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh" "$ROOT/build" -DTOKPACK_ENABLE_CUDA=ON
nvidia-smi -L

FILTER='*DeviceLoader*'
echo "== C++ device tests"
"$ROOT/build/tests/tokpack_tests" --gtest_filter="$FILTER"
SANITIZER="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
for tool in memcheck racecheck; do
  echo "== compute-sanitizer --tool $tool"
  "$SANITIZER" --tool "$tool" --error-exitcode 1 \
    "$ROOT/build/tests/tokpack_tests" --gtest_filter="$FILTER"
done

echo "== Python GPU tests"
"$ROOT/scripts/install_python.sh"
TOKPACK_BIN="$ROOT/build/tokpack" "$ROOT/.venv/bin/python" -m pytest -q \
  "$ROOT/tests/python/test_py_cuda.py"

echo "== GPU benchmark"
"$ROOT/.venv/bin/python" "$ROOT/bench/gpu_bench.py" --write-doc "$ROOT/docs/benchmarks-gpu.md"
