// ChunkHasher: streams bytes and records an xxh3-64 checksum for every
// fixed-size chunk, as manifest.json stores them. ChunkVerifier: streams a
// file's bytes and checks them against those checksums. Not thread-safe.
#ifndef TOKPACK_SRC_BASE_CHUNK_HASHER_H_
#define TOKPACK_SRC_BASE_CHUNK_HASHER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tokpack/file_digest.h"
#include "tokpack/status.h"

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

// Compares each chunk of a file, streamed front to back, with its checksum
// in the file's manifest entry as soon as the chunk's last byte arrives (the
// last chunk ends at want.bytes), so that a caller stops before it uses, or
// sends, the bytes after a damaged chunk.
class ChunkVerifier {
 public:
  // `name` names the file in errors; `want`, its manifest entry, must
  // outlive the verifier and hold one checksum per chunk (Manifest::Parse
  // checked that).
  ChunkVerifier(std::string name, const FileDigest& want, uint64_t chunk_bytes);
  ~ChunkVerifier();
  ChunkVerifier(const ChunkVerifier&) = delete;
  ChunkVerifier& operator=(const ChunkVerifier&) = delete;

  // DataLoss naming the file, the first chunk that differs (its byte range)
  // and both checksums; or, when `data` runs past want.bytes, the sizes.
  Status Update(std::string_view data);
  // DataLoss when fewer than want.bytes bytes came.
  Status Finish() const;

 private:
  struct State;
  std::string name_;
  const FileDigest& want_;
  uint64_t chunk_bytes_;
  uint64_t seen_ = 0;
  std::unique_ptr<State> state_;
};

// XXH3_64bits of a buffer (seed 0).
uint64_t Xxh3(std::string_view data);

}  // namespace tokpack

#endif  // TOKPACK_SRC_BASE_CHUNK_HASHER_H_
