// Token byte ranges from the bytes each token stands for: the BPE kinds'
// way to EncodeWithOffsets, and the default of every kind.
#include <cstring>
#include <limits>
#include <string>

#include "tokenizer/tokenizer_kinds.h"

namespace tokpack {

Status TokenRangesFromBytes(std::string_view text, const std::vector<int>& ids,
                            const std::function<std::string_view(size_t)>& token_bytes,
                            std::vector<TokenRange>* ranges) {
  if (text.size() > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgumentError("token offsets of a text of over 4 GiB");
  }
  ranges->clear();
  ranges->reserve(ids.size());
  size_t at = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string_view bytes = token_bytes(i);
    // A token that does not spell the text where it stands: the tokenizer
    // changed the text (a normalizer, a prefix space), so the bytes it
    // encoded are not the caller's and no range would be right.
    if (bytes.size() > text.size() - at ||
        std::memcmp(bytes.data(), text.data() + at, bytes.size()) != 0) {
      size_t common = 0;
      while (common < bytes.size() && at + common < text.size() &&
             bytes[common] == text[at + common]) {
        ++common;
      }
      return FailedPreconditionError(
          "token offsets: the tokens do not spell the text at byte " + std::to_string(at + common) +
          " (this tokenizer changes the text it encodes: a normalizer, a prefix space or an "
          "unknown token), so its tokens cannot be mapped onto the text's characters");
    }
    ranges->push_back({static_cast<uint32_t>(at), static_cast<uint32_t>(at + bytes.size())});
    at += bytes.size();
  }
  if (at != text.size()) {
    return FailedPreconditionError(
        "token offsets: the tokens spell only the first " + std::to_string(at) + " of the text's " +
        std::to_string(text.size()) +
        " bytes (this tokenizer drops text it cannot encode), so its tokens cannot be mapped "
        "onto the text's characters");
  }
  return Status::Ok();
}

Status TokenizerModel::EncodeWithOffsets(std::string_view text, std::vector<int>* ids,
                                         std::vector<TokenRange>* ranges,
                                         EncodeCounts* counts) const {
  TOKPACK_RETURN_IF_ERROR(Encode(text, ids, counts, nullptr));
  std::vector<std::string> spelled(ids->size());
  for (size_t i = 0; i < ids->size(); ++i) {
    TOKPACK_ASSIGN_OR_RETURN(spelled[i], Decode({(*ids)[i]}));
  }
  return TokenRangesFromBytes(
      text, *ids, [&](size_t i) { return std::string_view(spelled[i]); }, ranges);
}

}  // namespace tokpack
