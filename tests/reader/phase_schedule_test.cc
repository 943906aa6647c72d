#include "reader/phase_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tokpack {
namespace {

TEST(PhaseSchedule, EveryPrefixOfOnePhaseStaysWithinOneDrawOfTheWeights) {
  const std::vector<std::vector<double>> cases = {
      {1}, {0.7, 0.3}, {1, 1, 1}, {0.5, 0.25, 0.125, 0.125}, {3, 1e-3}, {0.31, 0.29, 0.4}};
  for (const auto& weights : cases) {
    PhaseSchedule s({{0, weights}}, 8);
    double sum = 0;
    for (double w : weights) sum += w;
    double worst = 0;
    for (uint64_t p = 1; p <= 200000; ++p) {
      s.Next();
      for (size_t k = 0; k < weights.size(); ++k) {
        worst = std::max(worst, std::fabs(s.totals()[k] - weights[k] / sum * p));
      }
    }
    EXPECT_LE(worst, 1.0) << "weights " << FormatWeights(weights);
  }
}

TEST(PhaseSchedule, ResetContinuesTheSameSequence) {
  PhaseSchedule a({{0, {0.6, 0.3, 0.1}}, {100, {0, 0.5, 0.5}}}, 8);
  for (int i = 0; i < 776; ++i) a.Next();  // A batch boundary: 97 steps of 8.
  PhaseSchedule b({{0, {0.6, 0.3, 0.1}}, {100, {0, 0.5, 0.5}}}, 8);
  b.Reset(a.state());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.Next(), b.Next());
}

}  // namespace
}  // namespace tokpack
