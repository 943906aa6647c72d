# Sourced by the build scripts: routes compiles through ccache when it is
# installed, keyed on paths relative to the checkout (base_dir, no hash of the
# working directory), so a fresh clone on the same machine (CI's) reuses the
# objects of the last build. Without ccache it sets nothing.
if command -v ccache >/dev/null 2>&1 && [ "${TOKPACK_NO_CCACHE:-0}" != 1 ]; then
  export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
fi
