#include "reader/batch_assembler.h"

#include <cstring>
#include <type_traits>
#include <vector>

#include "reader/packed_rows.h"

namespace tokpack {
namespace {

size_t OutItem(const LoaderOptions& o) { return o.dtype == OutputDtype::kInt32 ? 4 : 8; }

// Row b's window, widened to T: read straight into inputs row b, whose one
// extra token lands on row b + 1's first cell (rewritten by the next row;
// the last row's lands in the layout's padding), then the targets are that
// row shifted by `shift` (1, or 0 for labels equal to the inputs). One read
// per row (which matters when each goes through the chunk cache) and one copy.
template <typename T>
Status ReadRow(const Dataset& ds, uint64_t a, uint64_t L, size_t b, size_t shift,
               const BatchArrays& out, ReadStats* stats) {
  T* in = reinterpret_cast<T*>(out.inputs) + b * L;
  TOKPACK_RETURN_IF_ERROR(ds.ReadTokens(a, L + 1, in, stats));
  std::memcpy(reinterpret_cast<T*>(out.targets) + b * L, in + shift, L * sizeof(T));
  return Status::Ok();
}

// Row b's label bits where its dataset has a loss mask or removed documents
// (HasLabelBits): label j names token a + shift + j, so it carries that
// token's bit. Host rows apply them to the labels (kept in loss_mask when the
// batch has one); compact rows leave them in loss_mask for the device. Rows
// of other datasets carry loss everywhere. Returns the row's labels that
// carry loss.
template <typename T>
StatusOr<uint64_t> MaskRow(const Dataset& ds, uint64_t a, uint64_t L, size_t b, size_t shift,
                           bool compact, const BatchArrays& out, ReadStats* stats) {
  thread_local std::vector<uint8_t> scratch;  // Reused: no steady-state allocation.
  uint8_t* bits = out.loss_mask ? out.loss_mask + b * L : nullptr;
  if (!HasLabelBits(ds)) {
    if (bits) std::memset(bits, 1, L);
    return L;
  }
  if (bits == nullptr) {
    scratch.resize(L);
    bits = scratch.data();
  }
  TOKPACK_RETURN_IF_ERROR(ds.ReadLossMask(a + shift, L, bits, stats));
  if (compact) return CountOnes(bits, L);
  return IgnoreWithoutLoss(bits, L, reinterpret_cast<T*>(out.targets) + b * L);
}

void FillBoundaries(const Dataset& ds, uint64_t a, uint64_t L, size_t b, BatchArrays& out) {
  thread_local std::vector<uint64_t> starts;  // Reused: no steady-state allocation.
  starts.clear();
  ds.DocumentStarts(a + 1, a + L, &starts);
  int32_t* pos = out.position_ids + b * L;
  const int32_t row0 = static_cast<int32_t>(b * L);
  out.cu_seqlens[out.num_cu++] = row0;
  // A segment runs from the row start or a document start (each in
  // (a, a + L), ascending) to the next; its positions count from 0.
  uint64_t seg = 0;
  for (const uint64_t start : starts) {
    const uint64_t j = start - a;
    FillPositions(pos + seg, j - seg);
    out.cu_seqlens[out.num_cu++] = row0 + static_cast<int32_t>(j);
    seg = j;
  }
  FillPositions(pos + seg, L - seg);
}

}  // namespace

bool AnyLossMasks(const std::vector<Loader::Source>& sources) {
  for (const Loader::Source& s : sources) {
    if (HasLabelBits(*s.dataset)) return true;
  }
  return false;
}

HostLayout HostLayout::For(const LoaderOptions& o, bool compact, size_t stored_item, bool masked) {
  const size_t cells = static_cast<size_t>(o.batch_size * o.seq_len);
  HostLayout l;
  l.compact = compact;
  l.has_mask = o.loss_mask || (compact && masked);
  size_t at = 0;
  const auto take = [&at](size_t bytes) {
    const size_t offset = at;
    at += (bytes + 63) / 64 * 64;  // Each array on its own cache line.
    return offset;
  };
  if (compact) {
    l.inputs = take(static_cast<size_t>(o.batch_size * (o.seq_len + 1)) * stored_item);
  } else {
    const size_t bytes = cells * OutItem(o);
    l.inputs = take(bytes + OutItem(o));  // + the last row's extra token (ReadRow).
    l.targets = take(bytes);
  }
  if (o.document_boundaries) {
    l.position_ids = take(cells * 4);
    l.cu_seqlens = take((cells + 1) * 4);
  }
  if (l.has_mask) l.loss_mask = take(cells);
  l.total = at;
  return l;
}

void HostLayout::Place(char* memory, bool boundaries, Slot* slot) const {
  slot->arrays.inputs = memory + inputs;
  slot->arrays.targets = compact ? nullptr : memory + targets;
  if (boundaries) {
    slot->arrays.position_ids = reinterpret_cast<int32_t*>(memory + position_ids);
    slot->arrays.cu_seqlens = reinterpret_cast<int32_t*>(memory + cu_seqlens);
  }
  if (has_mask) slot->arrays.loss_mask = reinterpret_cast<uint8_t*>(memory + loss_mask);
}

namespace {

// Packed rows: their pieces are looked up together, and the next row's
// pieces are prefetched while a row is filled, so the misses of a bin's
// pieces (a few short runs at random places) overlap the copying.
Status ReadPackedRows(const std::vector<Loader::Source>& sources,
                      const std::vector<std::shared_ptr<const PackedView>>& views,
                      const LoaderOptions& o, ReadStats* stats, Slot& slot) {
  thread_local std::vector<TokenRange> pieces;  // Reused: no steady-state allocation.
  thread_local std::vector<size_t> ends;
  GatherPackedRows(views, slot.rows, &pieces, &ends);
  const auto prefetch = [&](size_t b) {
    const Dataset& ds = *sources[slot.rows[b].first].dataset;
    for (size_t i = b == 0 ? 0 : ends[b - 1]; i < ends[b]; ++i) {
      ds.PrefetchToCache(pieces[i].begin, pieces[i].length);
    }
  };
  if (!slot.rows.empty()) prefetch(0);
  BatchArrays& out = slot.arrays;
  for (size_t b = 0; b < slot.rows.size(); ++b) {
    if (b + 1 < slot.rows.size()) prefetch(b + 1);
    const uint32_t source = slot.rows[b].first;
    const size_t first = b == 0 ? 0 : ends[b - 1];
    slot.info.trainable[b].first = source;
    TOKPACK_RETURN_IF_ERROR(FillPackedRow(*sources[source].dataset, *views[source],
                                          pieces.data() + first, ends[b] - first, o, b, out, stats,
                                          &slot.info.trainable[b].second));
  }
  out.cu_seqlens[out.num_cu++] = static_cast<int32_t>(o.batch_size * o.seq_len);
  return Status::Ok();
}

Status ReadRows(const std::vector<Loader::Source>& sources,
                const std::vector<std::shared_ptr<const PackedView>>& views, const LoaderOptions& o,
                const HostLayout& layout, ReadStats* stats, Slot& slot) {
  const uint64_t L = static_cast<uint64_t>(o.seq_len);
  const size_t shift = o.labels == LabelsMode::kNext ? 1 : 0;
  BatchArrays& out = slot.arrays;
  out.num_cu = 0;
  // Per row, not per source: a batch's cost does not grow with the sources.
  std::vector<std::pair<uint32_t, uint64_t>>& trainable = slot.info.trainable;
  trainable.assign(slot.rows.size(), {0, 0});  // Keeps its capacity.
  if (!views.empty()) return ReadPackedRows(sources, views, o, stats, slot);
  for (size_t b = 0; b < slot.rows.size(); ++b) {
    const uint32_t source = slot.rows[b].first;
    trainable[b].first = source;
    const Dataset& ds = *sources[source].dataset;
    const uint64_t a = slot.rows[b].second * L;
    if (layout.compact) {
      const size_t item = static_cast<size_t>(TokenDtypeSize(ds.dtype()));
      TOKPACK_RETURN_IF_ERROR(
          ds.ReadStoredTokens(a, L + 1, out.inputs + b * (L + 1) * item, stats));
    } else if (o.dtype == OutputDtype::kInt32) {
      TOKPACK_RETURN_IF_ERROR(ReadRow<int32_t>(ds, a, L, b, shift, out, stats));
    } else {
      TOKPACK_RETURN_IF_ERROR(ReadRow<int64_t>(ds, a, L, b, shift, out, stats));
    }
    // Without label bits and without a loss_mask array every label carries
    // loss: nothing to do per row.
    if (out.loss_mask == nullptr && !HasLabelBits(ds)) {
      trainable[b].second = L;
    } else {
      StatusOr<uint64_t> kept =
          o.dtype == OutputDtype::kInt32
              ? MaskRow<int32_t>(ds, a, L, b, shift, layout.compact, out, stats)
              : MaskRow<int64_t>(ds, a, L, b, shift, layout.compact, out, stats);
      TOKPACK_RETURN_IF_ERROR(kept.status());
      trainable[b].second = *kept;
    }
    if (o.document_boundaries) FillBoundaries(ds, a, L, b, out);
  }
  if (o.document_boundaries)
    out.cu_seqlens[out.num_cu++] = static_cast<int32_t>(o.batch_size * o.seq_len);
  return Status::Ok();
}

}  // namespace

Status AssembleRows(const std::vector<Loader::Source>& sources,
                    const std::vector<std::shared_ptr<const PackedView>>& views,
                    const LoaderOptions& o, const HostLayout& layout, ReadStats* stats,
                    Slot& slot) {
  if (stats == nullptr) return ReadRows(sources, views, o, layout, nullptr, slot);
  // Counted per batch, not per row: `stats` is shared by every assembler
  // thread, and an atomic add per warm row would contend on its cache line.
  ReadStats batch;
  const Status s = ReadRows(sources, views, o, layout, &batch, slot);
  stats->cache_hits += batch.cache_hits;
  stats->cache_misses += batch.cache_misses;
  stats->bytes_fetched += batch.bytes_fetched;
  stats->fetch_micros += batch.fetch_micros;
  stats->uncached_reads += batch.uncached_reads;
  return s;
}

}  // namespace tokpack
