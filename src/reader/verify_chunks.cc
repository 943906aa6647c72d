#include "reader/verify_chunks.h"

#include <algorithm>
#include <string>

#include "common/chunk_hasher.h"

namespace tokpack {

Status VerifyChunks(const ByteSource& file, const FileDigest& want, uint64_t chunk_bytes,
                    const std::atomic<bool>* cancel) {
  ChunkHasher hasher(chunk_bytes);
  for (uint64_t offset = 0; offset < file.size(); offset += chunk_bytes) {
    if (cancel != nullptr && cancel->load()) {
      return CancelledError(file.name() + ": verify_on_open cancelled");
    }
    hasher.Update(
        std::string_view(file.data() + offset, std::min(chunk_bytes, file.size() - offset)));
  }
  const FileDigest got = hasher.Finish();
  for (size_t k = 0; k < got.chunk_xxh3.size() && k < want.chunk_xxh3.size(); ++k) {
    if (got.chunk_xxh3[k] != want.chunk_xxh3[k]) {
      const uint64_t offset = k * chunk_bytes;
      return DataLossError(
          file.name() + ": chunk " + std::to_string(k) + " (bytes " + std::to_string(offset) +
          ".." + std::to_string(offset + std::min(chunk_bytes, want.bytes - offset)) +
          ") has checksum " + HashToHex(got.chunk_xxh3[k]) + ", manifest.json says " +
          HashToHex(want.chunk_xxh3[k]) + ": the file is damaged");
    }
  }
  return Status::Ok();
}

}  // namespace tokpack
