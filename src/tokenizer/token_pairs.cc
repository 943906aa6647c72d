#include "tokenizer/token_pairs.h"

#include <cstring>
#include <random>
#include <string_view>

namespace tokpack {
namespace {

// Arithmetic modulo the Mersenne prime 2^61 - 1.
constexpr uint64_t kMod = (uint64_t{1} << 61) - 1;

__extension__ typedef unsigned __int128 Uint128;  // GCC and clang; pedantic-clean.

uint64_t MulMod(uint64_t a, uint64_t b) {
  const Uint128 p = static_cast<Uint128>(a) * b;
  // For a, b < kMod the sum is below 2 * kMod - 1: one subtraction reduces it.
  const uint64_t r = (static_cast<uint64_t>(p) & kMod) + static_cast<uint64_t>(p >> 61);
  return r >= kMod ? r - kMod : r;
}
uint64_t AddMod(uint64_t a, uint64_t b) {
  const uint64_t r = a + b;
  return r >= kMod ? r - kMod : r;
}
uint64_t SubMod(uint64_t a, uint64_t b) { return a >= b ? a - b : a + kMod - b; }
uint64_t PowMod(uint64_t base, uint64_t e) {
  uint64_t r = 1;
  for (; e > 0; e >>= 1, base = MulMod(base, base)) {
    if (e & 1) r = MulMod(r, base);
  }
  return r;
}

// Polynomial hashes (HashOf) with a base drawn at random per
// call, so no file can be written to make hashes collide: a collision costs
// a byte comparison that fails, and the result never depends on the base.
struct PolyHash {
  PolyHash() {
    std::random_device rd;
    const uint64_t r = (uint64_t{rd()} << 32) ^ rd();
    base = 256 + r % (kMod - 512);
    inverse = PowMod(base, kMod - 2);
  }
  uint64_t base;
  uint64_t inverse;
};

// (hash, length) -> token index, a multimap by open addressing: distinct
// tokens may share a hash.
class HashIndex {
 public:
  explicit HashIndex(size_t n) {
    size_t capacity = 16;
    while (capacity < 2 * n) capacity *= 2;
    slots_.assign(capacity, Slot{0, 0, -1});
    mask_ = capacity - 1;
  }
  // Starts loading the first slot for (hash, len): each insert and each walk
  // below starts at a random slot, a cache miss unless fetched ahead.
  void Prefetch(uint64_t hash, size_t len) const { __builtin_prefetch(&slots_[Home(hash, len)]); }
  void Insert(uint64_t hash, size_t len, int32_t index) {
    size_t i = Home(hash, len);
    while (slots_[i].index >= 0) i = (i + 1) & mask_;
    slots_[i] = Slot{hash, static_cast<uint32_t>(len), index};
  }
  // The first token of `len` bytes with `hash` for which match(index) holds, or -1.
  template <typename Match>
  int32_t Find(uint64_t hash, size_t len, Match&& match) const {
    for (size_t i = Home(hash, len);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.index < 0) return -1;
      if (s.hash == hash && s.len == static_cast<uint32_t>(len) && match(s.index)) return s.index;
    }
  }

 private:
  struct Slot {
    uint64_t hash;
    uint32_t len;
    int32_t index;  // -1: empty.
  };
  size_t Home(uint64_t hash, size_t len) const {
    uint64_t x = hash + len * 0x9e3779b97f4a7c15ULL;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    return (x ^ (x >> 29)) & mask_;
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// h(s) = sum over i of (s[i] + 1) * base^(size - 1 - i), by Horner's rule.
uint64_t HashOf(std::string_view s, const PolyHash& ph) {
  uint64_t h = 0;
  for (unsigned char c : s) h = AddMod(MulMod(h, ph.base), c + 1u);
  return h;
}

}  // namespace

TokenLinks LinkTokens(const std::vector<std::string>& tokens) {
  const PolyHash ph;
  const size_t n = tokens.size();
  constexpr size_t kAhead = 8;  // Tokens whose slots are fetched ahead.
  // Each token's hash, and the hashes of it less its last byte (head) and
  // less its first (tail): where the two walks below start and, in real
  // vocabularies, mostly end.
  std::vector<uint64_t> hashes(n), heads(n), tails(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string_view t = tokens[i];
    hashes[i] = HashOf(t, ph);
    if (t.size() < 2) continue;
    const unsigned first = static_cast<unsigned char>(t.front()) + 1u;
    const unsigned last = static_cast<unsigned char>(t.back()) + 1u;
    heads[i] = MulMod(SubMod(hashes[i], last), ph.inverse);
    tails[i] = SubMod(hashes[i], MulMod(first, PowMod(ph.base, t.size() - 1)));
  }
  HashIndex index(n);
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) index.Prefetch(hashes[i + kAhead], tokens[i + kAhead].size());
    index.Insert(hashes[i], tokens[i].size(), static_cast<int32_t>(i));
  }
  std::vector<uint64_t>().swap(hashes);
  TokenLinks links;
  links.prefix.assign(n, -1);
  links.suffix.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n && tokens[i + kAhead].size() >= 2) {
      index.Prefetch(heads[i + kAhead], tokens[i + kAhead].size() - 1);
      index.Prefetch(tails[i + kAhead], tokens[i + kAhead].size() - 1);
    }
    const std::string_view t = tokens[i];
    if (t.size() < 2) continue;
    uint64_t h = heads[i];
    for (size_t len = t.size() - 1;; --len) {
      links.prefix[i] = index.Find(
          h, len, [&](int32_t j) { return std::memcmp(tokens[j].data(), t.data(), len) == 0; });
      if (links.prefix[i] >= 0 || len == 1) break;
      // h(t[0, len - 1)) from h(t[0, len)): drop the last byte, shift down.
      h = MulMod(SubMod(h, static_cast<unsigned char>(t[len - 1]) + 1u), ph.inverse);
    }
    h = tails[i];
    uint64_t power = 0;  // base^(size - 1 - start): the first byte's, once needed.
    for (size_t start = 1;; ++start) {
      const size_t len = t.size() - start;
      links.suffix[i] = index.Find(h, len, [&](int32_t j) {
        return std::memcmp(tokens[j].data(), t.data() + start, len) == 0;
      });
      if (links.suffix[i] >= 0 || len == 1) break;
      // h(t[start + 1, size)) from h(t[start, size)): drop the first byte's term.
      power = start == 1 ? PowMod(ph.base, len - 1) : MulMod(power, ph.inverse);
      h = SubMod(h, MulMod(static_cast<unsigned char>(t[start]) + 1u, power));
    }
  }
  return links;
}

}  // namespace tokpack
