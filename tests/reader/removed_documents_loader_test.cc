// Removed documents through the loader: every window reads pad where its
// tokens are removed and its labels naming them are -100, with loss masks
// and without, both labels modes and output dtypes, on the host and through
// a copy stage (the CUDA path's compact windows and label bits, widened by
// the CPU stand-in), and the trainable-token counts leave them out.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "format/removed_list.h"
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

constexpr int64_t kL = 24, kBatch = 4, kPad = 59999;
constexpr uint64_t kSalt = 5;

class RemovedDocumentsLoader : public ::testing::TestWithParam<bool> {
 protected:
  // 200 documents of 1..50 tokens, loss masks when GetParam(), every fifth
  // document and a run of ten removed.
  void SetUp() override {
    Manifest m = testing::WriteSyntheticDataset(dir_.path(), testing::CyclingLengths(200, 50),
                                                kSalt, 1500, TokenDtype::kUInt16, 256, GetParam());
    m.tokenizer.eos_id = kPad;
    ASSERT_TRUE(m.Save(dir_.path()).ok());
    std::set<uint64_t> docs;
    for (uint64_t d = 0; d < 200; d += 5) docs.insert(d);
    for (uint64_t d = 60; d < 70; ++d) docs.insert(d);
    testing::WriteStringToFile(
        dir_.Join("removed.json"),
        RemovedListJson({m.Fingerprint(), std::vector<uint64_t>(docs.begin(), docs.end())}));
    ds_ = *Dataset::Open(dir_.path());
    ASSERT_EQ(ds_->num_removed(), docs.size());
    gone_.assign(ds_->num_tokens(), false);
    for (uint64_t d : docs) {
      uint64_t offset = 0, length = 0;
      ASSERT_TRUE(ds_->DocumentExtent(d, &offset, &length).ok());
      std::fill_n(gone_.begin() + offset, length, true);
    }
  }

  static LoaderOptions Opts(LabelsMode mode, OutputDtype dtype, bool mask) {
    LoaderOptions o;
    o.seq_len = kL;
    o.batch_size = kBatch;
    o.shuffle = ShuffleMode::kNone;  // Row r of step s: sample s * kBatch + r.
    o.labels = mode;
    o.dtype = dtype;
    o.loss_mask = mask;
    o.device_prefetch = 2;
    return o;
  }

  // Checks `steps` batches of `loader` cell by cell; returns the labels kept.
  uint64_t Check(Loader& loader, const LoaderOptions& o, int steps) const {
    const uint64_t shift = o.labels == LabelsMode::kNext ? 1 : 0;
    uint64_t kept = 0;
    for (int step = 0; step < steps; ++step) {
      StatusOr<std::shared_ptr<const Batch>> b = loader.Next();
      EXPECT_TRUE(b.ok() && *b) << b.status().ToString();
      if (!b.ok() || !*b) return kept;
      const bool wide = o.dtype == OutputDtype::kInt64;
      for (int64_t r = 0; r < kBatch; ++r) {
        const uint64_t a = static_cast<uint64_t>(step * kBatch + r) * kL;
        for (int64_t j = 0; j < kL; ++j) {
          const int64_t i = r * kL + j;
          const auto at = [&](const void* p) {
            return wide ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
          };
          const uint64_t t = a + j, named = t + shift;
          EXPECT_EQ(at((*b)->inputs()), gone_[t] ? kPad : TokenAt(t, kSalt)) << t;
          const bool loss = !gone_[named] && (!GetParam() || LossAt(named, kSalt));
          EXPECT_EQ(at((*b)->targets()), loss ? TokenAt(named, kSalt) : -100) << named;
          if (o.loss_mask) {
            EXPECT_EQ((*b)->loss_mask()[i], loss ? 1 : 0) << named;
          }
          kept += loss;
        }
      }
    }
    return kept;
  }

  TempDir dir_;
  std::shared_ptr<Dataset> ds_;
  std::vector<bool> gone_;
};

TEST_P(RemovedDocumentsLoader, WindowsReadPadAndIgnoreLabelsOnRemovedTokens) {
  const int steps = static_cast<int>((ds_->num_tokens() - 1) / kL / kBatch);  // An epoch.
  for (LabelsMode mode : {LabelsMode::kNext, LabelsMode::kSame}) {
    for (OutputDtype dtype : {OutputDtype::kInt64, OutputDtype::kInt32}) {
      for (bool mask : {false, true}) {
        for (bool staged : {false, true}) {
          const LoaderOptions o = Opts(mode, dtype, mask);
          auto loader = CreateLoader({{ds_, 1.0}}, o,
                                     staged ? std::make_shared<testing::HostStage>(o, 2) : nullptr);
          ASSERT_TRUE(loader.ok()) << loader.status().ToString();
          const uint64_t kept = Check(**loader, o, steps);
          EXPECT_LT(kept, static_cast<uint64_t>(steps * kBatch * kL));
          EXPECT_EQ((*loader)->Stats().sources[0].trainable_tokens, kept);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Masks, RemovedDocumentsLoader, ::testing::Bool());

}  // namespace
}  // namespace tokpack
