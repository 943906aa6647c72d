#include "storage/remote_source.h"

#include "common/chunk_hasher.h"

namespace tokpack {
namespace {

// A remote file read chunk by chunk through the cache; not memory-resident.
class RemoteSource : public ByteSource {
 public:
  RemoteSource(std::shared_ptr<HttpStore> store, std::shared_ptr<ChunkCache> cache,
               std::string name, FileDigest digest, uint64_t chunk_bytes)
      : store_(std::move(store)),
        cache_(std::move(cache)),
        name_(std::move(name)),
        url_(store_->location().UrlOf(name_)),
        digest_(std::move(digest)),
        chunk_bytes_(chunk_bytes),
        key_prefix_(HashToHex(Xxh3(url_)) + "-") {}

  uint64_t size() const override { return digest_.bytes; }
  const char* data() const override { return nullptr; }
  const std::string& name() const override { return url_; }

  Status Read(uint64_t offset, uint64_t n, char* dst) const override {
    if (offset > digest_.bytes || n > digest_.bytes - offset) {
      return OutOfRangeError(url_ + ": bytes [" + std::to_string(offset) + ", " +
                             std::to_string(offset + n) + ") past the end");
    }
    while (n > 0) {
      const uint64_t k = offset / chunk_bytes_;
      const uint64_t start = k * chunk_bytes_;
      const uint64_t size = std::min(chunk_bytes_, digest_.bytes - start);
      const uint64_t take = std::min(n, start + size - offset);
      const std::string key = key_prefix_ + HashToHex(digest_.chunk_xxh3[k]) + "-" +
                              std::to_string(k);
      TOKPACK_RETURN_IF_ERROR(cache_->Read(
          key, url_ + " chunk " + std::to_string(k), size, digest_.chunk_xxh3[k], offset - start,
          take, dst,
          [&](std::string* out) { return store_->GetRange(name_, start, size, out); }));
      offset += take;
      dst += take;
      n -= take;
    }
    return Status::Ok();
  }

 private:
  std::shared_ptr<HttpStore> store_;
  std::shared_ptr<ChunkCache> cache_;
  std::string name_, url_;
  FileDigest digest_;
  uint64_t chunk_bytes_;
  std::string key_prefix_;
};

// A whole file held in memory.
class MemorySource : public ByteSource {
 public:
  MemorySource(std::string name, std::string bytes)
      : name_(std::move(name)), bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_.size(); }
  const char* data() const override { return bytes_.data(); }
  const std::string& name() const override { return name_; }
  Status Read(uint64_t offset, uint64_t n, char* dst) const override {
    if (offset > bytes_.size() || n > bytes_.size() - offset) {
      return OutOfRangeError(name_ + ": bytes past the end");
    }
    std::copy_n(bytes_.data() + offset, n, dst);
    return Status::Ok();
  }

 private:
  std::string name_, bytes_;
};

}  // namespace

StatusOr<std::unique_ptr<RemoteOpener>> RemoteOpener::ForUrl(const std::string& url) {
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation location, ResolveObjectUrl(url));
  TOKPACK_ASSIGN_OR_RETURN(std::shared_ptr<ChunkCache> cache, ChunkCache::Default());
  return std::make_unique<RemoteOpener>(
      std::make_shared<HttpStore>(std::move(location), HttpOptions::FromEnvironment()),
      std::move(cache));
}

StatusOr<Manifest> RemoteOpener::LoadManifest() const {
  StatusOr<std::string> text = store_->Get(Manifest::kFileName);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
    return NotFoundError(store_->location().url + " is not a tokpack dataset: " +
                         text.status().message());
  }
  TOKPACK_RETURN_IF_ERROR(text.status());
  return Manifest::Parse(*text, store_->location().UrlOf(Manifest::kFileName));
}

StatusOr<std::unique_ptr<ByteSource>> RemoteOpener::Open(const std::string& name,
                                                         const FileDigest& digest,
                                                         uint64_t chunk_bytes,
                                                         bool resident) const {
  const uint64_t chunks = chunk_bytes ? (digest.bytes + chunk_bytes - 1) / chunk_bytes : 0;
  if (chunk_bytes == 0 || digest.chunk_xxh3.size() != chunks) {
    return DataLossError(store_->location().UrlOf(name) + ": manifest.json lists " +
                         std::to_string(digest.chunk_xxh3.size()) + " chunk checksums for " +
                         std::to_string(digest.bytes) + " bytes; remote reads need all " +
                         std::to_string(chunks));
  }
  auto remote = std::make_unique<RemoteSource>(store_, cache_, name, digest, chunk_bytes);
  if (!resident) return std::unique_ptr<ByteSource>(std::move(remote));
  std::string bytes(digest.bytes, '\0');
  TOKPACK_RETURN_IF_ERROR(remote->Read(0, bytes.size(), bytes.data()));
  return std::unique_ptr<ByteSource>(
      std::make_unique<MemorySource>(remote->name(), std::move(bytes)));
}

}  // namespace tokpack
