#include "tokpack/dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <tuple>

#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::TempDir;
using testing::TokenAt;

TEST(Dataset, ReadsTheStreamAcrossShardsWidened) {
  TempDir dir;
  Manifest m =
      testing::WriteSyntheticDataset(dir.Join("ds"), testing::CyclingLengths(300, 40), 5, 500);
  auto ds = Dataset::Open(dir.Join("ds"));
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ((*ds)->num_tokens(), m.TotalTokens());
  EXPECT_GT((*ds)->num_shards(), 5u);
  EXPECT_EQ((*ds)->fingerprint(), m.Fingerprint());
  std::vector<int64_t> out(1500);
  ASSERT_TRUE((*ds)->ReadTokens(100, out.size(), out.data()).ok());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], TokenAt(100 + i, 5)) << i;
  std::vector<int32_t> out32(3);
  EXPECT_EQ((*ds)->ReadTokens(m.TotalTokens() - 2, 3, out32.data()).code(),
            StatusCode::kOutOfRange);
}

TEST(Dataset, DocumentStartsAndExtentsFollowTheIndex) {
  TempDir dir;
  std::vector<uint32_t> lengths = {5, 3, 0, 7, 2, 9};
  testing::WriteSyntheticDataset(dir.Join("ds"), lengths, 0, 8);
  auto ds = Dataset::Open(dir.Join("ds"));
  ASSERT_TRUE(ds.ok());
  std::vector<uint64_t> starts;
  (*ds)->DocumentStarts(1, 20, &starts);
  EXPECT_EQ(starts, (std::vector<uint64_t>{5, 8, 15, 17}));
  uint64_t off = 0, len = 0;
  ASSERT_TRUE((*ds)->DocumentExtent(3, &off, &len).ok());
  EXPECT_EQ(off, 8u);
  EXPECT_EQ(len, 7u);
  EXPECT_EQ((*ds)->DocumentExtent(6, &off, &len).code(), StatusCode::kOutOfRange);
}

TEST(Dataset, DocumentViewsPointIntoTheMappingInStoredDtype) {
  TempDir dir;
  std::vector<uint32_t> lengths = {5, 3, 0, 7, 2, 9, 0};
  testing::WriteSyntheticDataset(dir.Join("ds"), lengths, 2, 8);
  auto ds = Dataset::Open(dir.Join("ds"));
  ASSERT_TRUE(ds.ok());
  ASSERT_EQ((*ds)->dtype(), TokenDtype::kUInt16);
  for (uint64_t i = 0; i < lengths.size(); ++i) {
    auto view = (*ds)->DocumentView(i);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    uint64_t off = 0, len = 0;
    ASSERT_TRUE((*ds)->DocumentExtent(i, &off, &len).ok());
    ASSERT_EQ(view->length, lengths[i]);
    const uint16_t* tokens = static_cast<const uint16_t*>(view->data);
    for (uint64_t j = 0; j < len; ++j) ASSERT_EQ(tokens[j], TokenAt(off + j, 2)) << i << " " << j;
  }
  EXPECT_EQ((*ds)->DocumentView(lengths.size()).status().code(), StatusCode::kOutOfRange);
}

TEST(Dataset, OpensABareMegatronPrefix) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), {10, 20, 30}, 1, 1000);
  auto ds = Dataset::Open(dir.Join("ds/shard-00000.bin"));
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ((*ds)->num_tokens(), 60u);
  EXPECT_EQ((*ds)->num_documents(), 3u);
  EXPECT_EQ(Dataset::Open(dir.Join("nothing")).status().code(), StatusCode::kNotFound);
}

TEST(Dataset, TruncatedBinIsAClearError) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), {10, 20, 30}, 1, 1000);
  ASSERT_EQ(::truncate(dir.Join("ds/shard-00000.bin").c_str(), 50), 0);
  auto ds = Dataset::Open(dir.Join("ds"));
  EXPECT_EQ(ds.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(ds.status().message().find("shard-00000.bin: 50 bytes"), std::string::npos)
      << ds.status().message();
}

TEST(Dataset, IndexThatDisagreesWithTheManifestIsRefused) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("a"), {10, 20}, 1, 1000);
  testing::WriteSyntheticDataset(dir.Join("b"), {10, 10, 10}, 1, 1000);
  ASSERT_EQ(::rename(dir.Join("b/shard-00000.idx").c_str(), dir.Join("a/shard-00000.idx").c_str()),
            0);
  auto ds = Dataset::Open(dir.Join("a"));
  EXPECT_EQ(ds.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(ds.status().message().find("does not match manifest.json"), std::string::npos);
}

