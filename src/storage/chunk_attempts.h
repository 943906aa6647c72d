// ChunkAttempts: the HTTP attempts at each chunk of one remote dataset,
// shared by the chunk's prefetches and reads, so that a stalled server costs
// a chunk one round of StorageOptions::http_attempts requests and a read at
// most one round of waiting, not a round for each hint and each read of it
// (a chunk is hinted at every step of the lookahead that needs it).
//
// - A prefetch continues the chunk's attempts: after a failed round none are
//   left, so hints for the chunk make no request until a read comes.
// - A read that waited for a fetch of the chunk under way (Prefetcher::Claim)
//   continues with the attempts that fetch left: when it failed, the read
//   fails with its error at once.
// - Any other read starts a round of its own: a failure it did not wait for
//   is old news, and the server may be back.
// - A chunk fetched is forgotten.
//
// Callers hold the chunk's claim in the Prefetcher (a running task's or a
// reader's), so that one fetch of a chunk at a time spends its attempts.
// Thread-safe.
#ifndef TOKPACK_SRC_STORAGE_CHUNK_ATTEMPTS_H_
#define TOKPACK_SRC_STORAGE_CHUNK_ATTEMPTS_H_

#include <mutex>
#include <string>
#include <unordered_map>

#include "storage/http_store.h"

namespace tokpack {

class ChunkAttempts {
 public:
  explicit ChunkAttempts(int max_attempts) : max_attempts_(max_attempts) {}

  // The attempts a fetch of chunk `key` may make: a round of its own when
  // `fresh` (a read that waited for no other fetch) or none were spent, else
  // what the last fetch left.
  HttpStore::Attempts Begin(const std::string& key, bool fresh);
  // Records what the fetch left, or forgets the chunk once `fetched`.
  void End(const std::string& key, const HttpStore::Attempts& attempts, bool fetched);

 private:
  const int max_attempts_;
  std::mutex mu_;
  // Chunks whose last fetch failed, and what it left (usually nothing).
  std::unordered_map<std::string, HttpStore::Attempts> failed_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_CHUNK_ATTEMPTS_H_
