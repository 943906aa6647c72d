// Loss masks: the bit packing of src/format/loss_mask.h, the shard writer's
// .mask files and the manifest's mask fields (docs/format.md 3.1, 5.6 rule 12).
#include "format/loss_mask.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file_system.h"
#include "format/shard_writer.h"
#include "tests/test_util.h"
#include "tokpack/manifest.h"

namespace tokpack {
namespace {

std::vector<bool> Unpack(const std::string& bytes, uint64_t n) {
  std::vector<bool> out;
  for (uint64_t i = 0; i < n; ++i) {
    out.push_back(MaskBit(reinterpret_cast<const uint8_t*>(bytes.data()), i));
  }
  return out;
}

TEST(MaskPacker, PacksLeastSignificantBitFirstAcrossRunsAndFlags) {
  MaskPacker p;
  p.Append(std::string("\1\0\1", 3));
  p.AppendRun(13, true);
  p.AppendRun(2, false);
  p.Append(std::string("\0\7", 2));
  std::string bytes = p.TakeBytes();
  bytes += p.Finish();
  ASSERT_EQ(p.bits(), 20u);
  EXPECT_EQ(p.set_bits(), 16u);
  ASSERT_EQ(bytes.size(), MaskBytes(20));
  std::vector<bool> want = {true, false, true};
  want.insert(want.end(), 13, true);
  want.insert(want.end(), {false, false, false, true});
  EXPECT_EQ(Unpack(bytes, 20), want);
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0xFD);    // Bits 0, 2..7.
  EXPECT_EQ(static_cast<uint8_t>(bytes[2]) >> 4, 0);  // Unused high bits are 0.
}

TEST(MaskPacker, CountsBitsInAnyRange) {
  MaskPacker p;
  for (int i = 0; i < 100; ++i) p.AppendRun(1, i % 3 == 0);
  const std::string bytes = p.Finish();
  const auto* bits = reinterpret_cast<const uint8_t*>(bytes.data());
  for (uint64_t b = 0; b < 100; b += 7) {
    for (uint64_t e = b; e <= 100; e += 5) {
      uint64_t want = 0;
      for (uint64_t i = b; i < e; ++i) want += i % 3 == 0;
      EXPECT_EQ(CountMaskBits(bits, b, e), want) << b << " " << e;
    }
  }
}

TEST(ShardWriterMasks, WritesAMaskPerShardAndTheManifestRoundTrips) {
  testing::TempDir dir;
  ShardWriter w(PosixFileSystem(), dir.path(), TokenDtype::kUInt16, 4, /*shard_tokens=*/6,
                /*loss_masks=*/true);
  const std::string tokens(2 * 5, '\1');
  ASSERT_TRUE(w.AddDocument(tokens, 5, std::string("\0\0\1\1\1", 5)).ok());
  ASSERT_TRUE(w.AddDocument(tokens.substr(0, 6), 3).ok());  // No flags: all carry loss.
  EXPECT_FALSE(w.AddDocument(tokens.substr(0, 4), 2, std::string("\1", 1)).ok());
  auto shards = w.Finish();
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  ASSERT_EQ(shards->size(), 2u);
  EXPECT_TRUE((*shards)[0].has_mask);
  EXPECT_EQ((*shards)[0].trainable_tokens, 3u);
  EXPECT_EQ((*shards)[1].trainable_tokens, 3u);
  auto mask = ReadFileToString(dir.Join("shard-00000.mask"));
  ASSERT_TRUE(mask.ok());
  EXPECT_EQ(*mask, std::string("\x1c", 1));

  Manifest m;
  m.chunk_bytes = 4;
  m.shards = *shards;
  auto parsed = Manifest::Parse(m.ToJson(), "manifest.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(parsed->HasLossMasks());
  EXPECT_EQ(parsed->TrainableTokens(), 6u);
  EXPECT_EQ(parsed->shards[1].mask, (*shards)[1].mask);
  EXPECT_EQ(parsed->Fingerprint(), [&] {
    Manifest plain = m;
    for (ShardInfo& s : plain.shards) s.has_mask = false;
    return plain.Fingerprint();
  }());
}

TEST(ShardWriterMasks, AManifestWithMasksOnSomeShardsOrTheWrongSizeIsRefused) {
  testing::TempDir dir;
  ShardWriter w(PosixFileSystem(), dir.path(), TokenDtype::kUInt16, 4, 2, true);
  const std::string tokens(4, '\1');
  ASSERT_TRUE(w.AddDocument(tokens, 2).ok());
  ASSERT_TRUE(w.AddDocument(tokens, 2).ok());
  auto shards = w.Finish();
  ASSERT_TRUE(shards.ok());
  Manifest m;
  m.chunk_bytes = 4;
  m.shards = *shards;
  m.shards[1].has_mask = false;
  auto some = Manifest::Parse(m.ToJson(), "manifest.json");
  ASSERT_FALSE(some.ok());
  EXPECT_NE(some.status().message().find("on every shard or on none"), std::string::npos)
      << some.status().message();
  m.shards[1].has_mask = true;
  m.shards[1].trainable_tokens = 3;
  auto more = Manifest::Parse(m.ToJson(), "manifest.json");
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.status().message().find("more than the shard's 2 tokens"), std::string::npos);
  m.shards[1].trainable_tokens = 2;
  m.shards[1].mask.bytes = 2;
  m.shards[1].mask.chunk_xxh3 = {0};
  EXPECT_FALSE(Manifest::Parse(m.ToJson(), "manifest.json").ok());
}

}  // namespace
}  // namespace tokpack
