// Mixture phases through the loader: what each phase draws, resumes across
// phase changes (also elastic), changed and added phases and datasets,
// SetPhases, version 1 cursors and the per-source and per-phase stats.
#include <gtest/gtest.h>

#include <set>

#include "reader/cursor.h"
#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"
#include "tokpack/loader.h"
#include "tokpack/manifest.h"

namespace tokpack {
namespace {

using Rows = std::vector<std::vector<int64_t>>;

class LoaderPhasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Salts 11, 777 and 3 differ mod 16, and a row's first token is
    // 112 * sample + salt (mod 60000): it tells the dataset (SourceOf).
    testing::WriteSyntheticDataset(dir_.Join("a"), testing::CyclingLengths(400, 60), 11, 3000);
    testing::WriteSyntheticDataset(dir_.Join("b"), testing::CyclingLengths(150, 90), 777, 5000);
    testing::WriteSyntheticDataset(dir_.Join("c"), testing::CyclingLengths(200, 70), 3, 4000);
    for (const char* name : {"a", "b", "c"}) ds_.push_back(*Dataset::Open(dir_.Join(name)));
  }
  static LoaderOptions Opts(int64_t batch, int rank = 0, int world = 1) {
    LoaderOptions o;
    o.seq_len = 16;
    o.batch_size = batch;
    o.seed = 1234;
    o.rank = rank;
    o.world_size = world;
    o.threads = 2;
    o.prefetch = 3;
    return o;
  }
  // A loader over the first `n` datasets.
  std::unique_ptr<Loader> Make(size_t n, const std::vector<MixturePhase>& phases,
                               const LoaderOptions& o) {
    auto l = Loader::Create({ds_.begin(), ds_.begin() + n}, phases, o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(*l) : nullptr;
  }
  // Rows of the next `steps` batches, in order.
  static Rows Take(Loader* l, int steps) {
    Rows rows;
    for (int i = 0; i < steps; ++i) {
      auto b = l->Next();
      EXPECT_TRUE(b.ok() && *b) << (b.ok() ? "end" : b.status().ToString());
      if (!b.ok() || !*b) break;
      const int64_t* in = static_cast<const int64_t*>((*b)->inputs());
      for (int64_t r = 0; r < (*b)->batch_size(); ++r)
        rows.emplace_back(in + r * 16, in + r * 16 + 16);
    }
    return rows;
  }
  static size_t SourceOf(const std::vector<int64_t>& row) {
    switch (row[0] % 16) {
      case 11:
        return 0;
      case 9:
        return 1;  // 777 % 16.
      case 3:
        return 2;
    }
    ADD_FAILURE() << "row of no dataset: " << row[0];
    return 3;
  }
  static std::vector<size_t> Sources(const Rows& rows) {
    std::vector<size_t> out;
    for (const auto& r : rows) out.push_back(SourceOf(r));
    return out;
  }
  static Rows Slice(const Rows& rows, size_t from, size_t to) {
    return Rows(rows.begin() + from, rows.begin() + to);
  }
  testing::TempDir dir_;
  std::vector<std::shared_ptr<Dataset>> ds_;
};

TEST_F(LoaderPhasesTest, EachPhaseDrawsItsWeightsFromItsFirstBatch) {
  // After 100 positions at 0.9 / 0.1, the batch of step 10 is 1 + 9: no
  // catch-up on the first phase's shares.
  auto l = Make(2, {{0, {0.9, 0.1}}, {10, {0.1, 0.9}}}, Opts(10));
  const std::vector<size_t> src = Sources(Take(l.get(), 12));
  for (int step : {10, 11}) {
    const auto first = src.begin() + step * 10;
    EXPECT_EQ(std::count(first, first + 10, 1u), 9) << "step " << step;
  }
  EXPECT_EQ(std::count(src.begin(), src.begin() + 100, 1u), 10);
}

TEST_F(LoaderPhasesTest, EachDatasetDrawsItsOrderAcrossPhasesWithoutRepeatOrSkip) {
  const std::vector<MixturePhase> phases = {
      {0, {0.5, 0.5}}, {20, {0, 1}}, {40, {0.9, 0.1}}, {70, {0.2, 0.8}}};
  auto l = Make(2, phases, Opts(10));
  const uint64_t nb = l->SamplesPerSource()[1];
  const Rows rows = Take(l.get(), 100);
  Rows from_b, from_a;
  for (const auto& r : rows) (SourceOf(r) == 1 ? from_b : from_a).push_back(r);
  ASSERT_GT(from_b.size(), nb);  // Into b's second epoch.
  // b's first epoch is each of its samples once; a's draws never repeat.
  EXPECT_EQ(std::set<std::vector<int64_t>>(from_b.begin(), from_b.begin() + nb).size(), nb);
  EXPECT_EQ(std::set<std::vector<int64_t>>(from_a.begin(), from_a.end()).size(), from_a.size());
  // Whatever the mixture, b's k-th draw is the k-th of its order: the same
  // as under one constant mixture.
  auto constant = Make(2, {{0, {0.5, 0.5}}}, Opts(10));
  Rows constant_b;
  for (const auto& r : Take(constant.get(), 120)) {
    if (SourceOf(r) == 1) constant_b.push_back(r);
  }
  ASSERT_GE(constant_b.size(), from_b.size());
  EXPECT_EQ(from_b, Slice(constant_b, 0, from_b.size()));
}

TEST_F(LoaderPhasesTest, ResumeAcrossAPhaseBoundaryFromFourRanksToTwo) {
  const std::vector<MixturePhase> phases = {{0, {0.7, 0.3}}, {6, {0.2, 0.8}}};
  std::vector<std::unique_ptr<Loader>> four;
  for (int r = 0; r < 4; ++r) four.push_back(Make(2, phases, Opts(3, r, 4)));
  std::vector<Rows> want(4);  // An uninterrupted run, per rank: 10 steps.
  for (int r = 0; r < 4; ++r) want[r] = Take(Make(2, phases, Opts(3, r, 4)).get(), 10);
  for (auto& l : four) Take(l.get(), 5);
  const std::string state = four[0]->SaveState();  // Position 60, step 5.
  EXPECT_NE(state.find("\"position\":60,\"step\":5,"), std::string::npos) << state;
  // The same world size: identical batches, phase 1 at step 6 as before.
  for (int r = 0; r < 4; ++r) {
    auto again = Make(2, phases, Opts(3, r, 4));
    ASSERT_TRUE(again->LoadState(state).ok());
    EXPECT_EQ(Take(again.get(), 5), Slice(want[r], 15, 30)) << "rank " << r;
  }
  // Two ranks of 3: the steps continue at 5, so phase 1 starts one batch of
  // 6 on, at 66, as in a run of global batch 6 whose phase 1 is at step 11
  // (the reference: one rank of 6).
  const Rows reference = Take(Make(2, {{0, {0.7, 0.3}}, {11, {0.2, 0.8}}}, Opts(6)).get(), 18);
  std::vector<std::unique_ptr<Loader>> two;
  for (int r = 0; r < 2; ++r) {
    two.push_back(Make(2, phases, Opts(3, r, 2)));
    ASSERT_TRUE(two.back()->LoadState(state).ok());
    EXPECT_EQ(two.back()->Step(), 5);
  }
  // Saved before a batch, the cursor is the one loaded.
  EXPECT_EQ(two[0]->SaveState(), state);
  Rows got;
  for (int s = 0; s < 8; ++s) {
    for (auto& l : two) {
      for (auto& row : Take(l.get(), 1)) got.push_back(row);
    }
  }
  EXPECT_EQ(got, Slice(reference, 60, 108));
  EXPECT_EQ(two[0]->Step(), 13);
  const LoaderStats stats = two[1]->Stats();
  ASSERT_EQ(stats.phases.size(), 2u);
  EXPECT_EQ(stats.phases[1].start_step, 6);
  EXPECT_EQ(stats.phases[1].start_position, 66u);
  std::vector<uint64_t> drawn(2, 0);
  for (size_t src : Sources(Slice(reference, 66, 108))) ++drawn[src];
  EXPECT_EQ(stats.phases[1].samples, drawn);
}

TEST_F(LoaderPhasesTest, ResumeOnMoreRanksContinuesTheStepCount) {
  // Two ranks of 3 begin phase 1 at step 7 (position 42) and save at 60,
  // step 10; four ranks of 3 continue at step 10 (not ceil(60 / 12) = 5:
  // the count never goes back), in phase 1, and begin phase 2 at step 12.
  const std::vector<MixturePhase> phases = {{0, {0.7, 0.3}}, {7, {0.2, 0.8}}, {12, {1, 1}}};
  // The reference: one rank of 6 to position 60, then global batch 12
  // from step 10, so phase 2 at 60 + 2 * 12 = 84 = step 14 of 6.
  const Rows reference =
      Take(Make(2, {{0, {0.7, 0.3}}, {7, {0.2, 0.8}}, {14, {1, 1}}}, Opts(6)).get(), 18);
  std::vector<std::unique_ptr<Loader>> two;
  for (int r = 0; r < 2; ++r) two.push_back(Make(2, phases, Opts(3, r, 2)));
  for (auto& l : two) Take(l.get(), 10);
  const std::string state = two[0]->SaveState();
  Rows got;
  std::vector<std::unique_ptr<Loader>> four;
  for (int r = 0; r < 4; ++r) {
    four.push_back(Make(2, phases, Opts(3, r, 4)));
    ASSERT_TRUE(four.back()->LoadState(state).ok());
  }
  EXPECT_EQ(four[0]->Step(), 10);
  for (int s = 0; s < 4; ++s) {
    for (auto& l : four) {
      for (auto& row : Take(l.get(), 1)) got.push_back(row);
    }
  }
  EXPECT_EQ(got, Slice(reference, 60, 108));
  EXPECT_EQ(four[0]->Step(), 14);
  EXPECT_EQ(four[0]->Stats().phases.at(2).start_position, 84u);
  // A phase the saving run did not have before its step 10 is refused.
  Status s =
      Make(2, {{0, {0.7, 0.3}}, {7, {0.2, 0.8}}, {9, {0, 1}}}, Opts(3, 0, 4))->LoadState(state);
  EXPECT_NE(s.message().find("phase 2 (start_step 9) with weights [0, 1] starts before step 10"),
            std::string::npos)
      << s.message();
}

TEST_F(LoaderPhasesTest, MaxStepsCountsTheStepsOfTheWholeRunAcrossAnElasticResume) {
  LoaderOptions o = Opts(3, 0, 2);
  o.max_steps = 12;
  auto first = Make(2, {{0, {0.5, 0.5}}}, o);
  Take(first.get(), 4);
  o.world_size = 4;  // Global batch 12 from step 4: 8 steps left.
  auto second = Make(2, {{0, {0.5, 0.5}}}, o);
  ASSERT_TRUE(second->LoadState(first->SaveState()).ok());
  EXPECT_EQ(second->RemainingSteps(), 8);
  Take(second.get(), 8);
  auto end = second->Next();
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end, nullptr);
  EXPECT_EQ(second->Step(), 12);
}

