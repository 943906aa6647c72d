#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs the C++ tests
# (ctest), runs them again under AddressSanitizer + UndefinedBehaviorSanitizer,
# fuzzes the parsers briefly, installs the Python package into .venv, then
# runs the Python tests (pytest) against it and the built CLI.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="$(nproc)"

"$ROOT/scripts/setup.sh" test

echo "== build (RelWithDebInfo)"
# demo.sh configures build/ without the tests; turn them back on.
"$ROOT/scripts/build.sh" "$ROOT/build" -DTOKPACK_BUILD_TESTS=ON -DTOKPACK_BUILD_BENCH=ON
echo "== C++ tests"
ctest --test-dir "$ROOT/build" --output-on-failure -j "$JOBS"

echo "== build (ASan + UBSan)"
# CUDA is off here: its code is compiled (and, on a GPU, tested) in the main build.
"$ROOT/scripts/build.sh" "$ROOT/build-asan" -DTOKPACK_SANITIZE=ON -DTOKPACK_BUILD_BENCH=OFF \
  -DTOKPACK_ENABLE_CUDA=OFF
echo "== C++ tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$ROOT/build-asan" --output-on-failure -j "$JOBS"

echo "== fuzzing the .idx, manifest, dataset-path, remote-manifest, cursor and Parquet parsers (libFuzzer, briefly)"
FUZZ_SECONDS="${FUZZ_SECONDS:-15}" "$ROOT/scripts/fuzz.sh"

echo "== Python package (pip install into .venv)"
"$ROOT/scripts/install_python.sh"
echo "== Python tests"
TOKPACK_BIN="$ROOT/build/tokpack" "$ROOT/.venv/bin/python" -m pytest -q "$ROOT/tests/python"
