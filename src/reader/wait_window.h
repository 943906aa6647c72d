// WaitWindow: the consumer's last waits for data, for percentiles in
// LoaderStats. Fixed size, so recording allocates nothing. Not thread-safe
// (the loaders guard it with their own lock).
#ifndef TOKPACK_SRC_READER_WAIT_WINDOW_H_
#define TOKPACK_SRC_READER_WAIT_WINDOW_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "tokpack/loader.h"

namespace tokpack {

class WaitWindow {
 public:
  static constexpr size_t kSize = 1024;

  // Records one step's wait into `stats` (totals) and the window.
  void Record(double seconds, LoaderStats* stats) {
    stats->steps++;
    stats->wait_seconds_last = seconds;
    stats->wait_seconds_total += seconds;
    stats->wait_seconds_max = std::max(stats->wait_seconds_max, seconds);
    waits_[next_++ % kSize] = seconds;
  }

  // Sets the p50 and p99 of the window in `stats`.
  void Percentiles(LoaderStats* stats) const {
    const size_t n = std::min(next_, kSize);
    if (n == 0) return;
    std::vector<double> sorted(waits_.begin(), waits_.begin() + static_cast<ptrdiff_t>(n));
    std::sort(sorted.begin(), sorted.end());
    stats->wait_seconds_p50 = sorted[(n - 1) / 2];
    stats->wait_seconds_p99 = sorted[(n - 1) * 99 / 100];
  }

 private:
  std::array<double, kSize> waits_{};
  size_t next_ = 0;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_WAIT_WINDOW_H_