TEST_F(LoaderPhasesTest, AChangedFuturePhaseAppliesExactlyAtItsStep) {
  auto first = Make(2, {{0, {0.7, 0.3}}, {100, {0.5, 0.5}}}, Opts(3));
  Take(first.get(), 20);
  const std::vector<MixturePhase> changed = {{0, {0.7, 0.3}}, {30, {0, 1}}};
  auto resumed = Make(2, changed, Opts(3));
  ASSERT_TRUE(resumed->LoadState(first->SaveState()).ok());
  const Rows got = Take(resumed.get(), 20);
  EXPECT_EQ(got, Slice(Take(Make(2, changed, Opts(3)).get(), 40), 60, 120));
  const std::vector<size_t> src = Sources(got);
  EXPECT_NE(std::count(src.begin(), src.begin() + 30, 0u), 0);
  EXPECT_EQ(std::count(src.begin() + 30, src.end(), 0u), 0);  // From step 30: b only.
}

TEST_F(LoaderPhasesTest, AChangedPastPhaseIsRefusedNamingThePhaseAndTheStep) {
  const std::vector<MixturePhase> phases = {{0, {0.9, 0.1}}, {10, {0.5, 0.5}}};
  auto l = Make(2, phases, Opts(3));
  Take(l.get(), 20);
  const std::string state = l->SaveState();
  const auto refused = [&](const std::vector<MixturePhase>& other,
                           const std::vector<std::string>& needles) {
    Status s = Make(2, other, Opts(3))->LoadState(state);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << FormatPhases(other);
    for (const auto& needle : needles) {
      EXPECT_NE(s.message().find(needle), std::string::npos) << needle << " in " << s.message();
    }
    EXPECT_EQ(s.message().find("0.9000"), std::string::npos) << s.message();
  };
  const std::string pass = "pass phases=[(0, [0.9, 0.1]), (10, [0.5, 0.5])]";
  refused({{0, {0.9, 0.1}}, {10, {0.6, 0.4}}},
          {"at step 20", "phase 1 (start_step 10) with weights [0.5, 0.5]", "[0.6, 0.4]", pass});
  refused({{0, {0.9, 0.1}}, {12, {0.5, 0.5}}}, {"phase 1 (start_step 12)", pass});
  refused({{0, {0.9, 0.1}}}, {"began phase 1 (start_step 10), which this loader lacks", pass});
  refused({{0, {0.9, 0.1}}, {10, {0.5, 0.5}}, {15, {0, 1}}},
          {"phase 2 (start_step 15) with weights [0, 1] starts before step 20", pass});
  // A phase at the saved step (or later) is new: it applies.
  EXPECT_TRUE(
      Make(2, {{0, {0.9, 0.1}}, {10, {0.5, 0.5}}, {20, {0, 1}}}, Opts(3))->LoadState(state).ok());
}

