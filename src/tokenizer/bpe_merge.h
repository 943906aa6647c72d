// The BPE merge loop shared by tokenizer.json and tiktoken models: given a
// word's initial symbols (token ids), repeatedly merge the adjacent pair with
// the lowest rank, the leftmost one among equal ranks, until no adjacent pair
// has a merge rule.
//
// That is the result of both tokenizers' word.rs merge_all (a priority queue
// ordered by (rank, position) that skips entries gone stale) and tiktoken's
// byte_pair_merge (a linear scan for the minimum), given that each id names
// one string so a stale queue entry never matches the current pair's result.
// Short words use the scan (fast, O(n^2)); long ones a heap over a linked list
// (O(n log n)), so a 10 MB piece without boundaries stays fast.
#ifndef TOKPACK_SRC_TOKENIZER_BPE_MERGE_H_
#define TOKPACK_SRC_TOKENIZER_BPE_MERGE_H_

#include <cstdint>
#include <vector>

#include "tokenizer/flat_map.h"

namespace tokpack {

// Reusable buffers, so that merging allocates nothing in steady state. One per
// thread; not shareable.
struct MergeScratch {
  struct HeapEntry {
    uint64_t order;  // rank << 32 | position: one compare orders by both.
    int32_t id;
  };
  std::vector<MergeRule> rules;  // Quadratic: rule of pair (i, i+1), rank -1 if none.
  std::vector<int32_t> prev, next;
  std::vector<HeapEntry> heap;
  uint64_t steps = 0;  // Work done, summed over calls: for complexity tests.
};

// Words with more symbols than this use the heap.
inline constexpr size_t kQuadraticMergeMaxSymbols = 48;

// Merges `symbols` in place with the algorithm that suits its length.
void MergeSymbols(const PairMap& merges, std::vector<int>* symbols, MergeScratch* scratch);

// The two algorithms, exposed so that tests can check they agree.
void MergeSymbolsQuadratic(const PairMap& merges, std::vector<int>* symbols, MergeScratch* scratch);
void MergeSymbolsHeap(const PairMap& merges, std::vector<int>* symbols, MergeScratch* scratch);

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_BPE_MERGE_H_
