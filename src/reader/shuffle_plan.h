// ShufflePlan: a loader's sample orders, one per source, with shuffle="auto"
// and window_chunks=0 resolved from its sources. Every rank of a job must
// resolve the same order without talking to the others, so the resolution
// reads only the datasets (their sizes, chunk sizes, whether they are remote)
// and fixed constants, never a node's settings such as its cache limit:
// remote data larger than kAutoWindowBytes gets "window" (a full shuffle would
// fetch a chunk per sample once a cache of the default size misses), else
// "full"; a derived remote window is kRemoteWindowBytes of chunks. A node's
// cache only shapes the notice (a warning naming the setting to change when it
// holds fewer than two windows, or when a full shuffle outgrows it). Pure: it
// reads the datasets' sizes and settings, prints nothing and fetches nothing.
// The plan is a value; its orders are immutable.
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
  // Local data only: 64 chunks (256 MiB of the default 4 MiB chunks) of page
  // cache.
  static constexpr int64_t kLocalWindowChunks = 64;
  // With a remote source: windows of this many bytes of chunks (one chunk of
  // each remote source per unit of the sum), 3/8 of the default cache limit
  // (StorageOptions::cache_bytes, 64 GiB), so on a node with the default cache
  // the window being read and the one fetched ahead fit with a quarter to spare.
  static constexpr uint64_t kRemoteWindowBytes = uint64_t{24} << 30;
  // shuffle="auto" picks "window" for remote shards larger than this: the
  // default cache limit, past which a full shuffle's reads mostly miss.
  static constexpr uint64_t kAutoWindowBytes = uint64_t{64} << 30;

  // shuffle and window_chunks resolved; document_boundaries on with
  // packing="best_fit".
  LoaderOptions options;
  std::vector<SampleOrder> orders;  // Per source, in order.
  // packing="best_fit": per source, its bins are its samples; else empty.
  std::vector<std::shared_ptr<const PackedView>> views;
  // Lines for the user (no trailing newline), or empty: why auto chose
  // "window", a warning that this node's cache holds fewer than two windows,
  // or that "full" on remote data over its cache limit fetches many bytes per
  // byte served.
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
