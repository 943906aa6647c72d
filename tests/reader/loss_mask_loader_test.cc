// Loss masks through the loader (docs/format.md 3.1): labels are -100
// exactly where the label's token carries no loss, in concat windows and
// packed rows, both labels modes and output dtypes, in blends with unmasked
// sources, through a copy stage, after a resume; loss_mask and the
// trainable-token counts agree with the labels.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "reader/loader_internal.h"
#include "tests/reader/host_stage.h"
#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"
#include "tokpack/loader.h"

namespace tokpack {
namespace {

using testing::LossAt;
using testing::TempDir;
using testing::TokenAt;

constexpr int64_t kL = 24;
constexpr uint64_t kMaskedSalt = 5, kPlainSalt = 9;

// One row of a batch, widened.
struct Row {
  std::vector<int64_t> inputs, labels;
  std::vector<uint8_t> mask;  // Empty without LoaderOptions::loss_mask.
};

std::vector<Row> Rows(const Batch& b) {
  std::vector<Row> rows(static_cast<size_t>(b.batch_size()));
  const int64_t L = b.seq_len();
  for (int64_t r = 0; r < b.batch_size(); ++r) {
    for (int64_t j = 0; j < L; ++j) {
      const int64_t i = r * L + j;
      const bool wide = b.dtype() == OutputDtype::kInt64;
      rows[r].inputs.push_back(wide ? static_cast<const int64_t*>(b.inputs())[i]
                                    : static_cast<const int32_t*>(b.inputs())[i]);
      rows[r].labels.push_back(wide ? static_cast<const int64_t*>(b.targets())[i]
                                    : static_cast<const int32_t*>(b.targets())[i]);
      if (b.loss_mask()) rows[r].mask.push_back(b.loss_mask()[i]);
    }
  }
  return rows;
}

// Where a run of tokens starts in the stream of the dataset with `salt`
// (TokenAt is 7 t + salt mod 60000; 17143 = 7^-1), if they are its.
std::optional<uint64_t> Locate(const std::vector<int64_t>& tokens, size_t n, uint64_t salt,
                               uint64_t stream_tokens) {
  const uint64_t t = (static_cast<uint64_t>(tokens[0] + 60000 - salt) * 17143) % 60000;
  if (t + n > stream_tokens) return std::nullopt;
  for (size_t j = 0; j < n; ++j) {
    if (tokens[j] != TokenAt(t + j, salt)) return std::nullopt;
  }
  return t;
}

class LossMaskLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteMaskedSyntheticDataset(dir_.Join("masked"), testing::CyclingLengths(200, 50),
                                         kMaskedSalt, 1500);
    testing::WriteSyntheticDataset(dir_.Join("plain"), testing::CyclingLengths(200, 50), kPlainSalt,
                                   1500);
    masked_ = *Dataset::Open(dir_.Join("masked"));
    plain_ = *Dataset::Open(dir_.Join("plain"));
  }
  static LoaderOptions Opts() {
    LoaderOptions o;
    o.seq_len = kL;
    o.batch_size = 4;
    o.seed = 7;
    o.prefetch = 3;
    o.loss_mask = true;
    return o;
  }
  // Checks a concat row of either dataset: label j names token t + j + shift,
  // -100 where the masked dataset's bit for it is 0. Returns the labels kept.
  uint64_t CheckWindow(const Row& row, LabelsMode mode) const {
    const uint64_t shift = mode == LabelsMode::kNext ? 1 : 0;
    std::optional<uint64_t> t = Locate(row.inputs, kL, kMaskedSalt, masked_->num_tokens());
    const bool masked = t.has_value();
    if (!masked) t = Locate(row.inputs, kL, kPlainSalt, plain_->num_tokens());
    EXPECT_TRUE(t.has_value()) << "a row of neither dataset";
    if (!t) return 0;
    const uint64_t salt = masked ? kMaskedSalt : kPlainSalt;
    uint64_t kept = 0;
    for (uint64_t j = 0; j < kL; ++j) {
      const bool loss = !masked || LossAt(*t + j + shift, salt);
      EXPECT_EQ(row.labels[j], loss ? TokenAt(*t + j + shift, salt) : -100)
          << "cell " << j << " of the row at " << *t << (masked ? " (masked)" : " (plain)");
      if (!row.mask.empty()) {
        EXPECT_EQ(row.mask[j], loss ? 1 : 0) << j;
      }
      kept += loss;
    }
    return kept;
  }

