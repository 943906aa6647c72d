#include "common/chunk_hasher.h"

#include <gtest/gtest.h>

namespace tokpack {
namespace {

TEST(ChunkHasher, ChunksAreIndependentOfUpdateSplits) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i * 31);
  ChunkHasher whole(64);
  whole.Update(data);
  FileDigest a = whole.Finish();
  ChunkHasher pieces(64);
  for (size_t i = 0; i < data.size(); i += 7) pieces.Update(std::string_view(data).substr(i, 7));
  FileDigest b = pieces.Finish();
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.bytes, 1000u);
  ASSERT_EQ(a.chunk_xxh3.size(), 16u);  // 15 full chunks and one of 40 bytes.
  EXPECT_EQ(a.chunk_xxh3[0], Xxh3(std::string_view(data).substr(0, 64)));
  EXPECT_EQ(a.chunk_xxh3[15], Xxh3(std::string_view(data).substr(960)));
}

TEST(ChunkHasher, EmptyInputHasNoChunks) {
  ChunkHasher h(8);
  FileDigest d = h.Finish();
  EXPECT_EQ(d.bytes, 0u);
  EXPECT_TRUE(d.chunk_xxh3.empty());
}

TEST(ChunkHasher, ExactMultipleHasNoTrailingEmptyChunk) {
  ChunkHasher h(4);
  h.Update("abcdefgh");
  EXPECT_EQ(h.Finish().chunk_xxh3.size(), 2u);
}

}  // namespace
}  // namespace tokpack
