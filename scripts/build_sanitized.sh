#!/usr/bin/env bash
# Builds the sanitized tree, build-asan/: the C++ tests and the libFuzzer
# targets from one clang build with AddressSanitizer and UndefinedBehaviorSanitizer
# (and libFuzzer's coverage instrumentation), so CI compiles the library once for
# both instead of twice. -O1 with line tables only: stack traces keep file:line,
# and the tree compiles in about half the time of -O2 -g.
#   scripts/build_sanitized.sh            tests and fuzzers (test.sh)
#   scripts/build_sanitized.sh fuzz       the fuzzers only (fuzz.sh on its own)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/ccache_env.sh"
targets=(idx_fuzz manifest_fuzz cursor_fuzz dataset_path_fuzz remote_manifest_fuzz parquet_fuzz
  split_scanner_fuzz tokenizer_file_fuzz source_index_fuzz removed_list_fuzz)
[ "${1:-all}" = fuzz ] || targets+=(all)
# CUDA is off: its code is compiled (and, on a GPU, tested) in the main build.
cmake -S "$ROOT" -B "$ROOT/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-}" \
  -DCMAKE_C_COMPILER_LAUNCHER="${CMAKE_C_COMPILER_LAUNCHER:-}" \
  -DTOKPACK_SANITIZE=ON -DTOKPACK_BUILD_FUZZ=ON -DTOKPACK_BUILD_TESTS=ON \
  -DTOKPACK_BUILD_BENCH=OFF -DTOKPACK_ENABLE_CUDA=OFF >/dev/null
ninja -C "$ROOT/build-asan" -j "$(nproc)" "${targets[@]}"
