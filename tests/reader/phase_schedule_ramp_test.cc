// The schedule's heaps against the linear scan it replaced, and its ramps
// and caps against shares computed here independently.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "reader/phase_schedule.h"

namespace tokpack {
namespace {

// The schedule as it was before ramps, caps and heaps: every source scanned
// at every position. The oracle for the order of flat phases.
class LinearSchedule {
 public:
  LinearSchedule(std::vector<MixturePhase> phases, uint64_t global_batch)
      : phases_(std::move(phases)), g_(global_batch) {
    for (MixturePhase& p : phases_) {
      double sum = 0;
      for (double w : p.weights) sum += w;
      for (double& w : p.weights) w /= sum;
    }
    totals_.assign(phases_[0].weights.size(), 0);
  }
  size_t Next() {
    if (phase_ + 1 < phases_.size() &&
        position_ >= static_cast<uint64_t>(phases_[phase_ + 1].start_step) * g_) {
      ++phase_;
      counts_.assign(totals_.size(), 0);
      q_ = 0;
    }
    if (counts_.empty()) counts_.assign(totals_.size(), 0);
    const std::vector<double>& w = phases_[phase_].weights;
    size_t best = SIZE_MAX, present = SIZE_MAX;
    double deadline = 0;
    const double q = static_cast<double>(q_ + 1);
    for (size_t s = 0; s < w.size(); ++s) {
      if (w[s] == 0) continue;
      if (present == SIZE_MAX) present = s;
      const double due = static_cast<double>(counts_[s] + 1) / w[s];
      if (w[s] * q > static_cast<double>(counts_[s]) && (best == SIZE_MAX || due < deadline)) {
        best = s;
        deadline = due;
      }
    }
    if (best == SIZE_MAX) best = present;
    ++counts_[best];
    ++totals_[best];
    ++position_;
    ++q_;
    return best;
  }

