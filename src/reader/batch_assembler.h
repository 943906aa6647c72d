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
  size_t loss_mask = 0;  // Offset; `has_mask` says whether there is one.
  size_t total = 0;
  bool compact = false;  // Windows as stored, [rows, L + 1], for a device stage.
  bool has_mask = false;

  // `stored_item`: the datasets' token size (for compact windows);
  // `masked`: whether some source has label bits (AnyLossMasks).
  static HostLayout For(const LoaderOptions& o, bool compact, size_t stored_item, bool masked);
  // Points slot->arrays into `memory`.
  void Place(char* memory, bool boundaries, Slot* slot) const;
};

// Whether some source has loss masks or removed documents (HasLabelBits):
// only then do rows read label bits, and a device stage gets them along
// with the windows.
bool AnyLossMasks(const std::vector<Loader::Source>& sources);

// Fills slot.arrays for slot.rows, counting remote reads into `stats`:
// windows, or with `views` (packing="best_fit", one per source) packed rows
// (packed_rows.h), with labels -100 where a source's loss mask or removed
// documents say so (in compact windows the device applies the bits put in
// slot.arrays.loss_mask), and slot.info.trainable. Reuses thread-local scratch: no allocation in
// steady state.
Status AssembleRows(const std::vector<Loader::Source>& sources,
                    const std::vector<std::shared_ptr<const PackedView>>& views,
                    const LoaderOptions& o, const HostLayout& layout, ReadStats* stats, Slot& slot);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_BATCH_ASSEMBLER_H_
