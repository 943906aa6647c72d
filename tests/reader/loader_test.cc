#include "tokpack/loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "reader/cursor.h"
#include "reader/dataset_internal.h"
#include "reader/loader_internal.h"
#include "reader/shuffle_plan.h"
#include "tests/reader/host_stage.h"
#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::TempDir;
using testing::TokenAt;

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteSyntheticDataset(dir_.Join("a"), testing::CyclingLengths(400, 60), 11, 3000);
    testing::WriteSyntheticDataset(dir_.Join("b"), testing::CyclingLengths(150, 90), 777, 5000);
    a_ = *Dataset::Open(dir_.Join("a"));
    b_ = *Dataset::Open(dir_.Join("b"));
  }
  LoaderOptions Opts(int rank = 0, int world = 1) {
    LoaderOptions o;
    o.seq_len = 16;
    o.batch_size = 3;
    o.seed = 1234;
    o.rank = rank;
    o.world_size = world;
    o.threads = 2;
    o.prefetch = 3;
    o.shuffle = mode_;
    if (mode_ == ShuffleMode::kWindow) {
      // The 3000-token shards (256-byte chunks) then hold two 1152-token
      // units of 287 samples each; windows of 2 units.
      o.seq_len = 4;
      o.window_chunks = 18;
    }
    return o;
  }
  std::unique_ptr<Loader> Make(const LoaderOptions& o, bool blend = false) {
    std::vector<Loader::Source> src = {{a_, 0.7}};
    if (blend) src.push_back({b_, 0.3});
    auto l = Loader::Create(src, o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return std::move(*l);
  }
  // Rows of a batch as vectors of input tokens.
  static std::vector<std::vector<int64_t>> Rows(const Batch& b) {
    std::vector<std::vector<int64_t>> rows;
    const int64_t* in = static_cast<const int64_t*>(b.inputs());
    for (int64_t r = 0; r < b.batch_size(); ++r) {
      rows.emplace_back(in + r * b.seq_len(), in + (r + 1) * b.seq_len());
    }
    return rows;
  }
  std::vector<std::vector<int64_t>> Take(Loader* l, int steps) {
    std::vector<std::vector<int64_t>> all;
    for (int i = 0; i < steps; ++i) {
      auto b = l->Next();
      EXPECT_TRUE(b.ok() && *b) << (b.ok() ? "end" : b.status().ToString());
      if (!b.ok() || !*b) break;
      for (auto& r : Rows(**b)) all.push_back(r);
    }
    return all;
  }
  TempDir dir_;
  std::shared_ptr<Dataset> a_, b_;
  ShuffleMode mode_ = ShuffleMode::kAuto;  // Opts()'s; auto is full on local data.
};

// The modes each order test runs under.
constexpr ShuffleMode kOrderModes[] = {ShuffleMode::kAuto, ShuffleMode::kWindow};

TEST_F(LoaderTest, WindowsAreSeqLenPlusOneTokensAtStrideSeqLen) {
  auto l = Make(Opts());
  auto b = *l->Next();
  const int64_t* in = static_cast<const int64_t*>(b->inputs());
  const int64_t* tg = static_cast<const int64_t*>(b->targets());
  for (int64_t r = 0; r < 3; ++r) {
    const int64_t first = in[r * 16];
    // Find the sample whose window starts with this token (stride 16).
    uint64_t sample = UINT64_MAX;
    for (uint64_t s = 0; s < l->SamplesPerSource()[0]; ++s) {
      if (TokenAt(s * 16, 11) == first && TokenAt(s * 16 + 1, 11) == in[r * 16 + 1]) sample = s;
    }
    ASSERT_NE(sample, UINT64_MAX);
    for (int64_t j = 0; j < 16; ++j) {
      EXPECT_EQ(in[r * 16 + j], TokenAt(sample * 16 + j, 11));
      EXPECT_EQ(tg[r * 16 + j], TokenAt(sample * 16 + j + 1, 11));
    }
  }
  EXPECT_EQ(l->SamplesPerSource()[0], (a_->num_tokens() - 1) / 16);
}

