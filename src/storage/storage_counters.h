// Process-wide counters of remote reads, reported in LoaderStats: chunk
// cache hits and misses, bytes fetched and the time fetches took.
#ifndef TOKPACK_SRC_STORAGE_STORAGE_COUNTERS_H_
#define TOKPACK_SRC_STORAGE_STORAGE_COUNTERS_H_

#include <atomic>
#include <cstdint>

namespace tokpack {

struct StorageCounters {
  std::atomic<uint64_t> cache_hits{0};
  std::atomic<uint64_t> cache_misses{0};  // Chunks downloaded (each verified).
  std::atomic<uint64_t> bytes_fetched{0};
  std::atomic<uint64_t> fetch_micros{0};  // Summed over fetching threads.

  static StorageCounters& Global() {
    static StorageCounters counters;
    return counters;
  }
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_STORAGE_COUNTERS_H_
