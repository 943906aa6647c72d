// ShufflePlan: a loader's sample orders, one per source, with shuffle="auto"
// and window_chunks=0 resolved from its sources. Remote data whose shards
// outgrow the chunk cache gets "window" (a full shuffle would fetch a chunk
// per sample once the cache misses), else "full"; a derived window takes
// 3/8 of the cache, so the window being read and the one being fetched
// ahead both fit with a quarter of the cache to spare (a step that straddles
// two windows, chunks a process has stopped pinning). Pure: it reads the datasets' sizes and
// settings, prints nothing and fetches nothing. The plan is a value; its orders are immutable.
#ifndef TOKPACK_SRC_READER_SHUFFLE_PLAN_H_
#define TOKPACK_SRC_READER_SHUFFLE_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reader/packed_view.h"
#include "reader/sample_order.h"
#include "tokpack/loader.h"

namespace tokpack {

struct ShufflePlan {
  // Without a remote cache limit to size it by: 64 chunks (256 MiB of the
  // default 4 MiB chunks) of page cache.
  static constexpr int64_t kLocalWindowChunks = 64;

  // shuffle and window_chunks resolved; document_boundaries on with
  // packing="best_fit".
  LoaderOptions options;
  std::vector<SampleOrder> orders;  // Per source, in order.
  // packing="best_fit": per source, its bins are its samples; else empty.
  std::vector<std::shared_ptr<const PackedView>> views;
  // One line for the user (no newline), or empty: why auto chose "window",
  // or a warning that "full" on remote data over its cache limit fetches
  // many bytes per byte served.
  std::string notice;
};

// OutOfRange naming the dataset when seq_len leaves a source no sample (in
// window mode: none wholly inside one fetch unit). `views`: OpenPackedViews'
// (one per source with packing="best_fit"); auto then resolves to "full".
StatusOr<ShufflePlan> PlanShuffle(const std::vector<Loader::Source>& sources,
                                  const LoaderOptions& options,
                                  std::vector<std::shared_ptr<const PackedView>> views = {});

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_SHUFFLE_PLAN_H_
