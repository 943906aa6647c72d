// Megatron-Core MMIDIDX index files (.idx): encoding and validated parsing.
// Byte-compatible with megatron/core/datasets/indexed_dataset.py; the layout
// is in docs/format.md. Functions are pure and thread-safe.
#ifndef TOKPACK_SRC_FORMAT_IDX_FILE_H_
#define TOKPACK_SRC_FORMAT_IDX_FILE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tokpack/manifest.h"
#include "tokpack/status.h"

namespace tokpack {

inline constexpr char kIdxMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
inline constexpr uint64_t kIdxVersion = 1;
inline constexpr size_t kIdxHeaderBytes = 34;

// A parsed and validated .idx. The arrays live in the buffer passed to
// ParseIdx (which must outlive this view); they are unaligned, so read them
// through the accessors. i < sequence_count() (document_count() for
// document_index) is the caller's to check.
class IdxView {
 public:
  TokenDtype dtype() const { return dtype_; }
  uint64_t sequence_count() const { return sequence_count_; }
  uint64_t document_count() const { return document_count_; }  // Includes the final entry.
  int32_t length(uint64_t i) const;
  int64_t pointer(uint64_t i) const;
  int64_t document_index(uint64_t i) const;
  // Total tokens (sum of lengths).
  uint64_t tokens() const { return tokens_; }
  // The exact .bin size the index describes; every sequence lies inside it.
  uint64_t bin_bytes() const { return tokens_ * TokenDtypeSize(dtype_); }

 private:
  friend StatusOr<IdxView> ParseIdx(std::string_view data, std::string_view name);
  static StatusOr<IdxView> ParseHeader(std::string_view data, std::string_view name);
  bool AnyBadSequence() const;
  bool AnyBadDocument() const;
  Status DescribeFirstBadEntry(std::string_view name) const;

  TokenDtype dtype_ = TokenDtype::kUInt16;
  uint64_t sequence_count_ = 0;
  uint64_t document_count_ = 0;
  uint64_t tokens_ = 0;
  const char* lengths_ = nullptr;
  const char* pointers_ = nullptr;
  const char* doc_idx_ = nullptr;
};

// The token at `p` (little endian, unaligned) of a .bin of type `dtype`.
inline int64_t LoadToken(const char* p, TokenDtype dtype) {
  if (dtype == TokenDtype::kUInt16) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// A Megatron prefix from a path that may end in ".bin" or ".idx".
std::string StripShardExtension(const std::string& path);

// Parses and validates every entry of an index (an index is untrusted: this
// is what makes reading through it safe): magic, version, dtype (uint16 or
// int32), exact file size, non-negative lengths, pointers that are the
// running byte offsets of the lengths (so sequences are contiguous, in order
// and end at bin_bytes() < 2^63), and document indices rising from 0 to the
// sequence count. DataLoss naming `name` (the file) and the first bad entry.
// Cost: one vectorized pass over the arrays (a few ms per million sequences).
StatusOr<IdxView> ParseIdx(std::string_view data, std::string_view name);

// Encodes an index for sequences of the given lengths, one document each.
std::string EncodeIdx(TokenDtype dtype, const std::vector<int32_t>& lengths);

}  // namespace tokpack

#endif  // TOKPACK_SRC_FORMAT_IDX_FILE_H_
