#include "reader/row_spans.h"

#include <algorithm>
#include <string>

namespace tokpack {

StatusOr<uint64_t> DocumentAt(const Dataset& ds, uint64_t token) {
  if (token >= ds.num_tokens()) {
    return OutOfRangeError("token " + std::to_string(token) + " is past the last of " +
                           std::to_string(ds.num_tokens()) + " tokens in " + ds.path());
  }
  // Document starts never decrease with the index (an empty document starts
  // where the next one does): bisect for the last start <= token.
  uint64_t lo = 0, hi = ds.num_documents();  // The answer lies in [lo, hi).
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    uint64_t offset = 0, length = 0;
    TOKPACK_RETURN_IF_ERROR(ds.DocumentExtent(mid, &offset, &length));
    if (offset <= token) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

Status RowSpans(const Dataset& ds, const PackedView* view, uint64_t sample, uint64_t L,
                std::vector<RowOrigin::Span>* spans) {
  spans->clear();
  uint64_t offset = 0, length = 0;
  if (view != nullptr) {
    if (sample >= view->num_bins()) {
      return OutOfRangeError("bin " + std::to_string(sample) + " is past the last of " +
                             std::to_string(view->num_bins()) + " packed bins of " + ds.path());
    }
    std::vector<TokenRange> pieces;
    view->Pieces(sample, &pieces);
    uint64_t column = 0;
    for (const TokenRange& p : pieces) {
      TOKPACK_ASSIGN_OR_RETURN(const uint64_t doc, DocumentAt(ds, p.begin));
      TOKPACK_RETURN_IF_ERROR(ds.DocumentExtent(doc, &offset, &length));
      spans->push_back({doc, p.begin - offset, p.length, column});
      column += p.length;
    }
    return Status::Ok();
  }
  if (L == 0 || sample > (UINT64_MAX - L - 1) / L || sample * L + L + 1 > ds.num_tokens()) {
    return OutOfRangeError("sample " + std::to_string(sample) + " of " + std::to_string(L) +
                           " tokens lies past the end of " + ds.path());
  }
  const uint64_t begin = sample * L, end = begin + L + 1;
  TOKPACK_ASSIGN_OR_RETURN(uint64_t doc, DocumentAt(ds, begin));
  for (uint64_t t = begin; t < end; ++doc) {
    TOKPACK_RETURN_IF_ERROR(ds.DocumentExtent(doc, &offset, &length));
    if (offset + length <= t) continue;  // Empty.
    const uint64_t stop = std::min(end, offset + length);
    spans->push_back({doc, t - offset, stop - t, t - begin});
    t = stop;
  }
  return Status::Ok();
}

}  // namespace tokpack
