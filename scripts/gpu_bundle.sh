#!/usr/bin/env bash
# Makes .gpu/, a self-contained copy of what scripts/gpu_check.sh needs, for a
# lent GPU machine that has no network, no build dependencies and no -dev
# libraries (Ubuntu 24.04, CPython 3.12 with torch, numpy and pytest, the CUDA
# toolkit with compute-sanitizer). Run it here, on the CPU machine; there, from
# the repository root with .gpu carried:   bash .gpu/run.sh
# (scripts/gpu_device_run.sh, copied in as .gpu/run.sh; it says what it checks).
#
#   .gpu/bin/tokpack_tests    build/tests/tokpack_tests (CUDA build), debug info stripped
#   .gpu/bin/reader_bench     build/bench/reader_bench, stripped (writes the benchmark's data)
#   .gpu/bin/spm_train        a wrapper: runs .gpu/libexec/spm_train (this machine's) with
#                             LD_LIBRARY_PATH=.gpu/lib, so it never meets the GPU machine's
#                             own libsentencepiece/libprotobuf-lite/libabsl (maybe other versions)
#   .gpu/wheel/*.whl          tokpack for CPython 3.12, CUDA for sm_$GPU_CUDA_ARCH
#   .gpu/lib/                 every library ldd lists for those and for the wheel's CLI and
#                             _core module, except glibc, libstdc++, libgcc_s and libcuda
#   .gpu/run.sh, .gpu/info.txt
#
# Builds, all incremental: build/ (scripts/build.sh tests -DTOKPACK_ENABLE_CUDA=ON;
# GPU_BUNDLE_SKIP_BUILD=1 takes build/ as it is), a CPython 3.12 venv in
# build/gpu-venv312 (numpy, scikit-build-core, pybind11, pyarrow; made again if its
# interpreter no longer runs) and the wheel's build tree in build/gpu-py312.
# Knobs: PYTHON312 (the interpreter for the venv; default: python3.12 on PATH if
# it runs, else the newest /root/.pyenv/versions/*/bin/python3.12), GPU_CUDA_ARCH
# (default 90: H100, H200). Fails if .gpu/ is over 60 MiB (the device tool
# carries at most 64 MiB).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
G="$ROOT/.gpu"
VENV="$ROOT/build/gpu-venv312"
WHEEL_BUILD="$ROOT/build/gpu-py312"
ARCH="${GPU_CUDA_ARCH:-90}"
MAX_BYTES=$((60 * 1024 * 1024))
die() { echo "gpu_bundle: $*" >&2; exit 1; }
is312() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; }

# --- the C++ tests and benchmarks, with CUDA, in build/ ----------------------
if [ "${GPU_BUNDLE_SKIP_BUILD:-0}" != 1 ]; then
  echo "== build/: scripts/build.sh tests -DTOKPACK_ENABLE_CUDA=ON"
  "$ROOT/scripts/build.sh" tests -DTOKPACK_ENABLE_CUDA=ON
fi
grep -qx 'TOKPACK_ENABLE_CUDA:BOOL=ON' build/CMakeCache.txt 2>/dev/null ||
  die "build/ is not a CUDA build: run scripts/build.sh tests -DTOKPACK_ENABLE_CUDA=ON (needs nvcc)"
for f in build/tests/tokpack_tests build/bench/reader_bench; do
  [ -x "$f" ] || die "$f is missing: run scripts/build.sh tests -DTOKPACK_ENABLE_CUDA=ON"
done
SPM_TRAIN="$(command -v spm_train)" || die "spm_train not found (apt-get install sentencepiece)"

# --- CPython 3.12 and its venv -----------------------------------------------
if [ -n "${PYTHON312:-}" ]; then
  is312 "$PYTHON312" || die "PYTHON312=$PYTHON312 does not run as CPython 3.12"
  PY312="$PYTHON312"
elif is312 python3.12; then
  PY312="$(command -v python3.12)"
else
  PY312="$(ls -d /root/.pyenv/versions/*/bin/python3.12 2>/dev/null | sort -V | tail -1)"
  [ -n "$PY312" ] && is312 "$PY312" ||
    die "no CPython 3.12 (python3.12 on PATH does not run, none in /root/.pyenv/versions): set PYTHON312=/path/to/python3.12"
fi
if ! is312 "$VENV/bin/python"; then
  echo "== $VENV from $PY312"
  rm -rf "$VENV"
  "$PY312" -m venv "$VENV"
fi
"$VENV/bin/python" -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" ||
  die "$PY312 has no development headers (Python.h)"
if ! "$VENV/bin/python" -c 'import numpy, scikit_build_core, pybind11, pyarrow' 2>/dev/null; then
  echo "== pip installing numpy scikit-build-core pybind11 pyarrow into $VENV"
  "$VENV/bin/python" -m pip install -q --progress-bar off numpy "scikit-build-core>=1.0" pybind11 pyarrow
