// One packed row (packing="best_fit"; docs/reader.md, "The packed view"):
// the bin's pieces' tokens in order, then padding to L. Per cell j:
//   labels="next": labels[j] = inputs[j + 1] when j + 1 lies in the same
//     piece, else -100 (each piece's last token, and the padding);
//   labels="same": labels[j] = inputs[j], but -100 at each piece's first
//     token and at the padding (a model that shifts its labels then never
//     predicts across a piece edge);
//   position_ids restart at 0 at each piece, and the padding counts 0, 1, ...
//     as a segment of its own;
//   cu_seqlens gets the start of each piece and of the padding;
//   with a loss mask or removed documents, a label is -100 also where its
//   token (the one it names: j + 1's for "next", j's for "same") carries no
//   loss; a document's pieces carry their own tokens' bits;
//   loss_mask[j] is 1 exactly where labels[j] is not -100.
// Invariant: the pieces' lengths add up to at most L (the plan's bins).
// Internal to the batch assembler.
#ifndef TOKPACK_SRC_READER_PACKED_ROWS_H_
#define TOKPACK_SRC_READER_PACKED_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "reader/packed_view.h"
#include "reader/slot_ring.h"
#include "tokpack/dataset.h"
#include "tokpack/loader.h"

namespace tokpack {

// The label of a cell that trains nothing (PyTorch's ignore_index).
inline constexpr int64_t kIgnoreLabel = -100;

// Whether rows of `ds` must read its labels' bits (Dataset::ReadLossMask):
// some of its tokens carry no loss, by its loss mask or being removed.
// Otherwise every label carries loss, and rows skip the read.
inline bool HasLabelBits(const Dataset& ds) { return ds.has_loss_masks() || ds.num_removed() != 0; }

// Eight bytes that are each 0 or 1, as a word, and their sum: multiplying
// by 0x0101010101010101 adds every byte into the top one (at most 8, no
// carry), with no popcount instruction needed.
inline constexpr uint64_t kEightOnes = 0x0101010101010101;
inline uint64_t LoadEight(const uint8_t* bits) {
  uint64_t word;
  std::memcpy(&word, bits, 8);
  return word;
}
inline uint64_t SumEight(uint64_t word) { return (word * kEightOnes) >> 56; }

// The number of 1 bytes among n bytes that are each 0 or 1.
inline uint64_t CountOnes(const uint8_t* bits, uint64_t n) {
  uint64_t kept = 0, j = 0;
  for (; j + 8 <= n; j += 8) kept += SumEight(LoadEight(bits + j));
  for (; j < n; ++j) kept += bits[j];
  return kept;
}

// Sets labels[j] to kIgnoreLabel where bits[j] is 0, for j < n (a loss
// mask's bits, one byte each, 0 or 1); returns how many carry loss. Masks
// come in runs (a prompt, an answer), so eight labels that all carry loss
// are skipped with one compare.
template <typename T>
uint64_t IgnoreWithoutLoss(const uint8_t* bits, uint64_t n, T* labels) {
  uint64_t kept = 0, j = 0;
  for (; j + 8 <= n; j += 8) {
    const uint64_t word = LoadEight(bits + j);
    if (word == kEightOnes) {
      kept += 8;
      continue;
    }
    kept += SumEight(word);
    for (uint64_t k = j; k < j + 8; ++k) {
      if (!bits[k]) labels[k] = static_cast<T>(kIgnoreLabel);
    }
  }
  for (; j < n; ++j) {
    kept += bits[j];
    if (!bits[j]) labels[j] = static_cast<T>(kIgnoreLabel);
  }
  return kept;
}

// Writes 0, 1, ..., n - 1 to pos (a run of position_ids): a copy from this
// thread's table of them, grown to the longest run asked for. The copy
// stores 32 or 64 bytes at a time where a counting loop, which -O2 does not
// vectorize, stores one int32 at a time (13% of a packed batch's time).
void FillPositions(int32_t* pos, uint64_t n);

// The pieces of each row of `rows` ((source, bin) pairs, bins of
// views[source]): row b's are (*pieces)[(*ends)[b - 1], (*ends)[b]) (from 0
// for row 0). The lookups of all rows overlap (PackingPlan::Bins).
void GatherPackedRows(const std::vector<std::shared_ptr<const PackedView>>& views,
                      const std::vector<std::pair<uint32_t, uint64_t>>& rows,
                      std::vector<TokenRange>* pieces, std::vector<size_t>* ends);

// Fills row b of `out` (inputs and targets widened to the output dtype,
// position_ids, and its segments appended to cu_seqlens, and loss_mask when
// out has one) with the bin of `view` whose pieces are pieces[0..n), read
// from `ds` (the view's dataset), whose loss mask and removed documents, if
// it has them, make more labels -100; adds the row's labels that carry loss to *trainable.
Status FillPackedRow(const Dataset& ds, const PackedView& view, const TokenRange* pieces, size_t n,
                     const LoaderOptions& o, size_t b, BatchArrays& out, ReadStats* stats,
                     uint64_t* trainable);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_PACKED_ROWS_H_
