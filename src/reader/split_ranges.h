// Held-out splits: which documents of each shard a part of a split holds.
//
// A split is a list of non-negative weights w_0..w_{P-1} ("949,50,1", or
// decimals such as "0.9,0.1"), at least one positive. The weights are made
// exact integers (decimals scaled by a power of ten) and divided by their
// gcd: that is the normalized split ("0.9,0.1" -> "9,1"; "50,50" -> "1,1"),
// which gives the same parts as the text it came from.
//
// Parts are drawn from across the whole dataset, whatever its number of
// shards: each shard's documents are cut into runs of R consecutive documents
// (R = SplitRuns::RunDocuments(D) for a dataset of D documents: about
// kTargetRuns runs in all; a shard's last run may be shorter), the G runs are
// numbered over the shards in order, and a keyed Feistel permutation pi of
// [0, G) (its key a hash of the normalized split) deals them out: run g
// belongs to part j iff pi(g) lies in [floor(G * C_j / C), floor(G * C_{j+1} /
// C)), with C_j = w_0 + .. + w_{j-1} and C = C_P.
//
// Invariant: the parts are disjoint and cover every document exactly once;
// part j holds within one run of G * w_j / C runs, so within R * (1 + S)
// documents of D * w_j / C (S shards, whose last runs may be short); runs are
// whole documents of one shard, so a part's share of a shard is a few ranges
// of contiguous tokens (remote reads stay chunk-local). Exact integer
// arithmetic and a fixed hash: the same parts on every machine, in every
// process and version. O(shards + parts) memory; O(1) per run.
#ifndef TOKPACK_SRC_READER_SPLIT_RANGES_H_
#define TOKPACK_SRC_READER_SPLIT_RANGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tokpack/status.h"

namespace tokpack {

struct SplitSpec {
  // Most parts a split may have, and the bound on the normalized total C
  // (so D * C fits 128 bits for any D < 2^64).
  static constexpr size_t kMaxParts = 1000;
  static constexpr uint64_t kMaxTotal = uint64_t{1} << 62;

  std::vector<uint64_t> weights;  // Normalized: gcd 1, sum in [1, kMaxTotal].

  size_t parts() const { return weights.size(); }
  // "949,50,1": the weights joined by commas.
  std::string Normalized() const;
};

// Parses "w_0,w_1,..": each a non-negative decimal number (digits, at most
// one '.', at most 9 digits after it; spaces around it are ignored).
// InvalidArgument naming the option and the text: "split '9,x': 'x' is not
// a non-negative number", no parts, all zero, too many parts or digits.
StatusOr<SplitSpec> ParseSplit(const std::string& text);

// ParseSplit(split), with part `index` in range: InvalidArgument naming
// split_index and the split when it is not (or when split is empty).
StatusOr<SplitSpec> ParseSplitPart(const std::string& split, int64_t index);

// InvalidArgument for a part dealt no run of the `runs` runs of a dataset,
// naming the dataset, split and part.
Status EmptyPartError(const std::string& dataset, const std::string& split, size_t part,
                      uint64_t runs);

// Documents [begin, end) of a shard.
struct DocumentRange {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Slots [floor(n * C_part / C), floor(n * C_{part+1} / C)) of n: part `part`'s
// (< spec.parts()) share of n items, contiguous, in order, covering [0, n).
DocumentRange SplitRange(const SplitSpec& spec, size_t part, uint64_t n);

// How a split deals a dataset's runs of documents to its parts (above).
// Immutable; thread-safe.
class SplitRuns {
 public:
  // About this many runs in all: fine enough that every part samples the
  // whole dataset (a 1% part of one shard gets ~40 runs from all over it).
  static constexpr uint64_t kTargetRuns = 4096;

  // R for a dataset of `documents` documents: ceil(documents / kTargetRuns),
  // at least 1.
  static uint64_t RunDocuments(uint64_t documents);

  // `shard_documents`: each shard's documents, in order.
  SplitRuns(const SplitSpec& spec, std::vector<uint64_t> shard_documents);

  uint64_t run_documents() const { return run_documents_; }
  uint64_t runs() const { return runs_; }
  // The part run g (< runs()) belongs to.
  size_t PartOfRun(uint64_t g) const;
  // Runs dealt to `part`.
  uint64_t RunsOf(size_t part) const { return bounds_[part + 1] - bounds_[part]; }
  // A range of adjacent runs of one shard dealt to one part.
  struct Dealt {
    size_t part = 0;
    DocumentRange range;
  };
  // Shard k's documents, in order, as maximal ranges of adjacent runs of
  // one part each: every part's share of the shard in one pass.
  std::vector<Dealt> Deal(size_t shard) const;
  // Part `part`'s documents of shard k, in order, adjacent runs merged.
  std::vector<DocumentRange> Ranges(size_t part, size_t shard) const;

 private:
  size_t PartOfSlot(uint64_t slot) const;

  std::vector<uint64_t> shard_documents_;
  std::vector<uint64_t> first_run_;  // Per shard, its first run's number.
  std::vector<uint64_t> bounds_;     // Part j holds pi(g) in [bounds_[j], bounds_[j+1]).
  uint64_t run_documents_ = 1;
  uint64_t runs_ = 0;
  uint64_t key_ = 0;
};

// A part's fingerprint: xxh3_64 of "tokpack-split-v2", the parent's
// fingerprint (u64 little-endian), the normalized split's length (u64) and
// text, and the part (u64): different for every part, and for the same part
// of another dataset or split. v2: parts drawn as runs (v1 cut each shard
// into contiguous ranges), so a cursor saved on a v1 part is refused.
uint64_t SplitFingerprint(uint64_t parent, const SplitSpec& spec, size_t part);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_SPLIT_RANGES_H_
