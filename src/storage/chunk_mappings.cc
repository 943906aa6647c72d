#include "storage/chunk_mappings.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <utility>
#include <vector>

#include "base/file_system.h"

namespace tokpack {

StatusOr<std::shared_ptr<ChunkMapping>> ChunkMapping::Map(int fd, uint64_t size,
                                                          const std::string& path) {
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return ErrnoToStatus(errno, "mmap", path);
  return std::shared_ptr<ChunkMapping>(new ChunkMapping(addr, size));
}

ChunkMapping::~ChunkMapping() { ::munmap(addr_, size_); }

std::shared_ptr<ChunkMappings> ChunkMappings::ForDirectory(const std::string& dir) {
  static std::mutex mu;
  // Keyed by process too: a forked child makes its own table rather than
  // use one whose locks a thread of its parent may have held at the fork.
  static auto* tables = new std::map<std::pair<pid_t, std::string>, std::weak_ptr<ChunkMappings>>();
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = tables->begin(); it != tables->end();) {
    it = it->second.expired() ? tables->erase(it) : std::next(it);
  }
  std::weak_ptr<ChunkMappings>& slot = (*tables)[{::getpid(), dir}];
  std::shared_ptr<ChunkMappings> table = slot.lock();
  if (!table) {
    table = std::make_shared<ChunkMappings>();
    slot = table;
  }
  return table;
}

std::shared_ptr<const ChunkMapping> ChunkMappings::Find(const std::string& key) {
  Shard& s = ShardOf(key);
  std::shared_ptr<ChunkMapping> m;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end()) return nullptr;
    m = it->second;
  }
  // Stamped only when another mapping was used since: readers of one chunk
  // on many threads do not all write to the clock.
  if (m->last_use_.load(std::memory_order_relaxed) != clock_.load(std::memory_order_relaxed)) {
    m->last_use_.store(clock_.fetch_add(1, std::memory_order_relaxed) + 1,
                       std::memory_order_relaxed);
  }
  return m;
}

std::shared_ptr<const ChunkMapping> ChunkMappings::Add(const std::string& key,
                                                       std::shared_ptr<ChunkMapping> m,
                                                       uint64_t bound) {
  m->last_use_.store(clock_.fetch_add(1) + 1, std::memory_order_relaxed);
  Shard& s = ShardOf(key);
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto [it, added] = s.map.emplace(key, m);
    if (!added) return it->second;  // `m` is unmapped as it goes out of scope.
    // Under the shard lock, so a release that finds `m` subtracts only
    // bytes already counted.
    bytes_ += m->size();
  }
  if (bytes_.load() > bound) {
    std::lock_guard<std::mutex> lock(release_mu_);
    while (bytes_.load() > bound && ReleaseOldest(key)) {
    }
  }
  return m;
}

bool ChunkMappings::ReleaseOldest(const std::string& keep) {
  Shard* oldest_shard = nullptr;
  std::string oldest_key;
  uint64_t oldest_use = UINT64_MAX;
  for (Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mu);
    for (const auto& [key, m] : s.map) {
      const uint64_t use = m->last_use_.load(std::memory_order_relaxed);
      if (use < oldest_use && key != keep) {
        oldest_use = use;
        oldest_key = key;
        oldest_shard = &s;
      }
    }
  }
  if (oldest_shard == nullptr) return false;
  std::shared_ptr<ChunkMapping> gone;  // Unmapped (unless pinned) after the unlock.
  {
    std::lock_guard<std::mutex> lock(oldest_shard->mu);
    auto it = oldest_shard->map.find(oldest_key);
    if (it == oldest_shard->map.end()) return true;  // Released meanwhile.
    gone = std::move(it->second);
    oldest_shard->map.erase(it);
    epoch_.fetch_add(1, std::memory_order_acq_rel);
  }
  bytes_ -= gone->size();
  return true;
}

void ChunkMappings::ReleaseAll() {
  for (Shard& s : shards_) {
    std::unordered_map<std::string, std::shared_ptr<ChunkMapping>> gone;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      gone.swap(s.map);
      epoch_.fetch_add(1, std::memory_order_acq_rel);
    }
    for (const auto& [key, m] : gone) bytes_ -= m->size();
  }
}

}  // namespace tokpack
