// The character classes that the split patterns of models test, per code
// point, as bits: what the hand-written scanners (split_scanner.h) read instead
// of running a regex engine. The table is generated at build time from
// PCRE2's Unicode data (gen_char_classes.cc), the data the PCRE2 path of Regex
// matches with, so both paths see the same classes. Pure; thread-safe.
#ifndef TOKPACK_SRC_TOKENIZER_CHAR_CLASS_H_
#define TOKPACK_SRC_TOKENIZER_CHAR_CLASS_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tokpack {

struct CharClass {
  static constexpr uint8_t kLetter = 1;     // \p{L}
  static constexpr uint8_t kNumber = 2;     // \p{N}
  static constexpr uint8_t kSpace = 4;      // \s as Regex means it: White_Space and NEL.
  static constexpr uint8_t kUpperish = 8;   // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k)
  static constexpr uint8_t kLowerish = 16;  // [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k)
  static constexpr uint8_t kNewline = 32;   // [\r\n]
  static constexpr uint8_t kMark = 64;      // \p{M} (DeepSeek)
  static constexpr uint8_t kPunct = 128;    // [\p{P}\p{S}] (DeepSeek)
};

// Generated (char_class_table.cc): block of each 256 code points, and blocks.
extern const uint16_t kCharClassStage1[0x1100];
extern const uint8_t kCharClassBlocks[];

// The CharClass bits of code point `cp` (< 0x110000).
inline uint8_t CharClassOf(uint32_t cp) {
  return kCharClassBlocks[size_t{kCharClassStage1[cp >> 8]} * 256 + (cp & 0xFF)];
}

// The bits of the character at s[i] (i < s.size(), s valid UTF-8); *len gets
// its length in bytes, never past the end of s.
inline uint8_t CharClassAt(std::string_view s, size_t i, size_t* len) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  const uint32_t b0 = p[0];
  if (b0 < 0x80) {
    *len = 1;
    return kCharClassBlocks[b0];  // Block 0 holds U+0000..U+00FF.
  }
  const size_t left = s.size() - i;
  uint32_t cp;
  size_t n;
  if (b0 < 0xE0) {
    n = 2;
    cp = ((b0 & 0x1F) << 6) | (left > 1 ? (p[1] & 0x3Fu) : 0);
  } else if (b0 < 0xF0) {
    n = 3;
    cp = ((b0 & 0x0F) << 12) | (left > 2 ? ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu) : 0);
  } else {
    n = 4;
    cp = left > 3
             ? ((b0 & 0x07) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu)
             : 0;
  }
  *len = n <= left ? n : left;
  return cp < 0x110000 ? CharClassOf(cp) : 0;
}

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_CHAR_CLASS_H_
