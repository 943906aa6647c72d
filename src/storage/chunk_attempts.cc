#include "storage/chunk_attempts.h"

namespace tokpack {

HttpStore::Attempts ChunkAttempts::Begin(const std::string& key, bool fresh) {
  const HttpStore::Attempts round{max_attempts_, 0, ""};
  if (fresh) return round;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = failed_.find(key);
  return it == failed_.end() ? round : it->second;
}

void ChunkAttempts::End(const std::string& key, const HttpStore::Attempts& attempts, bool fetched) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fetched) {
    failed_.erase(key);
  } else {
    failed_[key] = attempts;
  }
}

}  // namespace tokpack
