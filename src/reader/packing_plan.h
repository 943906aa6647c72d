// Best-fit-decreasing packing of documents into bins of L tokens: the pure
// packer over one shard (PackShard), its checker for plans read from disk
// (CheckShardPlan), and the whole dataset's packing plan (PackingPlan): sample
// i of the packed stream is bin i (bins of shard 0, then shard 1, ...), and
// a bin is a list of token ranges of the dataset's stream.
//
// Pieces: each non-empty document of n tokens is cut into pieces [0, L),
// [L, 2L), ... and a last piece of the remainder n % L when it is > 0
// (piece j of a document covers its tokens [j L, min((j+1) L, n))). Empty
// documents have no pieces (they are counted).
//
// Best-fit decreasing: the pieces are taken longest first (ties: in piece
// order, i.e. document then piece index); each goes into the open bin with
// the smallest remaining capacity that holds it (ties: the earliest bin),
// else into a new bin. A bin is closed when full or, with
// max_docs_per_sequence = m > 0, when it holds m pieces. Bins keep their
// creation order, pieces within a bin their insertion order.
//
// Invariant of a ShardPlan (PackShard makes it, CheckShardPlan enforces it
// on anything else): every piece of every document of the shard appears
// exactly once across its bins; no bin holds more than L tokens, none is
// empty, and with a cap m none holds more than m pieces. Two marks of best
// fit decreasing hold too, so that a packing made some other way (every
// piece alone in a bin, bins reordered, another packer's) is not used as if
// it were best fit: pieces are in best fit decreasing's order (longest
// first, then by document and piece) within each bin and across the bins'
// first pieces; and no bin was opened for a piece that an earlier bin below
// the cap could still hold at the end (its room then was at least that).
// Replaying the placement itself would cost as much as making the plan, so
// a plan that put a piece into a bin that fits it but not best passes: it
// still opens no bin that an earlier one made needless. The plan is a pure
// function of (document lengths, L, m): the same bytes on any machine and
// for any thread count. PackShard runs in O(P log L) time for P pieces (a
// radix sort by length and a 64-ary bit tree over capacities 0..L) and
// O(P + L / 8) memory.
#ifndef TOKPACK_SRC_READER_PACKING_PLAN_H_
#define TOKPACK_SRC_READER_PACKING_PLAN_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokpack/cancel.h"
#include "tokpack/dataset.h"
#include "tokpack/status.h"

namespace tokpack {

// The settings a plan is a function of (besides the document lengths).
struct PackingSettings {
  int64_t seq_len = 0;                // L: tokens per bin, >= 1.
  int64_t max_docs_per_sequence = 0;  // Pieces per bin at most; 0: no cap.

  bool operator==(const PackingSettings& o) const {
    return seq_len == o.seq_len && max_docs_per_sequence == o.max_docs_per_sequence;
  }
  // InvalidArgument naming seq_len or max_docs_per_sequence out of range
  // (seq_len in [1, 2^31 - 1], max_docs_per_sequence >= 0).
  Status Validate() const;
};

// One piece: document index within the shard (or within a split view's
// range of it) and piece index within the document.
struct PieceRef {
  uint32_t document = 0;
  uint32_t piece = 0;
  bool operator==(const PieceRef& o) const { return document == o.document && piece == o.piece; }
};

// The numbers `tokpack info --packing best_fit` shows; they add across shards.
struct PackingCounts {
  uint64_t documents = 0;            // Including empty ones.
  uint64_t empty_documents = 0;      // No tokens: no pieces.
  uint64_t truncated_documents = 0;  // Longer than L: split into pieces.
  uint64_t pieces = 0;
  uint64_t tokens = 0;  // Tokens in pieces (all of the documents').
  uint64_t bins = 0;
  uint64_t max_pieces_per_bin = 0;

