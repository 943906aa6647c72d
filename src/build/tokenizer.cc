#include "tokpack/tokenizer.h"

#include <sentencepiece_processor.h>

#include "common/chunk_hasher.h"
#include "io/file_system.h"

namespace tokpack {

struct Tokenizer::Impl {
  sentencepiece::SentencePieceProcessor sp;
};

Tokenizer::Tokenizer() : impl_(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& model_path) {
  TOKPACK_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(model_path));
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  auto st = t->impl_->sp.LoadFromSerializedProto(bytes);
  if (!st.ok()) {
    return InvalidArgumentError("'" + model_path + "' is not a sentencepiece model (" +
                                st.ToString() + ")");
  }
  const auto& sp = t->impl_->sp;
  t->info_.type = "sentencepiece";
  t->info_.model_xxh3 = Xxh3(bytes);
  t->info_.vocab_size = sp.GetPieceSize();
  t->info_.bos_id = sp.bos_id();
  t->info_.eos_id = sp.eos_id();
  t->info_.pad_id = sp.pad_id();
  t->info_.unk_id = sp.unk_id();
  return t;
}

Status Tokenizer::Encode(std::string_view text, std::vector<int>* ids) const {
  auto st = impl_->sp.Encode(text, ids);
  if (!st.ok()) return InternalError("sentencepiece Encode failed: " + st.ToString());
  return Status::Ok();
}

StatusOr<std::string> Tokenizer::Decode(const std::vector<int>& ids) const {
  for (int id : ids) {
    if (id < 0 || id >= info_.vocab_size) {
      return OutOfRangeError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                             std::to_string(info_.vocab_size));
    }
  }
  std::string text;
  auto st = impl_->sp.Decode(ids, &text);
  if (!st.ok()) return InternalError("sentencepiece Decode failed: " + st.ToString());
  return text;
}

}  // namespace tokpack
