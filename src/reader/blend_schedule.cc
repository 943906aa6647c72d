#include "reader/blend_schedule.h"

namespace tokpack {

BlendSchedule::BlendSchedule(const std::vector<double>& weights)
    : weights_(weights), counts_(weights.size(), 0) {
  double sum = 0;
  for (double w : weights_) sum += w;
  for (double& w : weights_) w /= sum;
}

void BlendSchedule::Reset(const std::vector<uint64_t>& counts) {
  counts_ = counts;
  position_ = 0;
  for (uint64_t c : counts_) position_ += c;
}

size_t BlendSchedule::Next() {
  size_t best = 0;
  if (weights_.size() > 1) {
    double best_deficit = 0;
    const double next = static_cast<double>(position_ + 1);
    for (size_t s = 0; s < weights_.size(); ++s) {
      const double deficit = weights_[s] * next - static_cast<double>(counts_[s]);
      if (s == 0 || deficit > best_deficit) {
        best = s;
        best_deficit = deficit;
      }
    }
  }
  ++counts_[best];
  ++position_;
  return best;
}

}  // namespace tokpack