TEST_F(LoaderTest, LabelsSameEqualTheInputsOfTheSameSamples) {
  LoaderOptions same = Opts();
  same.labels = LabelsMode::kSame;
  auto next = Make(Opts());
  auto l = Make(same);
  const size_t cells = 3 * 16;
  for (int step = 0; step < 20; ++step) {
    auto want = *next->Next();
    auto got = *l->Next();
    ASSERT_EQ(0, std::memcmp(got->inputs(), want->inputs(), cells * 8)) << step;
    ASSERT_EQ(0, std::memcmp(got->targets(), got->inputs(), cells * 8)) << step;
  }
  EXPECT_EQ(l->SaveState(), next->SaveState());
}

TEST_F(LoaderTest, OneEpochVisitsEverySampleOnceAndStopsEvenly) {
  for (ShuffleMode mode : kOrderModes) {
    mode_ = mode;
    LoaderOptions o = Opts();
    o.epochs = 1;
    auto l = Make(o);
    const uint64_t n = l->SamplesPerSource()[0];
    const uint64_t all = (a_->num_tokens() - 1) / static_cast<uint64_t>(o.seq_len);
    // Window mode leaves out the few samples crossing unit edges.
    EXPECT_LE(n, all);
    EXPECT_GT(n, mode == ShuffleMode::kWindow ? all * 95 / 100 : all - 1);
    EXPECT_EQ(l->RemainingSteps(), static_cast<int64_t>(n / 3));
    std::set<std::vector<int64_t>> seen;
    int steps = 0;
    while (true) {
      auto b = l->Next();
      ASSERT_TRUE(b.ok());
      if (!*b) break;
      ++steps;
      for (auto& r : Rows(**b)) EXPECT_TRUE(seen.insert(r).second);
    }
    EXPECT_EQ(steps, static_cast<int>(n / 3));
    EXPECT_EQ(seen.size(), n / 3 * 3);
  }
}

TEST_F(LoaderTest, RanksTakeDisjointSlicesThatCoverEachGlobalBatch) {
  for (ShuffleMode mode : kOrderModes) {
    mode_ = mode;
    for (int world : {2, 3, 4}) {
      std::vector<std::unique_ptr<Loader>> ranks;
      for (int r = 0; r < world; ++r) {
        LoaderOptions o = Opts(r, world);
        o.batch_size = 12 / world;
        ranks.push_back(Make(o));
      }
      auto ref = Make([&] {
        LoaderOptions o = Opts();
        o.batch_size = 12;
        return o;
      }());
      for (int step = 0; step < 10; ++step) {
        std::vector<std::vector<int64_t>> joined;
        for (auto& l : ranks) {
          auto b = *l->Next();
          ASSERT_EQ(b->step(), step);
          for (auto& r : Rows(*b)) joined.push_back(r);
        }
        EXPECT_EQ(joined, Rows(**ref->Next())) << "world " << world << " step " << step;
      }
    }
  }
}

TEST_F(LoaderTest, ResumeGivesIdenticalBatches) {
  for (ShuffleMode mode : kOrderModes) {
    mode_ = mode;
    for (bool blend : {false, true}) {
      auto full = Make(Opts(), blend);
      auto want = Take(full.get(), 40);
      auto first = Make(Opts(), blend);
      Take(first.get(), 17);
      const std::string state = first->SaveState();
      EXPECT_LT(state.size(), 1024u);
      first.reset();
      auto resumed = Make(Opts(), blend);
      ASSERT_TRUE(resumed->LoadState(state).ok());
      auto rest = Take(resumed.get(), 23);
      EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(want.begin() + 17 * 3, want.end()))
          << "blend " << blend;
    }
  }
}

TEST_F(LoaderTest, ElasticResumeContinuesTheGlobalOrder) {
  for (ShuffleMode mode : kOrderModes) {
    mode_ = mode;
    // 4 ranks x 3 rows, then 2 ranks x 6 rows from the same cursor.
    auto ref = Make(
        [&] {
          LoaderOptions o = Opts();
          o.batch_size = 12;
          return o;
        }(),
        true);
    auto want = Take(ref.get(), 8);
    std::vector<std::unique_ptr<Loader>> four;
    for (int r = 0; r < 4; ++r) four.push_back(Make(Opts(r, 4), true));
    for (int s = 0; s < 5; ++s) {
      for (auto& l : four) ASSERT_TRUE(*l->Next());
    }
    const std::string state = four[3]->SaveState();
    EXPECT_EQ(state, four[0]->SaveState());  // The cursor does not depend on the rank.
    std::vector<std::vector<int64_t>> got;
    std::vector<std::unique_ptr<Loader>> two;
    for (int r = 0; r < 2; ++r) {
      LoaderOptions o = Opts(r, 2);
      o.batch_size = 6;
      two.push_back(Make(o, true));
      ASSERT_TRUE(two.back()->LoadState(state).ok());
    }
    for (int s = 0; s < 3; ++s) {
      for (auto& l : two) {
        for (auto& r : Rows(**l->Next())) got.push_back(r);
      }
    }
    EXPECT_EQ(got, std::vector<std::vector<int64_t>>(want.begin() + 5 * 12, want.end()));
  }
}

