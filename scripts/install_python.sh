#!/usr/bin/env bash
# Builds and installs the tokpack Python package (and its `tokpack` CLI) into
# .venv, as `pip install .` does, but without build isolation and with a kept
# build directory (build/python) so that rebuilds are incremental.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/.venv/bin/python" -m pip install -q --no-build-isolation \
  -Cbuild-dir="$ROOT/build/python" -Ccmake.define.TOKPACK_WERROR=ON "$ROOT"
