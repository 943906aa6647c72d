#include "reader/share_curve.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tokpack {
namespace {

// A time of the run as the first integer position at or after it; kNever
// past the positions a loader reaches.
uint64_t FloorPosition(double t) {
  if (!(t < 0x1p63)) return ShareCurve::kNever;
  return t <= 0 ? 0 : static_cast<uint64_t>(t);
}

}  // namespace

ShareCurve::ShareCurve(std::vector<double> from, std::vector<double> to, uint64_t ramp,
                       uint64_t offset)
    : flat_(ramp <= offset), to_(std::move(to)) {
  if (flat_) return;
  const size_t n = to_.size();
  const double length = static_cast<double>(ramp);
  const double start = static_cast<double>(offset);
  left_ = static_cast<double>(ramp - offset);
  a_.resize(n);
  k_.resize(n);
  end_share_.resize(n);
  for (size_t s = 0; s < n; ++s) {
    const double slope = (to_[s] - from[s]) / length;
    a_[s] = std::max(0.0, from[s] + slope * start);
    k_[s] = slope / 2;
    end_share_[s] = left_ * (a_[s] + k_[s] * left_);
  }
}

double ShareCurve::Share(size_t s, double q) const {
  if (flat_) return to_[s] * q;
  if (q <= left_) return q * (a_[s] + k_[s] * q);
  return end_share_[s] + to_[s] * (q - left_);
}

double ShareCurve::Within(size_t s, double y) const {
  if (y <= 0) return 0;  // Present: its rate is positive just after the start.
  // q (a + k q) = y, in the form that stays exact as k goes to 0; never
  // past the ramp's end, where rounding alone could put it.
  const double root = std::sqrt(std::max(0.0, a_[s] * a_[s] + 4 * k_[s] * y));
  return std::min(left_, 2 * y / (a_[s] + root));
}

double ShareCurve::Passes(size_t s, double y, bool reach) const {
  const double end = end_share_[s];
  if (to_[s] == 0) {
    // A source ramping out stops at its ramp share, an integer m as often as
    // not, which rounding may put a hair either side of m: its m-th draw is
    // due by the ramp's end, and it never falls behind with m draws.
    const double rounding = 0x1p-30 * std::max(1.0, end);
    if (reach ? y <= end + rounding : y < end - rounding) return Within(s, y);
    return std::numeric_limits<double>::infinity();
  }
  if (y < end) return Within(s, y);
  return left_ + (y - end) / to_[s];
}

uint64_t ShareCurve::Release(size_t s, uint64_t count) const {
  if (!Present(s)) return kNever;
  if (!flat_) return FloorPosition(Passes(s, static_cast<double>(count), false));
  // Flat: the first p with w * (p + 1) > count exactly as the schedule
  // always computed it, found from the estimate count / w.
  const double w = to_[s];
  const double c = static_cast<double>(count);
  const double guess = c / w;
  if (!(guess < 0x1p63)) return kNever;
  const auto behind = [&](uint64_t p) { return w * static_cast<double>(p + 1) > c; };
  uint64_t p = guess > 2 ? static_cast<uint64_t>(guess) - 2 : 0;
  while (p > 0 && behind(p - 1)) --p;
  while (!behind(p)) ++p;
  return p;
}

double ShareCurve::Deadline(size_t s, uint64_t count) const {
  if (flat_) return static_cast<double>(count + 1) / to_[s];
  return Passes(s, static_cast<double>(count + 1), true);
}

}  // namespace tokpack
