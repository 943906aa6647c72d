// Plan files: written beside the shards or in the cache, verified on load,
// rebuilt when corrupt or stale, built by one process while others wait.
#include "reader/plan_file.h"

#include <gtest/gtest.h>

#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::TempDir;

TEST(PlanFileTest, BuildsThenLoadsTheSameView) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), testing::CyclingLengths(300, 90), 1, 2000);
  auto ds = Dataset::Open(dir.Join("ds"));
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  auto view = LoadOrBuildPackedView(**ds, {64, 0}, StorageOptions(), 2);
  ASSERT_TRUE(view.ok()) << view.status().message();
  ASSERT_EQ((*view)->plan_files().size(), (*ds)->num_shards());
  EXPECT_EQ((*view)->plan_files()[0].rfind(dir.Join("ds/packing/"), 0), 0u);
  auto again = LoadOrBuildPackedView(**ds, {64, 0}, StorageOptions(), 1);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ((*again)->num_bins(), (*view)->num_bins());
  std::vector<PackedView::Range> a, b;
  for (uint64_t i = 0; i < (*view)->num_bins(); ++i) {
    (*view)->Bin(i, &a);
    (*again)->Bin(i, &b);
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) EXPECT_EQ(a[j].begin, b[j].begin);
  }
}

}  // namespace
}  // namespace tokpack
