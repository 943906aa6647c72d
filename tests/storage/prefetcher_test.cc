// The Prefetcher's queue with real threads: tasks run smallest step first,
// a hint for an earlier step moves its task up, the queue bound keeps the
// soonest tasks, Claim() takes a queued task out or waits for a running
// one, and destruction drops what is queued and waits for what runs. Each
// test holds the workers on a latch, so the order is decided by the queue,
// never by timing.
#include "storage/prefetcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tokpack {
namespace {

constexpr std::chrono::seconds kDeadline(60);  // Generous: a loaded 2-core machine.

// A one-shot event.
class Latch {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kDeadline, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// The keys of the tasks that ran, in the order they ran.
class RunLog {
 public:
  std::function<void()> Task(const std::string& key) {
    return [this, key] {
      std::lock_guard<std::mutex> lock(mu_);
      keys_.push_back(key);
      cv_.notify_all();
    };
  }
  // Waits until `n` tasks ran; the keys of those that did.
  std::vector<std::string> Await(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kDeadline, [&] { return keys_.size() >= n; });
    return keys_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> keys_;
};

// Occupies the workers of `p`: `n` tasks that wait for `release`, submitted
// at step -1 and running once this returns.
void Block(Prefetcher& p, int n, Latch& release) {
  std::atomic<int> started{0};
  Latch all_started;
  for (int i = 0; i < n; ++i) {
    p.Submit(0, "block" + std::to_string(i), -1, [&, n] {
      if (++started == n) all_started.Open();
      release.Wait();
    });
  }
  ASSERT_TRUE(all_started.Wait()) << "the workers never started";
}

TEST(PrefetcherTest, TasksRunSmallestStepFirst) {
  RunLog log;
  Latch release;
  Prefetcher p(1);
  Block(p, 1, release);
  p.Submit(0, "a", 5, log.Task("a"));
  p.Submit(0, "b", 3, log.Task("b"));
  p.Submit(0, "c", 9, log.Task("c"));
  p.Submit(0, "d", 3, log.Task("d"));  // Equal steps: first queued first.
  release.Open();
  EXPECT_EQ(log.Await(4), (std::vector<std::string>{"b", "d", "a", "c"}));
}

TEST(PrefetcherTest, AHintForAnEarlierStepMovesAQueuedKeyUpAndALaterOneIsDropped) {
  RunLog log;
  Latch release;
  Prefetcher p(1);
  Block(p, 1, release);
  p.Submit(0, "a", 5, log.Task("a"));
  p.Submit(0, "b", 9, log.Task("b"));
  p.Submit(0, "b", 2, log.Task("b again"));            // Moves up, keeps its first task.
  p.Submit(0, "a", 7, log.Task("a again"));            // Later than queued: dropped.
  p.Submit(0, "block0", 0, log.Task("block0 again"));  // Running: dropped.
  p.Submit(0, "z", 100, log.Task("z"));
  release.Open();
  EXPECT_EQ(log.Await(3), (std::vector<std::string>{"b", "a", "z"}));
}

TEST(PrefetcherTest, AFullQueueKeepsTheSoonestSteps) {
  RunLog log;
  Latch release;
  Prefetcher p(1, /*max_queued=*/2);
  Block(p, 1, release);
  p.Submit(0, "a", 5, log.Task("a"));
  p.Submit(0, "b", 7, log.Task("b"));
  p.Submit(0, "c", 9, log.Task("c"));  // Full, and later than all: dropped.
  p.Submit(0, "d", 1, log.Task("d"));  // Full, but sooner than b: b goes.
  release.Open();
  ASSERT_EQ(log.Await(2), (std::vector<std::string>{"d", "a"}));
  // Were b or c still queued, they would run before this.
  p.Submit(0, "z", 100, log.Task("z"));
  EXPECT_EQ(log.Await(3), (std::vector<std::string>{"d", "a", "z"}));
}

TEST(PrefetcherTest, ClaimTakesAQueuedTaskOut) {
  RunLog log;
  Latch release;
  Prefetcher p(1);
  Block(p, 1, release);
  p.Submit(0, "a", 1, log.Task("a"));
  p.Submit(0, "b", 2, log.Task("b"));
  p.Claim("a");  // Returns at once: the caller fetches it itself.
  p.Claim("unknown");
  release.Open();
  ASSERT_EQ(log.Await(1), (std::vector<std::string>{"b"}));
  p.Submit(0, "z", 100, log.Task("z"));
  EXPECT_EQ(log.Await(2), (std::vector<std::string>{"b", "z"}));
}

TEST(PrefetcherTest, ClaimWaitsForARunningTask) {
  Latch release, started;
  std::atomic<bool> finished{false};
  Prefetcher p(1);
  p.Submit(0, "a", 1, [&] {
    started.Open();
    release.Wait();
    finished = true;
  });
  ASSERT_TRUE(started.Wait());
  std::atomic<bool> finished_at_claim{false};
  std::thread claimer([&] {
    p.Claim("a");
    finished_at_claim = finished.load();
  });
  release.Open();
  claimer.join();
  EXPECT_TRUE(finished_at_claim) << "Claim returned while the task still ran";
}

TEST(PrefetcherTest, DestructionDropsQueuedTasksAndWaitsForRunningOnes) {
  Latch release;
  auto p = std::make_unique<Prefetcher>(2);
  Block(*p, 2, release);
  // Each queued task owns a token; dropping the task must free it.
  auto token = std::make_shared<int>(0);
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) {
    p->Submit(0, "q" + std::to_string(i), i, [token, &ran] { ++ran; });
  }
  std::atomic<bool> destroyed{false};
  std::thread destroyer([&] {
    p.reset();
    destroyed = true;
  });
  // The destructor drops the queued tasks (freeing their tokens) first...
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (token.use_count() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(token.use_count(), 1) << "the queued tasks were not dropped";
  // ...then waits for the running ones.
  EXPECT_FALSE(destroyed.load());
  release.Open();
  destroyer.join();
  EXPECT_EQ(ran.load(), 0);
}

}  // namespace
}  // namespace tokpack
