#include "tokenizer/spm_model_proto.h"

#include <cstdint>
#include <cstring>

namespace tokpack {
namespace {

// sentencepiece_model.proto: ModelProto.pieces = 1, .trainer_spec = 2,
// .normalizer_spec = 3; SentencePiece.piece = 1, .score = 2, .type = 3;
// TrainerSpec.model_type = 3 (UNIGRAM = 1, BPE = 2), .byte_fallback = 35.
constexpr uint32_t kPieces = 1;
constexpr uint32_t kTrainerSpec = 2;
constexpr uint32_t kNormalizerSpec = 3;
constexpr uint32_t kPieceText = 1;
constexpr uint32_t kPieceScore = 2;
constexpr uint32_t kPieceType = 3;
constexpr uint32_t kModelType = 3;
constexpr uint32_t kByteFallback = 35;

struct Field {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  uint64_t varint = 0;       // Wire type 0.
  std::string_view payload;  // Wire type 2; the 4 bytes of wire type 5.
  std::string_view raw;      // The whole field, tag included.
};

// Reads a varint at *pos; false where it runs past the end or over 10 bytes.
bool ReadVarint(std::string_view s, size_t* pos, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *pos < s.size(); shift += 7) {
    const auto b = static_cast<uint8_t>(s[(*pos)++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) {
      *out = v;
      return true;
    }
  }
  return false;
}

// Reads the field at *pos of message `s`; false where it is malformed.
bool ReadField(std::string_view s, size_t* pos, Field* f) {
  const size_t start = *pos;
  uint64_t tag = 0;
  if (!ReadVarint(s, pos, &tag)) return false;
  f->number = static_cast<uint32_t>(tag >> 3);
  f->wire_type = static_cast<uint32_t>(tag & 7);
  switch (f->wire_type) {
    case 0:
      if (!ReadVarint(s, pos, &f->varint)) return false;
      break;
    case 1:
    case 5: {
      const size_t n = f->wire_type == 1 ? 8 : 4;
      if (s.size() - *pos < n) return false;
      f->payload = s.substr(*pos, n);
      *pos += n;
      break;
    }
    case 2: {
      uint64_t n = 0;
      if (!ReadVarint(s, pos, &n) || n > s.size() - *pos) return false;
      f->payload = s.substr(*pos, n);
      *pos += n;
      break;
    }
    default:  // Groups (3, 4) are not in sentencepiece's messages.
      return false;
  }
  f->raw = s.substr(start, *pos - start);
  return true;
}

Status Malformed() {
  return InvalidArgumentError("the sentencepiece model is not a well-formed ModelProto");
}

void AppendVarint(uint64_t v, std::string* out) {
  for (; v >= 0x80; v >>= 7) out->push_back(static_cast<char>(0x80 | (v & 0x7f)));
  out->push_back(static_cast<char>(v));
}

}  // namespace

StatusOr<SpmModel> ReadSpmModel(std::string_view model) {
  SpmModel out;
  uint64_t model_type = 1;  // UNIGRAM, the default.
  Field f, g;
  for (size_t pos = 0; pos < model.size();) {
    if (!ReadField(model, &pos, &f)) return Malformed();
    if (f.wire_type != 2) continue;
    if (f.number == kPieces) {
      SpmPiece& piece = out.pieces.emplace_back();
      for (size_t sub = 0; sub < f.payload.size();) {
        if (!ReadField(f.payload, &sub, &g)) return Malformed();
        if (g.number == kPieceText && g.wire_type == 2) piece.text = g.payload;
        if (g.number == kPieceScore && g.wire_type == 5) {
          uint32_t bits = 0;  // A fixed32 is little-endian on the wire.
          for (int i = 3; i >= 0; --i) bits = bits << 8 | static_cast<uint8_t>(g.payload[i]);
          std::memcpy(&piece.score, &bits, sizeof(float));
        }
        if (g.number == kPieceType && g.wire_type == 0 && g.varint >= 1 && g.varint <= 6) {
          piece.type = static_cast<SpmPieceType>(g.varint);
        }
      }
    } else if (f.number == kTrainerSpec) {
      // A message that occurs twice is merged: the last value of a field wins.
      for (size_t sub = 0; sub < f.payload.size();) {
        if (!ReadField(f.payload, &sub, &g)) return Malformed();
        if (g.number == kModelType && g.wire_type == 0) model_type = g.varint;
        if (g.number == kByteFallback && g.wire_type == 0) out.byte_fallback = g.varint != 0;
      }
    }
  }
  out.type = model_type == 1   ? SpmModelType::kUnigram
             : model_type == 2 ? SpmModelType::kBpe
                               : SpmModelType::kOther;
  for (size_t id = 0; id < out.pieces.size(); ++id) {
    SpmPiece& piece = out.pieces[id];
    if (out.byte_fallback && piece.text == std::string_view("\0", 1)) {
      piece.type = SpmPieceType::kUnused;
    }
    if (piece.type == SpmPieceType::kUnknown && out.unk_id < 0) out.unk_id = static_cast<int>(id);
  }
  return out;
}

StatusOr<std::string> WithIdentityNormalizer(std::string_view model) {
  std::string out;
  out.reserve(model.size() + 16);
  Field f;
  for (size_t pos = 0; pos < model.size();) {
    if (!ReadField(model, &pos, &f)) return Malformed();
    if (f.number != kNormalizerSpec) out.append(f.raw);
  }
  // NormalizerSpec: name = 1 ("identity"), add_dummy_prefix = 3,
  // remove_extra_whitespaces = 4, escape_whitespaces = 5 (all false); no
  // precompiled_charsmap (2), so no character is mapped.
  static constexpr std::string_view kIdentity("\x0a\x08identity\x18\x00\x20\x00\x28\x00", 16);
  AppendVarint(uint64_t{kNormalizerSpec} << 3 | 2, &out);
  AppendVarint(kIdentity.size(), &out);
  out.append(kIdentity);
  return out;
}

}  // namespace tokpack
