#include "storage/connection_pool.h"

#include <curl/curl.h>

namespace tokpack {

ConnectionPool::ConnectionPool(int max_concurrency) : max_concurrency_(max_concurrency) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

ConnectionPool::~ConnectionPool() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* ConnectionPool::Acquire(Priority priority) {
  std::unique_lock<std::mutex> lock(mu_);
  if (priority == Priority::kForeground) {
    ++foreground_waiting_;
    cv_.wait(lock, [&] { return active_ < max_concurrency_; });
    // The last waiting reader lets background requests through again.
    if (--foreground_waiting_ == 0) cv_.notify_all();
  } else {
    const int slots = BackgroundSlots(max_concurrency_);
    cv_.wait(lock, [&] { return foreground_waiting_ == 0 && active_ < slots; });
  }
  ++active_;
  if (!idle_.empty()) {
    void* h = idle_.back();
    idle_.pop_back();
    return h;
  }
  return curl_easy_init();
}

void ConnectionPool::Release(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  --active_;
  if (handle) idle_.push_back(handle);
  // Both kinds wait on cv_, and a woken one may not be the one that can go.
  cv_.notify_all();
}

}  // namespace tokpack
