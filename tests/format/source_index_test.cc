// Document sources (src/format/source_index.h, docs/format.md 3.2): what the
// writer makes reads back, and a damaged or hostile file is an error naming
// it, never a crash.
#include "format/source_index.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace tokpack {
namespace {

struct Doc {
  uint64_t input;
  uint64_t record;
  std::optional<std::string> id;
};

std::string Write(const std::vector<Doc>& docs, uint64_t inputs) {
  SourceIndexWriter w(inputs);
  for (const Doc& d : docs) {
    EXPECT_TRUE(
        w.Add(d.input, d.record, d.id ? std::optional<std::string_view>(*d.id) : std::nullopt)
            .ok());
  }
  StatusOr<std::string> file = w.Finish();
  EXPECT_TRUE(file.ok()) << file.status().message();
  return *file;
}

// A shard of 1000 documents over three inputs, with gaps (skipped records),
// a whole-file document and some documents without ids.
std::vector<Doc> Sample() {
  std::vector<Doc> docs;
  for (uint64_t i = 0; i < 600; ++i)
    docs.push_back({0, i + 1 + (i >= 300), "a-" + std::to_string(i)});
  docs.push_back({1, 0, std::nullopt});
  for (uint64_t i = 0; i < 399; ++i) {
    docs.push_back({2, 7 + i, i % 3 == 0 ? std::nullopt : std::optional("b-" + std::to_string(i))});
  }
  return docs;
}

TEST(SourceIndex, RoundTripsRunsAndIds) {
  const std::vector<Doc> docs = Sample();
  const std::string file = Write(docs, 3);
  ASSERT_TRUE(CheckSourceFile(file, docs.size(), "s.src").ok());
  StatusOr<SourceHeader> h = ParseSourceHeader(file, file.size(), docs.size(), "s.src");
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->runs, 4u);  // Lines 1..300, 302..601, the whole file, lines 7..405.
  EXPECT_EQ(h->blocks, 4u);
  StatusOr<std::vector<SourceRun>> runs = ParseRuns(
      std::string_view(file).substr(h->runs_offset(), h->runs * kSourceRunBytes), *h, "s.src");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  for (uint64_t d = 0; d < docs.size(); ++d) {
    const SourceRun& r = RunOf(*runs, d);
    EXPECT_EQ(r.input, docs[d].input);
    EXPECT_EQ(r.first_record + (d - r.first_doc), docs[d].record) << d;
  }
  for (uint64_t b = 0; b < h->blocks; ++b) {
    uint64_t begin, end;
    std::memcpy(&begin, file.data() + h->block_offsets_offset() + 8 * b, 8);
    std::memcpy(&end, file.data() + h->block_offsets_offset() + 8 * b + 8, 8);
    const uint64_t n = std::min<uint64_t>(kIdBlockDocs, docs.size() - b * kIdBlockDocs);
    auto ids = DecodeIdBlock(std::string_view(file).substr(h->blob_offset() + begin, end - begin),
                             n, "s.src");
    ASSERT_TRUE(ids.ok()) << ids.status().message();
    for (uint64_t i = 0; i < n; ++i) EXPECT_EQ((*ids)[i], docs[b * kIdBlockDocs + i].id);
  }
}

TEST(SourceIndex, WithoutIdsHasNoBlocks) {
  const std::string file = Write({{0, 1, std::nullopt}, {0, 2, std::nullopt}}, 1);
  StatusOr<SourceHeader> h = ParseSourceHeader(file, file.size(), 2, "s.src");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->blocks, 0u);
  EXPECT_EQ(h->hashes, 0u);
  EXPECT_EQ(file.size(), kSourceHeaderBytes + kSourceRunBytes + 8);
  EXPECT_TRUE(CheckSourceFile(file, 2, "s.src").ok());
}

TEST(SourceIndex, RefusesTheWrongShardAndTruncation) {
  const std::vector<Doc> docs = Sample();
  const std::string file = Write(docs, 3);
  Status s = CheckSourceFile(file, docs.size() + 1, "shard-00000.src");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("shard-00000.src"), std::string::npos) << s.message();
  for (size_t n = 0; n < file.size(); n += 7) {
    s = CheckSourceFile(std::string_view(file).substr(0, n), docs.size(), "shard-00000.src");
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << n;
    EXPECT_NE(s.message().find("shard-00000.src"), std::string::npos) << s.message();
  }
}

TEST(SourceIndex, EveryFlippedByteIsCaughtOrHarmless) {
  const std::vector<Doc> docs = Sample();
  const std::string file = Write(docs, 3);
  // Each byte set to values that break counts, offsets and frames: the check
  // either refuses the file naming it or the file is still consistent.
  for (size_t i = 0; i < file.size(); i += 3) {
    for (char v : {'\0', '\x01', '\x7f', '\xff'}) {
      std::string bad = file;
      if (bad[i] == v) continue;
      bad[i] = v;
      Status s = CheckSourceFile(bad, docs.size(), "x.src");
      if (!s.ok()) {
        EXPECT_EQ(s.code(), StatusCode::kDataLoss) << i;
        EXPECT_NE(s.message().find("x.src"), std::string::npos);
      }
    }
  }
}

TEST(SourceIndex, RunsOutOfInputOrderAreRefused) {
  std::string file = Write({{1, 5, std::nullopt}, {0, 9, std::nullopt}}, 2);
  Status s = CheckSourceFile(file, 2, "x.src");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("does not follow"), std::string::npos) << s.message();
}

TEST(SourceIndex, LongIdsAreNotRecorded) {
  const std::string file = Write({{0, 1, std::string(kMaxIdBytes + 1, 'x')}, {0, 2, "ok"}}, 1);
  StatusOr<SourceHeader> h = ParseSourceHeader(file, file.size(), 2, "s.src");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->hashes, 1u);
  EXPECT_TRUE(CheckSourceFile(file, 2, "s.src").ok());
}

}  // namespace
}  // namespace tokpack
