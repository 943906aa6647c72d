#!/usr/bin/env bash
# Quickstart: installs what is missing (not the test suite's tools: see
# scripts/setup.sh), builds tokpack, and packs a corpus made
# from the license and copyright texts every Debian machine has (no download):
# trains a small sentencepiece tokenizer, builds a sharded dataset, shows its
# summary, verifies every checksum, decodes a few documents, then reads shuffled
# batches from Python. The library is compiled once: the CLI and the Python
# package come from the same build (scripts/build.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DEMO="$ROOT/demo"
TOKPACK="$ROOT/build/tokpack"

"$ROOT/scripts/setup.sh"
echo "== building tokpack once: the library, the CLI and the Python package (pip, into .venv)"
echo "   (about 10 minutes on 2 cores; ninja prints each step as [done/total])"
"$ROOT/scripts/build.sh"
rm -rf "$DEMO"
mkdir -p "$DEMO"

echo "== making the corpus from /usr/share/common-licenses and /usr/share/doc/*/copyright"
python3 "$ROOT/scripts/make_demo_corpus.py" "$DEMO/corpus"
zstd -q --rm "$DEMO/corpus/copyrights.jsonl"

echo "== training a sentencepiece tokenizer (vocab 8000) with spm_train"
spm_train --input="$DEMO/corpus/train.txt" --model_prefix="$DEMO/tok" --vocab_size=8000 \
  --model_type=unigram --input_sentence_size=200000 --shuffle_input_sentence=true \
  --minloglevel=2 >/dev/null 2>&1

echo "== tokpack build"
echo "   (this small tokenizer has no pieces for some characters, such as rare symbols and"
echo "   scripts its training sample lacked: they become <unk>, counted as 'tokens that lost"
echo "   text'. A production tokenizer with byte fallback, or a byte-level BPE, loses none.)"
"$TOKPACK" build --tokenizer "$DEMO/tok.model" --input "$DEMO/corpus/*.jsonl*" \
  --output "$DEMO/data" --shard-tokens 2000000 --threads "$(nproc)"

echo "== tokpack info"
"$TOKPACK" info "$DEMO/data"

echo "== tokpack verify"
"$TOKPACK" verify "$DEMO/data"

echo "== three documents, decoded (first 300 characters each)"
"$TOKPACK" show "$DEMO/data" --doc 0 --count 3 --decode | cut -c1-300

echo "== the Python package (installed by the build above): three shuffled batches and a cursor"
"$ROOT/.venv/bin/python" - "$DEMO/data" <<'PY'
import sys, tokpack
loader = tokpack.Loader(sys.argv[1], seq_len=2048, batch_size=8, seed=1234)
for step, batch in zip(range(3), loader):
    x, y = batch["input_ids"], batch["labels"]
    print(f"step {step}: input_ids {type(x).__module__}.{type(x).__name__} {tuple(x.shape)} {x.dtype}")
print("state_dict:", loader.state_dict())
PY

echo
echo "The dataset is in $DEMO/data: $(ls "$DEMO/data" | paste -sd ' ')"
