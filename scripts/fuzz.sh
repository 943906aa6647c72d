#!/usr/bin/env bash
# Runs the libFuzzer targets (the .idx, manifest and cursor parsers, the
# paths a manifest names, a remote manifest as a server returns it, the
# Parquet plugin, the split scanners against PCRE2, tokenizer files of each
# kind, loaded, encoding and decoding, document-source files and removal
# lists), built with clang, ASan and UBSan in build-asan/
# (scripts/build_sanitized.sh, which test.sh has run already), each for
# FUZZ_SECONDS (default 20) from the committed seeds. The seeds are copied, so
# the repository is not modified. Exits non-zero on a crash.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_EACH="${FUZZ_SECONDS:-20}"
"$ROOT/scripts/build_sanitized.sh" fuzz
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for name in idx manifest cursor dataset_path remote_manifest parquet split_scanner tokenizer_file \
  source_index removed_list; do
  mkdir -p "$WORK/$name"
  cp "$ROOT/tests/fuzz/seeds/$name/"* "$WORK/$name/"
  echo "== fuzzing $name for ${SECONDS_EACH}s"
  "$ROOT/build-asan/tests/fuzz/${name}_fuzz" -max_total_time="$SECONDS_EACH" \
    -max_len=65536 -print_final_stats=0 "$WORK/$name" 2>"$WORK/$name.log" ||
    { tail -40 "$WORK/$name.log"; exit 1; }
  grep -E "^Done [0-9]+ runs" "$WORK/$name.log" || true
done
