// Loss masks: one bit per token of a shard, set where the token carries loss
// (SFT: the assistant's turns), stored as <shard>.mask beside the shard's
// .bin (docs/format.md, "Loss masks"). Bit i of the shard is bit (i % 8),
// least significant first, of byte i / 8; the last byte's unused bits are 0.
// MaskPacker appends per-token flags as bits; the free functions read them.
// MaskPacker is not thread-safe; the functions are pure.
#ifndef TOKPACK_SRC_FORMAT_LOSS_MASK_H_
#define TOKPACK_SRC_FORMAT_LOSS_MASK_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tokpack {

// Bytes of the mask of a shard of `tokens` tokens.
inline uint64_t MaskBytes(uint64_t tokens) { return tokens / 8 + (tokens % 8 != 0); }

// Bit `i` of `bits` (the caller checks i against the mask's tokens).
inline bool MaskBit(const uint8_t* bits, uint64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }

// The number of set bits in [begin, end).
uint64_t CountMaskBits(const uint8_t* bits, uint64_t begin, uint64_t end);

// Writes bits [begin, begin + n) of `bits` as one byte each (1: loss, 0: none)
// to out[0, n): how a reader applies a mask to a row of labels.
void ExpandMaskBits(const uint8_t* bits, uint64_t begin, uint64_t n, uint8_t* out);

// Collects a shard's bits: Append(flags) adds one bit per byte of `flags`
// (non-zero: loss), and TakeBytes() hands over the whole bytes done so far,
// keeping a partial last byte until Finish().
class MaskPacker {
 public:
  void Append(std::string_view flags);
  // Appends `n` bits of `value`.
  void AppendRun(uint64_t n, bool value);
  // The complete bytes so far (removed from the packer).
  std::string TakeBytes();
  // The rest, the last byte padded with zero bits.
  std::string Finish();
  uint64_t bits() const { return bits_; }
  uint64_t set_bits() const { return set_; }

 private:
  std::string bytes_;  // Whole bytes not yet taken.
  uint8_t partial_ = 0;
  uint64_t bits_ = 0;
  uint64_t set_ = 0;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_FORMAT_LOSS_MASK_H_
