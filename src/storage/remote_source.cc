#include "storage/remote_source.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <thread>
#include <utility>

#include "base/chunk_hasher.h"
#include "storage/chunk_attempts.h"
#include "storage/prefetcher.h"
#include "storage/storage_pools.h"

namespace tokpack {

// One opener's files in the shared prefetcher: their hints go in under one
// owner, dropped (and the running ones waited for) when the last file goes.
// Tasks never hold it, so it is never released on a prefetch thread.
class PrefetchOwner {
 public:
  explicit PrefetchOwner(std::shared_ptr<StoragePools> pools)
      : pools_(std::move(pools)), id_(pools_->prefetcher->NewOwner()) {}
  ~PrefetchOwner() { pools_->prefetcher->Drop(id_); }
  PrefetchOwner(const PrefetchOwner&) = delete;
  PrefetchOwner& operator=(const PrefetchOwner&) = delete;

  void Submit(const std::string& key, int64_t step, std::function<void()> task) {
    pools_->prefetcher->Submit(id_, key, step, std::move(task));
  }
  Prefetcher::Claimed Claim(const std::string& key) { return pools_->prefetcher->Claim(key); }

 private:
  const std::shared_ptr<StoragePools> pools_;
  const uint64_t id_;
};

namespace {

// A remote file read chunk by chunk through the cache; not memory-resident.
class RemoteSource : public ByteSource {
 public:
  RemoteSource(std::shared_ptr<HttpStore> store, std::shared_ptr<ChunkCache> cache,
               std::shared_ptr<PrefetchOwner> prefetch, std::shared_ptr<ChunkAttempts> attempts,
               std::string name, FileDigest digest, uint64_t chunk_bytes)
      : store_(std::move(store)),
        cache_(std::move(cache)),
        prefetch_(std::move(prefetch)),
        attempts_(std::move(attempts)),
        name_(std::move(name)),
        url_(store_->location().UrlOf(name_)),
        digest_(std::move(digest)),
        chunk_bytes_(chunk_bytes),
        key_prefix_(HashToHex(Xxh3(url_)) + "-"),
        slots_(new Slot[digest_.chunk_xxh3.size()]) {}

  uint64_t size() const override { return digest_.bytes; }
  const char* data() const override { return nullptr; }
  const std::string& name() const override { return url_; }

  void Prefetch(uint64_t offset, uint64_t n, int64_t step,
                const std::shared_ptr<ReadStats>& stats) const override {
    if (n == 0 || offset >= digest_.bytes) return;
    const uint64_t last = std::min(offset + n, digest_.bytes) - 1;
    for (uint64_t k = offset / chunk_bytes_; k <= last / chunk_bytes_; ++k) {
      // Mapped by this process: cached and pinned, no hint; known so from
      // its slot without a lookup. Anything else (on disk or not, evicted
      // since it was read) is hinted; the task finds a chunk on disk
      // without fetching it.
      if (slots_[k].epoch.load(std::memory_order_acquire) == cache_->mapping_epoch()) continue;
      const std::string key = Key(k);
      if (cache_->FindMapped(key, nullptr) != nullptr) continue;
      const uint64_t start = k * chunk_bytes_;
      const uint64_t size = std::min(chunk_bytes_, digest_.bytes - start);
      // The task keeps what it uses alive; it never refers to this source
      // (whose destruction waits for it, see PrefetchOwner).
      prefetch_->Submit(key, step,
                        [store = store_, cache = cache_, attempts = attempts_, stats, key,
                         name = name_, url = url_, start, size, sum = digest_.chunk_xxh3[k], k] {
                          // Reads nothing: only makes sure the chunk is in the cache. In the
                          // background: the HTTP requests of readers go first. A failure
                          // loses only the head start: a read that waited for it reports it.
                          HttpStore::Attempts left = attempts->Begin(key, false);
                          const Status s = cache->Read(
                              key, url + " chunk " + std::to_string(k), size, sum, 0, 0, nullptr,
                              [&](std::string* out) {
                                return store->GetRange(name, start, size, out,
                                                       HttpStore::Priority::kBackground, &left);
                              },
                              stats.get());
                          attempts->End(key, left, s.ok());
                        });
    }
  }

  Status Read(uint64_t offset, uint64_t n, char* dst) const override {
    return ReadCounted(offset, n, dst, nullptr);
  }

