// Writes small tokpack datasets whose token at stream offset t is
// TokenAt(t, salt), and, for masked ones, whose loss bit is LossAt(t, salt),
// so tests can predict every window and label exactly.
#ifndef TOKPACK_TESTS_READER_SYNTHETIC_DATASET_H_
#define TOKPACK_TESTS_READER_SYNTHETIC_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "format/shard_writer.h"
#include "tokpack/manifest.h"

namespace tokpack::testing {

inline int64_t TokenAt(uint64_t t, uint64_t salt) {
  return static_cast<int64_t>((t * 7 + salt) % 60000);
}

// Runs of 6 tokens that carry loss and 4 that do not, straddling the mask's
// bytes (as a conversation's turns do).
inline bool LossAt(uint64_t t, uint64_t salt) { return (t + salt) % 10 < 6; }

// Documents of the given lengths, shards of at most `shard_tokens` tokens,
// checksummed in chunks of `chunk_bytes`; with `masked`, loss masks of LossAt.
inline Manifest WriteSyntheticDataset(const std::string& dir, const std::vector<uint32_t>& docs,
                                      uint64_t salt, uint64_t shard_tokens = 1000,
                                      TokenDtype dtype = TokenDtype::kUInt16,
                                      uint64_t chunk_bytes = 256, bool masked = false) {
  CreateDirs(dir).IgnoreError();
  ShardWriter w(PosixFileSystem(), dir, dtype, chunk_bytes, shard_tokens, masked);
  uint64_t t = 0;
  for (uint32_t len : docs) {
    std::string bytes, loss;
    for (uint32_t i = 0; i < len; ++i, ++t) {
      if (masked) loss.push_back(LossAt(t, salt) ? 1 : 0);
      const int64_t v = TokenAt(t, salt);
      if (dtype == TokenDtype::kUInt16) {
        uint16_t u = static_cast<uint16_t>(v);
        bytes.append(reinterpret_cast<const char*>(&u), 2);
      } else {
        int32_t u = static_cast<int32_t>(v);
        bytes.append(reinterpret_cast<const char*>(&u), 4);
      }
    }
    if (!w.AddDocument(bytes, len, loss).ok()) std::abort();
  }
  Manifest m;
  m.dtype = dtype;
  m.chunk_bytes = chunk_bytes;
  m.shards = *w.Finish();
  m.provenance.kind = "build";
  m.provenance.version = "test";
  m.tokenizer.vocab_size = 60000;
  if (!m.Save(dir).ok()) std::abort();
  return m;
}

// WriteSyntheticDataset with loss masks.
inline Manifest WriteMaskedSyntheticDataset(const std::string& dir,
                                            const std::vector<uint32_t>& docs, uint64_t salt,
                                            uint64_t shard_tokens = 1000,
                                            TokenDtype dtype = TokenDtype::kUInt16) {
  return WriteSyntheticDataset(dir, docs, salt, shard_tokens, dtype, 256, true);
}

// Document lengths 1..max cycling, `n` documents.
inline std::vector<uint32_t> CyclingLengths(int n, uint32_t max) {
  std::vector<uint32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(1 + static_cast<uint32_t>(i * 37 % max));
  return out;
}

}  // namespace tokpack::testing

#endif  // TOKPACK_TESTS_READER_SYNTHETIC_DATASET_H_