 private:
  std::vector<MixturePhase> phases_;
  uint64_t g_;
  size_t phase_ = 0;
  std::vector<uint64_t> counts_, totals_;
  uint64_t position_ = 0, q_ = 0;
};

std::vector<double> RandomWeights(std::mt19937_64& rng, size_t n) {
  std::vector<double> w(n);
  std::uniform_real_distribution<double> u(0, 1);
  for (double& x : w) {
    const double r = u(rng);
    x = r < 0.1 ? 0 : r < 0.3 ? u(rng) * 1e-3 : u(rng);  // Absent, rare and common sources.
  }
  w[rng() % n] = 1;
  return w;
}

TEST(PhaseScheduleHeaps, DrawTheOrderOfTheLinearScanExactly) {
  std::mt19937_64 rng(7);
  for (size_t n : {1, 2, 3, 5, 12, 100, 1000}) {
    std::vector<MixturePhase> phases = {{0, RandomWeights(rng, n)},
                                        {40, RandomWeights(rng, n)},
                                        {41, RandomWeights(rng, n)},
                                        {300, RandomWeights(rng, n)}};
    LinearSchedule oracle(phases, 16);
    PhaseSchedule heaps(phases, 16);
    for (int p = 0; p < 8000; ++p) ASSERT_EQ(heaps.Next(), oracle.Next()) << n << " at " << p;
    // A Reset rebuilds the heaps from the counts: the same order follows.
    PhaseSchedule resumed(phases, 16);
    resumed.Reset(heaps.state());
    for (int p = 0; p < 2000; ++p) {
      const size_t s = oracle.Next();
      ASSERT_EQ(heaps.Next(), s) << n << " at " << p;
      ASSERT_EQ(resumed.Next(), s) << n << " at " << p;
    }
  }
}

// The share of a ramped phase after q positions, summed position by
// position: a linear rate's mean over [x, x + 1] is its value at x + 1/2.
double RampShare(double from, double to, double ramp, uint64_t q) {
  double share = 0;
  for (uint64_t x = 0; x < q; ++x) {
    const double mid = static_cast<double>(x) + 0.5;
    if (mid + 0.5 <= ramp) {
      share += from + (to - from) * mid / ramp;
    } else if (mid - 0.5 >= ramp) {
      share += to;
    } else {  // The position the ramp ends in.
      const double a = ramp - (mid - 0.5);
      share += a * (from + (to - from) * (mid - 0.5 + a / 2) / ramp) + (1 - a) * to;
    }
  }
  return share;
}

std::vector<double> Normalized(std::vector<double> w) {
  double sum = 0;
  for (double x : w) sum += x;
  for (double& x : w) x /= sum;
  return w;
}

TEST(PhaseScheduleRamps, EveryPrefixOfARampStaysWithinOneDrawOfItsShare) {
  std::mt19937_64 rng(11);
  for (size_t n : {2, 3, 7, 40}) {
    for (int64_t ramp_steps : {1, 3, 50, 400}) {
      const std::vector<double> from = RandomWeights(rng, n), to = RandomWeights(rng, n);
      // Global batch 8: the ramp starts at position 80 and lasts 8 * ramp_steps.
      PhaseSchedule s({{0, from}, {10, to, ramp_steps}}, 8);
      for (int p = 0; p < 80; ++p) s.Next();
      const std::vector<double> a = Normalized(from), b = Normalized(to);
      const double length = 8.0 * static_cast<double>(ramp_steps);
      std::vector<double> share(n, 0);
      double worst = 0;
      for (uint64_t q = 1; q <= 8 * 500; ++q) {
        s.Next();
        ASSERT_EQ(s.state().phases.size(), 2u);
        ASSERT_EQ(s.state().phases[1].ramp, 8u * ramp_steps);
        for (size_t k = 0; k < n; ++k) {
          if (q % 97 == 0 || q < 64) share[k] = RampShare(a[k], b[k], length, q);
          if (q % 97 != 0 && q >= 64) continue;
          const double c = static_cast<double>(s.state().phases[1].counts[k]);
          worst = std::max(worst, std::fabs(c - share[k]));
        }
      }
      EXPECT_LT(worst, 1.0) << n << " sources, ramp_steps " << ramp_steps;
    }
  }
}

TEST(PhaseScheduleRamps, AResumeWithAnotherGlobalBatchFinishesTheSameRamp) {
  const std::vector<MixturePhase> phases = {{0, {1, 0}}, {4, {0, 1}, 10}};
  PhaseSchedule run(phases, 8);  // The ramp: positions 32 to 112.
  for (int p = 0; p < 64; ++p) run.Next();
  PhaseSchedule resumed(phases, 3);  // Global batch 3, same positions.
  resumed.Reset(run.state());
  for (int p = 0; p < 200; ++p) ASSERT_EQ(resumed.Next(), run.Next()) << p;
  EXPECT_EQ(resumed.state().phases[1].ramp, 80u);
  // The ramp moves the share linearly: source 1 gets half of the ramp's
  // positions, then all of them.
  EXPECT_EQ(run.state().phases[1].counts, (std::vector<uint64_t>{40, 192}));
}

TEST(PhaseScheduleCaps, ACappedSourceStopsAndItsWeightIsSharedOut) {
  // Source 0 at most 30 draws: a new run with weights {0, 2/3, 1/3} after.
  PhaseSchedule s({{0, {0.5, 0.25, 0.125, 0.125}}}, 4, {30, kNoCap, kNoCap, kNoCap});
  for (int p = 0; p < 60; ++p) s.Next();
  EXPECT_EQ(s.totals()[0], 30u);
  for (int p = 0; p < 3000; ++p) {
    ASSERT_NE(s.Next(), 0u) << p;
    const PhaseRun& run = s.state().phases.back();
    uint64_t q = 0;
    for (uint64_t c : run.counts) q += c;
    ASSERT_LT(std::fabs(static_cast<double>(run.counts[1]) - q * 0.5), 1.0) << p;
    ASSERT_LT(std::fabs(static_cast<double>(run.counts[2]) - q * 0.25), 1.0) << p;
  }
  ASSERT_EQ(s.state().phases.size(), 2u);
  EXPECT_EQ(s.state().phases[1].phase, 0u);
  // A Reset inside the capped run continues it.
  PhaseSchedule resumed({{0, {0.5, 0.25, 0.125, 0.125}}}, 4, {30, kNoCap, kNoCap, kNoCap});
  resumed.Reset(s.state());
  for (int p = 0; p < 500; ++p) ASSERT_EQ(resumed.Next(), s.Next()) << p;
}

TEST(PhaseScheduleCaps, APhaseWhoseSourcesAreAllCappedIsExhausted) {
  PhaseSchedule s({{0, {1, 1}}, {10, {1, 0}}}, 2, {12, kNoCap});
  for (int p = 0; p < 20; ++p) ASSERT_NE(s.Next(), PhaseSchedule::kExhausted);
  EXPECT_EQ(s.totals(), (std::vector<uint64_t>{10, 10}));
  s.Next();
  s.Next();
  EXPECT_EQ(s.totals()[0], 12u);
  const uint64_t at = s.position();
  EXPECT_EQ(s.Next(), PhaseSchedule::kExhausted);
  EXPECT_EQ(s.Next(), PhaseSchedule::kExhausted);
  EXPECT_EQ(s.position(), at);
}

TEST(PhaseScheduleRamps, ARampToAPhaseWithACappedSourceLeavesItOutAtBothEnds) {
  PhaseSchedule s({{0, {1, 1, 0}}, {5, {0, 1, 1}, 20}}, 4, {8, kNoCap, kNoCap});
  for (int p = 0; p < 400; ++p) s.Next();
  EXPECT_EQ(s.totals()[0], 8u);
  EXPECT_GT(s.totals()[2], 100u);
}

TEST(PhaseScheduleRamps, RampStepsAreCheckedWithThePhase) {
  const std::vector<std::string> names = {"web", "code"};
  EXPECT_TRUE(CheckPhases({{0, {1, 0}}, {10, {0, 1}, 100}}, names).ok());
  Status first = CheckPhases({{0, {1, 0}, 5}}, names);
  EXPECT_NE(first.message().find("phase 0 (start_step 0): ramp_steps is 5; the first phase"),
            std::string::npos)
      << first.message();
  Status negative = CheckPhases({{0, {1, 0}}, {10, {0, 1}, -1}}, names);
  EXPECT_NE(negative.message().find("ramp_steps is -1; it must be >= 0"), std::string::npos)
      << negative.message();
  EXPECT_EQ(FormatPhases({{0, {1, 0}}, {10, {0, 1}, 100}}),
            "[(0, [1, 0]), (10, [0, 1], ramp_steps=100)]");
}

}  // namespace
}  // namespace tokpack
