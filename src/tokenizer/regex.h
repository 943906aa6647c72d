// Regex: a PCRE2 pattern (8-bit, UTF + UCP, JIT-compiled) that runs the
// pre-tokenizer regexes of tokenizer.json files (written for Oniguruma) and
// tiktoken (written for Rust's fancy-regex) with the same matches.
//
// Dialect differences that matter for the patterns models use are rewritten
// at compile time: `\s` also matches U+0085 (both references use Unicode's
// White_Space; PCRE2's \s does not include NEL), and `$` means end of line
// (Oniguruma's Ruby syntax) or end of text (Rust). Matches always start and
// end on UTF-8 character boundaries.
//
// The split patterns models use (split_scanner.h) run on hand-written
// scanners instead of PCRE2, with the same matches.
//
// Immutable after Compile(); safe to share between threads. Matching uses
// per-thread match data and JIT stack, so it takes no lock and, after a
// thread's first match, allocates nothing.
#ifndef TOKPACK_SRC_TOKENIZER_REGEX_H_
#define TOKPACK_SRC_TOKENIZER_REGEX_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>

// The split patterns by name (SplitPatternPreset), which the callers of
// Regex::Compile take.
#include "tokenizer/pattern_presets.h"
#include "tokenizer/split_scanner.h"
#include "tokpack/status.h"

namespace tokpack {

// The backtracking steps one match attempt (at one start position) may take
// before Search() fails: kRegexMatchLimit, the default retry-limit-in-match
// of the Oniguruma that tokenizers runs, so that a pattern that backtracks
// without end stops on a short text in milliseconds there and here alike,
// plus kRegexStepsPerByte per byte of the text, so that the models' patterns
// still cross a 10 MB run without boundaries (which takes PCRE2 a step or two
// a byte; Oniguruma's optimizations skip such runs). The limit is per start
// position, as Oniguruma's is.
inline constexpr uint32_t kRegexMatchLimit = 10'000'000;
inline constexpr uint32_t kRegexStepsPerByte = 8;
uint32_t RegexMatchLimit(size_t subject_bytes);

enum class RegexDialect {
  kOniguruma,  // tokenizer.json (Hugging Face tokenizers).
  kRust,       // tiktoken (fancy-regex).
};

enum class RegexEngine {
  kAuto,   // A hand-written scanner where one knows the pattern, else PCRE2.
  kPcre2,  // PCRE2 always: the reference the scanners are tested against.
};

class Regex {
 public:
  // Errors quote PCRE2's message and the offset in the pattern. Syntax that
  // only PCRE2 has (\C, verbs such as (*UTF) or (*LIMIT_MATCH=1), callouts)
  // is refused: Oniguruma and fancy-regex refuse it too, and some of it
  // changes matching (\C splits characters into bytes).
  static StatusOr<std::unique_ptr<Regex>> Compile(std::string_view pattern, RegexDialect dialect,
                                                  RegexEngine engine = RegexEngine::kAuto);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // The leftmost match in `subject` (valid UTF-8) at or after `start`, which
  // lookarounds may see behind. Returns false when there is none, and
  // ResourceExhausted, naming the pattern, when an attempt takes more than
  // RegexMatchLimit(subject.size()) steps.
  StatusOr<bool> Search(std::string_view subject, size_t start, size_t* match_start,
                        size_t* match_end) const;

  // Calls fn(start, end) for each match, left to right, with the find_iter
  // rule of both references: an empty match right where the previous match
  // ended is skipped.
  template <typename Fn>
  Status ForEachMatch(std::string_view subject, Fn&& fn) const {
    if (scanner_ != nullptr && !scanner_->tiles()) {
      size_t start = 0, end = 0;
      for (size_t pos = 0; scanner_->Find(subject, pos, &start, &end); pos = end) fn(start, end);
      return Status::Ok();
    }
    if (scanner_ != nullptr) {
      // Every piece Scan() cuts is a match: they tile the text.
      size_t ends[64];
      for (size_t pos = 0; pos < subject.size();) {
        const size_t n = scanner_->Scan(subject, pos, ends, std::size(ends));
        for (size_t k = 0; k < n; ++k) {
          fn(pos, ends[k]);
          pos = ends[k];
        }
      }
      return Status::Ok();
    }
    size_t pos = 0;
    size_t last_end = SIZE_MAX;
    while (pos <= subject.size()) {
      size_t s = 0, e = 0;
      StatusOr<bool> found = Search(subject, pos, &s, &e);
      if (!found.ok()) return found.status();
      if (!*found) break;
      if (s == e && e == last_end) {
        if (pos == subject.size()) break;
        pos += Utf8SequenceLength(static_cast<unsigned char>(subject[pos]));
        continue;
      }
      fn(s, e);
      last_end = e;
      pos = e;
    }
    return Status::Ok();
  }

  // `literal` as a pattern that matches exactly it.
  static std::string Escape(std::string_view literal);
  // The pattern after the dialect rewrite (for tests and error messages).
  const std::string& translated() const { return translated_; }
  // The hand-written scanner that runs this pattern, or nullptr (PCRE2 does).
  const SplitScanner* scanner() const { return scanner_; }

  static size_t Utf8SequenceLength(unsigned char lead) {
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  }

 private:
  Regex() = default;
  void* code_ = nullptr;  // pcre2_code_8*; void keeps pcre2.h out of this header.
  bool jit_ = false;
  const SplitScanner* scanner_ = nullptr;
  std::string pattern_;  // As given, for errors.
  std::string translated_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_REGEX_H_
