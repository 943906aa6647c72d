#include "tokenizer/bpe_merge.h"

#include <gtest/gtest.h>

#include <random>

namespace tokpack {
namespace {

// A random merge table over ids [0, 8) whose results are fresh ids, as in a
// real vocabulary (each id names one string).
PairMap RandomMerges(std::mt19937* rng, int* next_id) {
  PairMap merges;
  std::vector<int> ids = {0, 1, 2, 3, 4, 5, 6, 7};
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  for (int rank = 0; rank < 40; ++rank) {
    int a = ids[pick(*rng) % ids.size()];
    int b = ids[pick(*rng) % ids.size()];
    if (merges.Find(a, b) != nullptr) continue;
    merges.Insert(a, b, MergeRule{pick(*rng) % 30, *next_id});  // Ranks repeat: ties.
    ids.push_back((*next_id)++);
  }
  return merges;
}

TEST(BpeMergeTest, LowestRankFirstLeftmostAmongTies) {
  PairMap merges;
  merges.Insert(1, 2, {0, 10});   // b c -> bc first...
  merges.Insert(0, 1, {1, 11});   // ...although a b is further left.
  merges.Insert(0, 10, {2, 12});  // a bc
  MergeScratch scratch;
  std::vector<int> word = {0, 1, 2};
  MergeSymbolsQuadratic(merges, &word, &scratch);
  EXPECT_EQ(word, std::vector<int>({12}));

  PairMap aa;
  aa.Insert(0, 0, {0, 1});
  for (auto [n, want] :
       std::vector<std::pair<int, std::vector<int>>>{{3, {1, 0}}, {4, {1, 1}}, {5, {1, 1, 0}}}) {
    std::vector<int> q(n, 0), h(n, 0);
    MergeSymbolsQuadratic(aa, &q, &scratch);
    MergeSymbolsHeap(aa, &h, &scratch);
    EXPECT_EQ(q, want) << n;
    EXPECT_EQ(h, want) << n;
  }
}

TEST(BpeMergeTest, HeapAgreesWithScanOnRandomTables) {
  std::mt19937 rng(7);
  MergeScratch scratch;
  for (int table = 0; table < 200; ++table) {
    int next_id = 8;
    PairMap merges = RandomMerges(&rng, &next_id);
    for (int w = 0; w < 20; ++w) {
      std::vector<int> word(1 + rng() % 90);
      for (int& s : word) s = static_cast<int>(rng() % 8);
      std::vector<int> q = word, h = word;
      MergeSymbolsQuadratic(merges, &q, &scratch);
      MergeSymbolsHeap(merges, &h, &scratch);
      ASSERT_EQ(q, h) << "table " << table << " word " << w;
    }
  }
}

TEST(BpeMergeTest, LongWordIsNotQuadratic) {
  // a a -> aa (rank 0), aa aa -> aaaa (rank 1): 2^20 symbols in 2^18 tokens.
  PairMap merges;
  merges.Insert(0, 0, {0, 1});
  merges.Insert(1, 1, {1, 2});
  const size_t n = size_t{1} << 20;
  std::vector<int> word(n, 0);
  MergeScratch scratch;
  MergeSymbols(merges, &word, &scratch);
  EXPECT_EQ(word, std::vector<int>(n / 4, 2));
  // Each merge pushes at most two queue entries: the pops stay O(n).
  EXPECT_LT(scratch.steps, 4 * n);
}

}  // namespace
}  // namespace tokpack
