// A Dataset's loss masks (docs/format.md 3.1): one bit per token in
// <shard>.mask, read as one byte per token for the loader's labels.
#include <cstring>
#include <string>

#include "format/loss_mask.h"
#include "reader/dataset_impl.h"

namespace tokpack {
namespace {

// Bits [bit, bit + n) of a mask that is not memory-resident (a remote one,
// read through the chunk cache, each chunk checked against the manifest).
Status ReadUnmappedBits(const ByteSource& mask, uint64_t bit, uint64_t n, uint8_t* out,
                        ReadStats* stats) {
  thread_local std::string bytes;  // Reused: no steady-state allocation.
  const uint64_t first = bit / 8;
  bytes.resize((bit + n + 7) / 8 - first);
  TOKPACK_RETURN_IF_ERROR(mask.ReadCounted(first, bytes.size(), bytes.data(), stats));
  ExpandMaskBits(reinterpret_cast<const uint8_t*>(bytes.data()), bit & 7, n, out);
  return Status::Ok();
}

}  // namespace

Status Dataset::Impl::ReadMask(uint64_t begin, uint64_t count, uint8_t* out,
                               ReadStats* stats) const {
  if (!has_masks) {
    TOKPACK_RETURN_IF_ERROR(CheckRange(begin, count));
    std::memset(out, 1, count);
  } else {
    uint8_t* at = out;
    TOKPACK_RETURN_IF_ERROR(
        ForEachShardPart(begin, count, [&](const Shard& s, uint64_t local, uint64_t n) {
          const char* mapped = s.mask->data();
          Status read = Status::Ok();
          if (mapped != nullptr) {
            ExpandMaskBits(reinterpret_cast<const uint8_t*>(mapped), local, n, at);
          } else {
            read = ReadUnmappedBits(*s.mask, local, n, at, stats);
          }
          at += n;
          return read;
        }));
  }
  // A removed document's tokens carry no loss, with a mask or without.
  if (num_removed != 0) {
    ForEachRemoved(begin, count, [out](uint64_t i, uint64_t n) { std::memset(out + i, 0, n); });
  }
  return Status::Ok();
}

uint64_t Dataset::Impl::SegmentTrainable(size_t k, const ShardInfo& whole) const {
  const Shard& s = shards[k];
  const uint64_t tokens = token_ends[k] - s.first_token;
  if (const char* mapped = s.mask->data()) {
    return CountMaskBits(reinterpret_cast<const uint8_t*>(mapped), s.token_base,
                         s.token_base + tokens);
  }
  if (whole.tokens == 0) return 0;
  return static_cast<uint64_t>(static_cast<long double>(whole.trainable_tokens) * tokens /
                               whole.tokens);
}

bool Dataset::has_loss_masks() const { return impl_->has_masks; }

Status Dataset::ReadLossMask(uint64_t begin, uint64_t count, uint8_t* out, ReadStats* stats) const {
  return impl_->ReadMask(begin, count, out, stats);
}

}  // namespace tokpack
