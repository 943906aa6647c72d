#!/usr/bin/env bash
# Everything that needs a GPU (on a machine with an NVIDIA GPU and the CUDA
# toolkit; nothing here runs in CI):
#   scripts/gpu_check.sh tests   the C++ device-loader tests, plain and under
#                                compute-sanitizer memcheck and racecheck, and
#                                the Python GPU tests (tests/python/test_py_cuda.py)
#   scripts/gpu_check.sh bench   the GPU benchmark, written to docs/benchmarks.md (its GPU section)
#   scripts/gpu_check.sh         both
# Set SKIP_SETUP=1 on a machine where scripts/setup.sh cannot run (no network)
# and the build dependencies are already there.
# A lent GPU machine without network or build dependencies (docs/gpu.md,
# "Checking on a lent GPU machine without network"): on a CPU machine with the
# build dependencies and nvcc, scripts/gpu_bundle.sh makes .gpu/ (the CUDA-built C++ tests, the benchmark's data
# writer, spm_train, a CPython 3.12 wheel and their shared libraries); there,
# from the repository root with .gpu carried, `bash .gpu/run.sh`
# (scripts/gpu_device_run.sh) runs the same checks as this script, stage by
# stage under time limits, with logs and benchmarks.md under $OUT.
set -euo pipefail
WHAT="${1:-all}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# First: without a GPU (or its driver) nothing below can run, so stop before
# the setup and the CUDA build rather than after them.
nvidia-smi -L
[ "${SKIP_SETUP:-0}" = 1 ] || "$ROOT/scripts/setup.sh" test
"$ROOT/scripts/build.sh" tests -DTOKPACK_ENABLE_CUDA=ON

FILTER='*DeviceLoader*'
if [ "$WHAT" = all ] || [ "$WHAT" = tests ]; then
  echo "== C++ device tests"
  "$ROOT/build/tests/tokpack_tests" --gtest_filter="$FILTER"
  SANITIZER="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool"
    "$SANITIZER" --tool "$tool" --error-exitcode 1 \
      "$ROOT/build/tests/tokpack_tests" --gtest_filter="$FILTER"
  done

  echo "== Python GPU tests"
  TOKPACK_BIN="$ROOT/build/tokpack" "$ROOT/.venv/bin/python" -m pytest -q \
    "$ROOT/tests/python/test_py_cuda.py"
fi

if [ "$WHAT" = all ] || [ "$WHAT" = bench ]; then
  echo "== GPU benchmark"
  "$ROOT/.venv/bin/python" "$ROOT/bench/gpu_bench.py" --report "$ROOT/docs/benchmarks.md"
fi
