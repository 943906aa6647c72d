// What the CLI's help and the Python binding say from the core's registries
// (tokenizer kinds, pattern presets, input formats), so that neither keeps a
// list of its own. Internal to the CLI and the binding (the frontend layer).
// Thread-safe.
#ifndef TOKPACK_SRC_FRONTEND_REGISTRY_NAMES_H_
#define TOKPACK_SRC_FRONTEND_REGISTRY_NAMES_H_

#include <string>
#include <string_view>

namespace tokpack {

// "a Hugging Face tokenizer.json (BPE), ... or a sentencepiece .model".
std::string TokenizerKindsText();

// The presets a tiktoken file's --pattern takes: those that bring special
// tokens (`with_special_tokens`) or the pattern alone, as "a, b, c".
std::string PatternPresetsText(bool with_special_tokens);

// How the packer takes `name` as an input, from its text alone: "stdin"
// ("-"), "url" (an object-store or HTTP URL), "glob" (a wildcard), else "".
std::string_view InputNameKind(std::string_view name);

// Whether `name` ends like an input file of some format (LooksLikeInputName
// in inputs/input_formats.h): a name meant as a path, never as a text.
bool LooksLikeInputFile(std::string_view name);

}  // namespace tokpack

#endif  // TOKPACK_SRC_FRONTEND_REGISTRY_NAMES_H_