// Overwrites `value` at byte `offset` of file `path`.
template <typename T>
void Patch(const std::string& path, uint64_t offset, T value) {
  std::string bytes = testing::ReadFileOrDie(path);
  ASSERT_LE(offset + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
  testing::WriteStringToFile(path, bytes);
}

// One bad entry in the middle of an index (where the old header-only check
// did not look) is refused at open, naming the file and the entry, instead
// of DocumentView pointing outside the mapping.
TEST(Dataset, OneBadIndexEntryIsRefusedAtOpenNamingFileAndEntry) {
  constexpr uint64_t n = 300, mid = 150;
  // Header 34 bytes; then lengths (4 * n), pointers (8 * n), doc index.
  const uint64_t length_at = 34 + 4 * mid, pointer_at = 34 + 4 * n + 8 * mid,
                 doc_at = 34 + 12 * n + 8 * mid;
  const std::vector<std::tuple<const char*, std::function<void(const std::string&)>, std::string>>
      cases = {
          {"size too large",
           [&](const std::string& idx) { Patch<int32_t>(idx, length_at, 1 << 28); },
           "sequence 151 has pointer"},
          {"pointer past the end",
           [&](const std::string& idx) { Patch<int64_t>(idx, pointer_at, int64_t{1} << 40); },
           "sequence 150 has pointer 1099511627776"},
          {"pointer going backwards",
           [&](const std::string& idx) { Patch<int64_t>(idx, pointer_at, 2); },
           "sequence 150 has pointer 2"},
          {"doc index out of range",
           [&](const std::string& idx) { Patch<int64_t>(idx, doc_at, int64_t{n} + 1); },
           "document index entry 150 is 301"},
      };
  for (const auto& [what, damage, needle] : cases) {
    TempDir dir;
    testing::WriteSyntheticDataset(dir.Join("ds"), testing::CyclingLengths(n, 40), 1, 1 << 20);
    const std::string idx = dir.Join("ds/shard-00000.idx");
    damage(idx);
    for (const std::string& path : {dir.Join("ds"), dir.Join("ds/shard-00000")}) {
      auto ds = Dataset::Open(path);  // With its manifest, and as a bare prefix.
      ASSERT_FALSE(ds.ok()) << what;
      EXPECT_EQ(ds.status().code(), StatusCode::kDataLoss) << what;
      EXPECT_NE(ds.status().message().find(idx), std::string::npos)
          << what << ": " << ds.status().ToString();
      EXPECT_NE(ds.status().message().find(needle), std::string::npos)
          << what << ": " << ds.status().ToString();
    }
  }
}

// A flipped token byte is served as it is, unless verify_on_open compares
// the chunks with the manifest's checksums.
TEST(Dataset, VerifyOnOpenFindsAFlippedTokenByteNamingFileAndChunk) {
  TempDir dir;
  const Manifest m =
      testing::WriteSyntheticDataset(dir.Join("ds"), testing::CyclingLengths(200, 40), 4, 1000);
  const std::string bin = dir.Join("ds/shard-00001.bin");
  const uint64_t token = m.shards[0].tokens + 300;  // Byte 600 of shard 1.
  const int64_t stored = TokenAt(token, 4);
  Patch<uint16_t>(bin, 600, static_cast<uint16_t>(stored ^ 0x100));
  auto plain = Dataset::Open(dir.Join("ds"));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  int64_t served = 0;
  ASSERT_TRUE((*plain)->ReadTokens(token, 1, &served).ok());
  EXPECT_EQ(served, stored ^ 0x100);

  DatasetOptions verify;
  ASSERT_TRUE(verify.Set("verify_on_open", true).ok());
  auto checked = Dataset::Open(dir.Join("ds"), StorageOptions(), verify);
  ASSERT_EQ(checked.status().code(), StatusCode::kDataLoss) << checked.status().ToString();
  // The synthetic datasets have 256-byte chunks: byte 600 is in chunk 2.
  EXPECT_NE(checked.status().message().find(bin + ": chunk 2 (bytes 512..768)"), std::string::npos)
      << checked.status().ToString();

  // Undamaged, it opens; a bare prefix has no checksums to verify against.
  Patch<uint16_t>(bin, 600, static_cast<uint16_t>(stored));
  EXPECT_TRUE(Dataset::Open(dir.Join("ds"), StorageOptions(), verify).ok());
  EXPECT_EQ(Dataset::Open(dir.Join("ds/shard-00001"), StorageOptions(), verify).status().code(),
            StatusCode::kFailedPrecondition);
}

// verify_on_open reads every chunk: StorageOptions::cancel (Ctrl-C in
// Python, SIGINT in the CLI) ends it between chunks.
TEST(Dataset, VerifyOnOpenStopsWhenCancelled) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), testing::CyclingLengths(200, 40), 4, 1000);
  DatasetOptions verify;
  ASSERT_TRUE(verify.Set("verify_on_open", true).ok());
  StorageOptions storage;
  storage.cancel = std::make_shared<std::atomic<bool>>(true);
  auto ds = Dataset::Open(dir.Join("ds"), storage, verify);
  ASSERT_EQ(ds.status().code(), StatusCode::kCancelled) << ds.status().ToString();
  EXPECT_NE(ds.status().message().find(dir.Join("ds/shard-00000.idx")), std::string::npos)
      << ds.status().ToString();
  // Without verification the flag is not looked at: a local open reads no chunks.
  EXPECT_TRUE(Dataset::Open(dir.Join("ds"), storage).ok());
}

TEST(Dataset, OpensAThousandShards) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), std::vector<uint32_t>(1000, 20), 3, 20);
  auto ds = Dataset::Open(dir.Join("ds"));
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ((*ds)->num_shards(), 1000u);
  std::vector<int32_t> out(45);
  ASSERT_TRUE((*ds)->ReadTokens(19950, out.size(), out.data()).ok());
  EXPECT_EQ(out[44], TokenAt(19950 + 44, 3));
}

}  // namespace
}  // namespace tokpack
