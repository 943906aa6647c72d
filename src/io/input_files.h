// Expansion of the packer's input arguments (files, directories, globs with
// "**", and "-" for stdin) into an ordered list of files, and the
// deterministic --part i/N split of that list. Thread-safe (no shared state).
#ifndef TOKPACK_SRC_IO_INPUT_FILES_H_
#define TOKPACK_SRC_IO_INPUT_FILES_H_

#include <string>
#include <vector>

#include "tokpack/manifest.h"
#include "tokpack/status.h"

namespace tokpack {

// Expands each spec in order; within a directory or glob, files are sorted by
// path (byte order). Directories contribute files named *.jsonl, *.ndjson,
// *.json, *.txt or *.text, optionally followed by .gz, .zst or .zstd; hidden
// entries are skipped. Fails with NotFound naming the first spec that matches
// nothing, before any input is read.
StatusOr<std::vector<InputRecord>> ExpandInputs(const std::vector<std::string>& specs);

// "jsonl" or "text" for `path` under --input-format `format` ("auto" decides
// by the name once compression suffixes are removed; stdin is jsonl).
StatusOr<std::string> InputFormatFor(const std::string& path, const std::string& format);

// The files of part `index` of `count`: contiguous runs of the ordered list,
// balanced by bytes (a file belongs to the part containing its byte midpoint).
// The concatenation of parts 0..count-1 is the whole list.
std::vector<InputRecord> SelectPart(const std::vector<InputRecord>& all, int index, int count);

// Parses "i/N" with 0 <= i < N.
Status ParsePart(const std::string& text, int* index, int* count);

}  // namespace tokpack

#endif  // TOKPACK_SRC_IO_INPUT_FILES_H_
