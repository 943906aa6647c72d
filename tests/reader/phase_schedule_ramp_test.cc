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

// The mean rate of a source over position x of a ramp of `ramp` positions
// from `from` to `to`: a linear rate's mean over [x, x + 1] is its value at
// x + 1/2, and the position the ramp ends in splits at the end.
double RampRate(double from, double to, double ramp, uint64_t x) {
  const double lo = static_cast<double>(x);
  if (lo + 1 <= ramp) return from + (to - from) * (lo + 0.5) / ramp;
  if (lo >= ramp) return to;
  const double a = ramp - lo;
  return a * (from + (to - from) * (lo + a / 2) / ramp) + (1 - a) * to;
}

std::vector<double> Normalized(std::vector<double> w) {
  double sum = 0;
  for (double x : w) sum += x;
  for (double& x : w) x /= sum;
  return w;
}

// Draws phase 1 of `phases` (phase 0 first: start_step * G positions) for
// `positions` positions and returns the largest |count - share| over every
// prefix, the shares summed here position by position.
double WorstRampDeviation(const std::vector<MixturePhase>& phases, uint64_t g, uint64_t positions) {
  PhaseSchedule s(phases, g);
  for (uint64_t p = 0; p < static_cast<uint64_t>(phases[1].start_step) * g; ++p) s.Next();
  const std::vector<double> a = Normalized(phases[0].weights), b = Normalized(phases[1].weights);
  const double length = static_cast<double>(phases[1].ramp_steps * static_cast<int64_t>(g));
  std::vector<double> share(a.size(), 0);
  double worst = 0;
  for (uint64_t q = 0; q < positions; ++q) {
    s.Next();
    for (size_t k = 0; k < a.size(); ++k) {
      share[k] += RampRate(a[k], b[k], length, q);
      const double c = static_cast<double>(s.state().phases[1].counts[k]);
      worst = std::max(worst, std::fabs(c - share[k]));
    }
  }
  EXPECT_EQ(s.state().phases.size(), 2u);
  EXPECT_EQ(s.state().phases[1].ramp, g * static_cast<uint64_t>(phases[1].ramp_steps));
  return worst;
}

TEST(PhaseScheduleRamps, EveryPrefixOfARampStaysWithinOneDrawOfItsShare) {
  std::mt19937_64 rng(11);
  for (size_t n : {2, 3, 7, 40}) {
    for (int64_t ramp_steps : {1, 3, 50, 400}) {
      const std::vector<MixturePhase> phases = {{0, RandomWeights(rng, n)},
                                                {10, RandomWeights(rng, n), ramp_steps}};
      EXPECT_LT(WorstRampDeviation(phases, 8, 8 * 450), 1.0)
          << n << " sources, ramp_steps " << ramp_steps;
    }
  }
}

TEST(PhaseScheduleRamps, ASourceRampingOutDrawsItsLastShareByTheRampsEnd) {
  // Its ramp share is an integer (exactly, or but for rounding): its last
  // draw is due at the ramp's end, not never (review of the first version).
  const std::vector<std::pair<std::vector<MixturePhase>, uint64_t>> cases = {
      {{{0, {0, 0, 2}}, {1, {2, 1, 0}, 2}}, 1},   {{{0, {2, 7}}, {1, {7, 0}, 18}}, 5},
      {{{0, {1, 1, 0}}, {1, {1, 0, 2}, 4}}, 4},   {{{0, {1, 1, 0}}, {1, {1, 0, 2}, 4}}, 2},
      {{{0, {7, 7, 1}}, {1, {9, 0, 7}, 18}}, 10},
  };
  for (const auto& [phases, g] : cases) {
    EXPECT_LT(WorstRampDeviation(phases, g, g * 60), 1.0) << FormatPhases(phases) << " G " << g;
  }
  std::mt19937_64 rng(5);
  for (int i = 0; i < 300; ++i) {
    const size_t n = 2 + rng() % 4;
    std::vector<MixturePhase> phases = {{0, {}}, {1, {}, static_cast<int64_t>(1 + rng() % 20)}};
    for (auto* w : {&phases[0].weights, &phases[1].weights}) {
      for (size_t k = 0; k < n; ++k) w->push_back(static_cast<double>(rng() % 10));
      (*w)[rng() % n] += 1;
    }
    const uint64_t g = 1 + rng() % 10;
    ASSERT_LT(WorstRampDeviation(phases, g, g * (phases[1].ramp_steps + 5)), 1.0)
        << FormatPhases(phases) << " G " << g;
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
    // The run's counts, apart from the phase's: the state keeps both.
    const std::vector<uint64_t>& run = s.state().run;
    ASSERT_EQ(run.size(), 4u);
    uint64_t q = 0;
    for (uint64_t c : run) q += c;
    ASSERT_LT(std::fabs(static_cast<double>(run[1]) - q * 0.5), 1.0) << p;
    ASSERT_LT(std::fabs(static_cast<double>(run[2]) - q * 0.25), 1.0) << p;
  }
  ASSERT_EQ(s.state().phases.size(), 1u);
  EXPECT_EQ(s.state().phases[0].counts[0], 30u);
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
