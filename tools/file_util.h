// Local file helpers for the CLI, on std::filesystem: the tools use only the
// public API (include/tokpack), and these are too small to be part of it.
#ifndef TOKPACK_TOOLS_FILE_UTIL_H_
#define TOKPACK_TOOLS_FILE_UTIL_H_

#include <string>

#include "tokpack/status.h"

namespace tokpack::cli {

// "a/b" joined with "c" -> "a/b/c".
std::string JoinPath(const std::string& a, const std::string& b);

// mkdir -p; errors name the directory.
Status CreateDirs(const std::string& dir);

// Writes `data` to `path` through a temporary file beside it, fsync and
// rename, so `path` holds the old or the new contents, never a part.
Status WriteFileAtomically(const std::string& path, const std::string& data);

// rm -rf, best effort: callers are cleaning up.
void RemoveAllQuietly(const std::string& path);

}  // namespace tokpack::cli

#endif  // TOKPACK_TOOLS_FILE_UTIL_H_
