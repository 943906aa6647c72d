// FileDigest: a file's size and the xxh3-64 checksum of each fixed-size
// chunk, as manifest.json records them for every shard file and as the
// storage layer checks every fetched chunk against them. A plain value type.
#ifndef TOKPACK_FILE_DIGEST_H_
#define TOKPACK_FILE_DIGEST_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tokpack {

// Size and per-chunk checksums of one file. Chunk k covers bytes
// [k*chunk_bytes, min((k+1)*chunk_bytes, bytes)); an empty file has no chunks.
struct FileDigest {
  uint64_t bytes = 0;
  std::vector<uint64_t> chunk_xxh3;  // XXH3_64bits (seed 0) of each chunk.

  bool operator==(const FileDigest& o) const {
    return bytes == o.bytes && chunk_xxh3 == o.chunk_xxh3;
  }
};

// A checksum as manifest.json writes it: 16 lowercase hex digits.
std::string HashToHex(uint64_t h);

}  // namespace tokpack

#endif  // TOKPACK_FILE_DIGEST_H_
