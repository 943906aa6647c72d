// The tokenizer kind "tiktoken": a tiktoken ranks file ("base64 rank" lines),
// which does not carry its split pattern or special tokens: they come from
// TokenizerOptions, by regex or by a preset's name (pattern_presets.h).
#include <algorithm>
#include <cstdint>
#include <utility>

#include "base/quote.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/pattern_presets.h"
#include "tokenizer/tokenizer_kinds.h"

namespace tokpack {
namespace {

struct TiktokenSetup {
  TiktokenOptions options;  // The resolved regex and every special token.
  std::string eos;          // Text of the EOS / BOS token; empty: none.
  std::string bos;
};

// Resolves --pattern (a preset name brings its regex, special tokens and
// BOS/EOS; anything else is a regex), adds --special and checks ids fit in
// int32. `path` names the file in errors.
StatusOr<TiktokenSetup> ResolveTiktokenOptions(const std::string& path, const TokenizerOptions& o) {
  if (o.pattern.empty()) {
    return InvalidArgumentError(
        "tokenizer '" + path +
        "' is a tiktoken ranks file, which does not carry its split pattern: give one "
        "(--pattern / pattern=) as a preset name (" +
        PatternPresetNames(/*with_special_tokens=*/true) + ") or a regex");
  }
  TiktokenSetup setup;
  setup.options.pattern = SplitPatternFor(o.pattern);
  if (const PatternPreset* p = FindPatternPreset(o.pattern)) {
    for (const auto& [text, id] : p->special_tokens) {
      setup.options.special_tokens.emplace_back(text, id);
    }
    setup.eos = p->eos;
    setup.bos = p->bos;
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

}  // namespace

// tiktoken's load_tiktoken_bpe reads `line.split()` for each non-empty line
// of contents.splitlines(): blank lines are skipped and a CRLF line's '\r'
// dropped, so the first line with content decides. A sentencepiece model
// starts with '\n' (its tag 0x0a) too, but its next line is a varint length,
// never "base64 rank".
bool IsTiktokenRanks(std::string_view bytes) {
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
  return space != std::string_view::npos &&
         all_of(line.substr(0, space),
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") &&
         all_of(line.substr(space + 1), "0123456789");
}

StatusOr<LoadedTokenizer> LoadTiktokenRanks(const TokenizerFile& file) {
  TOKPACK_ASSIGN_OR_RETURN(TiktokenSetup setup, ResolveTiktokenOptions(file.path, file.options));
  TOKPACK_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> bpe,
                           BpeTokenizer::FromTiktoken(file.bytes, setup.options, file.path));
  LoadedTokenizer t;
  TokenizerInfo& info = t.info;
  info.type = "tiktoken";
  info.file = "tokenizer.tiktoken";
  info.vocab_size = bpe->vocab_size();
  info.pattern = setup.options.pattern;
  info.special_tokens.assign(setup.options.special_tokens.begin(),
                             setup.options.special_tokens.end());
  TOKPACK_ASSIGN_OR_RETURN(info.eos_id, SpecialTokenId(*bpe, file.path, setup.eos, "EOS", {}));
  TOKPACK_ASSIGN_OR_RETURN(info.bos_id, SpecialTokenId(*bpe, file.path, setup.bos, "BOS", {}));
  t.model = MakeBpeModel(std::move(bpe));
  return t;
}

}  // namespace tokpack
