// The registry of input formats: one row per format the packer reads,
// {name, suffixes, name rules, open, units}, in the table of
// input_formats.cc. A format is its row plus one file defining the row's
// functions (jsonl_format.cc, text_format.cc, parquet_format.cc); the
// --input-format choices, the choice by file name ("auto"), the build's
// opening of an input and the Python package's test of what names a path
// (LooksLikeInputName) all read it. Thread-safe: the table is read and
// extended under a lock, and rows never move once added.
#ifndef TOKPACK_SRC_INPUTS_INPUT_FORMATS_H_
#define TOKPACK_SRC_INPUTS_INPUT_FORMATS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/record_source.h"
#include "tokpack/manifest.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

// One row of the registry.
struct InputFormat {
  const char* name;  // --input-format's value, recorded in manifests: "jsonl".
  // The ends of the names "auto" reads as this format: ".jsonl".
  std::vector<std::string> suffixes;
  // Whether a suffix may be followed by .gz, .zst or .zstd (streams are
  // decompressed by their content, input_stream.h, whatever their name).
  bool compressible;
  // Whether the suffixes match in any letter case.
  bool any_case;
  // Opens input `in`: a local path, an object URL, or "-" (stdin); for a
  // format with units, only units [in.row_group_begin, in.row_group_end)
  // unless in.whole_file().
  StatusOr<std::unique_ptr<RecordSource>> (*open)(const InputRecord& in,
                                                  const SourceContext& context);
  // nullptr, or the compressed bytes of each unit that `--part` may deal to
  // different parts (Parquet's row groups); errors name the file.
  StatusOr<std::vector<uint64_t>> (*units)(const std::string& path, const std::string& text_key,
                                           const StorageOptions& storage);
};

// The rows, in table order, then those registered.
std::vector<const InputFormat*> InputFormats();

// Adds `format` after the rows already there. For tests and formats outside
// the core; a format of the core is a row of the table instead. Formats
// added after the first build lack from --input-format's choices (the option
// table is made once), but "auto" finds them by name.
void RegisterInputFormat(const InputFormat& format);

// The format of `path` under --input-format `format`: "auto" takes the first
// row one of whose suffixes ends `path` (once a compression suffix is
// removed, for compressible rows); stdin ("-") is JSONL. A format's name
// applies to every input. InvalidArgument for an unknown format, and for a
// name "auto" cannot tell, naming --input-format.
StatusOr<const InputFormat*> InputFormatFor(const std::string& path, const std::string& format);

// "auto", then each row's name: the values of --input-format.
std::vector<std::string> InputFormatChoices();

// Whether `name` ends like an input file of any format, looser than "auto":
// in any letter case, and any suffix optionally followed by a compression
// suffix. Such a name is meant as a path, never as a text (tokpack.build).
bool LooksLikeInputName(std::string_view name);

}  // namespace tokpack

#endif  // TOKPACK_SRC_INPUTS_INPUT_FORMATS_H_
