// Prefetcher: background fetches for ByteSource::Prefetch(): a few threads,
// started on first use, a bounded queue, and no key queued twice. The
// destructor drops what is queued, lets the fetches in flight finish and
// joins the threads. Thread-safe.
#ifndef TOKPACK_SRC_STORAGE_PREFETCHER_H_
#define TOKPACK_SRC_STORAGE_PREFETCHER_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tokpack {

class Prefetcher {
 public:
  explicit Prefetcher(int threads) : threads_wanted_(threads) {}
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Queues `task` under `key` (a chunk); dropped when the queue is full or
  // `key` is already queued or running: prefetching is only a hint.
  void Submit(const std::string& key, std::function<void()> task);

 private:
  static constexpr size_t kMaxQueued = 4096;

  void Run();

  const int threads_wanted_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // Under mu_.
  std::deque<std::pair<std::string, std::function<void()>>> queue_;
  std::set<std::string> pending_;
  std::vector<std::thread> threads_;  // Under mu_ until the destructor.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_PREFETCHER_H_
