// PackDataset: the public face of the packing plan (reader/plan_file.h) for
// `tokpack pack` and `tokpack info --packing best_fit`.
#include <algorithm>
#include <string>

#include "reader/plan_file.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {

StatusOr<PackingInfo> PackDataset(const Dataset& dataset, int64_t seq_len,
                                  int64_t max_docs_per_sequence, const StorageOptions& storage,
                                  int threads,
                                  const std::function<void(const std::string&)>& progress) {
  const PackingSettings settings{seq_len, max_docs_per_sequence};
  uint64_t built = 0;
  const auto on_progress = [&](const PlanProgress& p) {
    if (p.stage == PlanProgress::Stage::kBuilding)
      built = std::max<uint64_t>(built, p.shards_built);
    if (!progress) return;
    switch (p.stage) {
      case PlanProgress::Stage::kWaiting:
        progress("waiting for another process building plans in " + p.dir);
        break;
      case PlanProgress::Stage::kRebuilding:
        progress("rebuilding a plan: " + p.detail);
        break;
      case PlanProgress::Stage::kUnwritable:
        progress("cannot store plans in " + p.dir + " (" + p.detail + "); trying the next place");
        break;
      case PlanProgress::Stage::kBuilding:
        // A line per tenth of the shards, not per shard (thousands of them).
        if ((p.shards_built * 10 / p.shards_to_build) ==
            ((p.shards_built - 1) * 10 / p.shards_to_build))
          break;
        progress("planned " + std::to_string(p.shards_built) + "/" +
                 std::to_string(p.shards_to_build) + " shards into " + p.dir);
        break;
    }
  };
  TOKPACK_ASSIGN_OR_RETURN(
      std::shared_ptr<const PackingPlan> plan,
      LoadOrBuildPackingPlan(dataset, settings, storage, threads, on_progress));
  const PackingCounts& c = plan->counts();
  PackingInfo info;
  info.seq_len = seq_len;
  info.max_docs_per_sequence = max_docs_per_sequence;
  info.bins = c.bins;
  info.documents = c.documents;
  info.empty_documents = c.empty_documents;
  info.truncated_documents = c.truncated_documents;
  info.pieces = c.pieces;
  info.tokens = c.tokens;
  info.padding_tokens = c.PaddingTokens(seq_len);
  info.padding_fraction = c.PaddingFraction(seq_len);
  info.mean_pieces_per_bin = c.MeanPiecesPerBin();
  info.max_pieces_per_bin = c.max_pieces_per_bin;
  info.plan_files = plan->plan_files();
  info.shards_built = built;
  return info;
}

}  // namespace tokpack
