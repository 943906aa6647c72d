// The presets a tiktoken ranks file's --pattern / pattern= takes by name: one
// table (pattern_presets.cc) of {name, split regex, special tokens, EOS,
// BOS}; the help, the errors and the split scanners read it. Immutable, so
// thread-safe.
#ifndef TOKPACK_SRC_TOKENIZER_PATTERN_PRESETS_H_
#define TOKPACK_SRC_TOKENIZER_PATTERN_PRESETS_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokpack {

struct PatternPreset {
  const char* name;
  const char* pattern;  // fancy-regex syntax, as the encoding's own code has it.
  // (text, id) pairs the preset brings; none: a preset of the pattern alone.
  std::vector<std::pair<const char*, int>> special_tokens;
  const char* eos;  // Text of the EOS / BOS token; "": none.
  const char* bos;
};

// The preset named `name`, or nullptr.
const PatternPreset* FindPatternPreset(std::string_view name);

// The split regex of the preset named `name`, or nullptr for other names.
const char* SplitPatternPreset(std::string_view name);
// The preset named `name_or_regex`, or the argument itself as a regex.
std::string SplitPatternFor(std::string_view name_or_regex);

// The names of the presets that bring special tokens (`with_special_tokens`)
// or of those that are the pattern alone, as "a, b, c" for help and errors.
std::string PatternPresetNames(bool with_special_tokens);

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_PATTERN_PRESETS_H_
