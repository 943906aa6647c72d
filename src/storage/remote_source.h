// Remote dataset files as ByteSources: read in the manifest's chunks through
// the node-shared ChunkCache, each chunk verified against its checksum, and
// prefetched by the process's shared pool for the opener's settings
// (StoragePools). The files of one opener are one owner in that pool: when
// the last of them is destroyed, their queued hints are dropped and their
// running fetches waited for. Thread-safe.
#ifndef TOKPACK_SRC_STORAGE_REMOTE_SOURCE_H_
#define TOKPACK_SRC_STORAGE_REMOTE_SOURCE_H_

#include <memory>
#include <string>

#include "storage/byte_source.h"
#include "storage/chunk_cache.h"
#include "storage/http_store.h"
#include "tokpack/file_digest.h"

namespace tokpack {

class ChunkAttempts;
class PrefetchOwner;
struct StoragePools;

class RemoteOpener {
 public:
  // The store for `url` (credentials, endpoints and retries from `options`,
  // see object_url.h) and the cache in options.cache_dir. InvalidArgument
  // when the options are invalid or name no cache directory.
  static StatusOr<std::unique_ptr<RemoteOpener>> ForUrl(const std::string& url,
                                                        const StorageOptions& options);
  // Prefetch() goes to `pools`' prefetcher; `store` should use its connections.
  RemoteOpener(std::shared_ptr<HttpStore> store, std::shared_ptr<ChunkCache> cache,
               const std::shared_ptr<StoragePools>& pools);

  // The store the dataset's files are read from (manifest.json included).
  const HttpStore& store() const { return *store_; }
  // The most bytes Open() reads into memory for a resident file: an .idx
  // of about 350 million documents.
  static constexpr uint64_t kMaxResidentBytes = uint64_t{4} << 30;

  // File `name` of the dataset, described by `digest`, in chunks of
  // `chunk_bytes`; both as Manifest::Parse checked them (chunk_bytes in
  // range, one checksum per chunk). `resident`: read it all now and keep it
  // in memory (for .idx files, which the reader reads in place);
  // ResourceExhausted naming the URL when it is over kMaxResidentBytes.
  StatusOr<std::unique_ptr<ByteSource>> Open(const std::string& name, const FileDigest& digest,
                                             uint64_t chunk_bytes, bool resident) const;

 private:
  std::shared_ptr<HttpStore> store_;
  std::shared_ptr<ChunkCache> cache_;
  std::shared_ptr<PrefetchOwner> prefetch_;  // This opener's files' share of the pool.
  std::shared_ptr<ChunkAttempts> attempts_;  // Shared by the prefetches and reads of its files.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_REMOTE_SOURCE_H_
