#!/usr/bin/env bash
# One command for every published benchmark: regenerates each section of
# docs/benchmarks.md (the one report) and the PNGs beside it.
#
#   scripts/bench_all.sh            # ~70 minutes on 2 vCPUs once the peers are installed
#
# Peers are installed from PyPI into build/bench-venv only (bench/peers_bench.sh);
# the peer comparisons' raw results go to build/bench-all/*.json. ROUNDS (default 3)
# sets the rounds of every part. The GPU section needs a GPU: scripts/gpu_check.sh bench.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
JOBS=${JOBS:-2}
OUT=build/bench-all
PY=build/bench-venv/bin/python
REPORT=docs/benchmarks.md
mkdir -p "$OUT"
t0=$(date +%s)

echo "== bench venv (peers from PyPI) and builds"
SETUP_ONLY=1 bench/peers_bench.sh
cmake --build build/bench-release --target tokpack reader_bench -j "$JOBS" >/dev/null
cmake --build build --target tokpack reader_bench spm_encode_bound tokenizer_encode_bench \
  -j "$JOBS" >/dev/null

echo "== SFT: conversations to ids and loss masks, tokpack vs transformers' prefix renders"
.venv/bin/python bench/sft_bench.py --rounds "$ROUNDS" --report "$REPORT" >/dev/null

echo "== packing: tokpack build vs Megatron-style vs LitData optimize"
"$PY" bench/packing_peers.py --work "$OUT" --tokpack build/bench-release/tokpack \
  --rounds "$ROUNDS" --json-out "$OUT/packing.json" >/dev/null

# The Python loop against the C++ loop at 1 and 2 threads and the peers, one
# interleaved run: the one table of reading speed.
echo "== reading: tokpack's Python and C++ loops, Megatron-Core, LitData, MosaicML, nanoGPT"
"$PY" bench/python_bench.py --reader-bench build/bench-release/bench/reader_bench \
  --rounds "$ROUNDS" --seconds 3 --report "$REPORT" >/dev/null

echo "== mixtures: 1, 100 and 1000 local sources; the schedule's CPU per step at world sizes 1, 64, 512"
.venv/bin/python bench/mixture_bench.py --rounds "$ROUNDS" --tokens 30000000 --report "$REPORT" >/dev/null

echo "== resume at step 1e6"
"$PY" bench/resume_bench.py --rounds "$ROUNDS" --json-out "$OUT/resume.json" >/dev/null
"$PY" bench/bench_report.py --packing "$OUT/packing.json" --resume "$OUT/resume.json" \
  --report "$REPORT" >/dev/null

echo "== packer vs sentencepiece's bare encode; reader vs memcpy"
python3 bench/packer_bench.py --repeat "$ROUNDS" --report "$REPORT" >/dev/null
python3 bench/reader_bench.py --rounds "$ROUNDS" --report "$REPORT" >/dev/null

echo "== remote (loopback S3), Parquet inputs (.venv: moto, tokenizers, pyarrow)"
.venv/bin/python bench/remote_bench.py --rounds "$ROUNDS" --report "$REPORT" >/dev/null
.venv/bin/python bench/remote_sources_bench.py --rounds "$ROUNDS" --report "$REPORT" >/dev/null
.venv/bin/python bench/cold_start_bench.py --rounds "$ROUNDS" --report "$REPORT" >/dev/null
.venv/bin/python bench/streaming_bench.py --rounds "$ROUNDS" --report "$REPORT" >/dev/null
.venv/bin/python bench/shuffle_quality.py --report "$REPORT" >/dev/null
.venv/bin/python bench/parquet_bench.py --rounds "$ROUNDS" --report "$REPORT" >/dev/null

echo "== encoding against the field: gigatoken, quicktok, tiktoken, tokenizers on cl100k, o200k, DeepSeek, Qwen"
"$PY" bench/encode_peers.py --rounds "$ROUNDS" --json-out "$OUT/encode_peers.json" \
  --report "$REPORT" >/dev/null

echo "== best-fit packing: plan time and memory for 10M documents, padding against OLMo-core, packed vs concat loader (.venv: ai2-olmo-core, optional)"
.venv/bin/python bench/packing_bench.py --rounds "$ROUNDS" --report "$REPORT" >/dev/null

echo "== memory: peak RSS of a build on a 100 MB and a 1 GB JSONL line (.venv: tokenizers)"
.venv/bin/python bench/memory_bench.py --rounds "$ROUNDS" --report "$REPORT" >/dev/null

echo "== trainer integrations: HF Trainer and Lightning data time vs the bare loop (.venv: transformers, lightning)"
.venv/bin/python bench/integrations_bench.py --rounds "$ROUNDS" --report "$REPORT" >/dev/null

echo "wrote $REPORT and docs/benchmarks-{packing,reading,resume}.png in $(($(date +%s) - t0)) s"
