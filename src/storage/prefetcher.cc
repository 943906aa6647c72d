#include "storage/prefetcher.h"

namespace tokpack {

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Prefetcher::Submit(const std::string& key, std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || queue_.size() >= kMaxQueued || !pending_.insert(key).second) return;
  // Started here, not in the constructor: most datasets never prefetch.
  while (static_cast<int>(threads_.size()) < threads_wanted_) {
    threads_.emplace_back([this] { Run(); });
  }
  queue_.push_back({key, std::move(task)});
  cv_.notify_one();
}

void Prefetcher::Run() {
  while (true) {
    std::pair<std::string, std::function<void()>> item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    item.second();
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(item.first);
  }
}

}  // namespace tokpack
