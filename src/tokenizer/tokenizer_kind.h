// What kind of tokenizer file a byte string is, told from its content, and
// the settings a tiktoken ranks file needs from outside (split pattern,
// special tokens, BOS/EOS), with the presets of well-known encodings. Pure
// functions; no I/O.
#ifndef TOKPACK_SRC_TOKENIZER_TOKENIZER_KIND_H_
#define TOKPACK_SRC_TOKENIZER_TOKENIZER_KIND_H_

#include <string>
#include <string_view>

#include "tokenizer/bpe_tokenizer.h"
#include "tokpack/status.h"
#include "tokpack/tokenizer.h"

namespace tokpack {

enum class TokenizerKind { kUnknown, kSentencepiece, kHuggingFaceJson, kTiktoken };

// A JSON object is a tokenizer.json; lines of "base64 rank" a tiktoken file;
// a protobuf starting with field 1 (the pieces) a sentencepiece model.
TokenizerKind DetectTokenizerKind(std::string_view bytes);

struct TiktokenSetup {
  TiktokenOptions options;  // The resolved regex and every special token.
  std::string eos;          // Text of the EOS / BOS token; empty: none.
  std::string bos;
};

// Resolves --pattern (a preset name brings its regex, special tokens and
// BOS/EOS; anything else is a regex), adds --special and checks ids fit in
// int32. `path` names the file in errors.
StatusOr<TiktokenSetup> ResolveTiktokenOptions(const std::string& path,
                                               const TokenizerOptions& options);

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_TOKENIZER_KIND_H_
