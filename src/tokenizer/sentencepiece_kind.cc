// The tokenizer kind "sentencepiece": a sentencepiece .model (a ModelProto),
// encoded word by word through a cache where the model allows it
// (spm_word_encoder.h), else by the sentencepiece library on whole texts.
#include <sentencepiece_processor.h>

#include <cstdint>
#include <utility>

#include "base/quote.h"
#include "tokenizer/spm_offsets.h"
#include "tokenizer/spm_word_encoder.h"
#include "tokenizer/tokenizer_kinds.h"

namespace tokpack {
namespace {

class SentencepieceModel : public TokenizerModel {
 public:
  // What each id is, for EncodeCounts: looked up once at load rather than
  // asked of the model per token on the encoding hot path.
  enum PieceKind : uint8_t { kNormal, kUnknown, kByte };

  Status Load(const TokenizerFile& file, TokenizerInfo* info);

  Status Encode(std::string_view text, std::vector<int>* ids, EncodeCounts* counts,
                const Tokenizer::IdSink* sink) const override;

  // The whole text through the processor, whose alignment maps the
  // normalized text back (the word cache keeps no offsets); the ids are
  // those Encode() gives, which equals the processor's.
  Status EncodeWithOffsets(std::string_view text, std::vector<int>* ids,
                           std::vector<TokenRange>* ranges, EncodeCounts* counts) const override {
    TOKPACK_RETURN_IF_ERROR(SpmEncodeWithOffsets(sp_, text, ids, ranges));
    if (counts) Count(*ids, counts);
    return Status::Ok();
  }

  StatusOr<std::string> Decode(const std::vector<int>& ids) const override {
    std::string text;
    auto st = sp_.Decode(ids, &text);
    if (!st.ok()) return InternalError("sentencepiece Decode failed: " + st.ToString());
    return text;
  }

 private:
  void Count(const std::vector<int>& ids, EncodeCounts* counts) const {
    *counts = EncodeCounts();
    for (int id : ids) {
      const PieceKind kind = kinds_[static_cast<size_t>(id)];
      counts->unknown += kind == kUnknown;
      counts->byte_fallback += kind == kByte;
    }
  }

  sentencepiece::SentencePieceProcessor sp_;
  // Encodes sp_'s texts word by word through a cache; null where the model's
  // words cannot be encoded apart exactly (then sp_ encodes whole texts).
  std::unique_ptr<SpmWordEncoder> words_;
  std::vector<PieceKind> kinds_;
};

Status SentencepieceModel::Load(const TokenizerFile& file, TokenizerInfo* info) {
  const TokenizerOptions& o = file.options;
  // Abseil's string_view is its own class in Debian's build, not std's.
  auto st = sp_.LoadFromSerializedProto(absl::string_view(file.bytes.data(), file.bytes.size()));
  if (!st.ok()) {
    return InvalidArgumentError("'" + file.path + "' is not a sentencepiece model (" +
                                st.ToString() + ")");
  }
  if (!o.pattern.empty() || !o.special_tokens.empty()) {
    return InvalidArgumentError("tokenizer '" + file.path +
                                "' is a sentencepiece model: a split pattern and special "
                                "tokens apply to tiktoken files only");
  }
  info->type = "sentencepiece";
  info->file = "tokenizer.model";
  info->vocab_size = sp_.GetPieceSize();
  info->bos_id = sp_.bos_id();
  info->eos_id = sp_.eos_id();
  info->pad_id = sp_.pad_id();
  info->unk_id = sp_.unk_id();
  for (auto [name, id] : {std::pair{&o.eos_token, &info->eos_id}, {&o.bos_token, &info->bos_id}}) {
    if (name->empty()) continue;
    *id = sp_.PieceToId(*name);
    if (*id == sp_.unk_id() && *name != sp_.IdToPiece(sp_.unk_id())) {
      return InvalidArgumentError("tokenizer '" + file.path + "' has no piece " + Quoted(*name));
    }
  }
  TOKPACK_ASSIGN_OR_RETURN(words_, SpmWordEncoder::Create(&sp_, file.bytes));
  for (int id = 0; id < sp_.GetPieceSize(); ++id) {
    kinds_.push_back(sp_.IsUnknown(id) ? kUnknown : sp_.IsByte(id) ? kByte : kNormal);
  }
  return Status::Ok();
}

Status SentencepieceModel::Encode(std::string_view text, std::vector<int>* ids,
                                  EncodeCounts* counts, const Tokenizer::IdSink* sink) const {
  if (words_) {
    TOKPACK_RETURN_IF_ERROR(words_->Encode(text, ids));
  } else {
    auto st = sp_.Encode(absl::string_view(text.data(), text.size()), ids);
    if (!st.ok()) return InternalError("sentencepiece Encode failed: " + st.ToString());
  }
  if (counts) Count(*ids, counts);
  if (sink && !ids->empty()) {
    (*sink)(ids->data(), ids->size());
    ids->clear();
  }
  return Status::Ok();
}

}  // namespace

// ModelProto's first field is `repeated SentencePiece pieces = 1` (tag 0x0a).
bool IsSentencepieceModel(std::string_view bytes) { return !bytes.empty() && bytes[0] == '\x0a'; }

StatusOr<LoadedTokenizer> LoadSentencepieceModel(const TokenizerFile& file) {
  auto model = std::make_unique<SentencepieceModel>();
  LoadedTokenizer t;
  TOKPACK_RETURN_IF_ERROR(model->Load(file, &t.info));
  t.model = std::move(model);
  return t;
}

}  // namespace tokpack
