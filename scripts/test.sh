#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds once in build/ (the
# library, the CLI, the C++ tests and the Python package, installed into .venv),
# runs the C++ tests (ctest), builds the sanitized tree (clang, ASan + UBSan) and
# runs the C++ tests there too, fuzzes the parsers briefly, then runs the Python
# tests (pytest) against the package and the built CLI.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="$(nproc)"
t0=$(date +%s)
stage() { echo "== $1 (at $(($(date +%s) - t0)) s)"; }

stage "setup (scripts/setup.sh test)"
"$ROOT/scripts/setup.sh" test

stage "build: library, CLI, C++ tests and the Python package, once, in build/"
"$ROOT/scripts/build.sh" tests
stage "C++ tests"
ctest --test-dir "$ROOT/build" --output-on-failure -j "$JOBS"

stage "build: C++ tests and fuzzers under ASan + UBSan (clang), in build-asan/"
"$ROOT/scripts/build_sanitized.sh"
stage "C++ tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$ROOT/build-asan" --output-on-failure -j "$JOBS"

stage "fuzzing the .idx, manifest, dataset-path, remote-manifest, cursor and Parquet parsers, the split scanners and tokenizer files (libFuzzer, briefly)"
FUZZ_SECONDS="${FUZZ_SECONDS:-15}" "$ROOT/scripts/fuzz.sh"

stage "Python tests"
TOKPACK_NO_SKIPS=1 TOKPACK_BIN="$ROOT/build/tokpack" "$ROOT/.venv/bin/python" -m pytest -q "$ROOT/tests/python"
stage "done"