TEST_F(LoaderTest, MismatchedStatesAreRefusedClearly) {
  auto l = Make(Opts());
  Take(l.get(), 2);
  const std::string state = l->SaveState();
  auto expect_refused = [&](Loader* other, const std::string& needle) {
    Status s = other->LoadState(state);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  LoaderOptions o = Opts();
  o.seed = 99;
  expect_refused(Make(o).get(), "seed");
  o = Opts();
  o.seq_len = 32;
  expect_refused(Make(o).get(), "seq_len");
  o = Opts();
  o.shuffle = ShuffleMode::kNone;
  expect_refused(Make(o).get(), "shuffle");
  auto other = Loader::Create({{b_, 1.0}}, Opts());
  expect_refused(other->get(), "different dataset");
  EXPECT_FALSE(l->LoadState("{\"not\": 1}").ok());
  EXPECT_FALSE(l->LoadState("garbage").ok());
  // An unknown shuffle mode (here with a control character, found by the
  // cursor fuzzer) is refused, not carried into the next saved state.
  std::string odd = state;
  odd.replace(odd.find("\"full\""), 6, "\"\\full\"");
  Status s = l->LoadState(odd);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("shuffle must be"), std::string::npos) << s.message();
  // A window state names the options that resume it, whatever differs.
  mode_ = ShuffleMode::kWindow;
  auto window = Make(Opts());
  Take(window.get(), 2);
  const std::string window_state = window->SaveState();
  EXPECT_NE(window_state.find("\"window_chunks\":18"), std::string::npos) << window_state;
  LoaderOptions w = Opts();
  w.shuffle = ShuffleMode::kAuto;  // Full, here.
  const std::string pass = "pass shuffle=\"window\", window_chunks=18";
  EXPECT_NE(Make(w)->LoadState(window_state).message().find(pass), std::string::npos);
  w = Opts();
  w.window_chunks = 36;
  EXPECT_NE(Make(w)->LoadState(window_state).message().find(pass), std::string::npos);
  EXPECT_TRUE(Make(Opts())->LoadState(window_state).ok());
}

TEST_F(LoaderTest, OptionsShowTheResolvedShuffle) {
  auto l = Make(Opts());  // auto on local data: full.
  EXPECT_EQ(l->options().shuffle, ShuffleMode::kFull);
  EXPECT_NE(l->SaveState().find("\"shuffle\":\"full\""), std::string::npos);
  LoaderOptions o = Opts();
  o.shuffle = ShuffleMode::kWindow;  // Not sized by a cache: a fixed window.
  EXPECT_EQ(Make(o)->options().window_chunks, ShufflePlan::kLocalWindowChunks);
  o.window_chunks = 5;
  EXPECT_EQ(Make(o)->options().window_chunks, 5);
}

TEST_F(LoaderTest, BlendRealizesTheWeights) {
  LoaderOptions o = Opts();
  o.batch_size = 10;
  auto l = Make(o, true);
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(*l->Next());
  const std::string state = l->SaveState();
  // 300 positions at 0.7 / 0.3.
  EXPECT_NE(state.find("\"consumed\":210"), std::string::npos) << state;
  EXPECT_NE(state.find("\"consumed\":90"), std::string::npos) << state;
}

