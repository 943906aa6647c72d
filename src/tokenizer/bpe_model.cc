#include "tokenizer/bpe_model.h"

#include <utility>

#include "base/quote.h"

namespace tokpack {
namespace {

class BpeModel : public TokenizerModel {
 public:
  explicit BpeModel(std::unique_ptr<BpeTokenizer> bpe) : bpe_(std::move(bpe)) {}

  Status Encode(std::string_view text, std::vector<int>* ids, EncodeCounts* counts,
                const Tokenizer::IdSink* sink) const override {
    BpeEncodeStats stats;
    TOKPACK_RETURN_IF_ERROR(bpe_->Encode(text, ids, counts ? &stats : nullptr, sink));
    if (counts) {
      counts->unknown = stats.unk_tokens + stats.dropped_chars;
      counts->byte_fallback = stats.byte_fallback_tokens;
      counts->cache_lookups = stats.cache_lookups;
      counts->cache_hits = stats.cache_hits;
    }
    return Status::Ok();
  }

  // Byte-level BPE spells its input exactly, token after token, unless a
  // normalizer or prefix space changed it; TokenRangesFromBytes checks that.
  Status EncodeWithOffsets(std::string_view text, std::vector<int>* ids,
                           std::vector<TokenRange>* ranges, EncodeCounts* counts) const override {
    TOKPACK_RETURN_IF_ERROR(Encode(text, ids, counts, nullptr));
    return TokenRangesFromBytes(
        text, *ids, [&](size_t i) { return bpe_->TokenBytes((*ids)[i]); }, ranges);
  }

  StatusOr<std::string> Decode(const std::vector<int>& ids) const override {
    return bpe_->Decode(ids);
  }

 private:
  std::unique_ptr<BpeTokenizer> bpe_;
};

}  // namespace

std::unique_ptr<TokenizerModel> MakeBpeModel(std::unique_ptr<BpeTokenizer> bpe) {
  return std::make_unique<BpeModel>(std::move(bpe));
}

StatusOr<int64_t> SpecialTokenId(const BpeTokenizer& bpe, const std::string& path,
                                 const std::string& chosen, const char* what,
                                 std::initializer_list<const char*> well_known) {
  if (chosen.empty()) {
    for (const char* name : well_known) {
      if (int id = bpe.TokenId(name); id >= 0) return int64_t{id};
    }
    return int64_t{-1};
  }
  const int id = bpe.TokenId(chosen);
  if (id < 0) {
    return InvalidArgumentError("tokenizer '" + path + "' has no token " + Quoted(chosen) +
                                " to use as " + what);
  }
  return int64_t{id};
}

}  // namespace tokpack
