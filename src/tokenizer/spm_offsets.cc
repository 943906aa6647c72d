#include "tokenizer/spm_offsets.h"

// The message sentencepiece's offsets come in; the only file that sees
// protobuf (src/CMakeLists.txt gives it the generated headers).
#include <sentencepiece.pb.h>
#include <sentencepiece_processor.h>

#include <limits>
#include <string>

namespace tokpack {

Status SpmEncodeWithOffsets(const sentencepiece::SentencePieceProcessor& sp, std::string_view text,
                            std::vector<int>* ids, std::vector<TokenRange>* ranges) {
  if (text.size() > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgumentError("token offsets of a text of over 4 GiB");
  }
  sentencepiece::SentencePieceText spt;
  auto st = sp.Encode(absl::string_view(text.data(), text.size()), &spt);
  if (!st.ok()) return InternalError("sentencepiece Encode failed: " + st.ToString());
  ids->clear();
  ranges->clear();
  ids->reserve(static_cast<size_t>(spt.pieces_size()));
  ranges->reserve(static_cast<size_t>(spt.pieces_size()));
  for (const auto& piece : spt.pieces()) {
    // sentencepiece checks begin <= end <= input size; checked again, since
    // a range past the text would index the caller's flags out of bounds.
    if (piece.begin() > piece.end() || piece.end() > text.size()) {
      return InternalError("sentencepiece gave a piece the range [" +
                           std::to_string(piece.begin()) + ", " + std::to_string(piece.end()) +
                           ") in a text of " + std::to_string(text.size()) + " bytes");
    }
    ids->push_back(static_cast<int>(piece.id()));
    ranges->push_back({piece.begin(), piece.end()});
  }
  return Status::Ok();
}

}  // namespace tokpack