TEST_F(LoaderTest, DocumentBoundariesMatchTheIndex) {
  LoaderOptions o = Opts();
  o.document_boundaries = true;
  o.dtype = OutputDtype::kInt32;
  o.shuffle = ShuffleMode::kNone;
  auto l = Make(o);
  auto b = *l->Next();  // Samples 0, 1, 2: tokens [0, 48).
  std::vector<uint64_t> starts;
  a_->DocumentStarts(0, 48, &starts);
  std::vector<int32_t> want_cu;
  for (int r = 0; r < 3; ++r) {
    want_cu.push_back(r * 16);
    for (uint64_t s : starts) {
      if (s > static_cast<uint64_t>(r * 16) && s < static_cast<uint64_t>(r * 16 + 16)) {
        want_cu.push_back(static_cast<int32_t>(s));
      }
    }
  }
  want_cu.push_back(48);
  EXPECT_EQ(std::vector<int32_t>(b->cu_seqlens(), b->cu_seqlens() + b->num_cu_seqlens()), want_cu);
  const int32_t* pos = b->position_ids();
  for (int j = 0; j < 48; ++j) {
    int32_t seg = 0;
    for (int32_t c : want_cu) {
      if (c <= j) seg = c;
    }
    EXPECT_EQ(pos[j], j - seg) << j;
  }
  const int32_t* in = static_cast<const int32_t*>(b->inputs());
  EXPECT_EQ(in[20], TokenAt(20, 11));
}

TEST_F(LoaderTest, BatchesOutliveTheLoaderAndHeldBuffersAreReported) {
  auto l = Make(Opts());
  std::vector<std::shared_ptr<const Batch>> held;
  for (int i = 0; i < 3; ++i) held.push_back(*l->Next());
  auto next = l->Next();
  EXPECT_EQ(next.status().code(), StatusCode::kFailedPrecondition);
  held.erase(held.begin());
  EXPECT_TRUE(*l->Next());
  std::shared_ptr<const Batch> kept = held[0];
  const auto kept_rows = Rows(*kept);
  held.clear();
  l.reset();
  EXPECT_EQ(Rows(*kept), kept_rows);
}

TEST_F(LoaderTest, ABatchKeptForLongBlocksOnlyItsOwnBuffer) {
  LoaderOptions o = Opts();
  o.prefetch = 2;
  auto reference = Make(o);
  auto l = Make(o);
  auto kept = *l->Next();
  const auto kept_rows = Rows(*kept);
  EXPECT_EQ(Take(reference.get(), 1), kept_rows);
  // One buffer left: every later step goes through it, in order.
  EXPECT_EQ(Take(l.get(), 20), Take(reference.get(), 20));
  EXPECT_EQ(Rows(*kept), kept_rows);
}

