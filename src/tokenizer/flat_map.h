// Open-addressing hash tables for the BPE hot path: byte strings -> token id
// and (left id, right id) -> merge. Both are built once at load time and then
// only read, so they are safe to share between threads; lookups never
// allocate. Linear probing over a power-of-two table kept at most half full.
#ifndef TOKPACK_SRC_TOKENIZER_FLAT_MAP_H_
#define TOKPACK_SRC_TOKENIZER_FLAT_MAP_H_

// Inlined: pieces are short, and a call through the PLT costs more than
// hashing them.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/huge_page_allocator.h"

namespace tokpack {

inline uint64_t HashBytes(std::string_view s) { return XXH3_64bits(s.data(), s.size()); }

// Maps byte strings to non-negative ids. Keys live in one arena.
class BytesToIdMap {
 public:
  BytesToIdMap() { Rehash(16); }

  // Inserts or overwrites.
  void Insert(std::string_view key, int id) { InsertHashed(key, HashBytes(key), id, true); }
  // Inserts unless `key` is present; returns whether it did (one hash and one
  // probe, where Find then Insert take two).
  bool InsertNew(std::string_view key, int id) {
    return InsertHashed(key, HashBytes(key), id, false);
  }

  // The id of `key`, or -1. `hash` must be HashBytes(key).
  int Find(std::string_view key, uint64_t hash) const {
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == hash && s.len == key.size() &&
          std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0) {
        return s.id;
      }
    }
  }
  int Find(std::string_view key) const { return Find(key, HashBytes(key)); }
  size_t size() const { return size_; }
  // Makes room for `n` keys of `bytes` bytes in all, so that loading a
  // vocabulary of known size does not rehash as it grows.
  void Reserve(size_t n, size_t bytes) {
    size_t capacity = slots_.size();
    while (capacity < 2 * n) capacity *= 2;
    if (capacity > slots_.size()) Rehash(capacity);
    arena_.reserve(bytes);
  }

 private:
  struct Slot {
    uint64_t hash;
    uint64_t offset;
    uint32_t len;
    int32_t id;  // -1: empty.
  };
  // Megabytes read at random: on huge pages where the kernel gives them.
  using Slots = std::vector<Slot, HugePageAllocator<Slot>>;

  // Returns whether `key` was new.
  bool InsertHashed(std::string_view key, uint64_t hash, int id, bool overwrite) {
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.size() * 2);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{hash, arena_.size(), static_cast<uint32_t>(key.size()), id};
        arena_.append(key);
        ++size_;
        return true;
      }
      if (s.hash == hash && s.len == key.size() &&
          std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0) {
        if (overwrite) s.id = id;
        return false;
      }
    }
  }
  void Rehash(size_t capacity) {
    Slots old;
    old.swap(slots_);
    slots_.assign(capacity, Slot{0, 0, 0, -1});
    mask_ = capacity - 1;
    for (const Slot& s : old) {
      if (s.id < 0) continue;
      size_t i = s.hash & mask_;
      while (slots_[i].id >= 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  Slots slots_;
  std::string arena_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// What merging the pair (left, right) gives: the merge's priority (lower
// merges first) and the id of the merged token.
struct MergeRule {
  int32_t rank;
  int32_t id;
};

// Maps (left id, right id) to a MergeRule.
class PairMap {
 public:
  PairMap() { Rehash(16); }

  // Inserts or overwrites (tokenizers keeps the last of duplicate merges).
  void Insert(int left, int right, MergeRule rule) {
    if (InDense(left, right)) dense_[Dense(left, right)] = rule;
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.size() * 2);
    uint64_t key = Key(left, right);
    for (size_t i = Mix(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == kEmpty) {
        s = Slot{key, rule};
        ++size_;
        return;
      }
      if (s.key == key) {
        s.rule = rule;
        return;
      }
    }
  }
  // The rule for (left, right), or nullptr.
  const MergeRule* Find(int left, int right) const {
    if (InDense(left, right)) {
      const MergeRule& r = dense_[Dense(left, right)];
      return r.rank >= 0 ? &r : nullptr;
    }
    uint64_t key = Key(left, right);
    for (size_t i = Mix(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.rule;
      if (s.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }
  // Starts loading the slot where (left, right) would go, so that filling the
  // table a batch at a time does not wait on memory one pair at a time.
  void Prefetch(int left, int right) const {
    __builtin_prefetch(&slots_[Mix(Key(left, right)) & mask_]);
  }
  // Makes room for `n` pairs without rehashing.
  void Reserve(size_t n) {
    size_t capacity = slots_.size();
    while (capacity < 2 * n) capacity *= 2;
    if (capacity > slots_.size()) Rehash(capacity);
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // Ids are non-negative.
  // Pairs of ids below kDense are also kept in a dense table, which stays in
  // the CPU's cache where the hash table cannot: models number their byte
  // tokens first, and a merge's first round is all pairs of bytes (512 KiB).
  static constexpr uint32_t kDense = 256;
  static bool InDense(int left, int right) {
    return static_cast<uint32_t>(left) < kDense && static_cast<uint32_t>(right) < kDense;
  }
  static size_t Dense(int left, int right) {
    return static_cast<size_t>(left) * kDense + static_cast<size_t>(right);
  }
  std::vector<MergeRule> dense_ = std::vector<MergeRule>(kDense * kDense, MergeRule{-1, -1});
  struct Slot {
    uint64_t key;
    MergeRule rule;
  };
  // Megabytes read at random: on huge pages where the kernel gives them.
  using Slots = std::vector<Slot, HugePageAllocator<Slot>>;
  static uint64_t Key(int left, int right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  static uint64_t Mix(uint64_t x) {
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ULL;
    return x ^ (x >> 29);
  }
  void Rehash(size_t capacity) {
    Slots old;
    old.swap(slots_);
    slots_.assign(capacity, Slot{kEmpty, {0, 0}});
    mask_ = capacity - 1;
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      size_t i = Mix(s.key) & mask_;
      while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  Slots slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_TOKENIZER_FLAT_MAP_H_