  Status ReadCounted(uint64_t offset, uint64_t n, char* dst, ReadStats* stats) const override {
    TOKPACK_RETURN_IF_ERROR(OutOfRange(offset, n));
    while (n > 0) {
      TOKPACK_ASSIGN_OR_RETURN(ByteView v, View(offset, n, stats));
      std::copy_n(v.data.get(), v.size, dst);
      offset += v.size;
      dst += v.size;
      n -= v.size;
    }
    return Status::Ok();
  }

  StatusOr<ByteView> View(uint64_t offset, uint64_t n, ReadStats* stats) const override {
    TOKPACK_RETURN_IF_ERROR(OutOfRange(offset, n));
    if (n == 0) return ByteView{};
    const uint64_t k = offset / chunk_bytes_;
    const uint64_t start = k * chunk_bytes_;
    const uint64_t size = std::min(chunk_bytes_, digest_.bytes - start);
    // Warmest: the mapping this chunk's slot holds, while nothing has left
    // the table since it was stamped: no key, no table lock, no probe.
    Slot& slot = slots_[k];
    const uint64_t epoch = cache_->mapping_epoch();
    ChunkCache::Pin chunk;
    if (slot.epoch.load(std::memory_order_acquire) == epoch) chunk = slot.Get();
    if (chunk != nullptr) {
      if (stats != nullptr) stats->cache_hits++;
      return ByteView{ChunkCache::Pin(chunk, chunk.get() + (offset - start)),
                      std::min(n, start + size - offset)};
    }
    thread_local std::string key;
    KeyInto(k, &key);
    // Warm: this process's mapping, without building a name or a fetch.
    chunk = cache_->FindMapped(key, stats);
    if (chunk == nullptr) {
      // Not mapped: this read goes ahead of its chunk's hint, if queued, or
      // waits for its fetch under way, whose attempts it then continues.
      const Prefetcher::Claimed claim = prefetch_->Claim(key);
      HttpStore::Attempts left = attempts_->Begin(key, !claim.waited());
      StatusOr<ChunkCache::Pin> mapped = cache_->Map(
          key, url_ + " chunk " + std::to_string(k), size, digest_.chunk_xxh3[k],
          [&](std::string* out) {
            return store_->GetRange(name_, start, size, out, HttpStore::Priority::kForeground,
                                    &left);
          },
          stats);
      attempts_->End(key, left, mapped.ok());
      TOKPACK_ASSIGN_OR_RETURN(chunk, std::move(mapped));
      // Served from memory (uncached): no slot, the next read fetches it again.
      if (cache_->FindMapped(key, nullptr) != chunk) {
        return ByteView{ChunkCache::Pin(chunk, chunk.get() + (offset - start)),
                        std::min(n, start + size - offset)};
      }
    }
    slot.Set(chunk, epoch);
    return ByteView{ChunkCache::Pin(chunk, chunk.get() + (offset - start)),
                    std::min(n, start + size - offset)};
  }

 private:
  // OutOfRange naming the URL if [offset, offset + n) is not in the file.
  Status OutOfRange(uint64_t offset, uint64_t n) const {
    if (offset <= digest_.bytes && n <= digest_.bytes - offset) return Status::Ok();
    return OutOfRangeError(url_ + ": bytes [" + std::to_string(offset) + ", " +
                           std::to_string(offset + n) + ") past the end");
  }
  // Names the chunk's content, not only its place: a changed object never
  // hits a stale chunk. KEYPREFIX-XXH3HEX-K, as HashToHex writes the hex,
  // into *out, whose buffer a warm read reuses (no allocation, no printf).
  void KeyInto(uint64_t k, std::string* out) const {
    static constexpr char kHex[] = "0123456789abcdef";
    out->assign(key_prefix_);
    const uint64_t h = digest_.chunk_xxh3[k];
    for (int shift = 60; shift >= 0; shift -= 4) out->push_back(kHex[(h >> shift) & 0xf]);
    out->push_back('-');
    char digits[20];
    out->append(digits, std::to_chars(digits, digits + sizeof(digits), k).ptr);
  }
  std::string Key(uint64_t k) const {
    std::string key;
    KeyInto(k, &key);
    return key;
  }

