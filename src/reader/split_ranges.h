// Held-out splits: which documents of each shard a part of a split holds.
//
// A split is a list of non-negative weights w_0..w_{P-1} ("949,50,1", or
// decimals such as "0.9,0.1"), at least one positive. The weights are made
// exact integers (decimals scaled by a power of ten) and divided by their
// gcd: that is the normalized split ("0.9,0.1" -> "9,1"; "50,50" -> "1,1"),
// which gives the same ranges as the text it came from.
//
// Invariant: with C_j = w_0 + .. + w_{j-1} and C = C_P, part j of a shard of
// D documents is its documents [floor(D * C_j / C), floor(D * C_{j+1} / C)).
// For every D the parts are contiguous, in order, disjoint, and together
// cover [0, D) exactly once (C_0 = 0, C_P = C); part j holds within one
// document of D * w_j / C. Exact (128-bit) integer arithmetic: deterministic
// everywhere, O(1) per shard. Pure functions of their arguments.
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

// InvalidArgument for a part with no documents in any of `shards` shards (of
// at most `largest` documents each), naming the dataset, split and part.
Status EmptyPartError(const std::string& dataset, const std::string& split, size_t part,
                      size_t shards, uint64_t largest);

// Documents [begin, end) of a shard.
struct DocumentRange {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Part `part` (< spec.parts()) of a shard of `documents` documents.
DocumentRange SplitRange(const SplitSpec& spec, size_t part, uint64_t documents);

// A part's fingerprint: xxh3_64 of "tokpack-split-v1", the parent's
// fingerprint (u64 little-endian), the normalized split's length (u64) and
// text, and the part (u64): different for every part, and for the same part
// of another dataset or split.
uint64_t SplitFingerprint(uint64_t parent, const SplitSpec& spec, size_t part);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_SPLIT_RANGES_H_
