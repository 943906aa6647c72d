#include "reader/verify_chunks.h"

#include <algorithm>
#include <string>

#include "base/chunk_hasher.h"

namespace tokpack {

Status VerifyChunks(const ByteSource& file, const FileDigest& want, uint64_t chunk_bytes,
                    const CancelFlag& cancel) {
  ChunkVerifier verifier(file.name(), want, chunk_bytes);
  for (uint64_t offset = 0; offset < file.size(); offset += chunk_bytes) {
    if (cancel != nullptr && cancel->load()) {
      return CancelledError(file.name() + ": verify_on_open cancelled");
    }
    TOKPACK_RETURN_IF_ERROR(verifier.Update(
        std::string_view(file.data() + offset, std::min(chunk_bytes, file.size() - offset))));
  }
  return verifier.Finish();
}

}  // namespace tokpack
