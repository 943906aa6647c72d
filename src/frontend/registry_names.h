// What the CLI's help says from the core's registries (tokenizer kinds,
// pattern presets), so that it keeps no list of its own. Internal to the CLI
// and the binding (the frontend layer). Thread-safe.
#ifndef TOKPACK_SRC_FRONTEND_REGISTRY_NAMES_H_
#define TOKPACK_SRC_FRONTEND_REGISTRY_NAMES_H_

#include <string>

namespace tokpack {

// "a Hugging Face tokenizer.json (BPE), ... or a sentencepiece .model".
std::string TokenizerKindsText();

// The presets a tiktoken file's --pattern takes: those that bring special
// tokens (`with_special_tokens`) or the pattern alone, as "a, b, c".
std::string PatternPresetsText(bool with_special_tokens);

}  // namespace tokpack

#endif  // TOKPACK_SRC_FRONTEND_REGISTRY_NAMES_H_