  void Add(const PackingCounts& o);
  // bins * L - tokens.
  uint64_t PaddingTokens(int64_t seq_len) const;
  // PaddingTokens / (bins * L); 0 without bins.
  double PaddingFraction(int64_t seq_len) const;
  // pieces / bins; 0 without bins.
  double MeanPiecesPerBin() const;
};

// One shard's plan: bin b holds items[bin_offsets[b], bin_offsets[b + 1]).
struct ShardPlan {
  std::vector<uint64_t> bin_offsets{0};  // bins + 1 entries, from 0 to items.size().
  std::vector<PieceRef> items;
  PackingCounts counts;

  uint64_t bins() const { return bin_offsets.size() - 1; }
};

// Tokens of piece `piece` of a document of `length` tokens (0 past its end).
uint64_t PieceLength(uint64_t length, uint64_t piece, uint64_t seq_len);

// Plans one shard whose documents have `lengths` tokens. InvalidArgument
// for bad settings; FailedPrecondition naming `shard` when it has 2^32
// documents or more, or a document of 2^32 pieces or more (PieceRef's
// limits); Cancelled, within a few milliseconds, once `*cancel` (may be
// null) is set: a shard of millions of documents takes seconds.
StatusOr<ShardPlan> PackShard(const std::vector<uint64_t>& lengths, const PackingSettings& settings,
                              const std::string& shard, const CancelFlag& cancel = nullptr);

// Checks `plan` (read from an untrusted file) against the invariant above
// for documents of `lengths` and fills plan->counts, in O(pieces). DataLoss
// naming `name` and the first violation (an item outside the shard, a piece
// twice or missing, a bin over L or over the cap, an empty bin, bad offsets,
// "not the best-fit-decreasing plan": a mark of best fit missing).
Status CheckShardPlan(const std::vector<uint64_t>& lengths, const PackingSettings& settings,
                      const std::string& name, ShardPlan* plan);

// The lengths of shard k's documents in `dataset` (its range, for a split).
std::vector<uint64_t> ShardDocumentLengths(const Dataset& dataset, size_t shard);

// The packing plan of a dataset: its bins, shard by shard, as ranges of the
// dataset's token stream. Immutable; safe to share between threads.
class PackingPlan {
 public:
  // A piece as a range of the dataset's stream (length <= L).
  struct Range {
    uint64_t begin = 0;
    uint64_t length = 0;
  };

  // The view of `dataset` from plans[k] for each shard k (each satisfying
  // the invariant for that shard's documents). `plan_files` says where they
  // are stored (empty when they are not).
  static std::shared_ptr<const PackingPlan> Make(const Dataset& dataset,
                                                 const PackingSettings& settings,
                                                 const std::vector<ShardPlan>& plans,
                                                 std::vector<std::string> plan_files);

  // Samples of the packed stream: bins of every shard.
  uint64_t num_bins() const { return bin_offsets_.size() - 1; }
  // Replaces *out with bin `bin`'s pieces in order (bin < num_bins()).
  void Bin(uint64_t bin, std::vector<Range>* out) const;
  // Appends the pieces of bins[0..n) to *out, bin after bin, and each bin's
  // end in *out to *ends. A bin's entries lie at a random place in three
  // arrays, each read depending on the last: the lookups of all n bins are
  // prefetched stage by stage, so their cache misses overlap.
  void Bins(const uint64_t* bins, size_t n, std::vector<Range>* out,
            std::vector<size_t>* ends) const;
  const PackingSettings& settings() const { return settings_; }
  // Summed over shards.
  const PackingCounts& counts() const { return counts_; }
  // Where each shard's plan file is, in shard order.
  const std::vector<std::string>& plan_files() const { return plan_files_; }

 private:
  PackingPlan() = default;
  PackingSettings settings_;
  PackingCounts counts_;
  std::vector<uint64_t> bin_offsets_{0};  // Into begins_/lengths_.
  std::vector<uint64_t> begins_;
  std::vector<uint32_t> lengths_;
  std::vector<std::string> plan_files_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_PACKING_PLAN_H_
