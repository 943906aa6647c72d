#include "tokenizer/tokenizer_kind.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "base/quote.h"
#include "tokenizer/regex.h"

namespace tokpack {

TokenizerKind DetectTokenizerKind(std::string_view bytes) {
  size_t i = bytes.find_first_not_of(" \t\r\n");
  if (i != std::string_view::npos && bytes[i] == '{') return TokenizerKind::kHuggingFaceJson;
  // tiktoken's load_tiktoken_bpe reads `line.split()` for each non-empty line
  // of contents.splitlines(): blank lines are skipped and a CRLF line's '\r'
  // dropped, so the first line with content decides. A sentencepiece model
  // starts with '\n' (its tag 0x0a) too, but its next line is a varint
  // length, never "base64 rank", so it still falls through to the check below.
  std::string_view line;
  for (size_t pos = 0; pos < bytes.size() && line.empty();) {
    size_t eol = bytes.find('\n', pos);
    if (eol == std::string_view::npos) eol = bytes.size();
    line = bytes.substr(pos, eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = eol + 1;
  }
  const size_t space = line.find(' ');
  auto all_of = [](std::string_view s, std::string_view set) {
    return !s.empty() && s.find_first_not_of(set) == std::string_view::npos;
  };
  if (space != std::string_view::npos &&
      all_of(line.substr(0, space),
             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") &&
      all_of(line.substr(space + 1), "0123456789")) {
    return TokenizerKind::kTiktoken;
  }
  // ModelProto's first field is `repeated SentencePiece pieces = 1` (tag 0x0a).
  if (!bytes.empty() && bytes[0] == '\x0a') return TokenizerKind::kSentencepiece;
  return TokenizerKind::kUnknown;
}

namespace {

struct Preset {
  const char* name;
  std::initializer_list<std::pair<const char*, int>> specials;
  const char* eos;
  const char* bos;
};

// Special tokens as tiktoken's openai_public.py and Meta's Llama 3
// tokenizer.py define them (the named ones; Llama 3's reserved tokens are
// left out: no text contains them and they change no id).
const Preset kPresets[] = {
    {"cl100k_base",
     {{"<|endoftext|>", 100257},
      {"<|fim_prefix|>", 100258},
      {"<|fim_middle|>", 100259},
      {"<|fim_suffix|>", 100260},
      {"<|endofprompt|>", 100276}},
     "<|endoftext|>",
     ""},
    {"o200k_base", {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}}, "<|endoftext|>", ""},
    {"llama3",
     {{"<|begin_of_text|>", 128000},
      {"<|end_of_text|>", 128001},
      {"<|start_header_id|>", 128006},
      {"<|end_header_id|>", 128007},
      {"<|eot_id|>", 128009}},
     "<|end_of_text|>",
     "<|begin_of_text|>"},
    // Qwen's qwen.tiktoken (Qwen 1 to 3): the three named tokens after the ranks.
    {"qwen2",
     {{"<|endoftext|>", 151643}, {"<|im_start|>", 151644}, {"<|im_end|>", 151645}},
     "<|endoftext|>",
     ""},
};

}  // namespace

StatusOr<TiktokenSetup> ResolveTiktokenOptions(const std::string& path, const TokenizerOptions& o) {
  if (o.pattern.empty()) {
    return InvalidArgumentError(
        "tokenizer '" + path +
        "' is a tiktoken ranks file, which does not carry its split pattern: give one "
        "(--pattern / pattern=) as a preset name (cl100k_base, o200k_base, llama3, qwen2) or a "
        "regex");
  }
  TiktokenSetup setup;
  setup.options.pattern = SplitPatternFor(o.pattern);
  for (const Preset& p : kPresets) {
    if (o.pattern != p.name) continue;
    for (const auto& [text, id] : p.specials) setup.options.special_tokens.emplace_back(text, id);
    setup.eos = p.eos;
    setup.bos = p.bos;
  }
  for (const auto& [text, id] : o.special_tokens) {
    if (id < 0 || id > INT32_MAX) {
      return InvalidArgumentError("special token " + Quoted(text) + " has id " +
                                  std::to_string(id) + ", outside 0.." + std::to_string(INT32_MAX));
    }
    auto& specials = setup.options.special_tokens;
    specials.erase(std::remove_if(specials.begin(), specials.end(),
                                  [&text = text](const auto& s) { return s.first == text; }),
                   specials.end());
    specials.emplace_back(text, static_cast<int>(id));
  }
  if (setup.eos.empty()) {
    for (const auto& [text, id] : setup.options.special_tokens) {
      if (text == "<|endoftext|>") setup.eos = text;
    }
  }
  if (!o.eos_token.empty()) setup.eos = o.eos_token;
  if (!o.bos_token.empty()) setup.bos = o.bos_token;
  return setup;
}

}  // namespace tokpack
