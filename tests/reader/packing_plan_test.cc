// The best-fit-decreasing packer on hand-checked cases, and its invariant
// (every piece once, no bin over L or over the cap) on generated lengths.
#include "reader/packing_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

namespace tokpack {
namespace {

using Bins = std::vector<std::vector<std::pair<uint32_t, uint32_t>>>;

Bins Pack(const std::vector<uint64_t>& lengths, int64_t L, int64_t cap = 0) {
  StatusOr<ShardPlan> plan = PackShard(lengths, {L, cap}, "test");
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  Bins bins;
  for (size_t b = 0; b < plan->bins(); ++b) {
    bins.emplace_back();
    for (uint64_t i = plan->bin_offsets[b]; i < plan->bin_offsets[b + 1]; ++i) {
      bins.back().emplace_back(plan->items[i].document, plan->items[i].piece);
    }
  }
  return bins;
}

// Every piece of every document exactly once, no bin over L or the cap.
void ExpectInvariant(const std::vector<uint64_t>& lengths, int64_t L, int64_t cap) {
  StatusOr<ShardPlan> plan = PackShard(lengths, {L, cap}, "test");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (size_t b = 0; b < plan->bins(); ++b) {
    uint64_t tokens = 0;
    const uint64_t size = plan->bin_offsets[b + 1] - plan->bin_offsets[b];
    ASSERT_GT(size, 0u);
    if (cap > 0) ASSERT_LE(size, static_cast<uint64_t>(cap));
    for (uint64_t i = plan->bin_offsets[b]; i < plan->bin_offsets[b + 1]; ++i) {
      const PieceRef p = plan->items[i];
      ASSERT_TRUE(seen.insert({p.document, p.piece}).second);
      tokens += PieceLength(lengths[p.document], p.piece, L);
    }
    ASSERT_LE(tokens, static_cast<uint64_t>(L));
  }
  uint64_t pieces = 0;
  for (uint32_t d = 0; d < lengths.size(); ++d) {
    // Pieces of a document are its consecutive L-token slices.
    uint64_t covered = 0;
    for (uint32_t j = 0; seen.count({d, j}); ++j) covered += PieceLength(lengths[d], j, L);
    EXPECT_EQ(covered, lengths[d]) << "document " << d;
    pieces += (lengths[d] + L - 1) / L;
  }
  EXPECT_EQ(seen.size(), pieces);
  EXPECT_EQ(plan->counts.pieces, pieces);
  // The checker accepts what the packer makes.
  ShardPlan copy = *plan;
  EXPECT_TRUE(CheckShardPlan(lengths, {L, cap}, "test", &copy).ok());
  EXPECT_EQ(copy.counts.bins, plan->counts.bins);
  EXPECT_EQ(copy.counts.max_pieces_per_bin, plan->counts.max_pieces_per_bin);
}

TEST(PackingPlanTest, BestFitTakesTheTightestOpenBin) {
  // L = 10. Sorted: 7 (d0), 5 (d2), 3 (d1), 2 (d3), 2 (d4).
  // 7 -> bin0 (3 left); 5 -> bin1 (5 left); 3 -> bin0 (tightest: 3) -> full;
  // 2 -> bin1 (3 left); 2 -> bin1 (1 left).
  EXPECT_EQ(Pack({7, 3, 5, 2, 2}, 10), (Bins{{{0, 0}, {1, 0}}, {{2, 0}, {3, 0}, {4, 0}}}));
}

TEST(PackingPlanTest, TiesGoToTheEarliestBinAndPieceOrder) {
  // Two bins with 4 left each; the 4s go to bin 0 then bin 1, in document order.
  EXPECT_EQ(Pack({6, 6, 4, 4}, 10), (Bins{{{0, 0}, {2, 0}}, {{1, 0}, {3, 0}}}));
  // Equal lengths keep document order.
  EXPECT_EQ(Pack({5, 5, 5}, 10), (Bins{{{0, 0}, {1, 0}}, {{2, 0}}}));
}

TEST(PackingPlanTest, LongDocumentsSplitIntoPiecesOfLAndARemainder) {
  // 23 = 10 + 10 + 3; whole pieces come first, each alone.
  EXPECT_EQ(Pack({23, 6}, 10), (Bins{{{0, 0}}, {{0, 1}}, {{1, 0}, {0, 2}}}));
  StatusOr<ShardPlan> plan = PackShard({23, 6, 0, 10}, {10, 0}, "t");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->counts.truncated_documents, 1u);
  EXPECT_EQ(plan->counts.empty_documents, 1u);
  EXPECT_EQ(plan->counts.pieces, 5u);
  EXPECT_EQ(plan->counts.bins, 4u);
  EXPECT_EQ(plan->counts.PaddingTokens(10), 1u);
}

TEST(PackingPlanTest, TheCapClosesABin) {
  EXPECT_EQ(Pack({1, 1, 1, 1, 1}, 10, 2), (Bins{{{0, 0}, {1, 0}}, {{2, 0}, {3, 0}}, {{4, 0}}}));
  EXPECT_EQ(Pack({1, 1, 1}, 10, 1), (Bins{{{0, 0}}, {{1, 0}}, {{2, 0}}}));
}

TEST(PackingPlanTest, InvariantHoldsOnRandomLengths) {
  std::mt19937_64 rng(7);
  for (int64_t L : {1, 7, 64, 1000, 70000}) {
    for (int64_t cap : {0, 1, 3}) {
      std::vector<uint64_t> lengths(2000);
      for (uint64_t& n : lengths) n = rng() % 5 == 0 ? 0 : rng() % (3 * L + 2);
      ExpectInvariant(lengths, L, cap);
    }
  }
}

TEST(PackingPlanTest, BadSettingsAreRefusedNamingTheOption) {
  StatusOr<ShardPlan> p = PackShard({1}, {0, 0}, "t");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("seq_len"), std::string::npos);
  p = PackShard({1}, {8, -1}, "t");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("max_docs_per_sequence"), std::string::npos);
}

}  // namespace
}  // namespace tokpack