TEST_F(LoaderTest, AWorldSizedPlanNeitherBlocksNextNorShutdown) {
  // Planning walks the whole global batch: about 2^31 blended draws here,
  // seconds of work, which must not hold the lock Next() waits on.
  LoaderOptions o = Opts(0, std::numeric_limits<int>::max());
  o.batch_size = 1;
  o.threads = 1;
  auto l = Make(o, /*blend=*/true);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(l->Next(0.01).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(l->Next(0.01).status().code(), StatusCode::kDeadlineExceeded);
  l.reset();  // Stops the plan in the middle.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

TEST_F(LoaderTest, CompactWindowsThroughACopyStageEqualTheWidenedBatches) {
  LoaderOptions o = Opts();
  o.document_boundaries = true;
  auto widened = Make(o, /*blend=*/true);
  auto stage = std::make_shared<testing::HostStage>(o, 2);
  auto staged = CreateLoader({{a_, 0.7}, {b_, 0.3}}, o, stage);
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  EXPECT_EQ(stage->allocations(), o.prefetch);
  for (int step = 0; step < 10; ++step) {
    auto w = *widened->Next();
    auto s = *(*staged)->Next();
    const size_t cells = static_cast<size_t>(o.batch_size * o.seq_len);
    ASSERT_EQ(0, std::memcmp(s->inputs(), w->inputs(), cells * 8)) << step;
    ASSERT_EQ(0, std::memcmp(s->targets(), w->targets(), cells * 8)) << step;
    ASSERT_EQ(s->num_cu_seqlens(), w->num_cu_seqlens());
    EXPECT_EQ(0, std::memcmp(s->position_ids(), w->position_ids(), cells * 4));
  }
  staged->reset();
  EXPECT_EQ(stage->live(), 0);  // Every buffer went back once its batch was gone.
}

TEST_F(LoaderTest, RefusedHostMemoryAndMixedStoredDtypesAreClearErrors) {
  LoaderOptions o = Opts();
  auto l = CreateLoader({{a_, 1.0}}, o, std::make_shared<testing::HostStage>(o, 2, 1));
  EXPECT_EQ(l.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(l.status().message().find("batch buffers"), std::string::npos);

  testing::WriteSyntheticDataset(dir_.Join("wide"), {100, 100}, 3, 1000, TokenDtype::kInt32);
  auto mixed = CreateLoader({{a_, 1.0}, {*Dataset::Open(dir_.Join("wide")), 1.0}}, o,
                            std::make_shared<testing::HostStage>(o, 2));
  EXPECT_EQ(mixed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.status().message().find("one token dtype"), std::string::npos);
}

TEST_F(LoaderTest, InvalidOptionsAreRefusedNamingTheProblem) {
  LoaderOptions o = Opts();
  o.seq_len = 100000;
  auto l = Loader::Create({{a_, 1.0}}, o);
  EXPECT_EQ(l.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(l.status().message().find("too long"), std::string::npos);
  o = Opts(3, 2);
  EXPECT_EQ(Loader::Create({{a_, 1.0}}, o).status().code(), StatusCode::kInvalidArgument);
  o = Opts();
  EXPECT_EQ(Loader::Create({{a_, -1.0}}, o).status().code(), StatusCode::kInvalidArgument);
}

// epochs and max_steps may each be up to 2^63: a run whose positions would
// pass 2^63 - 1 is refused naming the option, where it was taken for an
// endless run (len() raised) or wrapped the step count.
TEST_F(LoaderTest, StepLimitsPastTheReachablePositionsAreRefusedNamingTheOption) {
  const auto refused = [&](const char* option, int64_t value, const std::string& needle) {
    LoaderOptions o = Opts();  // batch_size 3, world_size 1.
    ASSERT_TRUE(o.Set(option, value).ok());
    auto l = Loader::Create({{a_, 1.0}}, o);
    EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument) << option << " " << value;
    EXPECT_NE(l.status().message().find(needle), std::string::npos) << l.status().ToString();
  };
  refused("max_steps", int64_t{1} << 62,
          "max_steps 4611686018427387904 (from step 0 at position 0) times 3 samples per step");
  refused("max_steps", INT64_MAX, "max_steps 9223372036854775807");
  refused("epochs", int64_t{1} << 62, "epochs 4611686018427387904 times");
  refused("epochs", INT64_MAX, "epochs 9223372036854775807");

  // Up to the edge the length is exact.
  LoaderOptions o = Opts();
  o.batch_size = 1;
  o.max_steps = int64_t{1} << 62;
  auto l = Loader::Create({{a_, 1.0}}, o);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ((*l)->RemainingSteps(), int64_t{1} << 62);
  o = Opts();
  const uint64_t samples = (a_->num_tokens() - 1) / 16;
  o.epochs = static_cast<int64_t>(Cursor::kMaxPosition / samples);
  l = Loader::Create({{a_, 1.0}}, o);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ((*l)->RemainingSteps(), static_cast<int64_t>(o.epochs * samples / 3));
}

// A saved state is untrusted: numbers that overflow, or that the blend
// schedule never reaches, are refused naming the field.
TEST_F(LoaderTest, StatesWithUnreachableNumbersAreRefusedNamingTheField) {
  auto blend = Make(Opts(), true);  // Weights 0.7 and 0.3.
  Take(blend.get(), 200);
  auto state = Cursor::Parse(blend->SaveState());
  ASSERT_TRUE(state.ok());
  const auto refused = [](Loader* l, const Cursor& c, const std::string& needle) {
    Status s = l->LoadState(c.ToJson());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.ToJson();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
  };
  // Counts that add up to the position only modulo 2^64.
  Cursor wraps = *state;
  wraps.sources[0].consumed = UINT64_MAX;
  wraps.sources[1].consumed = wraps.position + 1;
  refused(blend.get(), wraps, "sources[0].consumed 18446744073709551615");
  // Counts that add up but ignore the weights.
  Cursor skewed = *state;
  skewed.sources[0].consumed = skewed.position;
  skewed.sources[1].consumed = 0;
  refused(blend.get(), skewed, "sources[0].consumed is 600 at position 600");
  // A position at the top of the range, where the next step would wrap.
  auto single = Make(Opts());
  Cursor top = *Cursor::Parse(single->SaveState());
  ASSERT_TRUE(top.phases.empty());  // Nothing begun at position 0.
  top.phases = {{0, {0.7}, {0}}};
  top.position = top.sources[0].consumed = top.phases[0].counts[0] = UINT64_MAX;
  refused(single.get(), top, "position 18446744073709551615");
  // The last position a cursor records parses, but an endless loader there
  // has no room for a step: refused at load, where it used to serve a batch
  // past 2^63 - 1 and save a cursor no loader could resume.
  top.position = top.sources[0].consumed = top.phases[0].counts[0] = Cursor::kMaxPosition;
  top.step = static_cast<int64_t>((Cursor::kMaxPosition + 2) / 3);
  refused(single.get(), top,
          "at position 9223372036854775807 (step 3074457345618258603) there is no room for "
          "another step of 3 positions (batch_size * world_size) before 2^63 - 1");
  EXPECT_EQ(single->Step(), 0);  // Unchanged.
  // With a limit the loader simply ends there.
  LoaderOptions limited = Opts();
  limited.epochs = 1;
  auto ends = Make(limited);
  ASSERT_TRUE(ends->LoadState(top.ToJson()).ok());
  EXPECT_EQ(ends->RemainingSteps(), 0);
  auto end = ends->Next();
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_EQ(*end, nullptr);
}

// An endless loader near the top of the positions serves the steps that fit
// below 2^63 - 1, each with its step number, then fails every further Next()
// with OutOfRange naming the position; the cursor after its last batch
// resumes. It used to run on: three steps from a cursor at 2^63 - 1 the step
// count could wrap negative, and the positions past 2^63 - 1 made a cursor
// that LoadState refused.
TEST_F(LoaderTest, AnEndlessLoaderStopsAtTheLastPositionACursorRecords) {
  auto l = Make(Opts());  // batch_size 3, world_size 1.
  Cursor near = *Cursor::Parse(l->SaveState());
  const uint64_t position = Cursor::kMaxPosition - 7;  // Room for 2 steps of 3.
  near.position = near.sources[0].consumed = position;
  near.phases = {{0, {0.7}, {position}}};
  near.step = INT64_MAX - 10;  // At most the position: a valid cursor.
  ASSERT_TRUE(l->LoadState(near.ToJson()).ok());
  EXPECT_EQ(l->RemainingSteps(), -1);  // Still endless as far as the data goes.
  for (int64_t k = 0; k < 2; ++k) {
    auto b = l->Next();
    ASSERT_TRUE(b.ok() && *b) << (b.ok() ? "end" : b.status().ToString());
    EXPECT_EQ((*b)->step(), INT64_MAX - 10 + k);
  }
  const std::string last = l->SaveState();
  for (int i = 0; i < 2; ++i) {
    auto past = l->Next();
    EXPECT_EQ(past.status().code(), StatusCode::kOutOfRange);
    EXPECT_NE(past.status().message().find(
                  "at position 9223372036854775806 (step 9223372036854775799), and another "
                  "step of 3 positions (batch_size * world_size) would pass 2^63 - 1"),
              std::string::npos)
        << past.status().ToString();
  }
  EXPECT_EQ(l->SaveState(), last);
  // The saved cursor resumes, on a loader of a global batch that fits.
  LoaderOptions one = Opts();
  one.batch_size = 1;
  auto resumed = Make(one);
  ASSERT_TRUE(resumed->LoadState(last).ok()) << last;
  auto b = resumed->Next();
  ASSERT_TRUE(b.ok() && *b) << (b.ok() ? "end" : b.status().ToString());
  EXPECT_EQ((*b)->step(), INT64_MAX - 8);
  EXPECT_EQ(resumed->Next().status().code(), StatusCode::kOutOfRange);
}

TEST_F(LoaderTest, ShutdownWhileThreadsWaitDoesNotHang) {
  for (int i = 0; i < 20; ++i) {
    LoaderOptions o = Opts();
    o.threads = 4;
    o.prefetch = 1 + i % 4;
    auto l = Make(o);
    if (i % 2) {
      ASSERT_TRUE(*l->Next());
    }
  }
}

}  // namespace
}  // namespace tokpack

namespace tokpack {
namespace {

// A .bin source that is not memory-resident and fails every read after the
// first `good_reads`, as a flaky disk or network would.
class FlakySource : public ByteSource {
 public:
  FlakySource(std::unique_ptr<ByteSource> inner, int good_reads)
      : inner_(std::move(inner)), left_(good_reads) {}
  uint64_t size() const override { return inner_->size(); }
  const char* data() const override { return nullptr; }
  Status Read(uint64_t offset, uint64_t n, char* dst) const override {
    if (left_.fetch_sub(1) <= 0) return IoError(inner_->name() + ": injected read failure");
    return inner_->Read(offset, n, dst);
  }
  const std::string& name() const override { return inner_->name(); }

 private:
  std::unique_ptr<ByteSource> inner_;
  mutable std::atomic<int> left_;
};

TEST(LoaderFaults, ReadErrorsFromAssemblerThreadsSurfaceInNext) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), testing::CyclingLengths(300, 50), 2, 100000);
  auto ds = OpenDatasetWith(dir.Join("ds"),
                            [](const std::string& path) -> StatusOr<std::unique_ptr<ByteSource>> {
                              TOKPACK_ASSIGN_OR_RETURN(auto inner, OpenMappedFile(path));
                              return StatusOr<std::unique_ptr<ByteSource>>(
                                  std::make_unique<FlakySource>(std::move(inner), 40));
                            });
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  LoaderOptions o;
  o.seq_len = 16;
  o.batch_size = 4;
  o.prefetch = 2;
  auto l = Loader::Create({{*ds, 1.0}}, o);
  ASSERT_TRUE(l.ok());
  int good = 0;
  Status error;
  for (int i = 0; i < 20 && error.ok(); ++i) {
    auto b = (*l)->Next();
    if (b.ok()) {
      ++good;
    } else {
      error = b.status();
    }
  }
  EXPECT_GE(good, 1);
  EXPECT_EQ(error.code(), StatusCode::kIoError);
  EXPECT_NE(error.message().find("injected read failure"), std::string::npos);
  EXPECT_NE(error.message().find("shard-00000.bin"), std::string::npos);
}

