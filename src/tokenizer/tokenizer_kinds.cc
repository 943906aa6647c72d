#include "tokenizer/tokenizer_kinds.h"

#include <mutex>

#include "base/quote.h"

namespace tokpack {

// Each kind's file defines its detect and load.
bool IsHuggingFaceJson(std::string_view bytes);
StatusOr<LoadedTokenizer> LoadHuggingFaceJson(const TokenizerFile& file);
bool IsTiktokenRanks(std::string_view bytes);
StatusOr<LoadedTokenizer> LoadTiktokenRanks(const TokenizerFile& file);
bool IsSentencepieceModel(std::string_view bytes);
StatusOr<LoadedTokenizer> LoadSentencepieceModel(const TokenizerFile& file);

namespace {

std::mutex registry_mutex;

// The table. Order matters where detects overlap: a sentencepiece model
// starts with '\n' (its tag 0x0a), and so may a tiktoken file with a blank
// first line, so the looser test goes last.
std::vector<TokenizerKind>& Rows() {
  static auto* rows = new std::vector<TokenizerKind>{
      {"huggingface", "a Hugging Face tokenizer.json (BPE)", IsHuggingFaceJson,
       LoadHuggingFaceJson},
      {"tiktoken", "a tiktoken ranks file (lines of base64 token and rank)", IsTiktokenRanks,
       LoadTiktokenRanks},
      {"sentencepiece", "a sentencepiece .model", IsSentencepieceModel, LoadSentencepieceModel},
  };
  return *rows;
}

}  // namespace

std::vector<TokenizerKind> TokenizerKinds() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  return Rows();
}

void RegisterTokenizerKind(const TokenizerKind& kind) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  Rows().push_back(kind);
}

std::string TokenizerKindList() {
  std::vector<std::string> descriptions;
  for (const TokenizerKind& kind : TokenizerKinds()) descriptions.emplace_back(kind.description);
  return JoinList(descriptions);
}

}  // namespace tokpack
