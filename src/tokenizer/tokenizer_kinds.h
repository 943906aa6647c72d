// The registry of tokenizer kinds: one row per kind of file Tokenizer::Load
// reads, {name, description, detect, load}, in the table of
// tokenizer_kinds.cc. A kind is its row plus one file defining the row's two
// functions (sentencepiece_kind.cc, huggingface_kind.cc, tiktoken_kind.cc);
// Tokenizer, its errors and the CLI's help know kinds only through here.
// Thread-safe: the table is read and extended under a lock.
#ifndef TOKPACK_SRC_TOKENIZER_TOKENIZER_KINDS_H_
#define TOKPACK_SRC_TOKENIZER_TOKENIZER_KINDS_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/manifest.h"
#include "tokpack/status.h"
#include "tokpack/tokenizer.h"

namespace tokpack {

// A loaded tokenizer file: what Tokenizer forwards Encode and Decode to.
// Both are const and run on many threads at once.
class TokenizerModel {
 public:
  virtual ~TokenizerModel() = default;
  // As Tokenizer::Encode, except that `counts` may be null and running out
  // of memory may throw std::bad_alloc (Tokenizer turns it into a Status).
  virtual Status Encode(std::string_view text, std::vector<int>* ids, EncodeCounts* counts,
                        const Tokenizer::IdSink* sink) const = 0;
  // As Tokenizer::EncodeWithOffsets. The default spells the text with
  // Decode() of each id (TokenRangesFromBytes); kinds with a faster or
  // normalization-aware way override it.
  virtual Status EncodeWithOffsets(std::string_view text, std::vector<int>* ids,
                                   std::vector<TokenRange>* ranges, EncodeCounts* counts) const;
  // Ids are already checked to be below info().vocab_size.
  virtual StatusOr<std::string> Decode(const std::vector<int>& ids) const = 0;
};

// Sets *ranges to the byte range of each token of `ids` in `text`, where
// `token_bytes(i)` is the bytes token i stands for: the tokens' bytes, one
// after another, must spell `text` exactly, else FailedPrecondition naming
// the byte offset where they part and `why` (what makes the kind's tokens
// differ from the text).
Status TokenRangesFromBytes(std::string_view text, const std::vector<int>& ids,
                            const std::function<std::string_view(size_t)>& token_bytes,
                            std::vector<TokenRange>* ranges);

// What a kind's load gets: the file's bytes and what does not come from them.
struct TokenizerFile {
  std::string_view bytes;
  const std::string& path;  // Names the file in errors.
  const TokenizerOptions& options;
  // Whether files beside `path` may be read (a tokenizer.json's
  // tokenizer_config.json); false for a dataset's copy, whose ids are recorded.
  bool read_config;
};

struct LoadedTokenizer {
  std::unique_ptr<TokenizerModel> model;
  // type (the row's name), file (the copy's name in a dataset), vocab size,
  // special ids and, where options shaped the ids, pattern and special
  // tokens; model_xxh3 is filled in by Tokenizer.
  TokenizerInfo info;
};

// One row of the registry.
struct TokenizerKind {
  const char* name;  // TokenizerInfo::type, recorded in manifests: "tiktoken".
  // Named in the error for a file of no kind: "a sentencepiece .model".
  const char* description;
  // Whether `bytes` are a file of this kind, from their content alone. The
  // first row whose detect says yes loads the file.
  bool (*detect)(std::string_view bytes);
  // Errors name file.path.
  StatusOr<LoadedTokenizer> (*load)(const TokenizerFile& file);
};

// The rows, in the order they are tried.
std::vector<TokenizerKind> TokenizerKinds();

// Adds `kind` after the rows already there. For tests and kinds outside the
// core; a kind of the core is a row of the table instead.
void RegisterTokenizerKind(const TokenizerKind& kind);

// The rows' descriptions as a list: "a X, a Y or a Z".
std::string TokenizerKindList();

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_TOKENIZER_KINDS_H_
