#include "tokpack/mixture_plan.h"

#include <gtest/gtest.h>

#include <cmath>

#include "reader/phase_schedule.h"

namespace tokpack {
namespace {

using Kind = MixtureEvent::Kind;

std::vector<MixtureEvent> EventsOf(const MixturePlan& plan, Kind kind) {
  std::vector<MixtureEvent> out;
  for (const MixtureEvent& e : plan.events) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

// Row i of a row-major per-source array.
template <typename T>
std::vector<T> Row(const std::vector<T>& a, const MixturePlan& plan, size_t i) {
  return std::vector<T>(a.begin() + static_cast<ptrdiff_t>(i * plan.sources),
                        a.begin() + static_cast<ptrdiff_t>((i + 1) * plan.sources));
}

TEST(MixturePlan, EveryStepDrawsTheGlobalBatchAndTheCountsAreTheSchedules) {
  const std::vector<MixturePhase> phases = {{0, {3, 1, 0}}, {10, {1, 1, 2}}};
  const uint64_t g = 7;
  auto plan = PlanMixture({"a", "b", "c"}, phases, {}, {}, g, 25, 1);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->steps.size(), 25u);
  PhaseSchedule schedule(phases, g);
  std::vector<uint64_t> before(3, 0);
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    EXPECT_EQ(plan->steps[i], static_cast<int64_t>(i));
    for (uint64_t k = 0; k < g; ++k) schedule.Next();
    const std::vector<uint64_t> drawn = Row(plan->drawn, *plan, i);
    EXPECT_EQ(drawn, schedule.totals()) << "step " << i;
    uint64_t sum = 0;
    for (size_t s = 0; s < 3; ++s) sum += drawn[s] - before[s];
    EXPECT_EQ(sum, g) << "step " << i;
    before = drawn;
    EXPECT_EQ(plan->phase[i], i < 10 ? 0u : 1u);
  }
  // Flat phases: the planned weights are the phase's, normalized.
  EXPECT_EQ(Row(plan->planned, *plan, 3), (std::vector<double>{0.75, 0.25, 0}));
  EXPECT_EQ(Row(plan->planned, *plan, 10), (std::vector<double>{0.25, 0.25, 0.5}));
  const std::vector<MixtureEvent> starts = EventsOf(*plan, Kind::kPhaseStart);
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].step, 0);
  EXPECT_EQ(starts[1].step, 10);
  EXPECT_EQ(starts[1].phase, 1u);
  EXPECT_TRUE(EventsOf(*plan, Kind::kRampEnd).empty());
}

TEST(MixturePlan, PlannedWeightsInterpolateDuringARamp) {
  // From (1, 0) to (0, 1) over steps 4..7: the mean rate over step 4 + k is
  // the ramp's value at its middle, (k + 0.5) / 4.
  const std::vector<MixturePhase> phases = {{0, {1, 0}}, {4, {0, 1}, 4}};
  auto plan = PlanMixture({"a", "b"}, phases, {}, {}, 8, 12, 1);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  for (int k = 0; k < 4; ++k) {
    const std::vector<double> w = Row(plan->planned, *plan, 4 + k);
    EXPECT_NEAR(w[1], (k + 0.5) / 4, 1e-12) << "step " << 4 + k;
    EXPECT_NEAR(w[0] + w[1], 1, 1e-12);
  }
  EXPECT_EQ(Row(plan->planned, *plan, 8), (std::vector<double>{0, 1}));
  const std::vector<MixtureEvent> ends = EventsOf(*plan, Kind::kRampEnd);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].step, 8);
  EXPECT_EQ(ends[0].phase, 1u);
  // The realised draws follow the ramp: within one draw of its share.
  const std::vector<uint64_t> at7 = Row(plan->drawn, *plan, 7);
  EXPECT_LT(std::fabs(static_cast<double>(at7[1]) - 16.0), 1.0);  // 8 * (1/8+3/8+5/8+7/8).
}

TEST(MixturePlan, CapsShareTheWeightOutAndExhaustionEndsThePlan) {
  // a: 1 epoch of 6 samples, b: 3 epochs of 10, drawn 1:1 by 4 a step.
  const std::vector<MixturePhase> phases = {{0, {1, 1}}};
  auto plan = PlanMixture({"a", "b"}, phases, {1, 3}, {6, 10}, 4, 100, 1);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // a: 6 draws (step 2, at 2 per step); b: 30 draws, 6 after step 2 and 4
  // per step from step 3 on: its 30th in step 8; step 9 cannot be filled.
  const std::vector<MixtureEvent> caps = EventsOf(*plan, Kind::kCap);
  ASSERT_EQ(caps.size(), 2u);
  EXPECT_EQ(caps[0].source, 0u);
  EXPECT_EQ(caps[0].step, 2);
  EXPECT_EQ(caps[1].source, 1u);
  EXPECT_EQ(caps[1].step, 8);
  const std::vector<MixtureEvent> end = EventsOf(*plan, Kind::kExhausted);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].step, 9);
  ASSERT_EQ(plan->steps.back(), 8);
  EXPECT_EQ(Row(plan->drawn, *plan, plan->steps.size() - 1), (std::vector<uint64_t>{6, 30}));
  // After a's cap, b has all the weight.
  EXPECT_EQ(Row(plan->planned, *plan, 3), (std::vector<double>{0, 1}));
  EXPECT_EQ(Row(plan->planned, *plan, 0), (std::vector<double>{0.5, 0.5}));
}

TEST(MixturePlan, AStrideRecordsEveryKthStepAndTheLast) {
  auto plan = PlanMixture({"a", "b"}, {{0, {1, 2}}}, {}, {}, 3, 10, 4);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->steps, (std::vector<int64_t>{0, 4, 8, 9}));
  EXPECT_EQ(Row(plan->drawn, *plan, 3), (std::vector<uint64_t>{10, 20}));
}

TEST(MixturePlan, RefusesWhatTheLoaderRefuses) {
  EXPECT_FALSE(PlanMixture({"a"}, {{5, {1}}}, {}, {}, 1, 1, 1).ok());
  EXPECT_FALSE(PlanMixture({"a"}, {{0, {1}}}, {-1}, {5}, 1, 1, 1).ok());
  EXPECT_FALSE(PlanMixture({"a"}, {{0, {1}}}, {1}, {}, 1, 1, 1).ok());
  EXPECT_FALSE(PlanMixture({"a"}, {{0, {1}}}, {}, {}, 0, 1, 1).ok());
  EXPECT_FALSE(PlanMixture({"a"}, {{0, {1}}}, {}, {}, 1, 0, 1).ok());
  EXPECT_FALSE(PlanMixture({"a"}, {{0, {1}}}, {}, {}, 1, 1, 0).ok());
  EXPECT_FALSE(PlanMixture({"a"}, {{0, {1}}}, {}, {}, 4, INT64_MAX / 2, 1).ok());
}

}  // namespace
}  // namespace tokpack
