#include "format/idx_file.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <functional>
#include <tuple>

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

// Offsets of the entries of an index of n sequences and n + 1 documents.
size_t LengthAt(uint64_t i) { return kIdxHeaderBytes + 4 * i; }
size_t PointerAt(uint64_t n, uint64_t i) { return kIdxHeaderBytes + 4 * n + 8 * i; }
size_t DocIndexAt(uint64_t n, uint64_t i) { return kIdxHeaderBytes + 12 * n + 8 * i; }

template <typename T>
void Put(std::string* bytes, size_t offset, T value) {
  std::memcpy(bytes->data() + offset, &value, sizeof(T));
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

// Each entry is checked, not only the header and the last one: one bad
// entry in the middle is refused naming the file and that entry.
TEST(IdxFile, EveryEntryIsCheckedAndTheBadOneNamed) {
  constexpr uint64_t n = 1000, mid = 517;
  std::vector<int32_t> lengths(n);
  for (uint64_t i = 0; i < n; ++i) lengths[i] = static_cast<int32_t>(1 + i % 13);
  const std::string good = EncodeIdx(TokenDtype::kInt32, lengths);
  ASSERT_TRUE(ParseIdx(good, "big.idx").ok());
  int64_t mid_pointer = 0;
  std::memcpy(&mid_pointer, good.data() + PointerAt(n, mid), 8);
  const std::vector<std::tuple<const char*, std::function<void(std::string*)>, std::string>> cases =
      {
          {"length too large", [&](std::string* b) { Put<int32_t>(b, LengthAt(mid), 1 << 30); },
           "sequence 518 has pointer"},
          {"negative length", [&](std::string* b) { Put<int32_t>(b, LengthAt(mid), -5); },
           "sequence 517 has negative length -5"},
          {"pointer past the end",
           [&](std::string* b) { Put<int64_t>(b, PointerAt(n, mid), int64_t{1} << 40); },
           "sequence 517 has pointer 1099511627776"},
          {"pointer going backwards",
           [&](std::string* b) { Put<int64_t>(b, PointerAt(n, mid), mid_pointer - 4); },
           "sequence 517 has pointer " + std::to_string(mid_pointer - 4)},
          {"negative pointer", [&](std::string* b) { Put<int64_t>(b, PointerAt(n, mid), -8); },
           "sequence 517 has pointer -8"},
          {"pointer near 2^63",
           [&](std::string* b) { Put<int64_t>(b, PointerAt(n, mid), INT64_MAX - 1); },
           "sequence 517 has pointer 9223372036854775806"},
          {"doc index out of range",
           [&](std::string* b) { Put<int64_t>(b, DocIndexAt(n, mid), int64_t{n} + 7); },
           "document index entry 517 is 1007"},
          {"doc index going backwards",
           [&](std::string* b) { Put<int64_t>(b, DocIndexAt(n, mid), 3); },
           "document index entry 517 is 3"},
          {"negative doc index", [&](std::string* b) { Put<int64_t>(b, DocIndexAt(n, mid), -1); },
           "document index entry 517 is -1"},
          {"first doc index", [&](std::string* b) { Put<int64_t>(b, DocIndexAt(n, 0), 1); },
           "document index entry 0 is 1"},
          {"last doc index", [&](std::string* b) { Put<int64_t>(b, DocIndexAt(n, n), n - 1); },
           "document index entry 1000 (the last) is 999"},
      };
  for (const auto& [what, damage, needle] : cases) {
    std::string bytes = good;
    damage(&bytes);
    Status s = ParseIdx(bytes, "shard-00003.idx").status();
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << what;
    EXPECT_NE(s.message().find("shard-00003.idx"), std::string::npos)
        << what << ": " << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << what << ": " << s.ToString();
  }
}

// Sizes are computed in 64 bits: the longest sequence is 2^33 bytes.
TEST(IdxFile, TheLongestSequenceIsSizedWithoutOverflow) {
  std::string bytes = EncodeIdx(TokenDtype::kInt32, {7});
  Put<int32_t>(&bytes, LengthAt(0), INT32_MAX);
  auto v = ParseIdx(bytes, "x.idx");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->bin_bytes(), uint64_t{INT32_MAX} * 4);
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
