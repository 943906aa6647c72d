// PackedView: a source's samples under packing="best_fit" (docs/reader.md,
// "The packed view"): sample i is bin i of the dataset's packing plan
// (packing_plan.h: the bins of shard 0, then of shard 1, ...), a list of
// pieces of documents whose lengths add up to at most L; the rest of the row
// is padding with pad_id(). The loader's side of the plan: it opens the plan
// (loading or building it, plan_file.h), knows the pad id and tells remote
// storage which pieces come next. Immutable; thread-safe.
#ifndef TOKPACK_SRC_READER_PACKED_VIEW_H_
#define TOKPACK_SRC_READER_PACKED_VIEW_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "reader/packing_plan.h"
#include "tokpack/dataset.h"
#include "tokpack/loader.h"
#include "tokpack/status.h"

namespace tokpack {

using TokenRange = PackingPlan::Range;

class PackedView {
 public:
  // The plan of `dataset` for o.seq_len and o.max_docs_per_sequence, loaded
  // or built where plan_file.h says (the cache: the dataset's cache_dir());
  // `announce`: a line on stderr when it waits for another process or
  // builds. OutOfRange when the dataset has no non-empty document.
  static StatusOr<std::shared_ptr<const PackedView>> Open(const Dataset& dataset,
                                                          const LoaderOptions& o, bool announce);

  uint64_t num_bins() const { return plan_->num_bins(); }
  // Replaces *pieces with bin `bin`'s pieces (bin < num_bins()), in row order.
  void Pieces(uint64_t bin, std::vector<TokenRange>* pieces) const { plan_->Bin(bin, pieces); }
  // PackingPlan::Bins: the pieces of n bins, their lookups overlapped.
  void Bins(const uint64_t* bins, size_t n, std::vector<TokenRange>* pieces,
            std::vector<size_t>* ends) const {
    plan_->Bins(bins, n, pieces, ends);
  }
  // What pads a row to L: the tokenizer's pad id, else its eos id, else 0.
  int64_t pad_id() const { return pad_id_; }

 private:
  PackedView(std::shared_ptr<const PackingPlan> plan, int64_t pad_id)
      : plan_(std::move(plan)), pad_id_(pad_id) {}

  std::shared_ptr<const PackingPlan> plan_;
  int64_t pad_id_;
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
