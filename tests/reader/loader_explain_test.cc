// Loader::Explain: every row it names, rebuilt from its document spans,
// equals the row the loader served (concat and best_fit, two sources with
// phases, every rank of a world of 3), from the start and after a resume;
// and the steps it refuses (before the loader's beginning, past the end).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"
#include "tokpack/loader.h"

namespace tokpack {
namespace {

constexpr int64_t kL = 16;
constexpr int64_t kBatch = 2;
constexpr int kWorld = 3;
constexpr int64_t kPad = 1;  // TokenAt never makes it below stream offset 8570.

class LoaderExplainTest : public ::testing::TestWithParam<Packing> {
 protected:
  void SetUp() override {
    Write("a", testing::CyclingLengths(300, 40), 11);
    Write("b", testing::CyclingLengths(120, 25), 3);
  }
  void Write(const std::string& name, const std::vector<uint32_t>& docs, uint64_t salt) {
    Manifest m = testing::WriteSyntheticDataset(dir_.Join(name), docs, salt, 1500);
    m.tokenizer.pad_id = kPad;
    ASSERT_TRUE(m.Save(dir_.Join(name)).ok());
    ds_.push_back(*Dataset::Open(dir_.Join(name)));
    salts_.push_back(salt);
  }
  std::unique_ptr<Loader> Make(int rank, int64_t max_steps = 0) {
    LoaderOptions o;
    o.seq_len = kL;
    o.batch_size = kBatch;
    o.seed = 5;
    o.rank = rank;
    o.world_size = kWorld;
    o.prefetch = 2;
    o.packing = GetParam();
    o.max_steps = max_steps;
    std::vector<MixturePhase> phases = {{0, {3, 1}, 0}, {4, {1, 2}, 3}};
    auto l = Loader::Create(ds_, phases, o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return std::move(*l);
  }
  // The row the spans describe, on the columns of the inputs (kL), with
  // kPad where no span reaches (a packed row's padding).
  std::vector<int64_t> Rebuild(const RowOrigin& r) {
    std::vector<int64_t> row(kL, kPad);
    uint64_t column = 0;
    for (const RowOrigin::Span& s : r.spans) {
      EXPECT_EQ(s.column, column) << "spans are contiguous";
      uint64_t offset = 0, length = 0;
      EXPECT_TRUE(ds_[r.source]->DocumentExtent(s.document, &offset, &length).ok());
      EXPECT_LE(s.offset + s.length, length);
      EXPECT_GT(s.length, 0u);
      for (uint64_t k = 0; k < s.length; ++k) {
        if (s.column + k < static_cast<uint64_t>(kL)) {
          row[s.column + k] = testing::TokenAt(offset + s.offset + k, salts_[r.source]);
        }
      }
      column += s.length;
    }
    if (GetParam() == Packing::kConcat) {
      EXPECT_EQ(column, static_cast<uint64_t>(kL + 1));
    }
    return row;
  }
  // Checks the explained rows of `rank` at steps [first, first + n)
  // against the next n batches of `l`.
  void Check(Loader* l, const std::vector<RowOrigin>& rows, int rank, int64_t first, int64_t n) {
    ASSERT_EQ(rows.size(), static_cast<size_t>(n * kBatch * kWorld));
    for (int64_t i = 0; i < n; ++i) {
      auto b = l->Next();
      ASSERT_TRUE(b.ok() && *b) << b.status().ToString();
      ASSERT_EQ((*b)->step(), first + i);
      const int64_t* in = static_cast<const int64_t*>((*b)->inputs());
      for (int64_t r = 0; r < kBatch; ++r) {
        const RowOrigin& o = rows[static_cast<size_t>((i * kWorld + rank) * kBatch + r)];
        EXPECT_EQ(o.step, first + i);
        EXPECT_EQ(o.rank, rank);
        EXPECT_EQ(o.row, r);
        EXPECT_EQ(Rebuild(o), std::vector<int64_t>(in + r * kL, in + (r + 1) * kL))
            << "step " << o.step << " rank " << rank << " row " << r;
      }
    }
  }

  testing::TempDir dir_;
  std::vector<std::shared_ptr<Dataset>> ds_;
  std::vector<uint64_t> salts_;
};

TEST_P(LoaderExplainTest, EveryRankRowIsRebuiltFromItsSpans) {
  for (int rank = 0; rank < kWorld; ++rank) {
    auto l = Make(rank);
    auto rows = l->Explain(0, 9, nullptr);  // Across the phase change and its ramp.
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    bool both = false;
    for (const RowOrigin& r : *rows) both = both || r.source == 1;
    EXPECT_TRUE(both);
    Check(l.get(), *rows, rank, 0, 9);
  }
}

TEST_P(LoaderExplainTest, ExplainsFromTheCursorItResumedFrom) {
  auto first = Make(0);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(first->Next().ok());
  const std::string cursor = first->SaveState();
  auto l = Make(1);
  ASSERT_TRUE(l->LoadState(cursor).ok());
  auto rows = l->Explain(5, 4, nullptr);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  Check(l.get(), *rows, 1, 5, 4);
  // Later steps too (the replay skips the steps between).
  auto later = l->Explain(12, 1, nullptr);
  ASSERT_TRUE(later.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(l->Next().ok());
  Check(l.get(), *later, 1, 12, 1);

  auto before = l->Explain(4, 1, nullptr);
  EXPECT_EQ(before.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(before.status().message().find("step 5"), std::string::npos)
      << before.status().message();
}

TEST_P(LoaderExplainTest, RefusesStepsPastTheEndAndEmptyRanges) {
  auto l = Make(0, /*max_steps=*/6);
  EXPECT_TRUE(l->Explain(5, 1, nullptr).ok());
  auto past = l->Explain(5, 2, nullptr);
  EXPECT_EQ(past.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(past.status().message().find("is 5"), std::string::npos) << past.status().message();
  EXPECT_EQ(l->Explain(0, 0, nullptr).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(l->Explain(-1, 1, nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(LoaderExplainTest, NamesTheStepCapsLeaveUnfilledAndStopsWhenCancelled) {
  LoaderOptions o;
  o.seq_len = kL;
  o.batch_size = kBatch;
  o.world_size = kWorld;
  o.packing = GetParam();
  auto l = Loader::Create(ds_, {{0, {3, 1}, 0}}, {1, 1}, o);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto past = (*l)->Explain(100000, 1, nullptr);
  ASSERT_EQ(past.status().code(), StatusCode::kOutOfRange) << past.status().ToString();
  EXPECT_NE(past.status().message().find("serves no step "), std::string::npos);
  EXPECT_NE(past.status().message().find("has no source left"), std::string::npos)
      << past.status().message();
  auto set = std::make_shared<std::atomic<bool>>(true);
  auto cancelled = Make(0)->Explain(90000, 1, set);
  EXPECT_EQ(cancelled.status().code(), StatusCode::kCancelled) << cancelled.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Packings, LoaderExplainTest,
                         ::testing::Values(Packing::kConcat, Packing::kBestFit),
                         [](const ::testing::TestParamInfo<Packing>& p) {
                           return p.param == Packing::kConcat ? "concat" : "best_fit";
                         });

}  // namespace
}  // namespace tokpack
