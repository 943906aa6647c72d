#include "storage/prefetcher.h"

#include <pthread.h>

#include <vector>

namespace tokpack {

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    order_.clear();
    queued_.clear();
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

uint64_t Prefetcher::NewOwner() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++owners_;
}

void Prefetcher::Submit(uint64_t owner, const std::string& key, int64_t step,
                        std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || running_.count(key) != 0) return;
  if (auto it = queued_.find(key); it != queued_.end()) {
    if (step >= it->second.rank.first) return;
    // Needed sooner than first hinted: moves up, keeping its task.
    order_.erase(it->second.rank);
    it->second.rank = {step, arrivals_++};
    order_.emplace(it->second.rank, key);
    return;
  }
  if (queued_.size() >= max_queued_) {
    const auto latest = std::prev(order_.end());
    if (step >= latest->first.first) return;
    queued_.erase(latest->second);
    order_.erase(latest);
  }
  // Started here, not in the constructor: most datasets never prefetch.
  while (static_cast<int>(threads_.size()) < threads_wanted_) {
    threads_.emplace_back([this] { Run(); });
  }
  const Rank rank{step, arrivals_++};
  order_.emplace(rank, key);
  queued_.emplace(key, Queued{rank, owner, std::move(task)});
  work_cv_.notify_one();
}

void Prefetcher::Drop(uint64_t owner) {
  std::vector<std::function<void()>> dropped;  // Destroyed after the unlock.
  std::unique_lock<std::mutex> lock(mu_);
  for (auto it = queued_.begin(); it != queued_.end();) {
    if (it->second.owner != owner) {
      ++it;
      continue;
    }
    order_.erase(it->second.rank);
    dropped.push_back(std::move(it->second.task));
    it = queued_.erase(it);
  }
  done_cv_.wait(lock, [&] { return running_owners_.count(owner) == 0; });
}

Prefetcher::Claimed Prefetcher::Claim(const std::string& key) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool waited = running_.count(key) != 0;
  done_cv_.wait(lock, [&] { return running_.count(key) == 0; });
  // Queued before, or hinted again between that fetch's end and this wake.
  if (auto it = queued_.find(key); it != queued_.end()) {
    order_.erase(it->second.rank);
    queued_.erase(it);
  }
  running_.insert(key);
  return Claimed(this, key, waited);
}

void Prefetcher::Release(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  running_.erase(key);
  done_cv_.notify_all();
}

void Prefetcher::Run() {
  // Named so that tools (top -H, /proc/PID/task/*/comm) and tests can count them.
  ::pthread_setname_np(::pthread_self(), kThreadName);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stop_ || !order_.empty(); });
    if (stop_) return;
    const auto first = order_.begin();
    const std::string key = first->second;
    order_.erase(first);
    const auto it = queued_.find(key);
    std::function<void()> task = std::move(it->second.task);
    const uint64_t owner = it->second.owner;
    queued_.erase(it);
    running_.insert(key);
    ++running_owners_[owner];
    lock.unlock();
    task();
    task = nullptr;  // What it holds goes before Claim() or Drop() returns.
    lock.lock();
    running_.erase(key);
    if (--running_owners_[owner] == 0) running_owners_.erase(owner);
    done_cv_.notify_all();
  }
}

}  // namespace tokpack
