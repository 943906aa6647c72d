#include "frontend/registry_names.h"

#include "tokenizer/pattern_presets.h"
#include "tokenizer/tokenizer_kinds.h"

namespace tokpack {

std::string TokenizerKindsText() { return TokenizerKindList(); }

std::string PatternPresetsText(bool with_special_tokens) {
  return PatternPresetNames(with_special_tokens);
}

}  // namespace tokpack
