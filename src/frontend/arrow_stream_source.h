// MakeArrowStreamTextSource: the texts of an Arrow C stream (pyarrow tables
// and readers, polars, duckdb) as a build's TextSource, for the Python
// binding. Internal to the CLI and the binding (the frontend layer); C++
// users give a build their own TextSource (tokpack/text_source.h).
#ifndef TOKPACK_SRC_FRONTEND_ARROW_STREAM_SOURCE_H_
#define TOKPACK_SRC_FRONTEND_ARROW_STREAM_SOURCE_H_

#include <memory>
#include <string>

#include "tokpack/status.h"
#include "tokpack/text_source.h"

namespace tokpack {

// A TextSource that reads the texts of column `text_key` of an Arrow C
// stream, one record batch at a time: what pyarrow tables and readers, polars
// and duckdb export through __arrow_c_stream__. `arrow_array_stream` is a
// struct ArrowArrayStream* (void* keeps Arrow out of this header; tokpack
// links no Arrow library for this).
//
// Ownership: the stream is moved out of *arrow_array_stream (its `release`
// becomes null, as the interface's move semantics say), also when this
// fails; the source releases it, and every array it gets, when done.
//
// `text_key` names a column of the stream's record batches, or a field of a
// struct column by a dotted path ("meta.text", unless a column is named
// exactly so) or a JSON pointer ("/meta/text"). A stream of plain string
// arrays (an exported ChunkedArray) has no columns: its values are the texts
// and `text_key` is not used. Columns of type utf8, large_utf8, string_view,
// binary, large_binary and binary_view are read (binary bytes as text; the
// packer's UTF-8 policy applies). A null (or a null parent struct) is a bad
// record "text is null"; every row of a column of another type is a bad
// record "text is <type>, not a string". A missing column is an error that
// lists the columns there are.
//
// Everything the producer hands over is untrusted: offsets, lengths and
// string_view buffer references are checked against what the interface
// lets a consumer know, and a violation is an error naming the row.
// `name` names the source in errors and the provenance ("<arrow stream>").
StatusOr<std::unique_ptr<TextSource>> MakeArrowStreamTextSource(void* arrow_array_stream,
                                                                std::string text_key,
                                                                std::string name);

}  // namespace tokpack

#endif  // TOKPACK_SRC_FRONTEND_ARROW_STREAM_SOURCE_H_
