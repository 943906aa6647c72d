// BlendSchedule: the deterministic order in which weighted sources are drawn.
// Position p goes to the source with the largest deficit w_s*(p+1) - c_s
// (ties to the lowest index), where c_s counts earlier draws of s and the
// weights are normalized. Every source's realized count stays within one
// draw of w_s*p over every prefix (tested). Not thread-safe.
#ifndef TOKPACK_SRC_READER_BLEND_SCHEDULE_H_
#define TOKPACK_SRC_READER_BLEND_SCHEDULE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tokpack {

class BlendSchedule {
 public:
  // Weights must be positive; they are normalized here.
  explicit BlendSchedule(const std::vector<double>& weights);

  // Restarts from a position whose per-source counts are `counts`.
  void Reset(const std::vector<uint64_t>& counts);

  // The source of the next position; advances the counts.
  size_t Next();

  const std::vector<uint64_t>& counts() const { return counts_; }
  uint64_t position() const { return position_; }

 private:
  std::vector<double> weights_;
  std::vector<uint64_t> counts_;
  uint64_t position_ = 0;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_BLEND_SCHEDULE_H_
