#include "frontend/registry_names.h"

#include "inputs/input_files.h"
#include "inputs/input_formats.h"
#include "storage/object_url.h"
#include "tokenizer/pattern_presets.h"
#include "tokenizer/tokenizer_kinds.h"

namespace tokpack {

std::string TokenizerKindsText() { return TokenizerKindList(); }

std::string PatternPresetsText(bool with_special_tokens) {
  return PatternPresetNames(with_special_tokens);
}

std::string_view InputNameKind(std::string_view name) {
  if (name == "-") return "stdin";
  if (HasObjectStoreScheme(name)) return "url";
  if (HasWildcard(name)) return "glob";
  return "";
}

bool LooksLikeInputFile(std::string_view name) { return LooksLikeInputName(name); }

}  // namespace tokpack
