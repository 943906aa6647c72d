#include "reader/packed_view.h"

#include <algorithm>
#include <set>
#include <utility>

namespace tokpack {
namespace {

// Interim best-fit decreasing over one shard's pieces, until the plan
// helper's packing_plan.h lands (it replaces this function).
PackedView::ShardBins PackShard(const std::vector<uint64_t>& lengths, uint64_t L, uint64_t cap) {
  struct P {
    uint64_t len, doc, piece;
  };
  std::vector<P> pieces;
  for (uint64_t d = 0; d < lengths.size(); ++d) {
    for (uint64_t p = 0; p * L < lengths[d]; ++p) {
      pieces.push_back({std::min(L, lengths[d] - p * L), d, p});
    }
  }
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const P& a, const P& b) { return a.len > b.len; });
  std::vector<std::vector<PackedView::ShardBins::Item>> bins;
  std::vector<uint64_t> room;
  std::set<std::pair<uint64_t, uint64_t>> open;  // (room, bin)
  for (const P& p : pieces) {
    auto it = open.lower_bound({p.len, 0});
    uint64_t b = 0;
    if (it == open.end()) {
      b = bins.size();
      bins.emplace_back();
      room.push_back(L);
    } else {
      b = it->second;
      open.erase(it);
    }
    bins[b].push_back({p.doc, p.piece});
    room[b] -= p.len;
    if (room[b] > 0 && (cap == 0 || bins[b].size() < cap)) open.insert({room[b], b});
  }
  PackedView::ShardBins out;
  for (const auto& bin : bins) {
    out.items.insert(out.items.end(), bin.begin(), bin.end());
    out.bin_offsets.push_back(out.items.size());
  }
  return out;
}

}  // namespace

StatusOr<std::shared_ptr<const PackedView>> PackedView::Open(std::shared_ptr<Dataset> dataset,
                                                             const LoaderOptions& o,
                                                             bool announce) {
  (void)announce;
  std::shared_ptr<PackedView> v(new PackedView());
  const Dataset& d = *dataset;
  const TokenizerInfo& t = d.manifest().tokenizer;
  v->pad_id_ = t.pad_id >= 0 ? t.pad_id : t.eos_id >= 0 ? t.eos_id : 0;
  v->seq_len_ = static_cast<uint64_t>(o.seq_len);
  uint64_t doc = 0;
  for (const ShardInfo& shard : d.manifest().shards) {
    std::vector<uint64_t> lengths(shard.documents);
    for (uint64_t i = 0; i < shard.documents; ++i) {
      uint64_t offset = 0;
      TOKPACK_RETURN_IF_ERROR(d.DocumentExtent(doc + i, &offset, &lengths[i]));
    }
    v->doc_base_.push_back(doc);
    doc += shard.documents;
    v->shards_.push_back(
        PackShard(lengths, v->seq_len_, static_cast<uint64_t>(o.max_docs_per_sequence)));
    v->bin_base_.push_back(v->bin_base_.back() + v->shards_.back().bin_offsets.size() - 1);
  }
  if (v->num_bins() == 0) {
    return OutOfRangeError("packing=\"best_fit\": '" + d.path() + "' has no non-empty document");
  }
  v->dataset_ = std::move(dataset);
  return std::shared_ptr<const PackedView>(std::move(v));
}

void PackedView::Pieces(uint64_t bin, std::vector<TokenRange>* pieces) const {
  // The shard k with bin_base_[k] <= bin < bin_base_[k + 1].
  const size_t k = static_cast<size_t>(std::upper_bound(bin_base_.begin(), bin_base_.end(), bin) -
                                       bin_base_.begin() - 1);
  const ShardBins& s = shards_[k];
  const uint64_t b = bin - bin_base_[k];
  for (uint64_t j = s.bin_offsets[b]; j < s.bin_offsets[b + 1]; ++j) {
    uint64_t offset = 0, length = 0;
    // Within range: the plan's items were checked against the shard's documents.
    dataset_->DocumentExtent(doc_base_[k] + s.items[j].document, &offset, &length).IgnoreError();
    const uint64_t first = s.items[j].piece * seq_len_;
    pieces->push_back({offset + first, std::min(seq_len_, length - first)});
  }
}

void PrefetchSample(const Dataset& ds, const PackedView* view, uint64_t sample, uint64_t L,
                    int64_t step, const std::shared_ptr<ReadStats>& stats,
                    std::vector<TokenRange>* scratch) {
  if (view == nullptr) {
    ds.Prefetch(sample * L, L + 1, step, stats);
    return;
  }
  scratch->clear();
  view->Pieces(sample, scratch);
  for (const TokenRange& p : *scratch) ds.Prefetch(p.begin, p.length, step, stats);
}

StatusOr<std::vector<std::shared_ptr<const PackedView>>> OpenPackedViews(
    const std::vector<Loader::Source>& sources, const LoaderOptions& o) {
  std::vector<std::shared_ptr<const PackedView>> views;
  if (o.packing != Packing::kBestFit) return views;
  for (const Loader::Source& s : sources) {
    TOKPACK_ASSIGN_OR_RETURN(std::shared_ptr<const PackedView> v,
                             PackedView::Open(s.dataset, o, o.rank == 0));
    views.push_back(std::move(v));
  }
  return views;
}

}  // namespace tokpack