TEST_F(LoaderPhasesTest, DatasetsMayBeAppendedAndDroppedByWeightZeroButNotRemoved) {
  auto l = Make(2, {{0, {0.7, 0.3}}}, Opts(3));
  Take(l.get(), 10);
  const std::string state = l->SaveState();
  const std::vector<MixturePhase> grown = {{0, {0.7, 0.3, 0}}, {12, {0.5, 0, 0.5}}};
  auto resumed = Make(3, grown, Opts(3));
  ASSERT_TRUE(resumed->LoadState(state).ok());
  const Rows got = Take(resumed.get(), 10);
  EXPECT_EQ(got, Slice(Take(Make(3, grown, Opts(3)).get(), 20), 30, 60));
  const std::vector<size_t> src = Sources(got);
  EXPECT_EQ(std::count(src.begin(), src.begin() + 6, 2u), 0);  // c joins at step 12,
  EXPECT_EQ(std::count(src.begin() + 6, src.end(), 1u), 0);    // and b leaves.
  EXPECT_EQ(std::count(src.begin() + 6, src.end(), 2u), 12);
  EXPECT_EQ(Cursor::Parse(resumed->SaveState())->sources.size(), 3u);
  // An appended dataset is absent from the phases begun before it.
  Status s = Make(3, {{0, {0.7, 0.3, 0.1}}}, Opts(3))->LoadState(state);
  EXPECT_NE(s.message().find("pass phases=[(0, [0.7, 0.3, 0])]"), std::string::npos) << s.message();
  // A dataset the saved run had cannot go: it is named.
  s = Make(1, {{0, {1}}}, Opts(3))->LoadState(state);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("source 1 (fingerprint " + HashToHex(ds_[1]->fingerprint()) +
                             ") is missing"),
            std::string::npos)
      << s.message();
}

