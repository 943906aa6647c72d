// A Dataset's removed documents (removed.json, docs/format.md 17): the list
// of whole-dataset document indices becomes, per shard, the documents' .idx
// entries and token ranges, in the .bin's own coordinates, so that a split's
// segments, which share their shard's files, share them too. Reads then
// blank those ranges (dataset_impl.h): the pad token, and no loss.
#include <algorithm>
#include <string>

#include "format/removed_list.h"
#include "reader/dataset_impl.h"

namespace tokpack {

Status Dataset::Impl::ApplyRemovals(std::string_view text, const std::string& source) {
  const uint64_t documents = doc_ends.empty() ? 0 : doc_ends.back();
  TOKPACK_ASSIGN_OR_RETURN(const std::vector<uint64_t> removed,
                           ParseRemovedListFor(text, source, fingerprint, documents));
  const uint64_t item = TokenDtypeSize(manifest.dtype);
  std::vector<ShardRemovals> per_shard(shards.size());
  for (const uint64_t d : removed) {
    const size_t k = ShardOfDocument(d);
    const Shard& s = shards[k];
    const uint64_t entry = d - s.first_document;
    ShardRemovals& r = per_shard[k];
    r.entries.push_back(entry);
    const uint64_t first = static_cast<uint64_t>(s.view.pointer(entry)) / item;
    const uint64_t end = first + static_cast<uint64_t>(s.view.length(entry));
    if (first == end) continue;  // An empty document has no tokens to blank.
    if (!r.tokens.empty() && r.tokens.back().second == first) {
      r.tokens.back().second = end;
    } else {
      r.tokens.emplace_back(first, end);
    }
  }
  for (size_t k = 0; k < shards.size(); ++k) {
    if (!per_shard[k].entries.empty()) {
      shards[k].removed = std::make_shared<const ShardRemovals>(std::move(per_shard[k]));
    }
  }
  CountRemovals();
  return Status::Ok();
}

void Dataset::Impl::CountRemovals() {
  num_removed = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    Shard& s = shards[k];
    if (!s.removed) continue;
    const std::vector<uint64_t>& e = s.removed->entries;
    const uint64_t end = s.first_entry + (doc_ends[k] - s.first_document);
    const auto n = std::lower_bound(e.begin(), e.end(), end) -
                   std::lower_bound(e.begin(), e.end(), s.first_entry);
    if (n == 0) s.removed.reset();  // Reads of this segment skip the lookup.
    num_removed += static_cast<uint64_t>(n);
  }
}

bool Dataset::Impl::IsRemoved(size_t k, uint64_t entry) const {
  const Shard& s = shards[k];
  return s.removed &&
         std::binary_search(s.removed->entries.begin(), s.removed->entries.end(), entry);
}

uint64_t Dataset::num_removed() const { return impl_->num_removed; }

bool Dataset::is_removed(uint64_t i) const {
  const Impl& d = *impl_;
  if (d.num_removed == 0 || i >= num_documents()) return false;
  const size_t k = d.ShardOfDocument(i);
  return d.IsRemoved(k, i - d.shards[k].first_document + d.shards[k].first_entry);
}

int64_t Dataset::pad_token() const { return impl_->pad; }

}  // namespace tokpack
