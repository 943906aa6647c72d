// StoragePools: the prefetch threads and HTTP connections that every remote
// dataset of a process opened with the same StorageOptions values shares
// (all loaders' too), so that threads and sockets are bounded by the
// settings, not by the number of datasets: at most prefetch_threads
// prefetch threads and http_concurrency requests (and libcurl handles) per
// distinct settings. Datasets opened with other values (another cache,
// limit or credentials) get pools of their own and do not affect these.
//
// The pools live while any dataset (or other user) holds them: the
// registry keeps only weak references, and the last holder's release joins
// the prefetch threads. Keyed by process too: a forked child makes its own
// rather than use threads that did not survive the fork. Thread-safe.
#ifndef TOKPACK_SRC_STORAGE_STORAGE_POOLS_H_
#define TOKPACK_SRC_STORAGE_STORAGE_POOLS_H_

#include <memory>

#include "storage/connection_pool.h"
#include "storage/prefetcher.h"
#include "tokpack/storage.h"

namespace tokpack {

struct StoragePools {
  // The pools of `options`' values (StorageOptions::cancel is not one: each
  // dataset keeps its own flag), made on first use. The options must be valid.
  static std::shared_ptr<StoragePools> For(const StorageOptions& options);

  StoragePools(int prefetch_threads, int http_concurrency)
      : prefetcher(std::make_shared<Prefetcher>(prefetch_threads)),
        connections(std::make_shared<ConnectionPool>(http_concurrency)) {}

  const std::shared_ptr<Prefetcher> prefetcher;
  const std::shared_ptr<ConnectionPool> connections;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_STORAGE_POOLS_H_
