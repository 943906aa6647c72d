// The rule for every path a manifest names (shard prefixes, the tokenizer
// copy, and any member added later): manifests are untrusted, so each such
// path is checked here when the manifest is parsed, and nowhere else.
//
// Invariant: a path that passes CheckDatasetPath, appended to a directory or
// an object prefix D as D + "/" + path, names an entry strictly beneath D,
// lexically and after any URL normalization: it is relative (no leading '/'),
// made of 1..kMaxDatasetPathComponents non-empty components separated by '/',
// none of them "." or "..", with no backslash and no control character (NUL,
// newline, DEL, ...), and at most kMaxDatasetPathBytes bytes. Subdirectories
// are allowed (a publish puts shards under a generation prefix such as
// "g-1a2b/shard-00000"; a merge in object storage, under its parts).
//
// Symbolic links are not lexical: how a local dataset's links are followed is
// ReadOnlyFile's rule (src/base/file_system.h).
#ifndef TOKPACK_SRC_FORMAT_DATASET_PATH_H_
#define TOKPACK_SRC_FORMAT_DATASET_PATH_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokpack/status.h"

namespace tokpack {

// Longest path accepted: an S3 object key's limit, below PATH_MAX.
inline constexpr size_t kMaxDatasetPathBytes = 1024;
// Deepest path accepted (merges of merges in object storage nest their parts).
inline constexpr size_t kMaxDatasetPathComponents = 16;
// Longest component: NAME_MAX.
inline constexpr size_t kMaxDatasetPathComponentBytes = 255;

// OK if `path` obeys the rule above; otherwise InvalidArgument whose message
// says what is wrong (the caller names the field, e.g. "shards[3].path").
Status CheckDatasetPath(std::string_view path);

}  // namespace tokpack

#endif  // TOKPACK_SRC_FORMAT_DATASET_PATH_H_
