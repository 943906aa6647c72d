#include "reader/split_ranges.h"

#include <gtest/gtest.h>

#include <set>

namespace tokpack {
namespace {

SplitSpec Parse(const std::string& text) {
  StatusOr<SplitSpec> spec = ParseSplit(text);
  EXPECT_TRUE(spec.ok()) << text << ": " << spec.status().ToString();
  return spec.ok() ? *spec : SplitSpec{{1}};
}

TEST(SplitRanges, NormalizesToIntegersInLowestTerms) {
  EXPECT_EQ(Parse("949,50,1").Normalized(), "949,50,1");
  EXPECT_EQ(Parse(" 0.949, 0.05 ,0.001").Normalized(), "949,50,1");
  EXPECT_EQ(Parse("50,50").Normalized(), "1,1");
  EXPECT_EQ(Parse("0.9,.1").Normalized(), "9,1");
  EXPECT_EQ(Parse("3,0,1").Normalized(), "3,0,1");
  EXPECT_EQ(Parse("7").Normalized(), "1");
  EXPECT_EQ(Parse("000123.5000,1").Normalized(), "247,2");
}

TEST(SplitRanges, RefusesBadTextNamingSplitAndTheValue) {
  for (const std::string bad : {"", "9,x,1", "9,,1", "9,-1", "1e3,1", ".", "1.2.3", "9;1",
                                "1234567890123456789,1", "0.0000000001,1"}) {
    StatusOr<SplitSpec> spec = ParseSplit(bad);
    ASSERT_FALSE(spec.ok()) << "'" << bad << "' parsed";
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(spec.status().message().find("split '" + bad + "'"), std::string::npos)
        << spec.status().message();
  }
  StatusOr<SplitSpec> zero = ParseSplit("0,0.0");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("every weight is 0"), std::string::npos);
  std::string many = "1";
  for (size_t j = 0; j < SplitSpec::kMaxParts; ++j) many += ",1";
  EXPECT_FALSE(ParseSplit(many).ok());
  // Relatively prime weights whose sum passes 2^62.
  EXPECT_FALSE(ParseSplit("999999999999999999,999999999999999998,999999999999999997,"
                          "999999999999999996,999999999999999995")
                   .ok());
}

TEST(SplitRanges, APartIndexMustExistAndNeedsASplit) {
  EXPECT_TRUE(ParseSplitPart("949,50,1", 2).ok());
  for (int64_t index : {-1, 3}) {
    StatusOr<SplitSpec> spec = ParseSplitPart("949,50,1", index);
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().message(), "split_index " + std::to_string(index) +
                                           " is out of range for split '949,50,1' (parts 0 to 2)");
  }
  StatusOr<SplitSpec> none = ParseSplitPart("", 1);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("split_index 1 needs a split"), std::string::npos);
}

// The parts of every shard size are contiguous, in order, disjoint and cover
// it, each at the formula's boundaries and within one document of its share.
TEST(SplitRanges, PartsPartitionEveryShardAtTheFormulasBoundaries) {
  for (const std::string text : {"949,50,1", "1,1", "0,1,0", "3,0,7,2", "1"}) {
    const SplitSpec spec = Parse(text);
    uint64_t total = 0;
    for (uint64_t w : spec.weights) total += w;
    for (uint64_t d = 0; d < 3000; d += d < 50 ? 1 : 37) {
      uint64_t next = 0, before = 0;
      for (size_t j = 0; j < spec.parts(); ++j) {
        const DocumentRange r = SplitRange(spec, j, d);
        ASSERT_EQ(r.begin, next) << text << " D=" << d << " part " << j;
        ASSERT_LE(r.begin, r.end);
        EXPECT_EQ(r.begin, d * before / total);
        before += spec.weights[j];
        EXPECT_EQ(r.end, d * before / total);
        const double share = static_cast<double>(d) * spec.weights[j] / total;
        EXPECT_LT(std::abs(static_cast<double>(r.end - r.begin) - share), 1.0);
        next = r.end;
      }
      ASSERT_EQ(next, d);
    }
  }
  // Shard sizes near 2^63 do not overflow.
  const uint64_t huge = (uint64_t{1} << 63) - 1;
  const SplitSpec spec = Parse("949,50,1");
  EXPECT_EQ(SplitRange(spec, 2, huge).end, huge);
  EXPECT_EQ(SplitRange(spec, 1, huge).begin, huge / 1000 * 949 + huge % 1000 * 949 / 1000);
}

TEST(SplitRanges, FingerprintsDifferPerPartSplitAndParent) {
  const SplitSpec a = Parse("949,50,1"), b = Parse("949,49,2");
  std::set<uint64_t> seen;
  for (uint64_t parent : {1u, 2u}) {
    for (size_t j = 0; j < 3; ++j) {
      EXPECT_TRUE(seen.insert(SplitFingerprint(parent, a, j)).second);
      EXPECT_TRUE(seen.insert(SplitFingerprint(parent, b, j)).second);
    }
  }
  // The same ranges, however the split was written.
  EXPECT_EQ(SplitFingerprint(7, Parse("0.5,0.5"), 1), SplitFingerprint(7, Parse("1,1"), 1));
}

}  // namespace
}  // namespace tokpack