// A .bin source that is not memory-resident and slow, as a network store is.
class SlowSource : public ByteSource {
 public:
  SlowSource(std::unique_ptr<ByteSource> inner, std::chrono::milliseconds delay)
      : inner_(std::move(inner)), delay_(delay) {}
  uint64_t size() const override { return inner_->size(); }
  const char* data() const override { return nullptr; }
  Status Read(uint64_t offset, uint64_t n, char* dst) const override {
    std::this_thread::sleep_for(delay_);
    return inner_->Read(offset, n, dst);
  }
  const std::string& name() const override { return inner_->name(); }

 private:
  std::unique_ptr<ByteSource> inner_;
  std::chrono::milliseconds delay_;
};

TEST(LoaderFaults, TimedNextGivesUpWithoutLosingTheBatchAndCountsTheWait) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), testing::CyclingLengths(300, 50), 4, 100000);
  auto slow = OpenDatasetWith(
      dir.Join("ds"), [](const std::string& path) -> StatusOr<std::unique_ptr<ByteSource>> {
        TOKPACK_ASSIGN_OR_RETURN(auto inner, OpenMappedFile(path));
        return StatusOr<std::unique_ptr<ByteSource>>(
            std::make_unique<SlowSource>(std::move(inner), std::chrono::milliseconds(40)));
      });
  auto fast = Dataset::Open(dir.Join("ds"));
  ASSERT_TRUE(slow.ok() && fast.ok());
  LoaderOptions o;
  o.seq_len = 16;
  o.batch_size = 2;
  o.threads = 1;
  o.prefetch = 1;
  auto l = Loader::Create({{*slow, 1.0}}, o);
  auto reference = Loader::Create({{*fast, 1.0}}, o);
  ASSERT_TRUE(l.ok() && reference.ok());
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ((*l)->Step(), step);
    // Each batch takes four 40 ms reads, so a 1 ms wait must time out.
    auto early = (*l)->Next(0.001);
    ASSERT_EQ(early.status().code(), StatusCode::kDeadlineExceeded);
    StatusOr<std::shared_ptr<const Batch>> b = early;
    int timeouts = 1;
    while ((b = (*l)->Next(0.005)).status().code() == StatusCode::kDeadlineExceeded) ++timeouts;
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_GT(timeouts, 1);
    auto want = (*reference)->Next();
    ASSERT_TRUE(want.ok());
    EXPECT_EQ((*b)->step(), step);
    EXPECT_EQ(0, std::memcmp((*b)->inputs(), (*want)->inputs(), 2 * 16 * 8));
    // The waits that timed out count towards this step's wait.
    EXPECT_GE((*l)->Stats().wait_seconds_last, 0.005 * (timeouts - 1));
  }
  EXPECT_EQ((*l)->Stats().steps, 3);
}

}  // namespace
}  // namespace tokpack
