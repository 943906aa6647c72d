// One packed row (packing="best_fit"; docs/reader.md, "The packed view"):
// the bin's pieces' tokens in order, then padding to L. Per cell j:
//   labels="next": labels[j] = inputs[j + 1] when j + 1 lies in the same
//     piece, else -100 (each piece's last token, and the padding);
//   labels="same": labels[j] = inputs[j], but -100 at each piece's first
//     token and at the padding (a model that shifts its labels then never
//     predicts across a piece edge);
//   position_ids restart at 0 at each piece, and the padding counts 0, 1, ...
//     as a segment of its own;
//   cu_seqlens gets the start of each piece and of the padding.
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

// Fills row b of `out` (inputs and targets widened to the output dtype,
// position_ids, and its segments appended to cu_seqlens) with bin `bin` of
// `view`, read from `ds` (the view's dataset).
Status FillPackedRow(const Dataset& ds, const PackedView& view, uint64_t bin,
                     const LoaderOptions& o, size_t b, BatchArrays& out, ReadStats* stats);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_PACKED_ROWS_H_
