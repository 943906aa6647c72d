#include "reader/split_ranges.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

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

// SplitRange's slots of every n are contiguous, in order, disjoint and cover
// it, each at the formula's boundaries and within one slot of its share.
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

// Runs are dealt so that the parts are disjoint, cover every document, hold
// within one run of their share of runs, and the same runs on every call.
TEST(SplitRuns, PartsAreDisjointCoverAndHoldTheirShare) {
  const std::vector<std::vector<uint64_t>> layouts = {
      {1}, {5}, {0, 7, 0}, {4096}, {4097}, {10000}, {3000, 1, 0, 9000, 77}, {100000}};
  for (const std::string text : {"949,50,1", "1,1", "0,1,0", "3,0,7,2", "1", "98,2"}) {
    const SplitSpec spec = Parse(text);
    uint64_t total = 0;
    for (uint64_t w : spec.weights) total += w;
    for (const std::vector<uint64_t>& shards : layouts) {
      const SplitRuns runs(spec, shards);
      uint64_t documents = 0, expected_runs = 0;
      for (uint64_t d : shards) documents += d;
      EXPECT_EQ(runs.run_documents(), SplitRuns::RunDocuments(documents));
      for (uint64_t d : shards) {
        expected_runs += (d + runs.run_documents() - 1) / runs.run_documents();
      }
      ASSERT_EQ(runs.runs(), expected_runs);
      uint64_t dealt = 0;
      for (size_t k = 0; k < shards.size(); ++k) {
        std::vector<int> owner(shards[k], -1);
        for (size_t j = 0; j < spec.parts(); ++j) {
          uint64_t last_end = 0;
          bool first = true;
          for (const DocumentRange& r : runs.Ranges(j, k)) {
            ASSERT_LT(r.begin, r.end);
            ASSERT_LE(r.end, shards[k]);
            // In order, and adjacent runs merged.
            if (!first) {
              ASSERT_GT(r.begin, last_end) << text;
            }
            first = false;
            last_end = r.end;
            for (uint64_t e = r.begin; e < r.end; ++e) {
              ASSERT_EQ(owner[e], -1) << text << ": document " << e << " in two parts";
              owner[e] = static_cast<int>(j);
            }
          }
        }
        for (uint64_t e = 0; e < shards[k]; ++e) {
          ASSERT_NE(owner[e], -1) << text << ": document " << e << " in no part";
          ASSERT_EQ(static_cast<size_t>(owner[e]),
                    runs.PartOfRun(dealt + e / runs.run_documents()));
        }
        dealt += (shards[k] + runs.run_documents() - 1) / runs.run_documents();
      }
      for (size_t j = 0; j < spec.parts(); ++j) {
        const double share = static_cast<double>(runs.runs()) * spec.weights[j] / total;
        EXPECT_LT(std::abs(static_cast<double>(runs.RunsOf(j)) - share), 1.0) << text;
      }
    }
  }
  EXPECT_EQ(SplitRuns::RunDocuments(0), 1u);
  EXPECT_EQ(SplitRuns::RunDocuments(4096), 1u);
  EXPECT_EQ(SplitRuns::RunDocuments(4097), 2u);
}

// A one-shard dataset: the held-out part is drawn from across the whole of
// it, not cut from its tail (issue: the last 2% of the inputs, one source).
TEST(SplitRuns, AOneShardHeldOutPartSamplesTheWholeStream) {
  const SplitSpec spec = Parse("98,2");
  const uint64_t d = 1000000;
  const SplitRuns runs(spec, {d});
  std::vector<uint64_t> per_tenth(10, 0);
  uint64_t held_out = 0;
  for (const DocumentRange& r : runs.Ranges(1, 0)) {
    for (uint64_t e = r.begin; e < r.end; ++e) ++per_tenth[e * 10 / d];
    held_out += r.end - r.begin;
  }
  // 2% of the documents, within a run and a shard's short last run.
  EXPECT_LE(held_out, d * 2 / 100 + 2 * runs.run_documents());
  EXPECT_GE(held_out + 2 * runs.run_documents(), d * 2 / 100);
  // Every tenth of the stream holds part of it, about its share.
  for (uint64_t n : per_tenth) {
    EXPECT_GT(n, held_out / 10 / 2);
    EXPECT_LT(n, held_out / 10 * 2);
  }
  // The same dealing in every process: a fixed key, no state.
  EXPECT_EQ(SplitRuns(spec, {d}).Ranges(1, 0).size(), runs.Ranges(1, 0).size());
  EXPECT_EQ(SplitRuns(Parse("0.98,0.02"), {d}).PartOfRun(17), runs.PartOfRun(17));
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
