# Finds every library tokpack builds against and, when some are missing, stops
# once with the Debian packages to install (scripts/setup.sh installs them all)
# instead of failing on the first missing one with a bare CMake error.

set(_tokpack_missing "")
macro(_tokpack_need found package)
  if(NOT ${found})
    list(APPEND _tokpack_missing ${package})
  endif()
endmacro()

find_package(Threads REQUIRED)
find_package(PkgConfig QUIET)
_tokpack_need(PKG_CONFIG_FOUND pkg-config)
find_package(ZLIB QUIET)
_tokpack_need(ZLIB_FOUND zlib1g-dev)
find_package(simdjson QUIET)
_tokpack_need(simdjson_FOUND libsimdjson-dev)
find_package(CLI11 QUIET)
_tokpack_need(CLI11_FOUND libcli11-dev)
find_package(Boost QUIET)
_tokpack_need(Boost_FOUND libboost-dev)
find_package(CURL QUIET)
_tokpack_need(CURL_FOUND libcurl4-openssl-dev)
# sentencepiece is built from its PyPI sdist (cmake/sentencepiece.cmake)
# against Debian's Abseil and protobuf-lite, with Debian's protoc.
find_package(absl CONFIG QUIET)
_tokpack_need(absl_FOUND libabsl-dev)
find_package(Protobuf QUIET)
_tokpack_need(Protobuf_FOUND libprotobuf-dev)
_tokpack_need(Protobuf_PROTOC_EXECUTABLE protobuf-compiler)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(ZSTD QUIET IMPORTED_TARGET libzstd)
  _tokpack_need(ZSTD_FOUND libzstd-dev)
  pkg_check_modules(XXHASH QUIET IMPORTED_TARGET libxxhash)
  _tokpack_need(XXHASH_FOUND libxxhash-dev)
  # Byte-level BPE (src/tokenizer/): pre-tokenizer regexes and Unicode normalization.
  pkg_check_modules(PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
  _tokpack_need(PCRE2_FOUND libpcre2-dev)
  pkg_check_modules(UTF8PROC QUIET IMPORTED_TARGET libutf8proc)
  _tokpack_need(UTF8PROC_FOUND libutf8proc-dev)
else()
  list(APPEND _tokpack_missing libzstd-dev libxxhash-dev libpcre2-dev libutf8proc-dev)
endif()

if(TOKPACK_BUILD_PYTHON)
  find_package(Python 3.9 QUIET COMPONENTS Interpreter Development.Module)
  _tokpack_need(Python_Development.Module_FOUND python3-dev)
  find_package(pybind11 CONFIG QUIET)
  _tokpack_need(pybind11_FOUND pybind11-dev)
  find_path(DLPACK_INCLUDE_DIR dlpack/dlpack.h)
  _tokpack_need(DLPACK_INCLUDE_DIR libdlpack-dev)
endif()
if(TOKPACK_BUILD_TESTS)
  find_package(GTest QUIET)
  _tokpack_need(GTest_FOUND libgtest-dev)
  # The C++ tests train their models with Debian's SentencePieceTrainer
  # (0.1.97); tokpack itself encodes with the sentencepiece built here.
  find_library(SENTENCEPIECE_TRAIN_LIB sentencepiece_train)
  find_library(SENTENCEPIECE_LIB sentencepiece)
  find_path(SENTENCEPIECE_TRAINER_INCLUDE_DIR sentencepiece_trainer.h)
  _tokpack_need(SENTENCEPIECE_TRAIN_LIB libsentencepiece-dev)
  _tokpack_need(SENTENCEPIECE_LIB libsentencepiece-dev)
  _tokpack_need(SENTENCEPIECE_TRAINER_INCLUDE_DIR libsentencepiece-dev)
endif()

if(_tokpack_missing)
  list(REMOVE_DUPLICATES _tokpack_missing)
  list(JOIN _tokpack_missing " " _tokpack_missing_text)
  message(FATAL_ERROR
    "tokpack needs these Debian packages, which are not installed:\n"
    "  ${_tokpack_missing_text}\n"
    "Install them with:\n"
    "  sudo apt-get update && sudo apt-get install -y ${_tokpack_missing_text}\n"
    "(scripts/setup.sh installs everything the build and the tests need.)")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/sentencepiece.cmake)
