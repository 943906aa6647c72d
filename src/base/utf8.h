// UTF-8 validation and repair, with the semantics of Python's
// bytes.decode("utf-8", errors="replace"): each maximal ill-formed subpart
// becomes one U+FFFD (Unicode's recommended practice). Thread-safe.
#ifndef TOKPACK_SRC_BASE_UTF8_H_
#define TOKPACK_SRC_BASE_UTF8_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tokpack {

// Appends code point `cp` (< 0x110000, not a surrogate) as UTF-8. Inline, so
// that build-time generators use it without linking the library.
inline void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Whether byte `c` continues a code point (10xxxxxx): never the first byte of one.
inline bool IsUtf8Continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

bool IsValidUtf8(std::string_view s);

// Returns `s` with every maximal ill-formed subsequence replaced by U+FFFD.
std::string RepairUtf8(std::string_view s);

}  // namespace tokpack

#endif  // TOKPACK_SRC_BASE_UTF8_H_
