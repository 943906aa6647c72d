#!/usr/bin/env bash
# Installs everything tokpack needs on a fresh Debian 12 machine: compilers and
# libraries from apt, and a Python virtual environment (.venv) from PyPI.
# Idempotent and quiet when nothing is missing. Used by demo.sh and test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libsentencepiece-dev sentencepiece libzstd-dev zstd zlib1g-dev
  libsimdjson-dev libxxhash-dev libcurl4-openssl-dev libcli11-dev pybind11-dev
  libgtest-dev libbenchmark-dev libdlpack-dev python3 python3-venv python3-pip
  clang libclang-rt-14-dev  # libFuzzer and sanitizer runtimes for scripts/fuzz.sh
  gnuplot-nox               # tokpack profile --plot
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV" >&2
  python3 -m venv "$VENV"
fi
# numpy is tokpack's only runtime requirement; scikit-build-core and pybind11
# build it (pip install --no-build-isolation, so rebuilds are incremental);
# pytest, torch and moto (a local S3 for the remote-storage tests) run the
# tests. torch is large: installed once, then reused.
PY_PACKAGES=(numpy pytest scikit-build-core pybind11 torch "moto[server]>=5")
PY_MODULES="numpy pytest scikit_build_core pybind11 torch moto"
if ! "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in '$PY_MODULES'.split()))"; then
  echo "setup: pip installing ${PY_PACKAGES[*]} (torch is large: this takes a while once)" >&2
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "${PY_PACKAGES[@]}"
fi
