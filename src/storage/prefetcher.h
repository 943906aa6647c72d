// Prefetcher: background fetches for ByteSource::Prefetch(), run in the
// order of the step that needs them. One Prefetcher serves every remote
// source of a process opened with the same settings (StoragePools), so its
// order is global: the nearest step first across sources. Invariants:
// - A key (a chunk) is queued or running at most once. A hint for a queued
//   key with an earlier step moves it up to that step; any other hint for a
//   queued or running key is dropped.
// - Workers take the queued task with the smallest step, the first queued
//   among equal steps.
// - At most `threads` tasks run at once (the bound on background fetches in
//   flight) and at most `max_queued` wait. A hint past that bound takes the
//   place of the queued task with the latest step if its own step is
//   earlier, else it is dropped: prefetching is only a hint.
// - Claim(key) is for the foreground (a reader that needs the chunk now):
//   a queued task for it is dropped (the reader fetches the chunk itself,
//   instead of waiting behind every earlier hint), and a running one, or
//   another reader's claim, is waited for (its fetch is under way; the
//   reader then finds the chunk cached). The claim then counts as running
//   until it is released, so that one fetch of a key is under way at a time:
//   hints for it are dropped and other readers wait.
// - Each task has an owner (a dataset's files: NewOwner()); Drop(owner)
//   removes its queued tasks and waits for its running ones, so a dataset
//   that goes leaves nothing that runs for it. Keys name the object and
//   chunk (RemoteSource's), so owners never collide; two owners' hints of
//   one chunk (one URL opened twice) are one task, of the first owner.
// Threads start on the first Submit(). The destructor drops what is queued,
// lets the running tasks finish and joins the threads. Thread-safe.
#ifndef TOKPACK_SRC_STORAGE_PREFETCHER_H_
#define TOKPACK_SRC_STORAGE_PREFETCHER_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tokpack {

class Prefetcher {
 public:
  static constexpr size_t kMaxQueued = 4096;
  // The name of the worker threads (at most 15 characters, Linux's limit).
  static constexpr char kThreadName[] = "tp-prefetch";

  // `threads` >= 1 workers; at most `max_queued` >= 1 tasks wait.
  explicit Prefetcher(int threads, size_t max_queued = kMaxQueued)
      : threads_wanted_(threads), max_queued_(max_queued) {}
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // A fresh owner id for Submit() and Drop().
  uint64_t NewOwner();
  // Queues `task` of `owner` under `key` for `step` (smaller runs sooner),
  // as the invariants above say.
  void Submit(uint64_t owner, const std::string& key, int64_t step, std::function<void()> task);
  // Drops the queued tasks of `owner` and waits until none of its tasks
  // runs. Not from a task of that owner (it would wait for itself).
  void Drop(uint64_t owner);
  // A reader's hold on a key, from Claim(): the key counts as running while
  // it lives. Move-only.
  class Claimed {
   public:
    Claimed(Claimed&& o) noexcept
        : owner_(std::exchange(o.owner_, nullptr)), key_(std::move(o.key_)), waited_(o.waited_) {}
    Claimed& operator=(Claimed&&) = delete;
    ~Claimed() {
      if (owner_ != nullptr) owner_->Release(key_);
    }
    // Whether a fetch of the key (a prefetch's or another reader's) was
    // under way when it was claimed, and was waited for.
    bool waited() const { return waited_; }

   private:
    friend class Prefetcher;
    Claimed(Prefetcher* owner, std::string key, bool waited)
        : owner_(owner), key_(std::move(key)), waited_(waited) {}
    Prefetcher* owner_;
    std::string key_;
    bool waited_;
  };
  // Drops the queued task of `key`, or waits until its running one (or
  // another claim) is done; then holds the key until the result is destroyed.
  Claimed Claim(const std::string& key);

 private:
  // (step, arrival): the queue's order.
  using Rank = std::pair<int64_t, uint64_t>;
  struct Queued {
    Rank rank;
    uint64_t owner;
    std::function<void()> task;
  };

  void Run();
  // Ends a claim: the key no longer runs.
  void Release(const std::string& key);

  const int threads_wanted_;
  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // A task was queued, or stop_.
  std::condition_variable done_cv_;  // A running task finished.
  bool stop_ = false;                // Under mu_, as is everything below.
  uint64_t arrivals_ = 0;
  std::map<Rank, std::string> order_;  // Queued keys, soonest first.
  std::unordered_map<std::string, Queued> queued_;
  std::unordered_set<std::string> running_;
  std::unordered_map<uint64_t, int> running_owners_;  // Tasks running per owner.
  uint64_t owners_ = 0;
  std::vector<std::thread> threads_;  // Until the destructor.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_PREFETCHER_H_
