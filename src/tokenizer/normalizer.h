// Normalizer: the text normalizers of tokenizer.json that tokpack supports
// (NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, and Sequences of them),
// applied in order. Unicode normalization and case mapping come from
// utf8proc. Immutable after building; Apply() is safe from many threads.
#ifndef TOKPACK_SRC_TOKENIZER_NORMALIZER_H_
#define TOKPACK_SRC_TOKENIZER_NORMALIZER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"
#include "tokpack/status.h"

namespace tokpack {

// The most a normalizer may grow a text: every step's output is at most
// kMaxNormalizedGrowth times the text Apply() was given plus
// kNormalizedSlackBytes, or Apply() fails naming the step. Without a cap a
// document's memory had no bound (40 chained doubling Replace steps make 64
// bytes into terabytes). Real normalizers stay well inside it: NFKC grows
// real text by a few percent, and even its largest expansions only in dense
// runs (U+FDFA, 3 bytes, becomes 33; U+FDFB 15; the squared katakana of
// U+3300.. 12); Replace(" ", "▁") at most triples a text.
inline constexpr size_t kMaxNormalizedGrowth = 4;
inline constexpr size_t kNormalizedSlackBytes = size_t{64} << 10;

class Normalizer {
 public:
  enum class Form { kNfc, kNfd, kNfkc, kNfkd };

  // `name` names the step in errors, e.g. "normalizer.normalizers[1] (NFKC)".
  void AddUnicodeForm(Form form, std::string name) {
    steps_.push_back(Step{Kind::kForm, form, "", nullptr, std::move(name)});
  }
  // Rust's char::to_lowercase per character (no context, so no final sigma).
  void AddLowercase(std::string name) {
    steps_.push_back(Step{Kind::kLowercase, Form::kNfc, "", nullptr, std::move(name)});
  }
  // Prepends `text` to non-empty input.
  void AddPrepend(std::string text, std::string name) {
    steps_.push_back(Step{Kind::kPrepend, Form::kNfc, std::move(text), nullptr, std::move(name)});
  }
  // Replaces every match of `pattern` with `content`.
  void AddReplace(std::unique_ptr<Regex> pattern, std::string content, std::string name) {
    steps_.push_back(
        Step{Kind::kReplace, Form::kNfc, std::move(content), std::move(pattern), std::move(name)});
  }

  bool empty() const { return steps_.empty(); }

  // Writes the normalized form of `in` (valid UTF-8) to `*out`.
  // ResourceExhausted, naming the step, past the cap above.
  Status Apply(std::string_view in, std::string* out) const;

 private:
  enum class Kind { kForm, kLowercase, kPrepend, kReplace };
  struct Step {
    Kind kind;
    Form form;
    std::string text;
    std::shared_ptr<const Regex> pattern;
    std::string name;
  };
  // One step; sets *over_cap, leaving *out cut short, once *out would pass
  // `cap` bytes.
  Status ApplyStep(const Step& step, std::string_view in, size_t cap, std::string* out,
                   bool* over_cap) const;

  std::vector<Step> steps_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_NORMALIZER_H_
