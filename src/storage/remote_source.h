// Remote dataset files as ByteSources: read in the manifest's chunks through
// the node-shared ChunkCache, each chunk verified against its checksum.
#ifndef TOKPACK_SRC_STORAGE_REMOTE_SOURCE_H_
#define TOKPACK_SRC_STORAGE_REMOTE_SOURCE_H_

#include <memory>
#include <string>

#include "storage/byte_source.h"
#include "storage/chunk_cache.h"
#include "storage/http_store.h"
#include "tokpack/manifest.h"

namespace tokpack {

class RemoteOpener {
 public:
  // The store for `url` (credentials and endpoints from the environment,
  // see object_url.h) and the default cache (see ChunkCache::Default).
  static StatusOr<std::unique_ptr<RemoteOpener>> ForUrl(const std::string& url);
  RemoteOpener(std::shared_ptr<HttpStore> store, std::shared_ptr<ChunkCache> cache)
      : store_(std::move(store)), cache_(std::move(cache)) {}

  // manifest.json; a remote dataset needs one (its checksums guard every chunk).
  StatusOr<Manifest> LoadManifest() const;
  // File `name` of the dataset, described by `digest`, in chunks of
  // `chunk_bytes`. `resident`: read it all now and keep it in memory (for
  // .idx files, which the reader reads in place).
  StatusOr<std::unique_ptr<ByteSource>> Open(const std::string& name, const FileDigest& digest,
                                             uint64_t chunk_bytes, bool resident) const;

 private:
  std::shared_ptr<HttpStore> store_;
  std::shared_ptr<ChunkCache> cache_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_REMOTE_SOURCE_H_
