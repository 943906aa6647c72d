// Character classes that tokenizers (Rust) applies outside regexes, with the
// Unicode data of utf8proc, and UTF-8 stepping over valid text. Pure functions.
#ifndef TOKPACK_SRC_TOKENIZER_UNICODE_H_
#define TOKPACK_SRC_TOKENIZER_UNICODE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/utf8.h"

namespace tokpack {

// The code point starting at s[i] (valid UTF-8, i < s.size()); *len its bytes.
inline uint32_t DecodeUtf8(std::string_view s, size_t i, size_t* len) {
  auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k])); };
  uint32_t c = b(0);
  if (c < 0x80) {
    *len = 1;
    return c;
  }
  if (c < 0xE0) {
    *len = 2;
    return ((c & 0x1F) << 6) | (b(1) & 0x3F);
  }
  if (c < 0xF0) {
    *len = 3;
    return ((c & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  }
  *len = 4;
  return ((c & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

// The start of the code point that ends right before s[i] (0 < i).
inline size_t PreviousCharStart(std::string_view s, size_t i) {
  do {
    --i;
  } while (i > 0 && IsUtf8Continuation(s[i]));
  return i;
}

// Rust's char::is_whitespace (Unicode White_Space), which regex's \s matches.
bool IsWhiteSpace(uint32_t cp);
// Rust regex's \w: Alphabetic, marks, decimal digits, connector punctuation,
// join controls.
bool IsWordChar(uint32_t cp);
// Rust's char::is_numeric: general category Nd, Nl or No.
bool IsNumeric(uint32_t cp);

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_UNICODE_H_