TEST_F(LoaderPhasesTest, SetPhasesStartsAPhaseWithTheNextBatch) {
  auto l = Make(2, {{0, {0.7, 0.3}}}, Opts(3));
  Take(l.get(), 10);  // The ring holds steps planned with the old phases.
  const std::vector<MixturePhase> annealed = {{0, {0.7, 0.3}}, {10, {0, 1}}};
  ASSERT_TRUE(l->SetPhases(annealed).ok());
  EXPECT_EQ(FormatPhases(l->Phases()), FormatPhases(annealed));
  const Rows got = Take(l.get(), 5);
  EXPECT_EQ(got, Slice(Take(Make(2, annealed, Opts(3)).get(), 15), 30, 45));
  for (size_t s : Sources(got)) EXPECT_EQ(s, 1u);
  // The phases begun stay; a list that changes them is refused, and the
  // loader keeps its own.
  Status s = l->SetPhases({{0, {0.5, 0.5}}});
  EXPECT_NE(s.message().find("at step 15, the run began phase 0 (start_step 0) with weights "
                             "[0.7, 0.3], this loader has phase 0 (start_step 0) with weights "
                             "[0.5, 0.5]"),
            std::string::npos)
      << s.message();
  s = l->SetPhases({{0, {0.7, 0.3}}, {10, {1}}});
  EXPECT_NE(s.message().find("phase 1 (start_step 10) has 1 weights for 2 datasets"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(FormatPhases(l->Phases()), FormatPhases(annealed));
  EXPECT_EQ(Sources(Take(l.get(), 1)), (std::vector<size_t>{1, 1, 1}));
}

TEST_F(LoaderPhasesTest, InvalidPhasesAreRefusedAtCreateNamingThePhase) {
  auto l = Loader::Create({ds_[0], ds_[1]}, {{0, {1, 1}}, {0, {1, 2}}}, Opts(3));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("phase 1 (start_step 0) must start after phase 0"),
            std::string::npos)
      << l.status().ToString();
  l = Loader::Create({{ds_[0], 1}, {ds_[1], -1}}, Opts(3));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("the weight of '" + ds_[1]->path() + "' is -1"),
            std::string::npos)
      << l.status().ToString();
}

