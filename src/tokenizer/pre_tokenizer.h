// Pre-tokenizer stages of a tokenizer.json (Split, Digits; ByteLevel last) and
// tiktoken's split, as tokenizers' NormalizedString::split runs them: a stage
// marks each part of a piece as a match or not, then a delimiter behaviour
// turns the marks into sub-pieces. Stateless; safe to share between threads.
#ifndef TOKPACK_SRC_TOKENIZER_PRE_TOKENIZER_H_
#define TOKPACK_SRC_TOKENIZER_PRE_TOKENIZER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/regex.h"
#include "tokpack/status.h"

namespace tokpack {

// tokenizers' SplitDelimiterBehavior.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// [start, end) within a piece; is_match marks a delimiter (pattern match).
struct SplitEvent {
  size_t start;
  size_t end;
  bool is_match;
};

// Pieces of [0, total) from events that cover it in order, per `behavior`.
// Appends non-empty [start, end) pairs to *out.
void ApplySplitBehavior(const std::vector<SplitEvent>& events, SplitBehavior behavior,
                        std::vector<std::pair<size_t, size_t>>* out);

struct PreTokenizerStage {
  enum class Kind { kSplit, kDigits };
  Kind kind = Kind::kSplit;
  std::shared_ptr<const Regex> regex;  // kSplit.
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;  // kSplit: the pattern marks what to keep.

  // kSplit: events of `piece` (valid UTF-8), replacing *events. (Digits
  // stages are cut by BpeTokenizer directly: each numeric character is its
  // own match, as tokenizers' char-predicate Pattern makes them.)
  Status Events(std::string_view piece, std::vector<SplitEvent>* events) const;
};

// ByteLevel, the last stage where present: optionally prepends a space to each
// piece, splits it with GPT-2's regex, and switches the model to bytes.
struct ByteLevelStage {
  bool present = false;
  bool add_prefix_space = false;
  std::shared_ptr<const Regex> regex;  // Null when use_regex is false.
};

// GPT-2's map from bytes to printable characters, which byte-level vocabularies
// are written in: the code point that stands for byte `b`, and the byte a code
// point stands for (-1 if none).
uint32_t ByteLevelCodepoint(unsigned char b);
int ByteLevelByte(uint32_t cp);

// tokenizers' ByteLevel regex (GPT-2's), run with Oniguruma there.
inline constexpr const char* kByteLevelPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_PRE_TOKENIZER_H_
