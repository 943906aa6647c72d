// UTF-8 validation and repair, with the semantics of Python's
// bytes.decode("utf-8", errors="replace"): each maximal ill-formed subpart
// becomes one U+FFFD (Unicode's recommended practice). Thread-safe.
#ifndef TOKPACK_SRC_COMMON_UTF8_H_
#define TOKPACK_SRC_COMMON_UTF8_H_

#include <string>
#include <string_view>

namespace tokpack {

bool IsValidUtf8(std::string_view s);

// Returns `s` with every maximal ill-formed subsequence replaced by U+FFFD.
std::string RepairUtf8(std::string_view s);

}  // namespace tokpack

#endif  // TOKPACK_SRC_COMMON_UTF8_H_