  TempDir dir_;
  std::shared_ptr<Dataset> masked_, plain_;
};

TEST_F(LossMaskLoaderTest, ConcatLabelsAreIgnoredExactlyWhereTheirTokenCarriesNoLoss) {
  for (LabelsMode mode : {LabelsMode::kNext, LabelsMode::kSame}) {
    for (OutputDtype dtype : {OutputDtype::kInt64, OutputDtype::kInt32}) {
      LoaderOptions o = Opts();
      o.labels = mode;
      o.dtype = dtype;
      o.document_boundaries = dtype == OutputDtype::kInt32;
      auto l = Loader::Create({{masked_, 1.0}}, o);
      ASSERT_TRUE(l.ok()) << l.status().ToString();
      uint64_t kept = 0, cells = 0;
      for (int step = 0; step < 12; ++step) {
        auto b = (*l)->Next();
        ASSERT_TRUE(b.ok() && *b);
        for (const Row& row : Rows(**b)) {
          kept += CheckWindow(row, mode);
          cells += kL;
        }
      }
      EXPECT_GT(kept, 0u);
      EXPECT_LT(kept, cells);
      EXPECT_EQ((*l)->Stats().sources[0].trainable_tokens, kept);
    }
  }
}

TEST_F(LossMaskLoaderTest, ABlendTrainsEveryTokenOfItsUnmaskedSource) {
  LoaderOptions o = Opts();
  auto l = Loader::Create({{masked_, 1.0}, {plain_, 1.0}}, o);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  for (int step = 0; step < 20; ++step) {
    auto b = (*l)->Next();
    ASSERT_TRUE(b.ok() && *b);
    for (const Row& row : Rows(**b)) CheckWindow(row, LabelsMode::kNext);
  }
  const LoaderStats s = (*l)->Stats();
  ASSERT_EQ(s.sources.size(), 2u);
  // The unmasked source trains every label of its rows; both together
  // served the batches' rows.
  EXPECT_EQ(s.sources[1].trainable_tokens, s.sources[1].samples * kL);
  EXPECT_LT(s.sources[0].trainable_tokens, s.sources[0].samples * kL);
  EXPECT_GT(s.sources[0].trainable_tokens, 0u);
}

TEST_F(LossMaskLoaderTest, WithoutTheOptionBatchesHaveNoMaskButTheSameLabels) {
  LoaderOptions with = Opts(), without = Opts();
  without.loss_mask = false;
  auto a = Loader::Create({{masked_, 1.0}}, with);
  auto b = Loader::Create({{masked_, 1.0}}, without);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int step = 0; step < 5; ++step) {
    auto x = *(*a)->Next();
    auto y = *(*b)->Next();
    EXPECT_EQ(y->loss_mask(), nullptr);
    const std::vector<Row> rx = Rows(*x), ry = Rows(*y);
    for (size_t r = 0; r < rx.size(); ++r) EXPECT_EQ(rx[r].labels, ry[r].labels);
  }
}

TEST_F(LossMaskLoaderTest, AResumeMidEpochGivesTheSameLabels) {
  LoaderOptions o = Opts();
  auto first = Loader::Create({{masked_, 0.6}, {plain_, 0.4}}, o);
  ASSERT_TRUE(first.ok());
  for (int step = 0; step < 7; ++step) ASSERT_TRUE((*first)->Next().ok());
  const std::string cursor = (*first)->SaveState();
  std::vector<std::vector<Row>> want;
  for (int step = 0; step < 6; ++step) want.push_back(Rows(**(*first)->Next()));
  auto resumed = Loader::Create({{masked_, 0.6}, {plain_, 0.4}}, o);
  ASSERT_TRUE(resumed.ok());
  ASSERT_TRUE((*resumed)->LoadState(cursor).ok());
  for (int step = 0; step < 6; ++step) {
    const std::vector<Row> got = Rows(**(*resumed)->Next());
    for (size_t r = 0; r < got.size(); ++r) {
      EXPECT_EQ(got[r].inputs, want[step][r].inputs) << step;
      EXPECT_EQ(got[r].labels, want[step][r].labels) << step;
      EXPECT_EQ(got[r].mask, want[step][r].mask) << step;
    }
  }
}

