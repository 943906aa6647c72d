#include "reader/packed_rows.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace tokpack {
namespace {

template <typename T>
Status Fill(const Dataset& ds, const TokenRange* pieces, size_t n, int64_t pad, uint64_t L,
            bool next, size_t b, BatchArrays& out, ReadStats* stats, uint64_t* trainable) {
  thread_local std::vector<uint8_t> bits;  // A piece's mask bits; reused.
  const bool masked = HasLabelBits(ds);
  T* in = reinterpret_cast<T*>(out.inputs) + b * L;
  T* labels = reinterpret_cast<T*>(out.targets) + b * L;
  int32_t* pos = out.position_ids + b * L;
  const int32_t row0 = static_cast<int32_t>(b * L);
  uint64_t j = 0;
  for (const TokenRange* it = pieces; it != pieces + n; ++it) {
    const TokenRange& p = *it;
    // Untrusted plan sizes were checked on load; this guards the row anyway.
    if (p.length == 0 || p.length > L - j) {
      return InternalError("a packed bin of '" + ds.path() + "' holds more than seq_len " +
                           std::to_string(L) + " tokens");
    }
    TOKPACK_RETURN_IF_ERROR(ds.ReadTokens(p.begin, p.length, in + j, stats));
    out.cu_seqlens[out.num_cu++] = row0 + static_cast<int32_t>(j);
    if (next) {
      std::memcpy(labels + j, in + j + 1, (p.length - 1) * sizeof(T));
      labels[j + p.length - 1] = static_cast<T>(kIgnoreLabel);
    } else {
      std::memcpy(labels + j, in + j, p.length * sizeof(T));
      labels[j] = static_cast<T>(kIgnoreLabel);
    }
    // Either way the labels that remain name the piece's tokens 1..length-1
    // (next: at cells j..; same: at cells j + 1..).
    if (masked) {
      bits.resize(p.length);
      TOKPACK_RETURN_IF_ERROR(ds.ReadLossMask(p.begin, p.length, bits.data(), stats));
      *trainable += IgnoreWithoutLoss(bits.data() + 1, p.length - 1, labels + j + (next ? 0 : 1));
    } else {
      *trainable += p.length - 1;
    }
    FillPositions(pos + j, p.length);
    j += p.length;
  }
  if (j < L) {
    out.cu_seqlens[out.num_cu++] = row0 + static_cast<int32_t>(j);
    std::fill(in + j, in + L, static_cast<T>(pad));
    std::fill(labels + j, labels + L, static_cast<T>(kIgnoreLabel));
    FillPositions(pos + j, L - j);
  }
  if (out.loss_mask != nullptr) {
    uint8_t* mask = out.loss_mask + b * L;
    for (uint64_t k = 0; k < L; ++k) mask[k] = labels[k] != static_cast<T>(kIgnoreLabel);
  }
  return Status::Ok();
}

}  // namespace

void FillPositions(int32_t* pos, uint64_t n) {
  thread_local std::vector<int32_t> iota;  // 0, 1, 2, ...; grows, never shrinks.
  if (iota.size() < n) {
    const size_t had = iota.size();
    iota.resize(n);
    std::iota(iota.begin() + static_cast<std::ptrdiff_t>(had), iota.end(),
              static_cast<int32_t>(had));
  }
  std::memcpy(pos, iota.data(), n * sizeof(int32_t));
}

void GatherPackedRows(const std::vector<std::shared_ptr<const PackedView>>& views,
                      const std::vector<std::pair<uint32_t, uint64_t>>& rows,
                      std::vector<TokenRange>* pieces, std::vector<size_t>* ends) {
  // Reused: no steady-state allocation.
  thread_local std::vector<size_t> order;  // Row indices by source, rows in order within one.
  thread_local std::vector<uint64_t> bins;
  thread_local std::vector<TokenRange> found;
  thread_local std::vector<size_t> found_ends;
  thread_local std::vector<std::pair<size_t, size_t>> spans;  // Row b's pieces in `found`.
  // The rows of each source in one lookup (usually there is one source; the
  // cost follows the rows, not the sources), then their pieces in row order.
  order.resize(rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&rows](size_t x, size_t y) { return rows[x].first < rows[y].first; });
  found.clear();
  spans.resize(rows.size());
  for (size_t g = 0; g < order.size();) {
    const uint32_t source = rows[order[g]].first;
    size_t end = g;
    bins.clear();
    for (; end < order.size() && rows[order[end]].first == source; ++end) {
      bins.push_back(rows[order[end]].second);
    }
    size_t begin = found.size();
    found_ends.clear();
    views[source]->Bins(bins.data(), bins.size(), &found, &found_ends);
    for (size_t k = 0; k < end - g; ++k) {
      spans[order[g + k]] = {begin, found_ends[k]};
      begin = found_ends[k];
    }
    g = end;
  }
  pieces->clear();
  ends->clear();
  for (const auto& [begin, end] : spans) {
    pieces->insert(pieces->end(), found.begin() + static_cast<std::ptrdiff_t>(begin),
                   found.begin() + static_cast<std::ptrdiff_t>(end));
    ends->push_back(pieces->size());
  }
}

Status FillPackedRow(const Dataset& ds, const PackedView& view, const TokenRange* pieces, size_t n,
                     const LoaderOptions& o, size_t b, BatchArrays& out, ReadStats* stats,
                     uint64_t* trainable) {
  const uint64_t L = static_cast<uint64_t>(o.seq_len);
  const bool next = o.labels == LabelsMode::kNext;
  if (o.dtype == OutputDtype::kInt32) {
    return Fill<int32_t>(ds, pieces, n, view.pad_id(), L, next, b, out, stats, trainable);
  }
  return Fill<int64_t>(ds, pieces, n, view.pad_id(), L, next, b, out, stats, trainable);
}

}  // namespace tokpack