TEST_F(LoaderPhasesTest, AVersionOneCursorStillLoads) {
  auto l = Make(2, {{0, {0.7, 0.3}}}, Opts(3));
  Take(l.get(), 7);
  const Cursor c = *Cursor::Parse(l->SaveState());
  std::string v1 = "{\"tokpack_cursor\":1,\"position\":" + std::to_string(c.position) +
                   ",\"seed\":1234,\"seq_len\":16,\"shuffle\":\"full\",\"block_size\":0,"
                   "\"block_window\":0,\"sources\":[";
  for (size_t s = 0; s < 2; ++s) {
    v1 += std::string(s ? "," : "") + "{\"fingerprint\":\"" + HashToHex(c.sources[s].fingerprint) +
          "\",\"weight\":" + (s ? "0.3" : "0.7") +
          ",\"consumed\":" + std::to_string(c.sources[s].consumed) + "}";
  }
  v1 += "]}";
  auto resumed = Make(2, {{0, {0.7, 0.3}}}, Opts(3));
  ASSERT_TRUE(resumed->LoadState(v1).ok()) << v1;
  EXPECT_EQ(resumed->SaveState(), l->SaveState());  // Now version 2, step 7.
  EXPECT_EQ(Take(resumed.get(), 5), Take(l.get(), 5));
  // Its weights are its one phase's.
  EXPECT_NE(Make(2, {{0, {0.5, 0.5}}}, Opts(3))->LoadState(v1).message().find("[0.7, 0.3]"),
            std::string::npos);
}

