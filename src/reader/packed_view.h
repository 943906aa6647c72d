// PackedView: a source's samples under packing="best_fit" (docs/reader.md,
// "The packed view"). Sample i is bin i of the source's packing plan: the
// bins of shard 0, then of shard 1, ... (prefix sums per shard, found in
// O(log shards)). A bin is a list of pieces, each a run of one document's
// tokens (the whole document, or for one longer than L its
// [p*L, min((p+1)*L, n)) piece p), in the plan's order; their lengths add up
// to at most L, the rest of the row is padding with pad_id().
//
// Invariant: every non-empty document of the source is covered exactly once
// by the pieces of all bins, pieces of a document in increasing order
// within a shard. Immutable; thread-safe.
#ifndef TOKPACK_SRC_READER_PACKED_VIEW_H_
#define TOKPACK_SRC_READER_PACKED_VIEW_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "tokpack/dataset.h"
#include "tokpack/loader.h"
#include "tokpack/status.h"

namespace tokpack {

// A piece: tokens [begin, begin + length) of the source's stream.
struct TokenRange {
  uint64_t begin = 0;
  uint64_t length = 0;
};

class PackedView {
 public:
  // The plan of `dataset` for o.seq_len and o.max_docs_per_sequence, loaded
  // or built (and stored) as packing_plan.h says; `announce`: progress on
  // stderr while building. OutOfRange when the dataset has no non-empty
  // document.
  static StatusOr<std::shared_ptr<const PackedView>> Open(std::shared_ptr<Dataset> dataset,
                                                          const LoaderOptions& o, bool announce);

  uint64_t num_bins() const { return bin_base_.back(); }
  // Appends the pieces of bin `bin` < num_bins() to *pieces, in row order.
  void Pieces(uint64_t bin, std::vector<TokenRange>* pieces) const;
  // What pads a row to L: the tokenizer's pad id, else its eos id, else 0.
  int64_t pad_id() const { return pad_id_; }

  // One shard's plan: bin b holds items [bin_offsets[b], bin_offsets[b+1]).
  struct ShardBins {
    struct Item {
      uint64_t document = 0;  // Index in the shard (of a split: in its range).
      uint64_t piece = 0;     // Tokens [piece * L, ...) of the document.
    };
    std::vector<uint64_t> bin_offsets{0};
    std::vector<Item> items;
  };

 private:
  PackedView() = default;

  std::shared_ptr<Dataset> dataset_;
  uint64_t seq_len_ = 0;
  int64_t pad_id_ = 0;
  std::vector<ShardBins> shards_;
  std::vector<uint64_t> bin_base_{0};  // Prefix sums of the shards' bins.
  std::vector<uint64_t> doc_base_;     // The source's index of each shard's first document.
};

// Tells `ds` (Dataset::Prefetch) that sample `sample` is read at step
// `step`: its window of L + 1 tokens, or with a `view` its bin's pieces.
// `scratch` is the caller's, reused.
void PrefetchSample(const Dataset& ds, const PackedView* view, uint64_t sample, uint64_t L,
                    int64_t step, const std::shared_ptr<ReadStats>& stats,
                    std::vector<TokenRange>* scratch);

// One view per source with packing="best_fit" (rank 0 announces builds),
// else an empty vector.
StatusOr<std::vector<std::shared_ptr<const PackedView>>> OpenPackedViews(
    const std::vector<Loader::Source>& sources, const LoaderOptions& o);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_PACKED_VIEW_H_
