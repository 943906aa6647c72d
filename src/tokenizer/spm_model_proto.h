// What tokpack reads from or changes in a serialized sentencepiece ModelProto
// that SentencePieceProcessor's public API does not offer: the model type
// (unigram or BPE: the per-word encoder runs each its own way), the type of
// every piece (user-defined pieces score differently in unigram models), and a
// copy of the model whose normalizer leaves text as it is (to encode words that
// are already normalized). Read from the protobuf wire format directly, so
// that tokpack's sources need none of sentencepiece's generated headers. Field
// numbers are sentencepiece_model.proto's (0.2.3). Pure functions; no I/O.
#ifndef TOKPACK_SRC_TOKENIZER_SPM_MODEL_PROTO_H_
#define TOKPACK_SRC_TOKENIZER_SPM_MODEL_PROTO_H_

#include <string>
#include <string_view>
#include <vector>

#include "tokpack/status.h"

namespace tokpack {

// TrainerSpec.model_type.
enum class SpmModelType { kUnigram, kBpe, kOther };

// ModelProto.SentencePiece.Type.
enum class SpmPieceType { kNormal = 1, kUnknown, kControl, kUserDefined, kUnused, kByte };

struct SpmPiece {
  std::string_view text;  // Points into the serialized model.
  float score = 0;
  SpmPieceType type = SpmPieceType::kNormal;
};

struct SpmModel {
  SpmModelType type = SpmModelType::kUnigram;
  bool byte_fallback = false;
  int unk_id = -1;               // The UNKNOWN piece (a model has at most one).
  std::vector<SpmPiece> pieces;  // Indexed by id.
};

// The fields above of a serialized ModelProto, with the proto's defaults for
// those it leaves out. As SentencePieceProcessor loads a model with
// byte_fallback, a piece "\0" is UNUSED (sentencepiece issue 1308). An error
// where the bytes are not a well-formed message.
StatusOr<SpmModel> ReadSpmModel(std::string_view model);

// `model` with its normalizer_spec replaced by one that changes nothing: no
// character map, no dummy prefix, no removal or escaping of whitespace. Such
// a model encodes normalized text as the original model's Encode() encodes
// the text the normalizer produced (a processor normalizes, then runs the
// model on the result).
StatusOr<std::string> WithIdentityNormalizer(std::string_view model);

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_SPM_MODEL_PROTO_H_
