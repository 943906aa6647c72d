# sentencepiece's encoder (SentencePieceProcessor), built from the source
# distribution on PyPI of the release that `pip install sentencepiece` gives,
# so that tokpack's ids are that release's ids. Debian 12 ships 0.1.97, whose
# unigram encoding differs from 0.2.x on some text.
#
# Only the encoding half is built (no trainer, no CLI tools, no "lite"
# runtime): about a dozen files against Debian's Abseil and protobuf-lite.
# sentencepiece 0.2.3 is written against a newer Abseil than Debian 12's
# 20220623; cmake/sentencepiece/absl_compat/ stands in for the few headers and
# names it lacks.
#
# The sdist is found, in this order, at -DTOKPACK_SENTENCEPIECE_SDIST=PATH
# (or the environment variable of that name), in TOKPACK_DOWNLOAD_DIR, or is
# downloaded there with pip. Its SHA-256 is checked in every case.
#
# Defines tokpack::sentencepiece: the static library, its header
# <sentencepiece_processor.h> and, as usage requirements, the macro that
# renames its namespace (below).

set(TOKPACK_SPM_VERSION 0.2.3)
set(TOKPACK_SPM_SHA256 21618ad31f0453a1ebf5ec58defed99758d54af0b670546ecac639ddd8b86fbd)
set(TOKPACK_SPM_SDIST_NAME sentencepiece-${TOKPACK_SPM_VERSION}.tar.gz)

if(NOT TOKPACK_SENTENCEPIECE_SDIST AND DEFINED ENV{TOKPACK_SENTENCEPIECE_SDIST})
  set(TOKPACK_SENTENCEPIECE_SDIST "$ENV{TOKPACK_SENTENCEPIECE_SDIST}")
endif()
set(TOKPACK_SENTENCEPIECE_SDIST "${TOKPACK_SENTENCEPIECE_SDIST}" CACHE FILEPATH
    "sentencepiece-${TOKPACK_SPM_VERSION}.tar.gz from PyPI (empty: find or download it)")
# Under the source tree (ignored by git: build*/) so that every build
# directory, and `pip install .`'s temporary one, share one download.
set(TOKPACK_DOWNLOAD_DIR "${PROJECT_SOURCE_DIR}/build-deps" CACHE PATH
    "Where downloaded source distributions are kept")

