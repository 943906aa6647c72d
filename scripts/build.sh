#!/usr/bin/env bash
# Builds tokpack once, in build/: the library, the CLI and the Python package,
# which pip installs into .venv as `pip install .` does, but without build
# isolation and keeping build/, so rebuilds are incremental. The same tree gives
# build/tokpack and .venv/bin/tokpack (the CLI installed with the package).
#
#   scripts/build.sh                 what demo.sh needs
#   scripts/build.sh tests           also the C++ tests and benchmarks (test.sh)
#   scripts/build.sh tests -DX=Y     extra CMake definitions (gpu_check.sh)
#
# demo.sh and test.sh configure build/ alike (RelWithDebInfo, warnings as
# errors), so test.sh after demo.sh compiles only the tests. Objects go through
# ccache when it is installed (scripts/setup.sh test installs it), keyed on paths
# relative to the checkout, so a fresh clone on the same machine reuses them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHAT="${1:-main}"
shift || true
case "$WHAT" in
  main) tests=OFF ;;
  tests) tests=ON ;;
  *) echo "usage: scripts/build.sh [main|tests] [-DNAME=VALUE ...]" >&2; exit 2 ;;
esac
. "$ROOT/scripts/ccache_env.sh"

args=(-Cbuild-dir="$ROOT/build" -Ccmake.build-type=RelWithDebInfo
  -Ccmake.define.TOKPACK_WERROR=ON -Ccmake.define.TOKPACK_BUILD_TESTS="$tests"
  -Ccmake.define.TOKPACK_BUILD_BENCH="$tests")
[ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] &&
  args+=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER="$CMAKE_CXX_COMPILER_LAUNCHER")
for define in "$@"; do
  case "$define" in
    -D*=*) args+=(-Ccmake.define."${define#-D}") ;;
    *) echo "scripts/build.sh: expected -DNAME=VALUE, got '$define'" >&2; exit 2 ;;
  esac
done
# -v shows CMake's and ninja's progress ([n/N] lines); pip's bookkeeping lines
# are left out, everything else (errors, warnings) passes through.
"$ROOT/.venv/bin/python" -m pip install -v --no-build-isolation "${args[@]}" "$ROOT" 2>&1 |
  { grep --line-buffered -v -E '^ *(Using pip|Processing|Running command|Link requires|Stored in|Created temporary|Requirement already|Attempting uninstall|Found existing|Uninstalling|Successfully uninstalled|Removing file|Looking in|Non-user install)' || true; }
