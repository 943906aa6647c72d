// Tokenizer: a loaded sentencepiece model, the one a dataset was built with
// (every tokpack dataset carries a copy as tokenizer.model). Encode() and
// Decode() are const and safe to call from many threads at once
// (sentencepiece's processor is read-only after loading).
#ifndef TOKPACK_TOKENIZER_H_
#define TOKPACK_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/manifest.h"
#include "tokpack/status.h"

namespace tokpack {

class Tokenizer {
 public:
  // Loads a sentencepiece model file; errors name the file.
  static StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& model_path);
  ~Tokenizer();

  // Token ids of `text`, exactly as SentencePieceProcessor::Encode gives them.
  Status Encode(std::string_view text, std::vector<int>* ids) const;
  // Text of `ids`.
  StatusOr<std::string> Decode(const std::vector<int>& ids) const;

  // type, vocab size, special ids and model hash (file is left empty).
  const TokenizerInfo& info() const { return info_; }

 private:
  Tokenizer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  TokenizerInfo info_;
};

}  // namespace tokpack

#endif  // TOKPACK_TOKENIZER_H_
