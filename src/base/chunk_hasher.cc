#include "base/chunk_hasher.h"

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace tokpack {

std::string HashToHex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, h);
  return buf;
}

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

struct ChunkVerifier::State {
  XXH3_state_t* xxh = XXH3_createState();
  ~State() { XXH3_freeState(xxh); }
};

ChunkVerifier::ChunkVerifier(std::string name, const FileDigest& want, uint64_t chunk_bytes)
    : name_(std::move(name)),
      want_(want),
      chunk_bytes_(chunk_bytes),
      state_(std::make_unique<State>()) {
  XXH3_64bits_reset(state_->xxh);
}

ChunkVerifier::~ChunkVerifier() = default;

Status ChunkVerifier::Update(std::string_view data) {
  if (data.size() > want_.bytes - seen_) {
    return DataLossError(name_ + ": more than the " + std::to_string(want_.bytes) +
                         " bytes manifest.json records: the file changed or is damaged");
  }
  while (!data.empty()) {
    const uint64_t k = seen_ / chunk_bytes_;
    if (k >= want_.chunk_xxh3.size()) {
      return DataLossError(name_ + ": manifest.json records " +
                           std::to_string(want_.chunk_xxh3.size()) + " checksums for " +
                           std::to_string(want_.bytes) + " bytes");
    }
    const uint64_t begin = k * chunk_bytes_;
    const uint64_t end = std::min(want_.bytes, begin + chunk_bytes_);
    const uint64_t take = std::min<uint64_t>(data.size(), end - seen_);
    XXH3_64bits_update(state_->xxh, data.data(), take);
    seen_ += take;
    data.remove_prefix(take);
    if (seen_ < end) break;
    const uint64_t got = XXH3_64bits_digest(state_->xxh);
    XXH3_64bits_reset(state_->xxh);
    if (got != want_.chunk_xxh3[k]) {
      return DataLossError(name_ + ": chunk " + std::to_string(k) + " (bytes " +
                           std::to_string(begin) + ".." + std::to_string(end) + ") has checksum " +
                           HashToHex(got) + ", manifest.json says " +
                           HashToHex(want_.chunk_xxh3[k]) + ": the file is damaged");
    }
  }
  return Status::Ok();
}

Status ChunkVerifier::Finish() const {
  if (seen_ == want_.bytes) return Status::Ok();
  return DataLossError(name_ + ": " + std::to_string(seen_) + " bytes, manifest.json records " +
                       std::to_string(want_.bytes) + ": the file changed or is damaged");
}

uint64_t Xxh3(std::string_view data) { return XXH3_64bits(data.data(), data.size()); }

}  // namespace tokpack