TEST_F(LoaderPhasesTest, StatsCountWhatWasServedPerSourceAndPhaseAcrossResumes) {
  const std::vector<MixturePhase> phases = {{0, {0.9, 0.1}}, {10, {0, 1}}};
  auto l = Make(2, phases, Opts(10));
  const uint64_t nb = l->SamplesPerSource()[1];
  Take(l.get(), 60);  // b: 10, then 500: into its second epoch.
  const LoaderStats s = l->Stats();
  ASSERT_EQ(s.sources.size(), 2u);
  EXPECT_EQ(s.sources[0].samples, 90u);
  EXPECT_EQ(s.sources[0].tokens, 90u * 16);
  EXPECT_EQ(s.sources[1].samples, 510u);
  EXPECT_EQ(s.sources[1].epochs_completed, 510 / nb);
  EXPECT_EQ(s.sources[1].epoch_samples, 510 % nb);
  ASSERT_EQ(s.phases.size(), 2u);
  EXPECT_EQ(s.phases[0].start_position, 0u);
  EXPECT_EQ(s.phases[0].samples, (std::vector<uint64_t>{90, 10}));
  EXPECT_EQ(s.phases[1].start_step, 10);
  EXPECT_EQ(s.phases[1].start_position, 100u);
  EXPECT_EQ(s.phases[1].weights, (std::vector<double>{0, 1}));
  EXPECT_EQ(s.phases[1].samples, (std::vector<uint64_t>{0, 500}));
  // A resumed loader (here with 2 ranks of 5) reports the same.
  auto resumed = Make(2, phases, Opts(5, 1, 2));
  ASSERT_TRUE(resumed->LoadState(l->SaveState()).ok());
  const LoaderStats r = resumed->Stats();
  EXPECT_EQ(r.sources[1].samples, 510u);
  EXPECT_EQ(r.phases[1].samples, s.phases[1].samples);
  EXPECT_EQ(r.phases[1].start_position, 100u);
}

TEST_F(LoaderPhasesTest, EpochsCountTheDatasetsSomePhaseDraws) {
  LoaderOptions o = Opts(10);
  o.epochs = 1;
  // c is in no phase: its samples are not part of an epoch.
  auto l = Make(3, {{0, {0.9, 0.1, 0}}, {10, {0, 1, 0}}}, o);
  const auto n = l->SamplesPerSource();
  EXPECT_EQ(l->RemainingSteps(), static_cast<int64_t>((n[0] + n[1]) / 10));
  // A phase set later that draws c makes the epoch longer.
  ASSERT_TRUE(l->SetPhases({{0, {0.9, 0.1, 0}}, {10, {0, 1, 1}}}).ok());
  EXPECT_EQ(l->RemainingSteps(), static_cast<int64_t>((n[0] + n[1] + n[2]) / 10));
}

TEST_F(LoaderPhasesTest, ASingleMixtureRefusesAWeightOfZero) {
  auto l = Loader::Create({{ds_[0], 1.0}, {ds_[1], 0.0}}, Opts(4));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("is 0; weights must be positive and finite"),
            std::string::npos)
      << l.status().ToString();
}

TEST_F(LoaderPhasesTest, LoadStateWithPhasesIsCheckedAgainstTheSavedRunOnly) {
  const std::vector<MixturePhase> phases = {{0, {0.9, 0.1}}, {5, {0.5, 0.5}}};
  auto early = Make(2, phases, Opts(4));
  Take(early.get(), 3);
  const std::string state = early->SaveState();  // Step 3: phase 1 not begun.
  auto late = Make(2, phases, Opts(4));
  Take(late.get(), 10);  // This loader began phase 1 itself.
  const std::vector<MixturePhase> changed = {{0, {0.9, 0.1}}, {5, {0, 1}}};
  ASSERT_TRUE(late->LoadState(state, changed).ok());
  EXPECT_EQ(late->Step(), 3);
  EXPECT_EQ(late->Phases()[1].weights, (std::vector<double>{0, 1}));
  Take(late.get(), 2);
  for (size_t src : Sources(Take(late.get(), 2))) EXPECT_EQ(src, 1u);
  // A refused load changes nothing.
  EXPECT_FALSE(late->LoadState(state, {{0, {0.5, 0.5}}}).ok());
  EXPECT_EQ(late->Step(), 7);
  EXPECT_EQ(late->Phases()[1].weights, (std::vector<double>{0, 1}));
}

}  // namespace
}  // namespace tokpack
