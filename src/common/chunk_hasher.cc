#include "common/chunk_hasher.h"

#include <xxhash.h>

#include <algorithm>

namespace tokpack {

struct ChunkHasher::State {
  XXH3_state_t* xxh = XXH3_createState();
  ~State() { XXH3_freeState(xxh); }
};

ChunkHasher::ChunkHasher(uint64_t chunk_bytes)
    : chunk_bytes_(chunk_bytes), state_(std::make_unique<State>()) {
  XXH3_64bits_reset(state_->xxh);
}

ChunkHasher::~ChunkHasher() = default;

void ChunkHasher::Update(std::string_view data) {
  while (!data.empty()) {
    uint64_t take = std::min<uint64_t>(data.size(), chunk_bytes_ - in_chunk_);
    XXH3_64bits_update(state_->xxh, data.data(), take);
    in_chunk_ += take;
    digest_.bytes += take;
    data.remove_prefix(take);
    if (in_chunk_ == chunk_bytes_) {
      digest_.chunk_xxh3.push_back(XXH3_64bits_digest(state_->xxh));
      XXH3_64bits_reset(state_->xxh);
      in_chunk_ = 0;
    }
  }
}

FileDigest ChunkHasher::Finish() {
  if (in_chunk_ > 0) {
    digest_.chunk_xxh3.push_back(XXH3_64bits_digest(state_->xxh));
    XXH3_64bits_reset(state_->xxh);
    in_chunk_ = 0;
  }
  FileDigest out = std::move(digest_);
  digest_ = FileDigest();
  return out;
}

uint64_t Xxh3(std::string_view data) { return XXH3_64bits(data.data(), data.size()); }

}  // namespace tokpack