fi

# --- the wheel (CPython 3.12, CUDA), in build/gpu-py312 -----------------------
echo "== wheel: CPython 3.12, CUDA sm_$ARCH, in $WHEEL_BUILD"
. "$ROOT/scripts/ccache_env.sh"
args=(-Cbuild-dir="$WHEEL_BUILD" -Ccmake.define.TOKPACK_ENABLE_CUDA=ON
  -Ccmake.define.CMAKE_CUDA_ARCHITECTURES="$ARCH")
[ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] &&
  args+=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER="$CMAKE_CXX_COMPILER_LAUNCHER")
WHEEL_DIR="$ROOT/build/gpu-wheel"
rm -rf "$WHEEL_DIR"
"$VENV/bin/python" -m pip wheel -v --no-deps --no-build-isolation -w "$WHEEL_DIR" "${args[@]}" "$ROOT" 2>&1 |
  { grep --line-buffered -v -E '^ *(Using pip|Processing|Running command|Link requires|Stored in|Created temporary|Looking in|Non-user install|Building wheel|Created wheel|Destination directory)' || true; } ||
  die "pip wheel failed"
WHEEL="$(ls "$WHEEL_DIR"/tokpack-*-cp312-*.whl 2>/dev/null | head -1)"
[ -n "$WHEEL" ] || die "pip wheel made no cp312 wheel in $WHEEL_DIR"

# --- .gpu/ ---------------------------------------------------------------------
echo "== $G"
rm -rf "$G"
mkdir -p "$G/bin" "$G/libexec" "$G/lib" "$G/wheel"
strip --strip-debug -o "$G/bin/tokpack_tests" build/tests/tokpack_tests
strip -o "$G/bin/reader_bench" build/bench/reader_bench
cp -L "$SPM_TRAIN" "$G/libexec/spm_train"
cat >"$G/bin/spm_train" <<'EOF'
#!/bin/sh
# Made by scripts/gpu_bundle.sh: the bundle's spm_train, always with the bundle's
# libraries (libsentencepiece*, libprotobuf-lite, libabsl* of the machine it
# was built on); a GPU machine's own copies may be other versions.
G="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
LD_LIBRARY_PATH="$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$G/libexec/spm_train" "$@"
EOF
chmod 755 "$G/bin/spm_train"
cp "$WHEEL" "$G/wheel/"
cp scripts/gpu_device_run.sh "$G/run.sh"
chmod 755 "$G/run.sh"

# The libraries: ldd of each binary (the wheel's CLI and _core module as packed).
unpacked="$(mktemp -d)"
trap 'rm -rf "$unpacked"' EXIT
"$VENV/bin/python" -m zipfile -e "$WHEEL" "$unpacked"
objects=("$G/bin/tokpack_tests" "$G/bin/reader_bench" "$G/libexec/spm_train"
  "$unpacked"/tokpack-*.data/scripts/tokpack "$unpacked"/tokpack/_core*.so)
# glibc's libraries, libstdc++, libgcc_s and the driver's libcuda are the GPU machine's.
skip='^(linux-vdso|ld-linux[-a-z0-9_]*|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libBrokenLocale|libstdc\+\+|libgcc_s|libcuda)\.so'
for o in "${objects[@]}"; do
  [ -e "$o" ] || die "missing: $o"
  out="$(ldd "$o")" || die "ldd $o failed"
  ! grep -q 'not found' <<<"$out" || die "ldd $o: $(grep 'not found' <<<"$out")"
  awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' <<<"$out"
done | sort -u | while read -r name path; do
  grep -qE "$skip" <<<"$name" || cp -L "$path" "$G/lib/$name"
done
n_libs=$(ls "$G/lib" | wc -l)
[ "$n_libs" -gt 0 ] || die "no libraries collected"

{
  echo "made by scripts/gpu_bundle.sh on ${HOSTNAME:-?} at $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(git status --porcelain 2>/dev/null | grep -vc '^??' || true) tracked files changed"
  echo "wheel $(basename "$WHEEL") (CUDA sm_$ARCH), venv python $("$VENV/bin/python" -c 'import platform; print(platform.python_version())')"
  echo "libraries: $n_libs from $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
} >"$G/info.txt"
cat "$G/info.txt"

bytes=$(du -sb "$G" | cut -f1)
du -sh "$G"/*
if [ "$bytes" -gt "$MAX_BYTES" ]; then
  die "$G is $((bytes / 1024 / 1024)) MiB, over $((MAX_BYTES / 1024 / 1024)) MiB (the device tool carries at most 64 MiB)"
fi
echo "$G: $((bytes / 1024 / 1024)) MiB. On the GPU machine, from the repository root with .gpu carried: bash .gpu/run.sh"
