#include "reader/phase_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

namespace tokpack {
namespace {

// Draws `n` positions and checks, over every prefix of every phase, that
// each source's draws in the phase stay under one from its weight's share of
// the phase; returns how many positions each phase drew.
std::vector<uint64_t> DrawAndCheckPrefixes(PhaseSchedule* s,
                                           const std::vector<MixturePhase>& phases, uint64_t n) {
  std::vector<uint64_t> lengths;
  double worst = 0;
  for (uint64_t p = 0; p < n; ++p) {
    s->Next();
    const MixtureState& state = s->state();
    const size_t j = state.phases.size() - 1;
    lengths.resize(j + 1, 0);
    const uint64_t q = ++lengths[j];
    double sum = 0;
    for (double w : phases[j].weights) sum += w;
    for (size_t k = 0; k < phases[j].weights.size(); ++k) {
      const double share = phases[j].weights[k] / sum * static_cast<double>(q);
      worst = std::max(worst, std::fabs(static_cast<double>(state.phases[j].counts[k]) - share));
      if (phases[j].weights[k] == 0) {
        EXPECT_EQ(state.phases[j].counts[k], 0u) << "phase " << j;
      }
    }
  }
  EXPECT_LT(worst, 1.0) << FormatPhases(phases);
  return lengths;
}

TEST(PhaseSchedule, EveryPrefixOfOnePhaseStaysWithinOneDrawOfTheWeights) {
  const std::vector<std::vector<double>> cases = {
      {1},
      {0.7, 0.3},
      {1, 1, 1},
      {0.5, 0.25, 0.125, 0.125},
      {3, 1e-3},
      {0.31, 0.29, 0.4},
      // Twelve sources: the largest-deficit rule strayed 1.064 draws here.
      {0.005484, 0.000449, 0.098256, 0.008212, 0.005613, 0.3758, 0.000748, 0.032609, 0, 0.000338,
       0.288621, 0.183872}};
  for (const auto& weights : cases) {
    PhaseSchedule s({{0, weights}}, 8);
    DrawAndCheckPrefixes(&s, {{0, weights}}, 200000);
  }
}

TEST(PhaseSchedule, EveryPrefixOfEveryPhaseStaysWithinOneDrawOfItsWeights) {
  // Global batch 10: phase j starts at position 10 * start_step.
  const std::vector<std::vector<MixturePhase>> cases = {
      {{0, {0.9, 0.1}}, {3000, {0.5, 0.5}}, {9000, {0.1, 0.9}}},
      // Sources joining (weight 0 first) and leaving (weight 0 later).
      {{0, {0.7, 0.3, 0}}, {2500, {0.4, 0, 0.6}}, {7000, {0, 1, 0}}, {9000, {1, 1, 1}}},
      {{0, {1, 0, 0, 0}},
       {1, {0, 1, 0, 0}},
       {2, {0.25, 0.25, 0.25, 0.25}},
       {5000, {3, 1e-3, 0, 2}}},
  };
  for (const auto& phases : cases) {
    PhaseSchedule s(phases, 10);
    const std::vector<uint64_t> lengths = DrawAndCheckPrefixes(&s, phases, 120000);
    ASSERT_EQ(lengths.size(), phases.size());
    for (size_t j = 0; j + 1 < phases.size(); ++j) {
      EXPECT_EQ(lengths[j],
                10 * static_cast<uint64_t>(phases[j + 1].start_step - phases[j].start_step))
          << "phase " << j;
    }
  }
}

TEST(PhaseSchedule, APhaseDrawsWhatAFreshScheduleOfItsWeightsDraws) {
  // No catch-up: after 9,000 positions at 0.9 / 0.1, the phase at 0.1 / 0.9
  // does not make up for the earlier phase's shares; its first positions
  // are those of a run that began with its weights.
  PhaseSchedule changed({{0, {0.9, 0.1}}, {900, {0.1, 0.9}}}, 10);
  for (int p = 0; p < 9000; ++p) changed.Next();
  EXPECT_EQ(changed.totals(), (std::vector<uint64_t>{8100, 900}));
  PhaseSchedule fresh({{0, {0.1, 0.9}}}, 10);
  for (int p = 0; p < 1000; ++p) ASSERT_EQ(changed.Next(), fresh.Next()) << p;
  EXPECT_EQ(changed.state().phases[1].counts, (std::vector<uint64_t>{100, 900}));
  EXPECT_EQ(changed.totals(), (std::vector<uint64_t>{8200, 1800}));
}

TEST(PhaseSchedule, ResetContinuesTheSameSequence) {
  const std::vector<MixturePhase> phases = {{0, {0.6, 0.3, 0.1}}, {100, {0, 0.5, 0.5}}};
  PhaseSchedule a(phases, 8);
  for (int i = 0; i < 776; ++i) a.Next();  // A batch boundary: 97 steps of 8.
  PhaseSchedule b(phases, 8);
  b.Reset(a.state());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.Next(), b.Next());
  EXPECT_EQ(a.state().phases, b.state().phases);
}

TEST(PhaseSchedule, AfterAResetStepsContinueAndPhasesStartAtTheBatchesOfTheNewGlobalBatch) {
  const std::vector<MixturePhase> phases = {{0, {1, 0}}, {12, {0, 1}}, {13, {1, 1}}, {20, {1, 0}}};
  PhaseSchedule saved(phases, 12);
  for (int p = 0; p < 60; ++p) saved.Next();  // Steps 0..4 of 12 positions.
  ASSERT_EQ(saved.state().step, 5);
  // Global batch 5: steps continue at 5, so phase 1 (step 12) starts at
  // 60 + 7 * 5, phase 2 one batch later, phase 3 at 60 + 15 * 5.
  PhaseSchedule shrunk(phases, 5);
  shrunk.Reset(saved.state());
  for (int p = 0; p < 35; ++p) ASSERT_EQ(shrunk.Next(), 0u) << p;
  EXPECT_EQ(shrunk.state().step, 12);
  ASSERT_EQ(shrunk.state().phases.size(), 1u);
  for (int p = 0; p < 5; ++p) ASSERT_EQ(shrunk.Next(), 1u) << p;
  EXPECT_EQ(shrunk.state().phases.size(), 2u);
  for (int p = 0; p < 35; ++p) shrunk.Next();
  ASSERT_EQ(shrunk.state().phases.size(), 3u);
  EXPECT_EQ(shrunk.state().phases[2].counts, (std::vector<uint64_t>{18, 17}));
  EXPECT_EQ(shrunk.state().step, 20);
  EXPECT_EQ(shrunk.Next(), 0u);
  EXPECT_EQ(shrunk.state().phases.size(), 4u);
  // Global batch 20: phase 1 at 60 + 7 * 20; the step count never goes back.
  PhaseSchedule grown(phases, 20);
  grown.Reset(saved.state());
  for (int p = 0; p < 140; ++p) ASSERT_EQ(grown.Next(), 0u) << p;
  EXPECT_EQ(grown.state().step, 12);
  EXPECT_EQ(grown.Next(), 1u);
  EXPECT_EQ(grown.state().step, 13);
  EXPECT_EQ(grown.state().phases.size(), 2u);
}

TEST(PhaseSchedule, InvalidPhaseListsAreRefusedNamingThePhase) {
  const std::vector<std::string> names = {"web", "code"};
  const auto refused = [&](const std::vector<MixturePhase>& phases, const std::string& needle) {
    Status s = CheckPhases(phases, names);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << FormatPhases(phases);
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  EXPECT_TRUE(CheckPhases({{0, {0.9, 0.1}}, {9000, {0, 1}}}, names).ok());
  refused({}, "at least one phase");
  refused({{5, {1, 1}}}, "phase 0 (start_step 5): the first phase must start at step 0");
  refused({{0, {1, 1}}, {9000, {1, 1}}, {9000, {1, 2}}},
          "phase 2 (start_step 9000) must start after phase 1 (start_step 9000)");
  refused({{0, {1, 1}}, {10, {1}}}, "phase 1 (start_step 10) has 1 weights for 2 datasets");
  refused({{0, {1, 1}}, {10, {0.9, -0.1}}},
          "phase 1 (start_step 10): the weight of 'code' is -0.1");
  refused({{0, {1, std::nan("")}}}, "the weight of 'code' is nan");
  refused({{0, {0, 0}}}, "phase 0 (start_step 0): every weight is 0");
  refused({{0, {1e308, 1e308}}}, "add up past the double range");
}

TEST(PhaseSchedule, PhasesPrintWithTheirWeightsInTheShortestForm) {
  EXPECT_EQ(FormatWeights({0.9, 0.1}), "[0.9, 0.1]");
  EXPECT_EQ(FormatPhases({{0, {0.9, 0.1}}, {9000, {0.5, 0.5}}}),
            "[(0, [0.9, 0.1]), (9000, [0.5, 0.5])]");
}

}  // namespace
}  // namespace tokpack
