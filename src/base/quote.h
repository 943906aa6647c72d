// Quoting a user-supplied string (a token, a pattern, a name) in an error
// message. Such a string can be anything up to a file's size: a 300 MB EOS
// name was echoed whole into a 314 MB message. Every message that quotes one
// goes through Quoted(), which keeps a readable head and says how long the
// rest was.
#ifndef TOKPACK_SRC_BASE_QUOTE_H_
#define TOKPACK_SRC_BASE_QUOTE_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tokpack {

// Enough for any real token or split pattern (the longest presets are about
// 300 bytes, and their heads tell them apart).
inline constexpr size_t kMaxQuotedBytes = 200;

// `s`, or if longer than `max_bytes` its first `max_bytes` bytes (cut back to
// a UTF-8 character boundary) then "... (N bytes)", N being the whole size.
std::string Clipped(std::string_view s, size_t max_bytes = kMaxQuotedBytes);
// Clipped(s) in single quotes.
std::string Quoted(std::string_view s, size_t max_bytes = kMaxQuotedBytes);

// `items` as a list in a message: "a, b or c" with `last` " or " ("a" alone,
// "" for none). The registries' lists of names (kinds, formats, presets).
std::string JoinList(const std::vector<std::string>& items, std::string_view last = " or ");

}  // namespace tokpack

#endif  // TOKPACK_SRC_BASE_QUOTE_H_