TEST_F(LossMaskLoaderTest, ACopyStageAppliesTheMasksAsTheHostLoaderDoes) {
  for (LabelsMode mode : {LabelsMode::kNext, LabelsMode::kSame}) {
    for (bool output : {true, false}) {
      LoaderOptions o = Opts();
      o.labels = mode;
      o.loss_mask = output;
      o.device_prefetch = 2;
      auto host = Loader::Create({{masked_, 0.5}, {plain_, 0.5}}, o);
      auto staged = CreateLoader({{masked_, 0.5}, {plain_, 0.5}}, o,
                                 std::make_shared<testing::HostStage>(o, 2));
      ASSERT_TRUE(host.ok() && staged.ok()) << staged.status().ToString();
      for (int step = 0; step < 8; ++step) {
        const std::vector<Row> want = Rows(**(*host)->Next());
        const std::vector<Row> got = Rows(**(*staged)->Next());
        for (size_t r = 0; r < got.size(); ++r) {
          EXPECT_EQ(got[r].labels, want[r].labels) << step << " row " << r;
          EXPECT_EQ(got[r].mask, want[r].mask) << step << " row " << r;
        }
      }
      EXPECT_EQ((*staged)->Stats().sources[0].trainable_tokens,
                (*host)->Stats().sources[0].trainable_tokens);
    }
  }
}

// Packed rows: each piece's labels carry its own tokens' bits, on top of the
// piece edges and the padding that packing ignores anyway.
TEST_F(LossMaskLoaderTest, PackedPiecesCarryTheirDocumentsMasks) {
  for (LabelsMode mode : {LabelsMode::kNext, LabelsMode::kSame}) {
    LoaderOptions o = Opts();
    o.packing = Packing::kBestFit;
    o.labels = mode;
    auto l = Loader::Create({{masked_, 1.0}, {plain_, 1.0}}, o);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    uint64_t pieces = 0, kept_total = 0;
    for (int step = 0; step < 15; ++step) {
      auto b = (*l)->Next();
      ASSERT_TRUE(b.ok() && *b);
      const Batch& batch = **b;
      const std::vector<Row> rows = Rows(batch);
      const int32_t* cu = batch.cu_seqlens();
      for (int64_t k = 0; k + 1 < batch.num_cu_seqlens(); ++k) {
        const int64_t r = cu[k] / kL, j0 = cu[k] % kL;
        const size_t n = static_cast<size_t>(cu[k + 1] - cu[k]);
        const Row& row = rows[r];
        std::vector<int64_t> tokens(row.inputs.begin() + j0, row.inputs.begin() + j0 + n);
        std::optional<uint64_t> t = Locate(tokens, n, kMaskedSalt, masked_->num_tokens());
        const bool masked = t.has_value();
        if (!masked) t = Locate(tokens, n, kPlainSalt, plain_->num_tokens());
        for (size_t j = 0; j < n; ++j) {
          int64_t want = -100;
          if (t) {  // Else the padding: all ignored.
            const bool edge = mode == LabelsMode::kNext ? j + 1 == n : j == 0;
            const uint64_t named = *t + j + (mode == LabelsMode::kNext ? 1 : 0);
            const uint64_t salt = masked ? kMaskedSalt : kPlainSalt;
            if (!edge && (!masked || LossAt(named, salt))) want = TokenAt(named, salt);
          }
          EXPECT_EQ(row.labels[j0 + j], want)
              << "step " << step << " row " << r << " cell " << j0 + j;
          EXPECT_EQ(row.mask[j0 + j], want != -100 ? 1 : 0);
          kept_total += want != -100;
        }
        pieces += t.has_value();
      }
    }
    EXPECT_GT(pieces, 40u);
    const LoaderStats s = (*l)->Stats();
    EXPECT_EQ(s.sources[0].trainable_tokens + s.sources[1].trainable_tokens, kept_total);
  }
}

TEST_F(LossMaskLoaderTest, UnmaskedDataCountsEveryLabelAndMakesNoMaskWork) {
  LoaderOptions o = Opts();
  o.loss_mask = false;
  auto l = Loader::Create({{plain_, 1.0}}, o);
  ASSERT_TRUE(l.ok());
  for (int step = 0; step < 3; ++step) {
    auto b = *(*l)->Next();
    EXPECT_EQ(b->loss_mask(), nullptr);
    for (const Row& row : Rows(*b)) CheckWindow(row, LabelsMode::kNext);
  }
  EXPECT_EQ((*l)->Stats().sources[0].trainable_tokens, 3u * 4 * kL);
}

}  // namespace
}  // namespace tokpack
