#include "format/shard_writer.h"

#include <gtest/gtest.h>

#include "format/idx_file.h"
#include "tests/test_util.h"

namespace tokpack {
namespace {

std::string Tokens(int n, uint16_t base) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    uint16_t v = static_cast<uint16_t>(base + i);
    out.append(reinterpret_cast<const char*>(&v), 2);
  }
  return out;
}

TEST(ShardWriter, RollsAtTheTokenBudgetWithoutSplittingDocuments) {
  testing::TempDir dir;
  ShardWriter w(PosixFileSystem(), dir.path(), TokenDtype::kUInt16, 8, 10);
  for (int n : {4, 5, 2, 20, 1}) ASSERT_TRUE(w.AddDocument(Tokens(n, 100), n).ok());
  auto shards = w.Finish();
  ASSERT_TRUE(shards.ok());
  // [4,5] = 9; +2 would be 11 > 10 -> new shard [2]; 20 alone; [1].
  ASSERT_EQ(shards->size(), 4u);
  EXPECT_EQ((*shards)[0].tokens, 9u);
  EXPECT_EQ((*shards)[0].documents, 2u);
  EXPECT_EQ((*shards)[2].tokens, 20u);
  EXPECT_EQ((*shards)[3].path, "shard-00003");
  for (const ShardInfo& s : *shards) {
    std::string bin = testing::ReadFileOrDie(dir.Join(s.path + ".bin"));
    std::string idx = testing::ReadFileOrDie(dir.Join(s.path + ".idx"));
    EXPECT_EQ(bin.size(), s.bin.bytes);
    EXPECT_EQ(s.bin.chunk_xxh3.size(), (bin.size() + 7) / 8);
    auto v = ParseIdx(idx, s.path);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->tokens(), s.tokens);
    EXPECT_EQ(v->bin_bytes(), bin.size());
  }
}

TEST(ShardWriter, NoDocumentsMeansNoShards) {
  testing::TempDir dir;
  ShardWriter w(PosixFileSystem(), dir.path(), TokenDtype::kInt32, 8, 10);
  auto shards = w.Finish();
  ASSERT_TRUE(shards.ok());
  EXPECT_TRUE(shards->empty());
}

}  // namespace
}  // namespace tokpack
