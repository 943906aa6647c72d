// ParsePart: the `--part i/N` text of `tokpack build` as
// BuildOptions::part_index and part_count. Internal to the CLI (the frontend
// layer). Thread-safe.
#ifndef TOKPACK_SRC_FRONTEND_BUILD_PART_H_
#define TOKPACK_SRC_FRONTEND_BUILD_PART_H_

#include <string>

#include "tokpack/status.h"

namespace tokpack {

// Parses "i/N" (0 <= i < N) into *index and *count. InvalidArgument naming
// the text.
Status ParsePart(const std::string& text, int* index, int* count);

}  // namespace tokpack

#endif  // TOKPACK_SRC_FRONTEND_BUILD_PART_H_
