// Expansion of the packer's input arguments (files, directories, globs with
// "**", and "-" for stdin) into an ordered list of files, and the
// deterministic --part i/N split of that list. Thread-safe (no shared state).
#ifndef TOKPACK_SRC_INPUTS_INPUT_FILES_H_
#define TOKPACK_SRC_INPUTS_INPUT_FILES_H_

#include <string>
#include <string_view>
#include <vector>

#include "tokpack/manifest.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

// True when `s` holds a glob character ('*', '?' or '[').
bool HasWildcard(std::string_view s);

struct ExpandedInputs {
  std::vector<InputRecord> inputs;
  std::vector<std::string> skipped;  // Of a type the packer does not read.
};

// Expands each spec in order; within a directory, glob or object-store
// prefix, files are sorted by path (byte order). Specs are local files,
// directories (every visible file below), globs with "**", object-store URLs,
// prefixes and globs (see inputs/remote_input.h) and "-" for stdin. A file whose
// format `input_format` cannot tell (InputFormatFor, input_formats.h) fails the expansion,
// or with `skip_unknown` is left out and listed in `skipped`. Fails with
// NotFound naming the first spec that matches nothing, before any input is
// read. Object stores are reached with `storage`.
StatusOr<ExpandedInputs> ExpandInputs(const std::vector<std::string>& specs,
                                      const StorageOptions& storage,
                                      const std::string& input_format = "auto",
                                      bool skip_unknown = false);

// The files of part `index` of `count`: contiguous runs of the ordered list,
// balanced by bytes (a file belongs to the part containing its byte midpoint).
// The concatenation of parts 0..count-1 is the whole list.
std::vector<InputRecord> SelectPart(const std::vector<InputRecord>& all, int index, int count);

// SelectPart with the files of a format that has units (InputFormat::units:
// Parquet's row groups) split into them first, each weighed by its
// compressed bytes, so one large file spreads over parts. A part's run of
// units of one file is one InputRecord with row_group_begin/end set; all of
// a file's units: the whole file. Reads each such file's footer (remote ones
// with `storage`); errors name the file.
StatusOr<std::vector<InputRecord>> SelectPartByRowGroups(const std::vector<InputRecord>& all,
                                                         int index, int count,
                                                         const std::string& input_format,
                                                         const std::string& text_key,
                                                         const StorageOptions& storage);

}  // namespace tokpack

#endif  // TOKPACK_SRC_INPUTS_INPUT_FILES_H_