  // A chunk's mapping as this source last found it in the cache's table,
  // and the table's epoch then: while the epoch is unchanged no mapping has
  // left the table, so this one is still there (and a hint for it is
  // needless). The mapping is held weakly: a slot never keeps a released
  // chunk mapped (its flock would keep it from eviction).
  struct Slot {
    std::atomic<uint64_t> epoch{0};  // 0: none.
    std::atomic<bool> busy{false};   // Guards `chunk` (a weak_ptr is not atomic).
    std::weak_ptr<const char> chunk;

    ChunkCache::Pin Get() {
      Lock();
      ChunkCache::Pin pin = chunk.lock();
      busy.store(false, std::memory_order_release);
      return pin;
    }
    void Set(const ChunkCache::Pin& pin, uint64_t at) {
      Lock();
      chunk = pin;
      epoch.store(at, std::memory_order_release);
      busy.store(false, std::memory_order_release);
    }
    // Held for a weak_ptr copy: a spin, yielding in case the holder was
    // preempted.
    void Lock() {
      while (busy.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
    }
  };

  std::shared_ptr<HttpStore> store_;
  std::shared_ptr<ChunkCache> cache_;
  std::shared_ptr<PrefetchOwner> prefetch_;
  std::shared_ptr<ChunkAttempts> attempts_;
  std::string name_, url_;
  FileDigest digest_;
  uint64_t chunk_bytes_;
  std::string key_prefix_;
  std::unique_ptr<Slot[]> slots_;  // One per chunk.
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

RemoteOpener::RemoteOpener(std::shared_ptr<HttpStore> store, std::shared_ptr<ChunkCache> cache,
                           const std::shared_ptr<StoragePools>& pools)
    : store_(std::move(store)),
      cache_(std::move(cache)),
      prefetch_(std::make_shared<PrefetchOwner>(pools)),
      attempts_(std::make_shared<ChunkAttempts>(store_->max_attempts())) {}

StatusOr<std::unique_ptr<RemoteOpener>> RemoteOpener::ForUrl(const std::string& url,
                                                             const StorageOptions& options) {
  TOKPACK_RETURN_IF_ERROR(options.Validate());
  if (options.cache_dir.empty()) {
    return InvalidArgumentError("reading " + url +
                                " needs a chunk cache: set StorageOptions::cache_dir (or use "
                                "StorageOptions::FromEnvironment())");
  }
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation location, ResolveObjectUrl(url, options));
  TOKPACK_ASSIGN_OR_RETURN(
      std::shared_ptr<ChunkCache> cache,
      ChunkCache::Open(options.cache_dir, options.cache_bytes,
                       {std::chrono::seconds(options.http_stall_seconds), options.cancel}));
  std::shared_ptr<StoragePools> pools = StoragePools::For(options);
  return std::make_unique<RemoteOpener>(
      std::make_shared<HttpStore>(std::move(location), HttpOptions::From(options),
                                  pools->connections),
      std::move(cache), pools);
}

StatusOr<std::unique_ptr<ByteSource>> RemoteOpener::Open(const std::string& name,
                                                         const FileDigest& digest,
                                                         uint64_t chunk_bytes,
                                                         bool resident) const {
  auto remote = std::make_unique<RemoteSource>(store_, cache_, prefetch_, attempts_, name, digest,
                                               chunk_bytes);
  if (!resident) return std::unique_ptr<ByteSource>(std::move(remote));
  // The size is the manifest's claim: capped, and the buffer grows only as
  // verified chunks arrive, so a hostile manifest costs no memory that its
  // server has not sent.
  if (digest.bytes > kMaxResidentBytes) {
    return Status(StatusCode::kResourceExhausted,
                  remote->name() + ": manifest.json gives it " + std::to_string(digest.bytes) +
                      " bytes, over the cap of " + std::to_string(kMaxResidentBytes) +
                      " bytes for an index read into memory (kMaxResidentBytes)");
  }
  std::string bytes;
  for (uint64_t offset = 0; offset < digest.bytes; offset += chunk_bytes) {
    const uint64_t n = std::min(chunk_bytes, digest.bytes - offset);
    bytes.resize(offset + n);
    TOKPACK_RETURN_IF_ERROR(remote->Read(offset, n, bytes.data() + offset));
  }
  return std::unique_ptr<ByteSource>(
      std::make_unique<MemorySource>(remote->name(), std::move(bytes)));
}

}  // namespace tokpack
