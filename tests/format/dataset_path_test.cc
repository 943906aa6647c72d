#include "format/dataset_path.h"

#include <gtest/gtest.h>

#include <string>

namespace tokpack {
namespace {

TEST(DatasetPath, AcceptsNamesAndSubdirectories) {
  for (const char* ok :
       {"shard-00000", "tokenizer.model", "g-1a2b/shard-00000", "part-00000/part-00001/shard-00000",
        "..hidden", "a..b", "...", ".tokenizer", "caf\xc3\xa9/shard", "a b/c"}) {
    EXPECT_TRUE(CheckDatasetPath(ok).ok()) << ok << ": " << CheckDatasetPath(ok).message();
  }
}

TEST(DatasetPath, RefusesEverythingThatLeavesOrBlursTheDirectory) {
  const std::pair<std::string, const char*> bad[] = {
      {"", "empty"},
      {"/etc/passwd", "absolute"},
      {"..", "'..' component"},
      {"../other/shard-00000", "'..' component"},
      {"a/../../b", "'..' component"},
      {"a/..", "'..' component"},
      {".", "'.' component"},
      {"./shard", "'.' component"},
      {"a//b", "empty component"},
      {"a/", "empty component"},
      {"a\\..\\b", "backslash"},
      {std::string("a\0b", 3), "control character 0x00"},
      {"a\nb", "control character 0x0a"},
      {"a\x7f", "control character 0x7f"},
      {std::string(kMaxDatasetPathBytes + 1, 'a'), "bytes long"},
      {std::string(kMaxDatasetPathComponentBytes + 1, 'a'), "component of 256 bytes"},
  };
  for (const auto& [path, why] : bad) {
    Status s = CheckDatasetPath(path);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << path;
    EXPECT_NE(s.message().find(why), std::string::npos) << path << ": " << s.message();
  }
}

TEST(DatasetPath, CapsTheDepth) {
  std::string deep = "a";
  for (size_t i = 1; i < kMaxDatasetPathComponents; ++i) deep += "/a";
  EXPECT_TRUE(CheckDatasetPath(deep).ok());
  Status s = CheckDatasetPath(deep + "/a");
  EXPECT_NE(s.message().find("more than 16 components"), std::string::npos) << s.message();
  std::string wide(kMaxDatasetPathComponentBytes, 'a');
  for (int i = 0; i < 4; ++i) wide += "/" + std::string(kMaxDatasetPathComponentBytes, 'a');
  EXPECT_NE(CheckDatasetPath(wide).message().find("bytes long"), std::string::npos);
}

}  // namespace
}  // namespace tokpack
