// Gathers the rows of one step into a host slot: the windows of the planned
// (source, sample) pairs, widened to the output dtype (or compact, as
// stored, for a device stage that widens on the GPU), plus the document
// boundary arrays. Internal to the loader.
#ifndef TOKPACK_SRC_READER_BATCH_ASSEMBLER_H_
#define TOKPACK_SRC_READER_BATCH_ASSEMBLER_H_

#include <cstddef>
#include <vector>

#include "reader/packed_view.h"
#include "reader/slot_ring.h"
#include "tokpack/loader.h"
#include "tokpack/storage.h"

namespace tokpack {

// Where the arrays of a host slot lie inside its one allocation.
struct HostLayout {
  size_t inputs = 0, targets = 0, position_ids = 0, cu_seqlens = 0;  // Offsets.
  size_t total = 0;
  bool compact = false;  // Windows as stored, [rows, L + 1], for a device stage.

  // `stored_item`: the datasets' token size (for compact windows).
  static HostLayout For(const LoaderOptions& o, bool compact, size_t stored_item);
  // Points slot->arrays into `memory`.
  void Place(char* memory, bool boundaries, Slot* slot) const;
};

// Fills slot.arrays for slot.rows, counting remote reads into `stats`:
// windows, or with `views` (packing="best_fit", one per source) packed rows
// (packed_rows.h). Reuses thread-local scratch: no allocation in steady state.
Status AssembleRows(const std::vector<Loader::Source>& sources,
                    const std::vector<std::shared_ptr<const PackedView>>& views,
                    const LoaderOptions& o, const HostLayout& layout, ReadStats* stats, Slot& slot);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_BATCH_ASSEMBLER_H_
