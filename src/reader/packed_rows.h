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
//   with a loss mask, a label is -100 also where its token (the one it
//   names: j + 1's for "next", j's for "same") carries no loss; a
//   document's pieces carry their own tokens' bits;
//   loss_mask[j] is 1 exactly where labels[j] is not -100.
// Invariant: the pieces' lengths add up to at most L (the plan's bins).
// Internal to the batch assembler.
#ifndef TOKPACK_SRC_READER_PACKED_ROWS_H_
#define TOKPACK_SRC_READER_PACKED_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "reader/packed_view.h"
#include "reader/slot_ring.h"
#include "tokpack/loader.h"

namespace tokpack {

// The label of a cell that trains nothing (PyTorch's ignore_index).
inline constexpr int64_t kIgnoreLabel = -100;

// Sets labels[j] to kIgnoreLabel where bits[j] is 0, for j < n (a loss
// mask's bits, one byte each); returns how many carry loss. Branch-free, so
// it vectorizes.
template <typename T>
uint64_t IgnoreWithoutLoss(const uint8_t* bits, uint64_t n, T* labels) {
  uint64_t kept = 0;
  for (uint64_t j = 0; j < n; ++j) {
    kept += bits[j];
    labels[j] = bits[j] ? labels[j] : static_cast<T>(kIgnoreLabel);
  }
  return kept;
}

// Fills row b of `out` (inputs and targets widened to the output dtype,
// position_ids, and its segments appended to cu_seqlens, and loss_mask when
// out has one) with bin `bin` of `view`, read from `ds` (the view's
// dataset), whose loss mask, if it has one, makes more labels -100; adds
// the row's labels that carry loss to *trainable.
Status FillPackedRow(const Dataset& ds, const PackedView& view, uint64_t bin,
                     const LoaderOptions& o, size_t b, BatchArrays& out, ReadStats* stats,
                     uint64_t* trainable);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_PACKED_ROWS_H_
