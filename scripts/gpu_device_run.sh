#!/usr/bin/env bash
# The GPU checks of scripts/gpu_check.sh on a lent GPU machine without network,
# build dependencies or -dev libraries, from the self-contained .gpu/ that
# scripts/gpu_bundle.sh makes on a CPU machine (and copies this script into as
# .gpu/run.sh). Run from the repository root, with .gpu carried:
#   bash .gpu/run.sh                (or bash scripts/gpu_device_run.sh)
#
#   .gpu/bin/tokpack_tests    C++ tests (CUDA build); filter *DeviceLoader*
#   .gpu/bin/spm_train        for the Python test fixtures: a wrapper that runs
#                             .gpu/libexec/spm_train with LD_LIBRARY_PATH=.gpu/lib
#                             (a GPU machine's own libsentencepiece may be another version)
#   .gpu/bin/reader_bench     writes the benchmark's synthetic dataset
#   .gpu/wheel/*.whl          tokpack for CPython 3.12, CUDA (sm_90)
#   .gpu/lib/                 the shared libraries those need beyond glibc/libstdc++
#
# Stages: install-wheel (into /tmp/site), libraries (every binary loads with
# LD_BIND_NOW, tokpack imports, spm_train trains a tiny model), cpp-device-tests,
# python-gpu-tests (tests/python/test_py_cuda.py), gpu-bench (bench/gpu_bench.py
# into $OUT/benchmarks.md), sanitizer-memcheck and sanitizer-racecheck (the C++
# device tests under compute-sanitizer). A device test that skips fails here.
# Every stage prints "== stage", runs under a time limit, and the script goes on
# after a failure; it exits 1 if any stage failed. Logs: $OUT/<stage>.log and
# $OUT/run.log; the benchmark report: $OUT/benchmarks.md.
# Knobs: OUT (default /tmp/out), PY (default python3; must match the wheel's
# CPython), GPU_DEADLINE_S (whole run, default 345), GPU_LIBS=all (use every
# library in .gpu/lib even where the system has one of that name; by default the
# system's copy wins and .gpu/lib fills the gaps), BENCH_TOKENS (default
# 200000000, gpu_bench.py's own default).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
G="$ROOT/.gpu"
[ -d "$G/wheel" ] || { echo "no $G: make it with scripts/gpu_bundle.sh and carry .gpu" >&2; exit 2; }
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
chmod +x "$G"/bin/* "$G"/libexec/* 2>/dev/null || true  # in case the copy lost the modes
exec > >(tee -a "$OUT/run.log") 2>&1

START=$SECONDS
DEADLINE=$((START + ${GPU_DEADLINE_S:-345}))
FILTER='*DeviceLoader*'
SITE=/tmp/site
PY="${PY:-python3}"
FAILED=()
SUMMARY=()

# stage NAME CAP_SECONDS CMD...: runs CMD (a command or an exported function)
# with its output also in $OUT/NAME.log, for at most CAP_SECONDS and never past
# the deadline.
stage() {
  local name="$1" cap="$2"; shift 2
  local left=$((DEADLINE - SECONDS))
  local limit=$((cap < left ? cap : left))
  echo
  echo "== stage $name (limit ${limit}s, $((SECONDS - START))s into the run)"
  if [ "$limit" -lt 5 ]; then
    echo "-- $name: SKIPPED, no time left before the deadline"
    FAILED+=("$name(no-time)"); SUMMARY+=("$name: skipped (deadline)")
    return 1
  fi
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" bash -c '"$@"' _ "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  local msg="rc=$rc, $((SECONDS - t0))s"
  [ "$rc" = 124 ] && msg+=" (TIMED OUT)"
  echo "-- $name: $msg"
  SUMMARY+=("$name: $msg")
  [ "$rc" = 0 ] || FAILED+=("$name")
  return "$rc"
}
export G SITE PY FILTER OUT

echo "== stage nvidia-smi"
nvidia-smi -L || { echo "-- nvidia-smi failed"; FAILED+=(nvidia-smi); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
cat "$G/info.txt" 2>/dev/null || echo "(no .gpu/info.txt: not made by scripts/gpu_bundle.sh?)"
# The bench's machine line names the commit the bundle was made at: the copy
# of the checkout here may carry another HEAD.
TOKPACK_COMMIT="$(awk '$1 == "commit" {sub(",", "", $2); print $2; exit}' "$G/info.txt" 2>/dev/null)"
export TOKPACK_COMMIT
echo "host: $(nproc) cores; $($PY --version 2>&1) at $(command -v $PY)"
$PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -1

# --- the wheel, into $SITE (pip --target puts the CLI in $SITE/bin) ---------
install_wheel() {
  rm -rf "$SITE"
  local tag whl; whl=$(ls "$G"/wheel/*.whl) || return 1
  tag=$($PY -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
  case "$(basename "$whl")" in
    *-"$tag"-*) ;;
    *) echo "!! $PY is $tag; the wheel is $(basename "$whl"): set PY to a matching python"; return 1 ;;
  esac
  if $PY -m pip --version >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$G"/wheel/*.whl
  else
    # No pip in this interpreter: a wheel is a zip; its scripts go to bin/ as pip's would.
    echo "(no pip: unpacking the wheel by hand)"
    $PY - "$SITE" "$G"/wheel/*.whl <<'EOF'
import os, shutil, sys, zipfile
site, whl = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    z.extractall(site)
for d in os.listdir(site):
    scripts = os.path.join(site, d, "scripts")
    if d.endswith(".data") and os.path.isdir(scripts):
        os.makedirs(os.path.join(site, "bin"), exist_ok=True)
        for f in os.listdir(scripts):
            dst = os.path.join(site, "bin", f)
            shutil.move(os.path.join(scripts, f), dst)
            os.chmod(dst, 0o755)
        shutil.rmtree(os.path.join(site, d))
for root, _, files in os.walk(site):
    for f in files:
        if f.endswith(".so"):
            os.chmod(os.path.join(root, f), 0o755)
EOF
  fi
  ls -la "$SITE/bin" "$SITE/tokpack" | grep -E 'tokpack$|\.so$'
}
export -f install_wheel
stage install-wheel 60 install_wheel
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
export TOKPACK_BIN="$SITE/bin/tokpack"
export PATH="$G/bin:$SITE/bin:$PATH"

# --- libraries: the system's where it has that SONAME, else .gpu/lib --------
# spm_smoke: the spm_train on PATH (the wrapper) trains a tiny unigram model.
spm_smoke() {
  local d rc; d=$(mktemp -d)
  awk 'BEGIN { srand(1); for (i = 0; i < 1000; i++) { l = ""; for (j = 0; j < 10; j++) {
    w = ""; n = 2 + int(rand() * 6); for (k = 0; k < n; k++) w = w substr("abcdefghijklmnop", 1 + int(rand() * 16), 1)
    l = l (j ? " " : "") w } print l } }' >"$d/corpus.txt"
  timeout 60 spm_train --input="$d/corpus.txt" --model_prefix="$d/m" --vocab_size=200 >"$d/log" 2>&1
  rc=$?
  [ "$rc" = 0 ] && [ -s "$d/m.model" ] || { tail -5 "$d/log"; rc=1; }
  rm -rf "$d"
  return "$rc"
}
smoke() {
  local ok=0
  for b in "$G"/bin/tokpack_tests "$G"/libexec/spm_train "$G"/bin/reader_bench "$TOKPACK_BIN" "$SITE"/tokpack/_core*.so; do
    [ -e "$b" ] || { echo "   missing: $b"; ok=1; continue; }
    local bad lp="${LD_LIBRARY_PATH:-}"
    [ "$b" = "$G/libexec/spm_train" ] && lp="$G/lib"  # as the wrapper runs it
    bad=$(LD_LIBRARY_PATH="$lp" ldd "$b" 2>&1 | grep -E 'not found|version .* not found' || true)
    [ -z "$bad" ] || { echo "   $b:"; echo "$bad"; ok=1; }
  done
  # LD_BIND_NOW: a symbol missing from a library of that SONAME fails here, not mid-test.
  local -x LD_BIND_NOW=1
  [ "$(command -v spm_train)" = "$G/bin/spm_train" ] || { echo "   spm_train on PATH is $(command -v spm_train)"; ok=1; }
  spm_smoke && echo "spm_train ($G/bin/spm_train) trained a tiny model" ||
    { echo "   spm_train could not train a tiny model"; ok=1; }
  "$G/bin/tokpack_tests" --gtest_list_tests --gtest_filter="$FILTER" >/dev/null 2>&1 ||
    { echo "   tokpack_tests --gtest_list_tests failed"; ok=1; }
  "$G/bin/reader_bench" >/dev/null 2>&1; [ $? != 127 ] || { echo "   reader_bench does not load"; ok=1; }
  "$TOKPACK_BIN" --version || { echo "   tokpack --version failed"; ok=1; }
  $PY -c 'import tokpack; print("tokpack", tokpack.__version__, tokpack.__file__, "cuda_available", tokpack.cuda_available())' ||
    { echo "   import tokpack failed"; ok=1; }
  return $ok
}
setup_libs() {
  local mode="${GPU_LIBS:-prefer-system}" dir="$G/lib"
  if [ "$mode" != all ] && ldconfig -p >/dev/null 2>&1; then
    dir=/tmp/tokpack-gpu-lib
    rm -rf "$dir"; mkdir -p "$dir"
    local sys n used=() skipped=()
    sys=$(ldconfig -p | grep 'x86-64' | awk '{print $1}' | sort -u)
    for f in "$G"/lib/*; do
      n=$(basename "$f")
      if grep -qxF "$n" <<<"$sys"; then skipped+=("$n"); else ln -s "$f" "$dir/$n"; used+=("$n"); fi
    done
    echo "from .gpu/lib (${#used[@]}): ${used[*]}"
    echo "the system's own (${#skipped[@]}): ${skipped[*]}"
  fi
  export LD_LIBRARY_PATH="$dir${BASE_LD_LIBRARY_PATH:+:$BASE_LD_LIBRARY_PATH}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  if ! smoke && [ "$dir" != "$G/lib" ]; then
    echo "-- smoke check failed with the system's libraries first: using all of .gpu/lib"
    export LD_LIBRARY_PATH="$G/lib${BASE_LD_LIBRARY_PATH:+:$BASE_LD_LIBRARY_PATH}"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    smoke
  fi
}
BASE_LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
echo
echo "== stage libraries"
setup_libs > >(tee "$OUT/libraries.log") 2>&1
rc=$?
# setup_libs ran in this shell (the redirect is a process substitution), so its export holds.
echo "-- libraries: rc=$rc"
SUMMARY+=("libraries: rc=$rc")
[ "$rc" = 0 ] || FAILED+=(libraries)

export SANITIZER="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
export TESTS="$G/bin/tokpack_tests"

# gtest_device [PREFIX...]: the C++ device tests, under PREFIX (compute-sanitizer)
# if given. GTEST_SKIP passes, so more than the one test that skips where a GPU
# is usable (DeviceLoader.SaysWhyNoDeviceIsUsable) skipping is a failure here.
gtest_device() {
  local log; log=$(mktemp)
  "$@" "$TESTS" --gtest_filter="$FILTER" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]} skipped
  skipped=$(grep -m1 -oE '^\[  SKIPPED \] [0-9]+ test' "$log" | grep -oE '[0-9]+')
  if [ "$rc" = 0 ] && [ "${skipped:-0}" -gt 1 ]; then
    echo "!! $skipped tests skipped: no usable CUDA device?"; rc=3
  fi
  rm -f "$log"
  return "$rc"
}

# The Python GPU tests skip without a usable GPU: that is a failure here.
python_gpu_tests() {
  $PY -m pytest -q -p no:cacheprovider -rs tests/python/test_py_cuda.py
  local rc=$?
  $PY -c 'import sys, tokpack, torch
ok = tokpack.cuda_available() and torch.cuda.is_available()
print("tokpack.cuda_available():", tokpack.cuda_available(), " torch.cuda.is_available():", torch.cuda.is_available())
sys.exit(0 if ok else 3)' || { echo "!! the GPU tests skipped"; [ "$rc" != 0 ] || rc=3; }
  return "$rc"
}

gpu_bench() {
  cp docs/benchmarks.md "$OUT/benchmarks.md" || return 1
  local data=/tmp/tokpack-gpu-bench
  if [ ! -e "$data/manifest.json" ]; then
    echo "writing $data (${BENCH_TOKENS:-200000000} tokens)"
    "$G/bin/reader_bench" make "$data" "${BENCH_TOKENS:-200000000}" || return 1
  fi
  $PY bench/gpu_bench.py --data "$data" --report "$OUT/benchmarks.md" || return 1
  # The GPU section as written, for a look in the log.
  sed -n '/<!-- bench:gpu -->/,/<!-- \/bench:gpu -->/p' "$OUT/benchmarks.md"
}
export -f gtest_device python_gpu_tests gpu_bench

# Cheapest and most telling first; the sanitizer runs (the slowest) last, so a
# slow one cannot starve the rest of the deadline.
stage cpp-device-tests 90 gtest_device
stage python-gpu-tests 150 python_gpu_tests
stage gpu-bench 150 gpu_bench
stage sanitizer-memcheck 150 gtest_device "$SANITIZER" --tool memcheck --error-exitcode 1
stage sanitizer-racecheck 150 gtest_device "$SANITIZER" --tool racecheck --error-exitcode 1

echo
echo "== summary ($((SECONDS - START))s)"
printf '   %s\n' "${SUMMARY[@]}"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "FAILED: ${FAILED[*]}"
  exit 1
fi
echo "ALL STAGES PASSED"
exit 0
