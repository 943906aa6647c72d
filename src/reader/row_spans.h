// RowSpans: which stretches of which documents a loader's sample holds, in
// row order, for Loader::Explain. A concat sample i is the window of L + 1
// stream tokens at i * L, so its spans are the documents that window
// crosses; a best_fit sample is a packed bin, whose pieces each lie inside
// one document. Reads only the index (document extents), never tokens. Pure
// functions of an immutable Dataset: thread-safe.
#ifndef TOKPACK_SRC_READER_ROW_SPANS_H_
#define TOKPACK_SRC_READER_ROW_SPANS_H_

#include <cstdint>
#include <vector>

#include "reader/packed_view.h"
#include "tokpack/dataset.h"
#include "tokpack/loader.h"
#include "tokpack/status.h"

namespace tokpack {

// The document holding stream token `token` (< num_tokens()): the last
// document that starts at or before it, so an empty document, which holds
// no token, is never the answer. O(log documents * log shards).
StatusOr<uint64_t> DocumentAt(const Dataset& ds, uint64_t token);

// Replaces *spans with the stretches of documents of sample `sample` at
// sequence length L: of its window, or with a `view` (best_fit) of its bin.
// OutOfRange when the sample lies past the end of the dataset.
Status RowSpans(const Dataset& ds, const PackedView* view, uint64_t sample, uint64_t L,
                std::vector<RowOrigin::Span>* spans);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_ROW_SPANS_H_
