#include "reader/packed_view.h"

#include <cstdio>
#include <utility>

#include "reader/plan_file.h"

namespace tokpack {
namespace {

// Progress of a plan being made, for rank 0: one line when it starts to
// wait or build, one per stored plan it cannot use, one when built.
PlanProgressFn Announce(const Dataset& d) {
  return [path = d.path()](const PlanProgress& p) {
    switch (p.stage) {
      case PlanProgress::Stage::kWaiting:
        std::fprintf(stderr, "tokpack: waiting for another process's packing plan of %s (%s)\n",
                     path.c_str(), p.dir.c_str());
        break;
      case PlanProgress::Stage::kRebuilding:
        std::fprintf(stderr, "tokpack: rebuilding a packing plan of %s: %s\n", path.c_str(),
                     p.detail.c_str());
        break;
      case PlanProgress::Stage::kUnwritable:
        std::fprintf(stderr,
                     "tokpack: cannot store packing plans of %s in %s (%s); trying the next "
                     "place\n",
                     path.c_str(), p.dir.c_str(), p.detail.c_str());
        break;
      case PlanProgress::Stage::kBuilding:
        if (p.shards_built == 1 || p.shards_built == p.shards_to_build) {
          std::fprintf(stderr, "tokpack: packing plan of %s: %zu of %zu shards planned (in %s)\n",
                       path.c_str(), p.shards_built, p.shards_to_build, p.dir.c_str());
        }
        break;
    }
  };
}

}  // namespace

StatusOr<std::shared_ptr<const PackedView>> PackedView::Open(const Dataset& dataset,
                                                             const LoaderOptions& o,
                                                             bool announce) {
  StorageOptions storage;
  storage.cache_dir = dataset.cache_dir();
  const PackingSettings settings{o.seq_len, o.max_docs_per_sequence};
  TOKPACK_ASSIGN_OR_RETURN(std::shared_ptr<const PackingPlan> plan,
                           LoadOrBuildPackingPlan(dataset, settings, storage, 0,
                                                  announce ? Announce(dataset) : PlanProgressFn()));
  if (plan->num_bins() == 0) {
    return OutOfRangeError("packing=\"best_fit\": '" + dataset.path() +
                           "' has no non-empty document");
  }
  return std::shared_ptr<const PackedView>(new PackedView(std::move(plan), dataset.pad_token()));
}

void PrefetchSample(const Dataset& ds, const PackedView* view, uint64_t sample, uint64_t L,
                    int64_t step, const std::shared_ptr<ReadStats>& stats,
                    std::vector<TokenRange>* scratch) {
  if (view == nullptr) {
    ds.Prefetch(sample * L, L + 1, step, stats);
    return;
  }
  view->Pieces(sample, scratch);
  for (const TokenRange& p : *scratch) ds.Prefetch(p.begin, p.length, step, stats);
}

StatusOr<std::vector<std::shared_ptr<const PackedView>>> OpenPackedViews(
    const std::vector<Loader::Source>& sources, const LoaderOptions& o) {
  std::vector<std::shared_ptr<const PackedView>> views;
  if (o.packing != Packing::kBestFit) return views;
  for (const Loader::Source& s : sources) {
    TOKPACK_ASSIGN_OR_RETURN(std::shared_ptr<const PackedView> v,
                             PackedView::Open(*s.dataset, o, o.rank == 0));
    views.push_back(std::move(v));
  }
  return views;
}

}  // namespace tokpack
