#include "base/chunk_hasher.h"

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

std::string Data(size_t n) {
  std::string data;
  for (size_t i = 0; i < n; ++i) data += static_cast<char>(i * 31);
  return data;
}

FileDigest DigestOf(std::string_view data, uint64_t chunk) {
  ChunkHasher h(chunk);
  h.Update(data);
  return h.Finish();
}

TEST(ChunkVerifier, AcceptsTheFileInAnySplits) {
  const std::string data = Data(1000);
  const FileDigest want = DigestOf(data, 64);
  for (size_t step : {1, 7, 64, 100, 1000}) {
    ChunkVerifier v("f", want, 64);
    for (size_t i = 0; i < data.size(); i += step) {
      ASSERT_TRUE(v.Update(std::string_view(data).substr(i, step)).ok()) << step;
    }
    EXPECT_TRUE(v.Finish().ok()) << step;
  }
  const FileDigest empty = DigestOf("", 64);
  ChunkVerifier v("f", empty, 64);
  EXPECT_TRUE(v.Update("").ok());
  EXPECT_TRUE(v.Finish().ok());
}

// A damaged chunk is reported by the Update that completes it, so nothing
// after it need be used; the last, shorter chunk is complete at want.bytes.
TEST(ChunkVerifier, NamesTheDamagedChunkAsSoonAsItIsComplete) {
  const std::string good = Data(1000);
  const FileDigest want = DigestOf(good, 64);
  for (size_t at : {size_t{70}, size_t{999}}) {
    std::string bad = good;
    bad[at] ^= 1;
    ChunkVerifier v("dir/shard-00000.bin", want, 64);
    const size_t k = at / 64, end = std::min<size_t>(1000, (k + 1) * 64);
    ASSERT_TRUE(v.Update(std::string_view(bad).substr(0, end - 1)).ok());
    const Status s = v.Update(std::string_view(bad).substr(end - 1, 1));
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(
        s.message().find("dir/shard-00000.bin: chunk " + std::to_string(k) + " (bytes " +
                         std::to_string(k * 64) + ".." + std::to_string(end) + ") has checksum "),
        std::string::npos)
        << s.ToString();
    EXPECT_NE(s.message().find("manifest.json says " + HashToHex(want.chunk_xxh3[k])),
              std::string::npos)
        << s.ToString();
  }
}

TEST(ChunkVerifier, RefusesMoreOrFewerBytesThanTheManifestRecords) {
  const std::string data = Data(100);
  const FileDigest want = DigestOf(data, 64);
  ChunkVerifier longer("f", want, 64);
  EXPECT_EQ(longer.Update(data + "x").code(), StatusCode::kDataLoss);
  ChunkVerifier shorter("f", want, 64);
  ASSERT_TRUE(shorter.Update(std::string_view(data).substr(0, 64)).ok());
  const Status s = shorter.Finish();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("f: 64 bytes, manifest.json records 100"), std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace tokpack
