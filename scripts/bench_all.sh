#!/usr/bin/env bash
# One command for every published benchmark: packing, reading and resume against the
# peers (docs/benchmarks.md and docs/benchmarks-*.png), tokpack's BPE encoder
# (docs/benchmarks-tokenizers.md) and Parquet inputs (docs/benchmarks-parquet.md).
#
#   scripts/bench_all.sh            # ~15 minutes on 2 vCPUs once the peers are installed
#
# Peers are installed from PyPI into build/bench-venv only (bench/peers_bench.sh);
# results go to build/bench-all/*.json, then bench/bench_report.py writes the page.
# ROUNDS (default 3) sets the rounds of every part.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
OUT=build/bench-all
PY=build/bench-venv/bin/python
mkdir -p "$OUT"
t0=$(date +%s)

echo "== bench venv (peers from PyPI) and Release builds"
SETUP_ONLY=1 bench/peers_bench.sh
cmake --build build/bench-release --target tokpack -j "${JOBS:-2}" >/dev/null

echo "== packing: tokpack build vs Megatron-style vs LitData optimize"
"$PY" bench/packing_peers.py --work "$OUT" --tokpack build/bench-release/tokpack \
  --rounds "$ROUNDS" --json-out "$OUT/packing.json" >/dev/null

echo "== reading: tokpack vs Megatron-Core, LitData, MosaicML Streaming, nanoGPT"
"$PY" bench/python_bench.py --reader-bench build/bench-release/bench/reader_bench \
  --rounds "$ROUNDS" --seconds 3 --json-out "$OUT/reading.json" \
  --only py-torch-2,megatron-w2,megatron-w0,litdata-w2,litdata-w0,mosaic-w2,mosaic-w0,nanogpt,floor-w2 \
  >/dev/null

echo "== resume at step 1e6"
"$PY" bench/resume_bench.py --rounds "$ROUNDS" --json-out "$OUT/resume.json" >/dev/null

echo "== tokenizers and Parquet inputs (.venv: tokenizers, tiktoken, pyarrow)"
cmake --build build --target tokpack tokenizer_encode_bench -j "${JOBS:-2}" >/dev/null
.venv/bin/python bench/tokenizer_bench.py --rounds "$ROUNDS" \
  --write-doc docs/benchmarks-tokenizers.md >/dev/null
.venv/bin/python bench/parquet_bench.py --rounds "$ROUNDS" \
  --write-doc docs/benchmarks-parquet.md >/dev/null

"$PY" bench/bench_report.py --packing "$OUT/packing.json" --reading "$OUT/reading.json" \
  --resume "$OUT/resume.json" --doc docs/benchmarks.md --seconds $(($(date +%s) - t0)) \
  >/dev/null
echo "wrote docs/benchmarks.md and docs/benchmarks-{packing,reading,resume}.png" \
  "in $(($(date +%s) - t0)) s"
