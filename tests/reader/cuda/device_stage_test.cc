// The Loader with a CUDA device (src/reader/cuda/device_stage.cc). The suites keep
// "DeviceLoader" in their names: scripts/gpu_check.sh selects them by it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"
#include "tokpack/loader.h"

#ifdef TOKPACK_TEST_CUDA
#include <cuda_runtime.h>
#endif

namespace tokpack {
namespace {

using testing::TempDir;

LoaderOptions Options() {
  LoaderOptions o;
  o.device = Device{Device::Kind::kCuda, 0};
  o.seq_len = 64;
  o.batch_size = 4;
  o.seed = 99;
  o.document_boundaries = true;
  return o;
}

TEST(DeviceLoader, SaysWhyNoDeviceIsUsable) {
  std::string why;
  if (CudaAvailable(&why)) GTEST_SKIP() << "a CUDA device is usable here";
  EXPECT_FALSE(why.empty());
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), testing::CyclingLengths(200, 90), 1);
  auto l = Loader::Create({{*Dataset::Open(dir.Join("ds")), 1.0}}, Options());
  EXPECT_EQ(l.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(l.status().message().find(why), std::string::npos) << l.status().ToString();
}

#ifdef TOKPACK_TEST_CUDA

// Copies a device array back after ordering the legacy default stream (which
// cudaMemcpy uses) after the batch.
template <typename T>
std::vector<T> ToHost(const Batch& b, const void* p, size_t n) {
  EXPECT_TRUE(b.UseOn(nullptr).ok());
  std::vector<T> out(n);
  EXPECT_EQ(cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

class DeviceLoaderGpu : public ::testing::TestWithParam<OutputDtype> {
 protected:
  void SetUp() override {
    if (!CudaAvailable(nullptr)) GTEST_SKIP() << "no usable CUDA device";
    testing::WriteSyntheticDataset(dir_.Join("ds"), testing::CyclingLengths(3000, 120), 5, 20000);
    ds_ = *Dataset::Open(dir_.Join("ds"));
  }
  TempDir dir_;
  std::shared_ptr<Dataset> ds_;
};

TEST_P(DeviceLoaderGpu, AThousandStepsEqualTheHostLoader) {
  LoaderOptions o = Options();
  o.dtype = GetParam();
  LoaderOptions on_cpu = o;
  on_cpu.device = Device{};
  auto host = Loader::Create({{ds_, 1.0}}, on_cpu);
  auto dev = Loader::Create({{ds_, 1.0}}, o);
  ASSERT_TRUE(host.ok() && dev.ok()) << dev.status().ToString();
  const size_t cells = static_cast<size_t>(o.batch_size * o.seq_len);
  const size_t item = o.dtype == OutputDtype::kInt64 ? 8 : 4;
  for (int step = 0; step < 1000; ++step) {
    auto want = *(*host)->Next();
    auto got = (*dev)->Next();
    ASSERT_TRUE(got.ok() && *got) << step;
    const Batch& b = **got;
    EXPECT_EQ(b.device().ToString(), "cuda:0");
    EXPECT_EQ(b.step(), want->step());
    auto in = ToHost<char>(b, b.inputs(), cells * item);
    auto tg = ToHost<char>(b, b.targets(), cells * item);
    ASSERT_EQ(0, std::memcmp(in.data(), want->inputs(), in.size())) << step;
    ASSERT_EQ(0, std::memcmp(tg.data(), want->targets(), tg.size())) << step;
    ASSERT_EQ(b.num_cu_seqlens(), want->num_cu_seqlens());
    auto pos = ToHost<int32_t>(b, b.position_ids(), cells);
    auto cu = ToHost<int32_t>(b, b.cu_seqlens(), static_cast<size_t>(b.num_cu_seqlens()));
    ASSERT_EQ(0, std::memcmp(pos.data(), want->position_ids(), cells * 4)) << step;
    ASSERT_EQ(0, std::memcmp(cu.data(), want->cu_seqlens(), cu.size() * 4)) << step;
  }
}

TEST_P(DeviceLoaderGpu, LabelsSameEqualTheHostLoader) {
  LoaderOptions o = Options();
  o.dtype = GetParam();
  o.labels = LabelsMode::kSame;
  LoaderOptions on_cpu = o;
  on_cpu.device = Device{};
  auto host = Loader::Create({{ds_, 1.0}}, on_cpu);
  auto dev = Loader::Create({{ds_, 1.0}}, o);
  ASSERT_TRUE(host.ok() && dev.ok()) << dev.status().ToString();
  const size_t bytes =
      static_cast<size_t>(o.batch_size * o.seq_len) * (o.dtype == OutputDtype::kInt64 ? 8 : 4);
  for (int step = 0; step < 50; ++step) {
    auto want = *(*host)->Next();
    auto got = (*dev)->Next();
    ASSERT_TRUE(got.ok() && *got) << step;
    auto tg = ToHost<char>(**got, (*got)->targets(), bytes);
    ASSERT_EQ(0, std::memcmp(tg.data(), want->targets(), bytes)) << step;
    ASSERT_EQ(0, std::memcmp(tg.data(), want->inputs(), bytes)) << step;
  }
}

// Loss masks: the device's labels are the host loader's, -100 where a masked
// source's bit is 0 (both labels modes, blended with an unmasked source),
// and the device loss_mask is the host's.
TEST_P(DeviceLoaderGpu, MaskedLabelsAndLossMaskEqualTheHostLoader) {
  testing::WriteMaskedSyntheticDataset(dir_.Join("masked"), testing::CyclingLengths(2000, 120), 6,
                                       20000);
  auto masked = *Dataset::Open(dir_.Join("masked"));
  for (LabelsMode labels : {LabelsMode::kNext, LabelsMode::kSame}) {
    LoaderOptions o = Options();
    o.dtype = GetParam();
    o.labels = labels;
    o.loss_mask = true;
    LoaderOptions on_cpu = o;
    on_cpu.device = Device{};
    auto host = Loader::Create({{masked, 0.7}, {ds_, 0.3}}, on_cpu);
    auto dev = Loader::Create({{masked, 0.7}, {ds_, 0.3}}, o);
    ASSERT_TRUE(host.ok() && dev.ok()) << dev.status().ToString();
    const size_t cells = static_cast<size_t>(o.batch_size * o.seq_len);
    const size_t bytes = cells * (o.dtype == OutputDtype::kInt64 ? 8 : 4);
    for (int step = 0; step < 200; ++step) {
      auto want = *(*host)->Next();
      auto got = (*dev)->Next();
      ASSERT_TRUE(got.ok() && *got) << step;
      auto tg = ToHost<char>(**got, (*got)->targets(), bytes);
      ASSERT_EQ(0, std::memcmp(tg.data(), want->targets(), bytes)) << step;
      auto mask = ToHost<uint8_t>(**got, (*got)->loss_mask(), cells);
      ASSERT_EQ(0, std::memcmp(mask.data(), want->loss_mask(), cells)) << step;
    }
    EXPECT_EQ((*dev)->Stats().sources[0].trainable_tokens,
              (*host)->Stats().sources[0].trainable_tokens);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, DeviceLoaderGpu,
                         ::testing::Values(OutputDtype::kInt64, OutputDtype::kInt32));

std::unique_ptr<Loader> Make(std::shared_ptr<Dataset> ds, const LoaderOptions& o) {
  auto r = Loader::Create({{std::move(ds), 1.0}}, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

TEST(DeviceLoaderGpuCursor, ResumesExactlyAndEnds) {
  if (!CudaAvailable(nullptr)) GTEST_SKIP() << "no usable CUDA device";
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), testing::CyclingLengths(500, 60), 8);
  auto ds = *Dataset::Open(dir.Join("ds"));
  LoaderOptions o = Options();
  o.document_boundaries = false;
  o.max_steps = 30;
  auto reference = Make(ds, o);
  ASSERT_TRUE(reference);
  std::vector<std::vector<char>> want;
  const size_t bytes = static_cast<size_t>(o.batch_size * o.seq_len) * 8;
  for (int i = 0; i < 30; ++i) {
    auto b = *reference->Next();
    want.push_back(ToHost<char>(*b, b->inputs(), bytes));
  }
  EXPECT_EQ(*reference->Next(), nullptr);
  auto first = Make(ds, o);
  ASSERT_TRUE(first);
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(*first->Next());
  const std::string state = first->SaveState();
  auto resumed = Make(ds, o);
  ASSERT_TRUE(resumed);
  ASSERT_TRUE(resumed->LoadState(state).ok());
  EXPECT_EQ(resumed->Step(), 12);
  EXPECT_EQ(resumed->RemainingSteps(), 18);
  for (int i = 12; i < 30; ++i) {
    auto b = *resumed->Next();
    ASSERT_TRUE(b);
    EXPECT_EQ(ToHost<char>(*b, b->inputs(), bytes), want[static_cast<size_t>(i)]) << i;
  }
  EXPECT_EQ(*resumed->Next(), nullptr);
}

#endif  // TOKPACK_TEST_CUDA

}  // namespace
}  // namespace tokpack
