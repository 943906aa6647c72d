// ConnectionPool: the HTTP request slots and the libcurl handles (each with
// its connections, kept for reuse) that HttpStores share. One pool serves
// every remote source of a process opened with the same settings
// (StoragePools), so the requests in flight, and the handles, stay within
// `max_concurrency` however many datasets there are. Invariants:
// - At most `max_concurrency` requests hold a slot at once; background ones
//   (prefetches) at most BackgroundSlots() of them.
// - A waiting foreground request (a reader's) goes before every waiting
//   background one.
// - At most `max_concurrency` handles exist: one per slot in use, the rest
//   idle in the pool (each keeps libcurl's small cache of open connections).
// Thread-safe.
#ifndef TOKPACK_SRC_STORAGE_CONNECTION_POOL_H_
#define TOKPACK_SRC_STORAGE_CONNECTION_POOL_H_

#include <condition_variable>
#include <mutex>
#include <vector>

namespace tokpack {

class ConnectionPool {
 public:
  // Who waits for a request: a reader (foreground) or nobody yet (a
  // prefetch, in the background).
  enum class Priority { kForeground, kBackground };

  // `max_concurrency` >= 1.
  explicit ConnectionPool(int max_concurrency);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Of `max_concurrency` slots, those background requests may hold at once:
  // all but a quarter (rounded up), kept for the foreground; all of one.
  static int BackgroundSlots(int max_concurrency) {
    return max_concurrency > 1 ? max_concurrency - (max_concurrency + 3) / 4 : max_concurrency;
  }
  int max_concurrency() const { return max_concurrency_; }

  // Waits for a slot and returns a CURL easy handle for it (null if
  // curl_easy_init failed; the slot is then held all the same).
  void* Acquire(Priority priority);
  // Gives back the slot and `handle` (null: none to keep, e.g. one whose
  // connection broke and that the caller cleaned up).
  void Release(void* handle);

 private:
  const int max_concurrency_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<void*> idle_;     // CURL easy handles, kept for connection reuse.
  int active_ = 0;              // Requests holding a slot.
  int foreground_waiting_ = 0;  // Foreground requests waiting for one.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_CONNECTION_POOL_H_
