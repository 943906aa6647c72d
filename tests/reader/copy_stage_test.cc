// The loader's copy stage (the path a CUDA device takes), driven by the CPU
// stand-in stage: the same batches as a CPU loader, exact resume, the end,
// and buffer lifetimes. tests/reader/cuda/ runs the same pipeline with CUDA.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "reader/loader_internal.h"
#include "tests/reader/host_stage.h"
#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::HostStage;
using testing::TempDir;

class CopyStageTest : public ::testing::TestWithParam<OutputDtype> {
 protected:
  void SetUp() override {
    testing::WriteSyntheticDataset(dir_.Join("ds"), testing::CyclingLengths(600, 70), 5, 4000);
    ds_ = *Dataset::Open(dir_.Join("ds"));
  }
  LoaderOptions Opts() const {
    LoaderOptions o;
    o.seq_len = 32;
    o.batch_size = 4;
    o.seed = 99;
    o.document_boundaries = true;
    o.dtype = GetParam();
    o.device_prefetch = 2;
    return o;
  }
  std::unique_ptr<Loader> Staged(const LoaderOptions& o, std::shared_ptr<HostStage> stage = {}) {
    if (!stage) stage = std::make_shared<HostStage>(o, 2);
    auto l = CreateLoader({{ds_, 1.0}}, o, stage);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(l).value() : nullptr;
  }
  static std::vector<char> Bytes(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    return std::vector<char>(c, c + n);
  }
  size_t Cells(const LoaderOptions& o) const {
    return static_cast<size_t>(o.batch_size * o.seq_len);
  }

  TempDir dir_;
  std::shared_ptr<Dataset> ds_;
};

TEST_P(CopyStageTest, FiveHundredStepsEqualTheHostLoader) {
  const LoaderOptions o = Opts();
  auto host = std::move(Loader::Create({{ds_, 1.0}}, o)).value();
  auto staged = Staged(o);
  const size_t bytes = Cells(o) * (o.dtype == OutputDtype::kInt64 ? 8 : 4);
  for (int step = 0; step < 500; ++step) {
    auto want = *host->Next();
    auto got = staged->Next();
    ASSERT_TRUE(got.ok() && *got) << step;
    const Batch& b = **got;
    EXPECT_EQ(b.step(), want->step());
    EXPECT_TRUE(b.UseOn(nullptr).ok());
    ASSERT_EQ(0, std::memcmp(b.inputs(), want->inputs(), bytes)) << step;
    ASSERT_EQ(0, std::memcmp(b.targets(), want->targets(), bytes)) << step;
    ASSERT_EQ(b.num_cu_seqlens(), want->num_cu_seqlens());
    ASSERT_EQ(0, std::memcmp(b.position_ids(), want->position_ids(), Cells(o) * 4)) << step;
    ASSERT_EQ(0, std::memcmp(b.cu_seqlens(), want->cu_seqlens(), b.num_cu_seqlens() * 4));
  }
  // Bytes served are the inputs and targets handed out, not the compact copy.
  EXPECT_EQ(staged->Stats().bytes_served, host->Stats().bytes_served);
  EXPECT_EQ(staged->Stats().bytes_served, 500 * 2 * bytes);
}

TEST_P(CopyStageTest, AStepLimitNear2To63DoesNotWrapToTheEnd) {
  LoaderOptions o = Opts();
  // max_steps * batch_size is just below 2^63, the last position a loader
  // reaches (past it, Create refuses: LoaderTest.StepLimitsPast...).
  o.max_steps = (int64_t{1} << 61) - 1;
  auto l = Staged(o);
  auto b = l->Next();
  ASSERT_TRUE(b.ok() && *b) << b.status().ToString();
  EXPECT_EQ(l->RemainingSteps(), o.max_steps - 1);
}

TEST_P(CopyStageTest, ResumesExactlyAndEnds) {
  LoaderOptions o = Opts();
  o.max_steps = 30;
  const size_t bytes = Cells(o) * (o.dtype == OutputDtype::kInt64 ? 8 : 4);
  auto reference = Staged(o);
  std::vector<std::vector<char>> want;
  for (int i = 0; i < 30; ++i) {
    auto b = *reference->Next();
    ASSERT_TRUE(b);
    want.push_back(Bytes(b->inputs(), bytes));
  }
  EXPECT_EQ(*reference->Next(), nullptr);
  auto first = Staged(o);
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(*first->Next());
  const std::string state = first->SaveState();
  auto resumed = Staged(o);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(*resumed->Next());  // Batches copied ahead get dropped.
  ASSERT_TRUE(resumed->LoadState(state).ok());
  EXPECT_EQ(resumed->Step(), 12);
  EXPECT_EQ(resumed->RemainingSteps(), 18);
  for (int i = 12; i < 30; ++i) {
    auto b = *resumed->Next();
    ASSERT_TRUE(b) << i;
    EXPECT_EQ(b->step(), i);
    EXPECT_EQ(Bytes(b->inputs(), bytes), want[static_cast<size_t>(i)]) << i;
  }
  EXPECT_EQ(*resumed->Next(), nullptr);
}

TEST_P(CopyStageTest, HeldDeviceBuffersAreAClearErrorAndOutliveTheLoader) {
  const LoaderOptions o = Opts();
  auto stage = std::make_shared<HostStage>(o, 2);
  auto l = Staged(o, stage);
  std::vector<std::shared_ptr<const Batch>> held;
  for (int i = 0; i < o.device_prefetch; ++i) held.push_back(*l->Next());
  auto refused = l->Next();
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("device_prefetch"), std::string::npos);
  const std::vector<char> first = Bytes(held[0]->inputs(), 16);
  l.reset();  // Batches stay valid and unchanged after the loader is gone.
  EXPECT_EQ(Bytes(held[0]->inputs(), 16), first);
  held.clear();
  EXPECT_EQ(stage->live(), 0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CopyStageTest,
                         ::testing::Values(OutputDtype::kInt64, OutputDtype::kInt32));

}  // namespace
}  // namespace tokpack
