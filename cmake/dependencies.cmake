# Finds every library tokpack builds against and, when some are missing, stops
# once with the Debian packages to install (scripts/setup.sh installs them all)
# instead of failing on the first missing one with a bare CMake error.
# Included right after project(... LANGUAGES NONE): it enables C++ itself, once
# it knows there is a compiler.

set(_tokpack_missing "")
macro(_tokpack_need found package)
  if(NOT ${found})
    list(APPEND _tokpack_missing ${package})
  endif()
endmacro()

function(_tokpack_fail_missing packages)
  list(REMOVE_DUPLICATES packages)
  list(JOIN packages " " text)
  message(FATAL_ERROR
    "tokpack needs these Debian packages to build, which are not installed:\n"
    "  ${text}\n"
    "Install them with:\n"
    "  sudo apt-get update && sudo apt-get install -y ${text}\n"
    "${ARGN}"
    "(scripts/setup.sh installs everything the build and the tests need.)")
endfunction()

# Without a C++ compiler none of the checks below can run (they need the
# compiler's library paths), so ask dpkg which of the packages they look for
# are missing too: one message, not one per attempt.
check_language(CXX)
if(NOT CMAKE_CXX_COMPILER)
  set(_tokpack_packages build-essential pkg-config zlib1g-dev libsimdjson-dev libcli11-dev
      libboost-dev libcurl4-openssl-dev libabsl-dev libprotobuf-dev protobuf-compiler
      libzstd-dev libxxhash-dev libpcre2-dev libutf8proc-dev)
  if(TOKPACK_BUILD_PYTHON)
    # Not pybind11-dev: pybind11 comes from PyPI (build-system.requires, and
    # scripts/setup.sh's .venv), so dpkg cannot say whether it is there. Once a
    # compiler is found, find_package below names it if it is missing.
    list(APPEND _tokpack_packages python3-dev libdlpack-dev)
  endif()
  if(TOKPACK_BUILD_TESTS)
    list(APPEND _tokpack_packages libgtest-dev libsentencepiece-dev)
  endif()
  find_program(TOKPACK_DPKG_QUERY dpkg-query)
  if(TOKPACK_DPKG_QUERY)
    foreach(package IN LISTS _tokpack_packages)
      execute_process(COMMAND ${TOKPACK_DPKG_QUERY} -W -f=\${Status} ${package}
                      OUTPUT_VARIABLE status ERROR_QUIET)
      if(NOT status MATCHES "install ok installed")
        list(APPEND _tokpack_missing ${package})
      endif()
    endforeach()
  else()
    set(_tokpack_missing build-essential)
  endif()
  if(NOT _tokpack_missing)
    message(FATAL_ERROR "tokpack: no C++ compiler found (CXX=$ENV{CXX}), though "
            "build-essential is installed: set CXX to a C++17 compiler, or unset it.")
  endif()
  _tokpack_fail_missing("${_tokpack_missing}")
endif()
enable_language(CXX)

find_package(Threads REQUIRED)
find_package(PkgConfig QUIET)
_tokpack_need(PKG_CONFIG_FOUND pkg-config)
find_package(ZLIB QUIET)
_tokpack_need(ZLIB_FOUND zlib1g-dev)
find_package(simdjson QUIET)
_tokpack_need(simdjson_FOUND libsimdjson-dev)
find_package(CLI11 QUIET)
_tokpack_need(CLI11_FOUND libcli11-dev)
# Boost's own BoostConfig.cmake (CMake 3.30+ removed FindBoost; pip's cmake is newer).
if(POLICY CMP0167)
  cmake_policy(SET CMP0167 NEW)
endif()
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
  # pkg-config is listed already; name only those of these that are missing too.
  foreach(pair zstd.h:libzstd-dev xxhash.h:libxxhash-dev pcre2.h:libpcre2-dev
               utf8proc.h:libutf8proc-dev)
    string(REPLACE ":" ";" pair "${pair}")
    list(GET pair 0 header)
    list(GET pair 1 package)
    find_path(_tokpack_header_${package} ${header})
    _tokpack_need(_tokpack_header_${package} ${package})
  endforeach()
endif()

if(TOKPACK_BUILD_PYTHON)
  find_package(Python 3.9 QUIET COMPONENTS Interpreter Development.Module)
  _tokpack_need(Python_Development.Module_FOUND python3-dev)
  # pybind11 then uses the Python found here, not its deprecated FindPythonLibsNew
  # (warnings with CMake 4), except without Python's headers: its FindPython
  # would stop there, before the one message below.
  if(Python_Development.Module_FOUND)
    set(PYBIND11_FINDPYTHON ON)
  endif()
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
  _tokpack_fail_missing("${_tokpack_missing}")
endif()
