// ChunkHasher: streams bytes and records an xxh3-64 checksum for every
// fixed-size chunk, as manifest.json stores them. Not thread-safe.
#ifndef TOKPACK_SRC_COMMON_CHUNK_HASHER_H_
#define TOKPACK_SRC_COMMON_CHUNK_HASHER_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "tokpack/manifest.h"

namespace tokpack {

class ChunkHasher {
 public:
  explicit ChunkHasher(uint64_t chunk_bytes);
  ~ChunkHasher();
  ChunkHasher(const ChunkHasher&) = delete;
  ChunkHasher& operator=(const ChunkHasher&) = delete;

  void Update(std::string_view data);

  // Closes the last partial chunk and returns the digest of all bytes seen.
  FileDigest Finish();

 private:
  struct State;
  uint64_t chunk_bytes_;
  uint64_t in_chunk_ = 0;
  FileDigest digest_;
  std::unique_ptr<State> state_;
};

// XXH3_64bits of a buffer (seed 0).
uint64_t Xxh3(std::string_view data);

}  // namespace tokpack

#endif  // TOKPACK_SRC_COMMON_CHUNK_HASHER_H_