# Runs `pip download` of the pinned, hash-checked sdist into TOKPACK_DOWNLOAD_DIR
# with the first Python that has pip. pip prepares the sdist's metadata, which
# with build isolation means fetching its build requirements first (setuptools,
# cmake: seconds, as wheels; --no-binary names sentencepiece alone, since
# :all: would also build cmake from source, 20 minutes and more); without
# isolation it takes less where the interpreter's setuptools is new enough
# (Debian 12's 66 is not), so that is tried first.
function(_tokpack_pip_download_sentencepiece out_path)
  set(pythons "")
  foreach(var Python_EXECUTABLE Python3_EXECUTABLE)
    if(${var})
      list(APPEND pythons "${${var}}")
    endif()
  endforeach()
  list(APPEND pythons "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  find_program(_tokpack_python3 NAMES python3 python)
  if(_tokpack_python3)
    list(APPEND pythons "${_tokpack_python3}")
  endif()
  set(requirements "${CMAKE_BINARY_DIR}/tokpack-sentencepiece-requirements.txt")
  file(WRITE "${requirements}"
       "sentencepiece==${TOKPACK_SPM_VERSION} --hash=sha256:${TOKPACK_SPM_SHA256}\n")
  set(errors "")
  set(with_pip "")
  # Under `pip install .`'s build isolation, PYTHONPATH points at the build
  # environment, whose site hook hides the installing interpreter's own
  # site-packages, pip included: without it, that interpreter has pip again
  # (so a venv's pip serves, with no python3-pip).
  set(own_site ${CMAKE_COMMAND} -E env --unset=PYTHONPATH)
  foreach(python IN LISTS pythons)
    if(EXISTS "${python}")
      execute_process(COMMAND ${own_site} "${python}" -m pip --version RESULT_VARIABLE rc
                      OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        list(APPEND with_pip "${python}")
      endif()
    endif()
  endforeach()
  # Every interpreter without isolation first: the fast way, where it works.
  foreach(isolation --no-build-isolation "")
    foreach(python IN LISTS with_pip)
      message(STATUS "Downloading ${TOKPACK_SPM_SDIST_NAME} with ${python} -m pip ${isolation}")
      execute_process(
        COMMAND ${own_site} "${python}" -m pip download --quiet --no-deps --no-binary sentencepiece
                ${isolation} --require-hashes -r "${requirements}" -d "${TOKPACK_DOWNLOAD_DIR}"
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
      if(rc EQUAL 0 AND EXISTS "${TOKPACK_DOWNLOAD_DIR}/${TOKPACK_SPM_SDIST_NAME}")
        set(${out_path} "${TOKPACK_DOWNLOAD_DIR}/${TOKPACK_SPM_SDIST_NAME}" PARENT_SCOPE)
        return()
      endif()
      string(APPEND errors "${python} -m pip download ${isolation}:\n${out}${err}\n")
    endforeach()
  endforeach()
  message(FATAL_ERROR
    "tokpack builds sentencepiece ${TOKPACK_SPM_VERSION} from its PyPI source distribution, "
    "and could not download it with pip (python3-pip, or the project's .venv, provides pip).\n"
    "${errors}"
    "Without network access, download ${TOKPACK_SPM_SDIST_NAME} elsewhere "
    "(pip download --no-deps --no-binary sentencepiece sentencepiece==${TOKPACK_SPM_VERSION}) and "
    "pass -DTOKPACK_SENTENCEPIECE_SDIST=PATH or put it in ${TOKPACK_DOWNLOAD_DIR}.")
endfunction()

set(_spm_sdist "${TOKPACK_SENTENCEPIECE_SDIST}")
if(NOT _spm_sdist)
  set(_spm_sdist "${TOKPACK_DOWNLOAD_DIR}/${TOKPACK_SPM_SDIST_NAME}")
  if(NOT EXISTS "${_spm_sdist}")
    _tokpack_pip_download_sentencepiece(_spm_sdist)
  endif()
endif()
if(NOT EXISTS "${_spm_sdist}")
  message(FATAL_ERROR "TOKPACK_SENTENCEPIECE_SDIST: '${_spm_sdist}' does not exist")
endif()
file(SHA256 "${_spm_sdist}" _spm_sha256)
if(NOT _spm_sha256 STREQUAL TOKPACK_SPM_SHA256)
  message(FATAL_ERROR "'${_spm_sdist}' has SHA-256 ${_spm_sha256}; tokpack pins "
          "sentencepiece ${TOKPACK_SPM_VERSION}'s sdist, ${TOKPACK_SPM_SHA256}. Remove it "
          "to download it again.")
endif()

# Unpacked once per build directory; the stamp is a hash of the archive's
# hash and the edits below, so a different pin or edit unpacks afresh.
set(_spm_unpacked "${CMAKE_BINARY_DIR}/_deps/sentencepiece-${TOKPACK_SPM_VERSION}")
set(_spm_stamp "${_spm_unpacked}/.tokpack-sha256")
set(_spm_stamp_value "")
if(EXISTS "${_spm_stamp}")
  file(READ "${_spm_stamp}" _spm_stamp_value)
endif()
set(_spm_root "${_spm_unpacked}/sentencepiece-${TOKPACK_SPM_VERSION}/sentencepiece")
set(_spm_src "${_spm_root}/src")

# Where sentencepiece relies on a newer Abseil than Debian 12's in a way no
# stand-in header can provide (a member call, a changed constructor), the
# unpacked source is edited to the equivalent call that Abseil 20220623
# takes. Each edit must match exactly once, so a new pin that no longer needs
# it fails here rather than compiling something else.
#   std::string::append(absl::string_view): Abseil's string_view is not
#     std::string_view in Debian's build (ABSL_OPTION_USE_STD_STRING_VIEW 0).
# (FILE|FROM|TO, without semicolons: they separate CMake list items.)
set(_spm_edits
  "sentencepiece_processor.cc|mutable_piece()->append(w)|mutable_piece()->append(w.data(), w.size())"
  "sentencepiece_processor.cc|mutable_surface()->append(surface)|mutable_surface()->append(surface.data(), surface.size())")
string(SHA256 _spm_edits_hash "${TOKPACK_SPM_SHA256}${_spm_edits}")
if(NOT _spm_stamp_value STREQUAL _spm_edits_hash)
  file(REMOVE_RECURSE "${_spm_unpacked}")
  file(ARCHIVE_EXTRACT INPUT "${_spm_sdist}" DESTINATION "${_spm_unpacked}")
  foreach(edit IN LISTS _spm_edits)
    string(REPLACE "|" ";" edit "${edit}")
    list(GET edit 0 file)
    list(GET edit 1 from)
    list(GET edit 2 to)
    file(READ "${_spm_src}/${file}" text)
    string(LENGTH "${text}" before)
    string(REPLACE "${from}" "${to}" edited "${text}")
    string(LENGTH "${edited}" after)
    string(LENGTH "${from}" from_length)
    string(LENGTH "${to}" to_length)
    math(EXPR expected "${before} + ${to_length} - ${from_length}")
    if(NOT after EQUAL expected)
      message(FATAL_ERROR "sentencepiece ${TOKPACK_SPM_VERSION}: '${from}' is not in "
              "${file} exactly once; cmake/sentencepiece.cmake's edits need updating")
    endif()
    file(WRITE "${_spm_src}/${file}" "${edited}")
  endforeach()
  file(WRITE "${_spm_stamp}" "${_spm_edits_hash}")
endif()

# Generated: the protobuf messages (with Debian's protoc, to match Debian's
# runtime), config.h, and an include directory holding only the public
# header, so that tokpack's sources see none of sentencepiece's private ones
# (util.h, normalizer.h, ...).
set(_spm_gen "${CMAKE_BINARY_DIR}/_deps/sentencepiece-gen")
file(MAKE_DIRECTORY "${_spm_gen}/include")
configure_file("${_spm_src}/sentencepiece_processor.h"
               "${_spm_gen}/include/sentencepiece_processor.h" COPYONLY)
file(WRITE "${_spm_gen}/config.h.tmp"
     "#ifndef CONFIG_H_\n#define CONFIG_H_\n"
     "#define VERSION \"${TOKPACK_SPM_VERSION}\"\n"
     "#define PACKAGE_STRING \"sentencepiece\"\n"
     "#define INSTALL_DATADIR \"\"\n#endif\n")
configure_file("${_spm_gen}/config.h.tmp" "${_spm_gen}/config.h" COPYONLY)
set(_spm_pb "")
foreach(proto sentencepiece sentencepiece_model)
  add_custom_command(
    OUTPUT "${_spm_gen}/${proto}.pb.cc" "${_spm_gen}/${proto}.pb.h"
    COMMAND ${Protobuf_PROTOC_EXECUTABLE} --cpp_out=${_spm_gen} -I${_spm_src}
            ${_spm_src}/${proto}.proto
    DEPENDS "${_spm_src}/${proto}.proto"
    COMMENT "protoc ${proto}.proto (sentencepiece ${TOKPACK_SPM_VERSION})"
    VERBATIM)
  list(APPEND _spm_pb "${_spm_gen}/${proto}.pb.cc")
endforeach()

add_library(tokpack_sentencepiece STATIC
  ${_spm_pb}
  ${_spm_src}/bpe_model.cc
  ${_spm_src}/char_model.cc
  ${_spm_src}/filesystem.cc
  ${_spm_src}/model_factory.cc
  ${_spm_src}/model_interface.cc
  ${_spm_src}/normalizer.cc
  ${_spm_src}/sentencepiece_processor.cc
  ${_spm_src}/unigram_model.cc
  ${_spm_src}/util.cc
  ${_spm_src}/word_model.cc)
add_library(tokpack::sentencepiece ALIAS tokpack_sentencepiece)
# Darts-clone (header-only, third_party/darts_clone holds only darts.h): the
# trie sentencepiece's unigram model walks, which tokpack's per-word unigram
# encoder (src/tokenizer/spm_unigram.cc) walks alike.
set(TOKPACK_DARTS_INCLUDE_DIR "${_spm_root}/third_party/darts_clone")
# sentencepiece is C++20; its public header is also valid C++17, which is
# what tokpack's own sources compile as.
set_target_properties(tokpack_sentencepiece PROPERTIES CXX_STANDARD 20)
set(_spm_compat "${CMAKE_CURRENT_LIST_DIR}/sentencepiece/absl_compat")
target_include_directories(tokpack_sentencepiece
  PRIVATE "${_spm_gen}" "${_spm_src}" "${_spm_root}/third_party/darts_clone"
  SYSTEM INTERFACE "${_spm_gen}/include")
# Third-party code: its warnings are not tokpack's to fix. The stand-in
# headers come after the real ones (-idirafter), so an Abseil that has them
# is used instead.
target_compile_options(tokpack_sentencepiece PRIVATE
  -w "SHELL:-idirafter ${_spm_compat}"
  "SHELL:-include ${_spm_compat}/tokpack_absl_extras.h")
# The namespace is renamed, in sentencepiece's sources and in tokpack's that
# include its header, so that this copy and Debian's libsentencepiece (which
# the C++ tests link for SentencePieceTrainer) can share a process: same-named
# symbols from two versions would bind to each other.
target_compile_definitions(tokpack_sentencepiece PUBLIC sentencepiece=tokpack_sentencepiece)

# protobuf-lite: Debian's libsentencepiece bundles an older protobuf-lite and
# exports its google::protobuf symbols, so where both could be in one
# process (the test executables) this copy must not bind to Debian's shared
# libprotobuf-lite: executables link its static archive, with its symbols (and
# the protobuf template instances in this library) kept out of their dynamic
# symbol table, so neither copy binds to the other's. A shared object (the Python module)
# cannot take that archive (it is not built as PIC) and links the shared one.
find_library(TOKPACK_PROTOBUF_LITE_STATIC NAMES libprotobuf-lite.a)
if(TOKPACK_PROTOBUF_LITE_STATIC)
  add_library(tokpack_protobuf_lite_static STATIC IMPORTED)
  set_target_properties(tokpack_protobuf_lite_static PROPERTIES
    IMPORTED_LOCATION "${TOKPACK_PROTOBUF_LITE_STATIC}"
    INTERFACE_LINK_LIBRARIES Threads::Threads
    INTERFACE_LINK_OPTIONS
      "LINKER:--exclude-libs=libprotobuf-lite.a;LINKER:--exclude-libs=libtokpack_sentencepiece.a")
  set(_spm_protobuf
      "$<IF:$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>,tokpack_protobuf_lite_static,protobuf::libprotobuf-lite>")
else()
  set(_spm_protobuf protobuf::libprotobuf-lite)
endif()
target_link_libraries(tokpack_sentencepiece
  PUBLIC absl::status absl::statusor absl::strings absl::span
  PRIVATE absl::flat_hash_map absl::str_format absl::random_random absl::synchronization
          absl::time absl::any_invocable absl::fixed_array absl::function_ref
          absl::endian Threads::Threads ${_spm_protobuf})
target_include_directories(tokpack_sentencepiece PRIVATE ${Protobuf_INCLUDE_DIRS})
# For the one tokpack file that reads SentencePieceText (token offsets,
# src/tokenizer/spm_offsets.cc): the generated message header (protobuf's own
# are on the default path). Ninja orders the compile after
# tokpack_sentencepiece's protoc commands.
set(TOKPACK_SPM_PROTO_INCLUDE_DIR "${_spm_gen}")
