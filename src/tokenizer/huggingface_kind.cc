// The tokenizer kind "huggingface": a Hugging Face tokenizer.json whose model
// is BPE, with its EOS/BOS/PAD from the tokenizer_config.json beside it.
#include <simdjson.h>

#include <utility>

#include "base/file_system.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/tokenizer_kinds.h"

namespace tokpack {
namespace {

// The special tokens named by the tokenizer_config.json beside a
// tokenizer.json, as Hugging Face model repositories ship it (each a string
// or {"content": ...}). Empty where there is no such file or field; an error
// naming the file where there is one that cannot be read as a file (a FIFO,
// a device, a directory, over kMaxTokenizerConfigBytes), since the EOS a
// build appends would otherwise change silently.
struct ConfigTokens {
  std::string eos, bos, pad;
};

StatusOr<ConfigTokens> ReadConfigTokens(const std::string& tokenizer_json_path) {
  ConfigTokens tokens;
  const size_t slash = tokenizer_json_path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? std::string(".") : tokenizer_json_path.substr(0, slash);
  StatusOr<std::string> text = ReadSmallFile(JoinPath(dir, "tokenizer_config.json"),
                                             kMaxTokenizerConfigBytes, "a tokenizer_config.json");
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) return tokens;
  if (!text.ok()) {
    return text.status().WithContext("the EOS and BOS tokens of tokenizer '" + tokenizer_json_path +
                                     "'");
  }
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(*text).get(root) != simdjson::SUCCESS) return tokens;
  for (auto [field, out] : {std::pair{"eos_token", &tokens.eos},
                            {"bos_token", &tokens.bos},
                            {"pad_token", &tokens.pad}}) {
    std::string_view value;
    if (root[field].get_string().get(value) == simdjson::SUCCESS ||
        root[field]["content"].get_string().get(value) == simdjson::SUCCESS) {
      out->assign(value);
    }
  }
  return tokens;
}

}  // namespace

// A JSON object.
bool IsHuggingFaceJson(std::string_view bytes) {
  const size_t i = bytes.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && bytes[i] == '{';
}

StatusOr<LoadedTokenizer> LoadHuggingFaceJson(const TokenizerFile& file) {
  const TokenizerOptions& o = file.options;
  if (!o.pattern.empty() || !o.special_tokens.empty()) {
    return InvalidArgumentError("tokenizer '" + file.path +
                                "' is a tokenizer.json, which defines its own pre-tokenizer "
                                "and special tokens: --pattern and --special apply to "
                                "tiktoken files only");
  }
  TOKPACK_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> bpe,
                           BpeTokenizer::FromHuggingFaceJson(file.bytes, file.path));
  LoadedTokenizer t;
  TokenizerInfo& info = t.info;
  info.type = "huggingface";
  info.file = "tokenizer.json";
  info.vocab_size = bpe->vocab_size();
  info.unk_id = bpe->unk_id();
  ConfigTokens config;
  if (file.read_config) {
    TOKPACK_ASSIGN_OR_RETURN(config, ReadConfigTokens(file.path));
  }
  const std::string& eos = o.eos_token.empty() ? config.eos : o.eos_token;
  const std::string& bos = o.bos_token.empty() ? config.bos : o.bos_token;
  TOKPACK_ASSIGN_OR_RETURN(info.eos_id, SpecialTokenId(*bpe, file.path, eos, "EOS",
                                                       {"<|endoftext|>", "<|end_of_text|>", "</s>",
                                                        "<eos>", "<｜end▁of▁sentence｜>"}));
  TOKPACK_ASSIGN_OR_RETURN(info.bos_id, SpecialTokenId(*bpe, file.path, bos, "BOS",
                                                       {"<|begin_of_text|>", "<s>", "<bos>",
                                                        "<｜begin▁of▁sentence｜>"}));
  TOKPACK_ASSIGN_OR_RETURN(info.pad_id, SpecialTokenId(*bpe, file.path, config.pad, "PAD", {}));
  t.model = MakeBpeModel(std::move(bpe));
  return t;
}

}  // namespace tokpack
