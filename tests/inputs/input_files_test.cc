#include "inputs/input_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "inputs/input_formats.h"
#include "tests/test_util.h"
#include "tokpack/builder.h"

namespace tokpack {
namespace {

using testing::TempDir;
using testing::WriteStringToFile;

std::vector<std::string> Paths(const std::vector<InputRecord>& r) {
  std::vector<std::string> out;
  for (const auto& x : r) out.push_back(x.path);
  return out;
}

class InputFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::mkdir(dir_.Join("c").c_str(), 0755);
    ::mkdir(dir_.Join("c/sub").c_str(), 0755);
    ::mkdir(dir_.Join("c/sub/deeper").c_str(), 0755);
    for (const char* f : {"c/b.jsonl", "c/a.jsonl.zst", "c/readme.md", "c/.hidden.jsonl",
                          "c/sub/x.jsonl.gz", "c/sub/deeper/y.jsonl", "c/sub/t.txt"}) {
      WriteStringToFile(dir_.Join(f), "{}\n");
    }
  }
  TempDir dir_;
};

TEST_F(InputFilesTest, DirectoryOfUnknownFilesFailsUnlessSkipped) {
  auto r = ExpandInputs({dir_.Join("c")}, StorageOptions());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("readme.md"), std::string::npos);
  EXPECT_NE(r.status().message().find("--skip-unknown-files"), std::string::npos);
}

TEST_F(InputFilesTest, DirectoryWalksSortedFilesAndListsTheSkipped) {
  auto r = ExpandInputs({dir_.Join("c")}, StorageOptions(), "auto", /*skip_unknown=*/true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Paths(r->inputs),
            (std::vector<std::string>{dir_.Join("c/a.jsonl.zst"), dir_.Join("c/b.jsonl"),
                                      dir_.Join("c/sub/deeper/y.jsonl"), dir_.Join("c/sub/t.txt"),
                                      dir_.Join("c/sub/x.jsonl.gz")}));
  EXPECT_EQ(r->inputs[0].bytes, 3u);
  EXPECT_EQ(r->skipped, (std::vector<std::string>{dir_.Join("c/readme.md")}));
  // A forced format reads every file as that format.
  auto forced = ExpandInputs({dir_.Join("c")}, StorageOptions(), "jsonl");
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ(forced->inputs.size(), 6u);
}

TEST_F(InputFilesTest, DoubleStarGlobMatchesAnyDepth) {
  auto r = ExpandInputs({dir_.Join("c/**/*.jsonl*")}, StorageOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(
      Paths(r->inputs),
      (std::vector<std::string>{dir_.Join("c/a.jsonl.zst"), dir_.Join("c/b.jsonl"),
                                dir_.Join("c/sub/deeper/y.jsonl"), dir_.Join("c/sub/x.jsonl.gz")}));
  auto one = ExpandInputs({dir_.Join("c/*.jsonl")}, StorageOptions());
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(Paths(one->inputs), (std::vector<std::string>{dir_.Join("c/b.jsonl")}));
}

TEST_F(InputFilesTest, MissingInputsFailUpFrontNamingThem) {
  auto r = ExpandInputs({dir_.Join("c/b.jsonl"), dir_.Join("nope.jsonl")}, StorageOptions());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("nope.jsonl"), std::string::npos);
  auto g = ExpandInputs({dir_.Join("c/*.parquet")}, StorageOptions());
  EXPECT_EQ(g.status().code(), StatusCode::kNotFound);
  EXPECT_NE(g.status().message().find("*.parquet"), std::string::npos);
  EXPECT_FALSE(ExpandInputs({"-", "-"}, StorageOptions()).ok());
}

TEST(InputFormat, ByNameUnlessForced) {
  auto name = [](const std::string& path, const std::string& format) {
    return std::string((*InputFormatFor(path, format))->name);
  };
  EXPECT_EQ(name("a.jsonl.zst", "auto"), "jsonl");
  EXPECT_EQ(name("a.txt.gz", "auto"), "text");
  EXPECT_EQ(name("-", "auto"), "jsonl");
  EXPECT_EQ(name("a.md", "text"), "text");
  EXPECT_EQ(name("s3://b/train-00000.parquet", "auto"), "parquet");
  EXPECT_EQ(name("a.jsonl", "parquet"), "parquet");
  auto bad = InputFormatFor("a.md", "auto");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--input-format"), std::string::npos);
}

TEST(SelectPart, PartsAreContiguousDisjointAndCoverEverything) {
  std::vector<InputRecord> all;
  for (int i = 0; i < 23; ++i) all.push_back({"f" + std::to_string(i), uint64_t(1 + i * i % 17)});
  for (int n : {1, 2, 3, 5, 23, 40}) {
    std::vector<std::string> joined;
    for (int i = 0; i < n; ++i) {
      for (auto& p : Paths(SelectPart(all, i, n))) joined.push_back(p);
    }
    EXPECT_EQ(joined, Paths(all)) << n << " parts";
  }
}

TEST(SelectPart, BalancesByBytes) {
  std::vector<InputRecord> all = {{"big", 1000}, {"a", 10}, {"b", 10}, {"c", 10}};
  EXPECT_EQ(Paths(SelectPart(all, 0, 2)), (std::vector<std::string>{"big"}));
  EXPECT_EQ(Paths(SelectPart(all, 1, 2)), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(SelectPartByRowGroups, FilesWithoutRowGroupsSplitAsBefore) {
  std::vector<InputRecord> all = {{"big.jsonl", 1000}, {"a.jsonl", 10}, {"b.txt", 10}};
  auto part = SelectPartByRowGroups(all, 1, 2, "auto", "text", StorageOptions());
  ASSERT_TRUE(part.ok()) << part.status().ToString();
  EXPECT_EQ(Paths(*part), (std::vector<std::string>{"a.jsonl", "b.txt"}));
  EXPECT_TRUE((*part)[0].whole_file());
}

}  // namespace
}  // namespace tokpack
