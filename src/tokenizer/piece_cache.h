// PieceCache: a bounded, two-way set-associative cache of piece -> ids,
// which spares BPE merging (and a vocabulary probe) for the pieces that recur,
// most of them in running text.
//
// Invariant: a slot holds a piece of at most kMaxBytes bytes and at most
// kMaxIds ids, exactly the ids the tokenizer gives that piece; a slot is
// either empty (all zero) or such a pair. Its size is fixed (kBytes), so
// memory never grows with the corpus. A slot is half a cache line: the
// piece zero-padded with its length in the last byte, then the ids; the two
// slots a piece may take share one line, so a lookup touches one line.
//
// Not thread-safe: each thread keeps its own (BpeTokenizer::ThreadState).
#ifndef TOKPACK_SRC_TOKENIZER_PIECE_CACHE_H_
#define TOKPACK_SRC_TOKENIZER_PIECE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "base/huge_page_allocator.h"

namespace tokpack {

class PieceCache {
 public:
  static constexpr size_t kMaxBytes = 15;
  static constexpr size_t kMaxIds = 4;
  static constexpr size_t kSetBits = 16;
  static constexpr size_t kSets = size_t{1} << kSetBits;
  static constexpr size_t kBytes = kSets * 64;  // 4 MiB.

  // A piece of at most kMaxBytes, as the slots store it.
  struct Key {
    uint64_t lo = 0, hi = 0;
  };

  // The key of the piece at p (1 <= len <= kMaxBytes) in a buffer that ends
  // at `end`: one 16-byte read where the buffer has that many bytes left.
  static Key KeyOf(const char* p, size_t len, const char* end) {
    Key k;
    if (end - p >= 16) {
      std::memcpy(&k.lo, p, 8);
      std::memcpy(&k.hi, p + 8, 8);
    } else {
      char buf[16] = {};
      std::memcpy(buf, p, len);
      std::memcpy(&k.lo, buf, 8);
      std::memcpy(&k.hi, buf + 8, 8);
    }
    if (len < 8) {
      k.lo &= (uint64_t{1} << (8 * len)) - 1;
      k.hi = 0;
    } else {
      k.hi &= (uint64_t{1} << (8 * (len - 8))) - 1;
    }
    k.hi |= static_cast<uint64_t>(len) << 56;
    return k;
  }

  // Empties the cache (allocating it on first use).
  void Clear() {
    if (sets_.empty()) sets_.resize(kSets);  // On huge pages where the kernel gives them.
    std::memset(static_cast<void*>(sets_.data()), 0, sizeof(Set) * kSets);
  }

  // Starts loading the slot of `key` into the CPU cache.
  void Prefetch(const Key& key) const { __builtin_prefetch(&sets_[Index(key)]); }

  // Appends the ids of `key` to *ids and returns true if the cache has them.
  // (Cheapest when *ids has room for kMaxIds more.)
  bool Lookup(const Key& key, std::vector<int>* ids) const {
    const Set& set = sets_[Index(key)];
    const Slot* found = nullptr;
    for (const Slot& s : set.ways) {
      if (s.key[0] == key.lo && s.key[1] == key.hi) found = &s;
    }
    if (found == nullptr) return false;
    const Slot& s = *found;
    ids->push_back(s.ids[0]);  // A stored piece has at least one id.
    for (size_t i = 1; i < kMaxIds && s.ids[i] >= 0; ++i) ids->push_back(s.ids[i]);
    return true;
  }

  // Remembers that `key` (not in the cache) encodes to ids[0..n) (1 <= n;
  // more than kMaxIds are not stored). The set's older entry makes way.
  void Store(const Key& key, const int* ids, size_t n) {
    if (n == 0 || n > kMaxIds) return;
    Set& set = sets_[Index(key)];
    set.ways[1] = set.ways[0];
    Slot& s = set.ways[0];
    s.key[0] = key.lo;
    s.key[1] = key.hi;
    for (size_t i = 0; i < kMaxIds; ++i) s.ids[i] = i < n ? ids[i] : -1;
  }

 private:
  struct Slot {
    uint64_t key[2];
    int32_t ids[kMaxIds];
  };
  struct alignas(64) Set {
    Slot ways[2];
  };
  static_assert(sizeof(Set) * kSets == kBytes, "a cache line per set");
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "keys keep the low bytes");

  static size_t Index(const Key& k) {
    const uint64_t h = (k.lo ^ (k.hi * 0x9E3779B97F4A7C15ull)) * 0xD6E8FEB86659FD93ull;
    return static_cast<size_t>(h >> (64 - kSetBits));
  }

  std::vector<Set, HugePageAllocator<Set>> sets_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_PIECE_CACHE_H_
