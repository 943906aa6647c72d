#include "format/loss_mask.h"

#include <array>
#include <cstring>

namespace tokpack {
namespace {

// Byte b's eight bits as eight bytes of 0 or 1, least significant first,
// laid out for a little-endian store (the format's byte order).
constexpr std::array<uint64_t, 256> MakeExpandTable() {
  std::array<uint64_t, 256> t{};
  for (uint64_t b = 0; b < 256; ++b) {
    for (int k = 0; k < 8; ++k) t[b] |= ((b >> k) & 1) << (8 * k);
  }
  return t;
}
constexpr std::array<uint64_t, 256> kExpand = MakeExpandTable();

}  // namespace

uint64_t CountMaskBits(const uint8_t* bits, uint64_t begin, uint64_t end) {
  uint64_t n = 0;
  // Bit by bit to the first whole byte, bytes by popcount, then the tail.
  for (; begin < end && (begin & 7) != 0; ++begin) n += MaskBit(bits, begin);
  for (; begin + 8 <= end; begin += 8) n += __builtin_popcount(bits[begin >> 3]);
  for (; begin < end; ++begin) n += MaskBit(bits, begin);
  return n;
}

void ExpandMaskBits(const uint8_t* bits, uint64_t begin, uint64_t n, uint8_t* out) {
  // Bit by bit to the first whole byte, then eight bytes per table lookup.
  uint64_t i = 0;
  for (; i < n && ((begin + i) & 7) != 0; ++i) out[i] = MaskBit(bits, begin + i);
  for (; i + 8 <= n; i += 8) std::memcpy(out + i, &kExpand[bits[(begin + i) >> 3]], 8);
  for (; i < n; ++i) out[i] = MaskBit(bits, begin + i);
}

void MaskPacker::Append(std::string_view flags) {
  for (char f : flags) AppendRun(1, f != 0);
}

void MaskPacker::AppendRun(uint64_t n, bool value) {
  if (value) set_ += n;
  while (n > 0) {
    const unsigned offset = bits_ & 7;
    if (offset == 0 && n >= 8) {  // Whole bytes at once.
      const uint64_t whole = n / 8;
      bytes_.append(whole, value ? '\xff' : '\0');
      bits_ += whole * 8;
      n -= whole * 8;
      continue;
    }
    if (value) partial_ |= uint8_t(1u << offset);
    ++bits_;
    --n;
    if ((bits_ & 7) == 0) {
      bytes_.push_back(static_cast<char>(partial_));
      partial_ = 0;
    }
  }
}

std::string MaskPacker::TakeBytes() {
  std::string out;
  out.swap(bytes_);
  return out;
}

std::string MaskPacker::Finish() {
  std::string out = TakeBytes();
  if ((bits_ & 7) != 0) out.push_back(static_cast<char>(partial_));
  partial_ = 0;
  return out;
}

}  // namespace tokpack
