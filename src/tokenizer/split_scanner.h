// SplitScanner: hand-written matchers for the split patterns that models
// use (GPT-2's, cl100k's, o200k's, Llama 3's, Qwen 2's and 3.5's, and the three that
// DeepSeek V3 chains), which give the same matches as running the pattern
// with Regex's PCRE2 path, several times faster. Regex::Compile picks one by
// recognising the pattern's text; any other pattern keeps the regex engine.
//
// A regex search tries each start position in turn and takes the first
// alternative that matches there; a scanner answers the same question for
// one position (MatchAt). Most of these patterns match at every character,
// so their matches tile the text (tiles()). The scanners
// read character classes from char_class.h (PCRE2's Unicode data), and are
// checked against the PCRE2 path by tests/tokenizer/split_scanner_test.cc
// (every code point in each position of each branch) and a fuzzer
// (tests/fuzz/split_scanner_fuzz.cc).
//
// Immutable; safe to share between threads.
#ifndef TOKPACK_SRC_TOKENIZER_SPLIT_SCANNER_H_
#define TOKPACK_SRC_TOKENIZER_SPLIT_SCANNER_H_

#include <cstddef>
#include <string_view>
#include <vector>

#include "tokenizer/char_class.h"

namespace tokpack {

enum class RegexDialect;

class SplitScanner {
 public:
  // The patterns' families. Within one, the variants differ in the knobs below.
  enum class Family {
    kGpt2,
    kCl100k,
    kLlama3,
    kO200k,
    kDigitGroups,  // DeepSeek's \p{N}{1,3}.
    kCjkRuns,      // DeepSeek's [一-龥぀-ゟ゠-ヿ]+.
    kDeepSeek,     // DeepSeek's third split.
  };

  // The scanner for `pattern` read in `dialect`, or nullptr when it is not a
  // pattern recognised here (the caller then runs the regex). The result is
  // a static object.
  static const SplitScanner* ForPattern(std::string_view pattern, RegexDialect dialect);

  // Whether the matches tile every text (each character is in one).
  bool tiles() const { return family_ < Family::kDigitGroups; }

  // Cuts text[pos..] (pos < text.size(), the end of a previous piece or 0)
  // into the pieces an Isolated split makes, matches and the text between
  // them alike: writes their ends to ends[0..n) and returns n, 1 <= n <= max.
  // `text` must be valid UTF-8.
  size_t Scan(std::string_view text, size_t pos, size_t* ends, size_t max) const;

  // The end of the match that starts at `pos` (< text.size()), or `pos` if
  // none starts there. Never `pos` where tiles().
  size_t MatchAt(std::string_view text, size_t pos) const;

  // The leftmost match at or after `pos`: sets [*start, *end) and returns
  // true, or returns false if there is none.
  bool Find(std::string_view text, size_t pos, size_t* start, size_t* end) const;

  // Every pattern ForPattern() recognises, for tests.
  static std::vector<std::string_view> KnownPatterns();

  // A short name for tests and diagnostics, e.g. "cl100k".
  const char* name() const { return name_; }

  constexpr SplitScanner(const char* name, Family family, int max_digits, bool ignore_case,
                         bool space_run_to_end, bool marks_in_words = false)
      : name_(name),
        family_(family),
        max_digits_(max_digits),
        ignore_case_(ignore_case),
        space_run_to_end_(space_run_to_end),
        word_(marks_in_words ? CharClass::kLetter | CharClass::kMark : CharClass::kLetter) {}

 private:
  size_t Contraction(std::string_view text, size_t pos) const;
  // o200k's (?i:'s|'t|...)? after a word ending at `end`: where it ends.
  size_t OptionalContraction(std::string_view text, size_t end) const;
  size_t Spaces(std::string_view text, size_t pos) const;
  // o200k's first letter branch from `start`: the match's end, or 0.
  size_t O200kLetters(std::string_view text, size_t start) const;
  size_t DeepSeekAt(std::string_view text, size_t pos) const;

  const char* name_;
  Family family_;
  int max_digits_;         // \p{N}{1,k} (GPT-2's ` ?\p{N}+` does not look at it).
  bool ignore_case_;       // Contractions are (?i:...).
  bool space_run_to_end_;  // cl100k's \s++$ before \s*[\r\n] (end of text).
  uint8_t word_;           // CharClass bits of a word: letters (and marks).
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_SPLIT_SCANNER_H_
