#include "tokenizer/pattern_presets.h"

#include "base/quote.h"

namespace tokpack {
namespace {

// tiktoken_ext/openai_public.py (tiktoken 0.14).
constexpr const char* kGpt2 =
    R"('(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s)";

// Special tokens as tiktoken's openai_public.py and Meta's Llama 3
// tokenizer.py define them (the named ones; Llama 3's reserved tokens are
// left out: no text contains them and they change no id). Help lists the
// presets in this order.
const std::vector<PatternPreset>& Presets() {
  static const auto* presets = new std::vector<PatternPreset>{
      {"cl100k_base",
       R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s)",
       {{"<|endoftext|>", 100257},
        {"<|fim_prefix|>", 100258},
        {"<|fim_middle|>", 100259},
        {"<|fim_suffix|>", 100260},
        {"<|endofprompt|>", 100276}},
       "<|endoftext|>",
       ""},
      {"o200k_base",
       R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}},
       "<|endoftext|>",
       ""},
      // Meta's llama3 tokenizer.py (also the Split regex of its tokenizer.json).
      {"llama3",
       R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       {{"<|begin_of_text|>", 128000},
        {"<|end_of_text|>", 128001},
        {"<|start_header_id|>", 128006},
        {"<|end_header_id|>", 128007},
        {"<|eot_id|>", 128009}},
       "<|end_of_text|>",
       "<|begin_of_text|>"},
      // Qwen2/Qwen3 tokenizer.json: like llama3 but single digits; the three
      // named tokens after the ranks of Qwen's qwen.tiktoken (Qwen 1 to 3).
      {"qwen2",
       R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       {{"<|endoftext|>", 151643}, {"<|im_start|>", 151644}, {"<|im_end|>", 151645}},
       "<|endoftext|>",
       ""},
      {"gpt2", kGpt2, {}, "", ""},
      {"r50k_base", kGpt2, {}, "", ""},
      {"p50k_base", kGpt2, {}, "", ""},
  };
  return *presets;
}

}  // namespace

const PatternPreset* FindPatternPreset(std::string_view name) {
  for (const PatternPreset& p : Presets()) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

const char* SplitPatternPreset(std::string_view name) {
  const PatternPreset* preset = FindPatternPreset(name);
  return preset != nullptr ? preset->pattern : nullptr;
}

std::string SplitPatternFor(std::string_view name_or_regex) {
  const char* preset = SplitPatternPreset(name_or_regex);
  return preset != nullptr ? std::string(preset) : std::string(name_or_regex);
}

std::string PatternPresetNames(bool with_special_tokens) {
  std::vector<std::string> names;
  for (const PatternPreset& p : Presets()) {
    if (p.special_tokens.empty() != with_special_tokens) names.emplace_back(p.name);
  }
  return JoinList(names, ", ");
}

}  // namespace tokpack
