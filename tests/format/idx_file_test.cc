#include "format/idx_file.h"

#include <gtest/gtest.h>

#include <cstring>

namespace tokpack {
namespace {

TEST(IdxFile, EncodeParseRoundTrip) {
  const std::vector<int32_t> lengths = {5, 0, 12, 1};
  for (TokenDtype dtype : {TokenDtype::kUInt16, TokenDtype::kInt32}) {
    std::string bytes = EncodeIdx(dtype, lengths);
    EXPECT_EQ(bytes.size(), 34u + 4 * 4 + 8 * 4 + 8 * 5);
    EXPECT_EQ(std::memcmp(bytes.data(), "MMIDIDX\0\0", 9), 0);
    EXPECT_EQ(static_cast<uint8_t>(bytes[17]), static_cast<uint8_t>(dtype));
    auto v = ParseIdx(bytes, "x.idx");
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->dtype(), dtype);
    EXPECT_EQ(v->sequence_count(), 4u);
    EXPECT_EQ(v->document_count(), 5u);
    EXPECT_EQ(v->tokens(), 18u);
    EXPECT_EQ(v->length(2), 12);
    EXPECT_EQ(v->pointer(2), 5 * TokenDtypeSize(dtype));
    EXPECT_EQ(v->document_index(4), 4);
    EXPECT_EQ(v->bin_bytes(), 18u * TokenDtypeSize(dtype));
  }
}

TEST(IdxFile, EmptyIndexIsValid) {
  auto v = ParseIdx(EncodeIdx(TokenDtype::kUInt16, {}), "e.idx");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->sequence_count(), 0u);
}

Status Damaged(const std::function<void(std::string*)>& damage) {
  std::string bytes = EncodeIdx(TokenDtype::kUInt16, {3, 4, 5});
  damage(&bytes);
  return ParseIdx(bytes, "shard-00007.idx").status();
}

TEST(IdxFile, RejectsCorruptionWithDataLossNamingTheFile) {
  const std::vector<std::pair<const char*, std::function<void(std::string*)>>> cases = {
      {"magic", [](std::string* b) { (*b)[0] = 'X'; }},
      {"version", [](std::string* b) { (*b)[9] = 2; }},
      {"dtype code 5", [](std::string* b) { (*b)[17] = 5; }},
      {"truncated", [](std::string* b) { b->resize(b->size() - 1); }},
      {"trailing byte", [](std::string* b) { b->push_back('\0'); }},
      {"header only", [](std::string* b) { b->resize(20); }},
      {"huge count", [](std::string* b) { (*b)[25] = 0x7f; }},
      {"negative length", [](std::string* b) { (*b)[34 + 3] = static_cast<char>(0x80); }},
      {"bad pointer", [](std::string* b) { (*b)[34 + 12 + 8] = 9; }},
      {"bad doc index", [](std::string* b) { (*b)[34 + 12 + 24 + 8] = 7; }},
  };
  for (const auto& [what, damage] : cases) {
    Status s = Damaged(damage);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << what;
    EXPECT_NE(s.message().find("shard-00007.idx"), std::string::npos) << what;
  }
}

TEST(IdxFile, AcceptsMegatronMultiSequenceDocuments) {
  // Three sequences in two documents: doc index [0, 2, 3].
  std::string bytes = EncodeIdx(TokenDtype::kInt32, {1, 2, 3});
  bytes.resize(bytes.size() - 8);  // Drop one document entry...
  int64_t idx[3] = {0, 2, 3};
  std::memcpy(bytes.data() + 18 + 8, "\x03\0\0\0\0\0\0\0", 8);  // ...D = 3.
  std::memcpy(bytes.data() + 34 + 12 + 24, idx, sizeof(idx));
  auto v = ParseIdx(bytes, "m.idx");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->document_count(), 3u);
}

}  // namespace
}  // namespace tokpack
