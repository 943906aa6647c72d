// Normalizer: the text normalizers of tokenizer.json that tokpack supports
// (NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, and Sequences of them),
// applied in order. Unicode normalization and case mapping come from
// utf8proc. Immutable after building; Apply() is safe from many threads.
#ifndef TOKPACK_SRC_TOKENIZER_NORMALIZER_H_
#define TOKPACK_SRC_TOKENIZER_NORMALIZER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"
#include "tokpack/status.h"

namespace tokpack {

class Normalizer {
 public:
  enum class Form { kNfc, kNfd, kNfkc, kNfkd };

  void AddUnicodeForm(Form form) { steps_.push_back(Step{Kind::kForm, form, "", nullptr}); }
  // Rust's char::to_lowercase per character (no context, so no final sigma).
  void AddLowercase() { steps_.push_back(Step{Kind::kLowercase, Form::kNfc, "", nullptr}); }
  // Prepends `text` to non-empty input.
  void AddPrepend(std::string text) {
    steps_.push_back(Step{Kind::kPrepend, Form::kNfc, std::move(text), nullptr});
  }
  // Replaces every match of `pattern` with `content`.
  void AddReplace(std::unique_ptr<Regex> pattern, std::string content) {
    steps_.push_back(Step{Kind::kReplace, Form::kNfc, std::move(content), std::move(pattern)});
  }

  bool empty() const { return steps_.empty(); }

  // Writes the normalized form of `in` (valid UTF-8) to `*out`.
  Status Apply(std::string_view in, std::string* out) const;

 private:
  enum class Kind { kForm, kLowercase, kPrepend, kReplace };
  struct Step {
    Kind kind;
    Form form;
    std::string text;
    std::shared_ptr<const Regex> pattern;
  };
  Status ApplyStep(const Step& step, std::string_view in, std::string* out) const;

  std::vector<Step> steps_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_NORMALIZER_H_
