#include "tokenizer/bpe_merge.h"

#include <algorithm>
#include <climits>

namespace tokpack {
namespace {

MergeRule RuleOf(const PairMap& merges, int left, int right) {
  const MergeRule* r = merges.Find(left, right);
  return r ? *r : MergeRule{-1, -1};
}

// Min-heap order on (rank, pos): std::push_heap builds a max-heap, so invert.
// A functor (not a function pointer) so that the heap code inlines it.
struct HeapAfter {
  bool operator()(const MergeScratch::HeapEntry& a, const MergeScratch::HeapEntry& b) const {
    return a.order > b.order;
  }
};

uint64_t Order(int32_t rank, int32_t pos) {
  return (static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(pos);
}

}  // namespace

void MergeSymbols(const PairMap& merges, std::vector<int>* symbols, MergeScratch* scratch) {
  if (symbols->size() < 2) return;
  if (symbols->size() <= kQuadraticMergeMaxSymbols) {
    MergeSymbolsQuadratic(merges, symbols, scratch);
  } else {
    MergeSymbolsHeap(merges, symbols, scratch);
  }
}

void MergeSymbolsQuadratic(const PairMap& merges, std::vector<int>* symbols,
                           MergeScratch* scratch) {
  std::vector<int>& s = *symbols;
  size_t n = s.size();
  if (n < 2) return;
  std::vector<MergeRule>& rules = scratch->rules;
  rules.resize(n - 1);
  for (size_t i = 0; i + 1 < n; ++i) rules[i] = RuleOf(merges, s[i], s[i + 1]);
  while (n > 1) {
    size_t best = n;
    int32_t best_rank = INT32_MAX;
    for (size_t i = 0; i + 1 < n; ++i) {
      // Strict '<' keeps the leftmost of equal ranks.
      if (rules[i].rank >= 0 && rules[i].rank < best_rank) {
        best_rank = rules[i].rank;
        best = i;
      }
    }
    scratch->steps += n;
    if (best == n) break;
    s[best] = rules[best].id;
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    rules.erase(rules.begin() + static_cast<std::ptrdiff_t>(best));
    --n;
    if (best > 0) rules[best - 1] = RuleOf(merges, s[best - 1], s[best]);
    if (best + 1 < n) rules[best] = RuleOf(merges, s[best], s[best + 1]);
  }
}

void MergeSymbolsHeap(const PairMap& merges, std::vector<int>* symbols, MergeScratch* scratch) {
  std::vector<int>& s = *symbols;
  const int32_t n = static_cast<int32_t>(s.size());
  if (n < 2) return;
  auto& prev = scratch->prev;
  auto& next = scratch->next;
  auto& heap = scratch->heap;
  prev.resize(n);
  next.resize(n);
  heap.clear();
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  for (int32_t i = 0; i + 1 < n; ++i) {
    MergeRule r = RuleOf(merges, s[i], s[i + 1]);
    if (r.rank >= 0) heap.push_back({Order(r.rank, i), r.id});
  }
  std::make_heap(heap.begin(), heap.end(), HeapAfter());
  // A merged-away symbol is marked by prev == -2.
  auto push = [&](int32_t pos) {
    MergeRule r = RuleOf(merges, s[pos], s[next[pos]]);
    if (r.rank < 0) return;
    heap.push_back({Order(r.rank, pos), r.id});
    std::push_heap(heap.begin(), heap.end(), HeapAfter());
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), HeapAfter());
    const MergeScratch::HeapEntry top = heap.back();
    heap.pop_back();
    ++scratch->steps;
    const auto pos = static_cast<int32_t>(top.order & 0xFFFFFFFFu);
    if (prev[pos] == -2 || next[pos] == -1) continue;
    const int32_t right = next[pos];
    // Stale entry: the pair here changed since it was queued.
    const MergeRule* now = merges.Find(s[pos], s[right]);
    if (now == nullptr || now->id != top.id) continue;
    s[pos] = top.id;
    prev[right] = -2;
    next[pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = pos;
    if (prev[pos] >= 0) push(prev[pos]);
    if (next[pos] >= 0) push(pos);
  }
  int32_t out = 0;
  for (int32_t i = 0; i >= 0; i = next[i]) s[out++] = s[i];
  s.resize(out);
}

}  // namespace tokpack
