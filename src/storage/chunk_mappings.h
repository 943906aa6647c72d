// ChunkMappings: this process's long-lived read-only mappings of the chunk
// files of one cache directory, so that a warm read is a lookup and a copy
// from memory, as for a local file (no open, flock, pread, futimens, close).
//
// - A mapping keeps the shared flock of its chunk file: on Linux a flock
//   belongs to the open file, which the mapping references after the
//   descriptor is closed (elsewhere a flock may end with its descriptor;
//   tokpack targets Linux). So an evictor (LOCK_EX | LOCK_NB) skips a mapped
//   chunk, and no descriptor stays open per mapping.
// - Readers pin a mapping (a shared_ptr); one released from the table is
//   unmapped, and its lock let go, when its last pin goes.
// - The table holds at most `bound` bytes of mappings (the caller's choice,
//   see ChunkCache): adding one past it releases the least recently used
//   first, never the one just added.
// - Lookups lock one of 16 shards for a hash-map probe; no lock is held
//   while a reader copies from a mapping.
// Every ChunkCache of one directory in a process shares its table (see
// ForDirectory), so the bound is per process, however many datasets read
// through the cache. Thread-safe.
#ifndef TOKPACK_SRC_STORAGE_CHUNK_MAPPINGS_H_
#define TOKPACK_SRC_STORAGE_CHUNK_MAPPINGS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tokpack/status.h"

namespace tokpack {

// One chunk file mapped read-only; unmapped when destroyed.
class ChunkMapping {
 public:
  // Maps `size` (> 0) bytes of the open file `fd` (which may be closed
  // afterwards). IoError names `path`.
  static StatusOr<std::shared_ptr<ChunkMapping>> Map(int fd, uint64_t size,
                                                     const std::string& path);
  ~ChunkMapping();
  ChunkMapping(const ChunkMapping&) = delete;
  ChunkMapping& operator=(const ChunkMapping&) = delete;

  const char* data() const { return static_cast<const char*>(addr_); }
  uint64_t size() const { return size_; }

 private:
  friend class ChunkMappings;
  ChunkMapping(void* addr, uint64_t size) : addr_(addr), size_(size) {}
  void* addr_;
  uint64_t size_;
  std::atomic<uint64_t> last_use_{0};  // ChunkMappings' clock when last found.
};

class ChunkMappings {
 public:
  // The table of cache directory `dir` in this process (a forked child gets
  // its own), made on first use; it lives while any caller holds it.
  static std::shared_ptr<ChunkMappings> ForDirectory(const std::string& dir);

  // The mapping of `key` (pinned, marked used), or null if there is none.
  std::shared_ptr<const ChunkMapping> Find(const std::string& key);
  // Adds `m` as `key` and returns it, or returns the mapping another thread
  // added first (`m` then goes). Then releases the least recently used
  // others while the table holds more than `bound` bytes.
  std::shared_ptr<const ChunkMapping> Add(const std::string& key, std::shared_ptr<ChunkMapping> m,
                                          uint64_t bound);
  // Releases every mapping (for an evictor that found only chunks in use).
  void ReleaseAll();
  // Bytes of the mappings in the table.
  uint64_t bytes() const { return bytes_.load(); }
  // Advanced whenever a mapping leaves the table: a caller that saw a
  // mapping in the table at epoch E knows it is still there while the
  // epoch is E (what RemoteSource's per-chunk slots rely on).
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

 private:
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::shared_ptr<ChunkMapping>> map;
  };
  static constexpr size_t kShards = 16;
  Shard& ShardOf(const std::string& key) {
    return shards_[std::hash<std::string>()(key) % kShards];
  }
  // Removes the least recently used mapping other than `keep`; false if none.
  bool ReleaseOldest(const std::string& keep);

  std::array<Shard, kShards> shards_;
  std::atomic<uint64_t> clock_{0};  // Advanced by each use of another mapping.
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> epoch_{1};  // Never 0, which a slot takes for "none".
  std::mutex release_mu_;           // One release scan at a time.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_CHUNK_MAPPINGS_H_
