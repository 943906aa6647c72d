#include "tokpack/tokenizer.h"

#include <new>
#include <vector>

#include "base/chunk_hasher.h"
#include "base/file_system.h"
#include "base/quote.h"
#include "tokenizer/tokenizer_kinds.h"

namespace tokpack {
namespace {

Status OutOfMemory(std::string_view text) {
  return Status(StatusCode::kResourceExhausted,
                "out of memory tokenizing a text of " + std::to_string(text.size()) +
                    " bytes (--max-document-bytes bounds the size of a text)");
}

}  // namespace

struct Tokenizer::Impl {
  std::unique_ptr<TokenizerModel> model;
};

Tokenizer::Tokenizer() : impl_(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path,
                                                     const TokenizerOptions& o) {
  TOKPACK_ASSIGN_OR_RETURN(std::string bytes,
                           ReadSmallFile(path, kMaxTokenizerBytes, "a tokenizer file"));
  return FromBytes(bytes, path, o, /*read_config=*/true);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromBytes(const std::string& bytes,
                                                          const std::string& path,
                                                          const TokenizerOptions& o,
                                                          bool read_config) {
  const TokenizerFile file{bytes, path, o, read_config};
  for (const TokenizerKind& kind : TokenizerKinds()) {
    if (!kind.detect(bytes)) continue;
    TOKPACK_ASSIGN_OR_RETURN(LoadedTokenizer loaded, kind.load(file));
    std::unique_ptr<Tokenizer> t(new Tokenizer());
    t->impl_->model = std::move(loaded.model);
    t->info_ = std::move(loaded.info);
    t->info_.model_xxh3 = Xxh3(bytes);
    return t;
  }
  return InvalidArgumentError("'" + path + "' is not a tokenizer file tokpack reads: expected " +
                              TokenizerKindList());
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromRecorded(const std::string& bytes,
                                                             const std::string& path,
                                                             const TokenizerInfo& recorded) {
  // The hash first: nothing of an unverified file is parsed.
  if (Xxh3(bytes) != recorded.model_xxh3) {
    return DataLossError("tokenizer '" + path + "' does not match the hash its manifest records (" +
                         HashToHex(recorded.model_xxh3) + ")");
  }
  // What the manifest records beside the model (a tiktoken file's pattern
  // and special tokens) is what the options gave at build time.
  TokenizerOptions o;
  o.pattern = recorded.pattern;
  o.special_tokens = recorded.special_tokens;
  // The recorded ids are the dataset's: no tokenizer_config.json is read.
  TOKPACK_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> t,
                           FromBytes(bytes, path, o, /*read_config=*/false));
  if (!recorded.type.empty() && t->info_.type != recorded.type) {
    return DataLossError("tokenizer '" + path + "' is a " + t->info_.type +
                         " file; its manifest records " + Quoted(recorded.type));
  }
  // The ids chosen at build time (by option or config) are the dataset's.
  t->info_.bos_id = recorded.bos_id;
  t->info_.eos_id = recorded.eos_id;
  t->info_.pad_id = recorded.pad_id;
  return t;
}

Status Tokenizer::Encode(std::string_view text, std::vector<int>* ids, EncodeCounts* counts,
                         const IdSink* sink) const {
  // Encoding allocates in proportion to the text (sentencepiece many times
  // over), and an allocation that fails throws: keep it inside the core.
  try {
    return impl_->model->Encode(text, ids, counts, sink);
  } catch (const std::bad_alloc&) {
    ids->clear();
    return OutOfMemory(text);
  }
}

Status Tokenizer::EncodeWithOffsets(std::string_view text, std::vector<int>* ids,
                                    std::vector<TokenRange>* ranges, EncodeCounts* counts) const {
  try {
    return impl_->model->EncodeWithOffsets(text, ids, ranges, counts);
  } catch (const std::bad_alloc&) {
    ids->clear();
    ranges->clear();
    return OutOfMemory(text);
  }
}

StatusOr<std::string> Tokenizer::Decode(const std::vector<int>& ids) const {
  for (int id : ids) {
    if (id < 0 || id >= info_.vocab_size) {
      return OutOfRangeError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                             std::to_string(info_.vocab_size));
    }
  }
  return impl_->model->Decode(ids);
}

}  // namespace tokpack
