# The Parquet plugin, libtokpack_parquet.so (src/parquet/): built against the
# Arrow and Parquet C++ libraries inside the pyarrow wheel, which ships their
# headers for extension modules. The core dlopens the plugin only when a
# Parquet input is read, so pyarrow is needed at build time but at run time
# only by those who read Parquet.
#
# Sets TOKPACK_PYARROW_INCLUDE_DIR (pyarrow's headers, e.g. the header-only
# arrow/c/abi.h) and the target tokpack_parquet.

# The interpreter pybind11 uses (cmake/dependencies.cmake), else the dev
# venv's, else any python3.
if(NOT Python_EXECUTABLE)
  if(EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
    set(Python_EXECUTABLE "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  else()
    find_package(Python 3.9 QUIET COMPONENTS Interpreter)
  endif()
endif()

set(_tokpack_pyarrow_query [=[
import os, sysconfig
import pyarrow
print(pyarrow.__version__)
print(pyarrow.get_include())
print(pyarrow.get_library_dirs()[0])
# Where the wheel's scripts (the CLI) and packages land, relative to each other.
print(os.path.relpath(sysconfig.get_path("platlib"), sysconfig.get_path("scripts")))
]=])
set(_tokpack_pyarrow_out "")
if(Python_EXECUTABLE)
  execute_process(COMMAND "${Python_EXECUTABLE}" -c "${_tokpack_pyarrow_query}"
                  OUTPUT_VARIABLE _tokpack_pyarrow_out RESULT_VARIABLE _tokpack_pyarrow_rc
                  ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _tokpack_pyarrow_rc EQUAL 0)
    set(_tokpack_pyarrow_out "")
  endif()
endif()
string(REPLACE "\n" ";" _tokpack_pyarrow_out "${_tokpack_pyarrow_out}")
list(LENGTH _tokpack_pyarrow_out _tokpack_pyarrow_lines)
if(_tokpack_pyarrow_lines EQUAL 4)
  list(GET _tokpack_pyarrow_out 0 TOKPACK_PYARROW_VERSION)
  list(GET _tokpack_pyarrow_out 1 TOKPACK_PYARROW_INCLUDE_DIR)
  list(GET _tokpack_pyarrow_out 2 _tokpack_pyarrow_lib_dir)
  list(GET _tokpack_pyarrow_out 3 _tokpack_platlib_from_scripts)
  # pyarrow ships only the versioned names (libarrow.so.2600), which are the
  # SONAMEs: link those files by path.
  file(GLOB _tokpack_arrow_so "${_tokpack_pyarrow_lib_dir}/libarrow.so.[0-9]*")
  file(GLOB _tokpack_parquet_so "${_tokpack_pyarrow_lib_dir}/libparquet.so.[0-9]*")
  list(FILTER _tokpack_arrow_so EXCLUDE REGEX "\\.so\\.[0-9]+\\.")
  list(FILTER _tokpack_parquet_so EXCLUDE REGEX "\\.so\\.[0-9]+\\.")
endif()
if(NOT TOKPACK_PYARROW_INCLUDE_DIR OR NOT EXISTS "${TOKPACK_PYARROW_INCLUDE_DIR}/parquet/api/reader.h"
   OR NOT _tokpack_arrow_so OR NOT _tokpack_parquet_so)
  message(FATAL_ERROR
    "tokpack reads Parquet with the Arrow C++ libraries inside pyarrow, which "
    "${Python_EXECUTABLE} cannot import (or whose libarrow/libparquet were not found).\n"
    "Install it with:\n"
    "  .venv/bin/pip install pyarrow\n"
    "(scripts/setup.sh installs everything the build and the tests need; "
    "-DPython_EXECUTABLE=... picks another interpreter.)")
endif()
string(REGEX MATCH "^[0-9]+\\.[0-9]+" TOKPACK_PYARROW_VERSION "${TOKPACK_PYARROW_VERSION}")
message(STATUS "Parquet plugin: pyarrow ${TOKPACK_PYARROW_VERSION} (${_tokpack_pyarrow_lib_dir})")

add_library(tokpack_parquet MODULE src/inputs/parquet/parquet_plugin.cc)
# Arrow's headers need C++20; nothing of the core is compiled here.
set_target_properties(tokpack_parquet PROPERTIES
  CXX_STANDARD 20
  LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}"  # Next to the tokpack CLI.
  BUILD_RPATH "$ORIGIN/../pyarrow;${_tokpack_pyarrow_lib_dir}"
  # site-packages/tokpack/ beside site-packages/pyarrow/.
  INSTALL_RPATH "$ORIGIN/../pyarrow")
target_include_directories(tokpack_parquet PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_include_directories(tokpack_parquet SYSTEM PRIVATE ${TOKPACK_PYARROW_INCLUDE_DIR})
target_compile_options(tokpack_parquet PRIVATE ${TOKPACK_WARNINGS})
target_link_libraries(tokpack_parquet PRIVATE ${_tokpack_parquet_so} ${_tokpack_arrow_so})
if(NOT TOKPACK_SANITIZE AND NOT TOKPACK_BUILD_FUZZ)
  # Proves the plugin needs nothing of the core (sanitizer runtimes, though,
  # come from the executable).
  target_link_options(tokpack_parquet PRIVATE -Wl,--no-undefined)
endif()

# Where the core looks for the plugin after the directory of its own code.
if(SKBUILD)
  # The installed CLI (scripts dir) finds the package's copy.
  set(_tokpack_plugin_dir "${_tokpack_platlib_from_scripts}/tokpack")
else()
  set(_tokpack_plugin_dir "${CMAKE_BINARY_DIR}")
endif()
# Set on src/inputs/parquet_input.cc by src/CMakeLists.txt (a source's
# properties belong to the directory of the target that compiles it).
set(TOKPACK_PARQUET_PLUGIN_DIR "${_tokpack_plugin_dir}")
