#include "reader/permutation.h"

namespace tokpack {

FeistelPermutation::FeistelPermutation(uint64_t n, uint64_t key) : n_(n) {
  // Smallest h >= 1 with 4^h >= n: the domain is at most 4n, so cycle walking
  // takes fewer than 4 steps on average.
  half_bits_ = 1;
  while (half_bits_ < 32 && (uint64_t{1} << (2 * half_bits_)) < n) ++half_bits_;
  mask_ = (uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < kRounds; ++r) round_keys_[r] = Mix64(key + 0x632be59bd9b4e019ULL * (r + 1));
}

uint64_t FeistelPermutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_, right = x & mask_;
  for (int r = 0; r < kRounds; ++r) {
    uint64_t next = left ^ Round(right, r);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t FeistelPermutation::Decrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_, right = x & mask_;
  for (int r = kRounds - 1; r >= 0; --r) {
    uint64_t prev = right ^ Round(left, r);
    right = left;
    left = prev;
  }
  return (left << half_bits_) | right;
}

uint64_t FeistelPermutation::Apply(uint64_t i) const {
  // Cycle walking: the cycle through i returns to [0, n) because Encrypt is
  // a bijection of the whole domain.
  uint64_t y = Encrypt(i);
  while (y >= n_) y = Encrypt(y);
  return y;
}

uint64_t FeistelPermutation::Inverse(uint64_t i) const {
  uint64_t y = Decrypt(i);
  while (y >= n_) y = Decrypt(y);
  return y;
}

}  // namespace tokpack
