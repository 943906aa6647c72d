// WindowOrder: the sample order of shuffle="window", which reads each fetch
// chunk of a source in one window per epoch, so a node streaming data far
// larger than its cache fetches each byte about once per epoch.
//
// Samples are the loader's (sample i = stream tokens [i*L, i*L + L]). A
// *unit* is G consecutive fetch chunks of one shard (G = unit_chunks(): the
// fewest whole chunks, of whole tokens, holding at least kUnitSamples
// samples), U tokens. Shard k (first stream token F_k, T_k tokens) has
// floor(T_k / U) full units; unit j covers [F_k + jU, F_k + (j+1)U). Every
// unit serves exactly S = floor(U / L) - 1 samples: the first S samples lying
// wholly inside it (at least S do, whatever the phase of the sample grid).
// The tokens after a shard's last full unit are its tail; the samples wholly
// inside tails, in stream order, form the tail pool. Samples crossing a unit
// or tail boundary (and a unit's (S+1)-th sample, when it has one) are not
// served: left_out() counts them.
//
// Invariant: for each epoch e, Sample(e*n + i) for i in [0, n) is a bijection
// of [0, n) onto the served samples (n = size()). Positions [0, M*S) (M: all
// full units) are the unit windows: the units permuted by a Feistel
// permutation keyed by the epoch, window w = permuted units [wW, wW + W), its
// positions shuffled among themselves; so each unit's samples all lie in one
// window, and a window reads only its W units. Positions [M*S, n) are the
// tail pool: the tails of shards [wW, wW + W) form tail window w, its
// positions shuffled among themselves (a tail is under one unit, so a tail
// window reads at most W units' bytes, like a unit window). Deterministic in (seed, stream, epoch),
// independent of ranks. Memory O(shards); Sample() is O(log shards). Immutable; thread-safe.
#ifndef TOKPACK_SRC_READER_WINDOW_ORDER_H_
#define TOKPACK_SRC_READER_WINDOW_ORDER_H_

#include <cstdint>
#include <vector>

namespace tokpack {

class WindowOrder {
 public:
  // Samples a unit holds at least: 1 in 256..1024 samples is left out at
  // unit boundaries, and a window's W*S positions shuffle well.
  static constexpr uint64_t kUnitSamples = 256;

  // G for chunks of `chunk_bytes` (>= 1), tokens of `item` bytes, samples of
  // `seq_len` (>= 1) tokens: the smallest multiple of item / gcd(chunk_bytes,
  // item) (so a unit holds whole tokens) with floor(G * chunk_bytes / item /
  // seq_len) - 1 >= kUnitSamples.
  static uint64_t UnitChunks(uint64_t chunk_bytes, uint64_t item, uint64_t seq_len);

  // `shard_tokens`: the tokens of each shard, in stream order. W =
  // max(1, window_units). `stream` distinguishes sources sharing a seed.
  WindowOrder(const std::vector<uint64_t>& shard_tokens, uint64_t chunk_bytes, uint64_t item,
              uint64_t seq_len, uint64_t window_units, uint64_t seed, uint64_t stream);

  // Positions per epoch; may be 0 (no sample lies wholly inside a unit or tail).
  uint64_t size() const { return n_; }
  // The samples of the stream (floor((T - 1) / L)) that are never served.
  uint64_t left_out() const { return left_out_; }
  uint64_t unit_chunks() const { return unit_chunks_; }
  uint64_t unit_tokens() const { return unit_tokens_; }
  uint64_t window_units() const { return window_; }

  // The sample drawn k-th: epoch k / size(), position k % size(). size() > 0.
  uint64_t Sample(uint64_t k) const;

 private:
  uint64_t seq_len_;
  uint64_t unit_chunks_;
  uint64_t unit_tokens_;   // U.
  uint64_t unit_samples_;  // S.
  uint64_t window_;        // W.
  uint64_t seed_;
  uint64_t stream_;
  uint64_t units_ = 0;  // M.
  uint64_t n_ = 0;
  uint64_t left_out_ = 0;
  // Per shard: the full units and tail-pool samples up to and including it,
  // its first stream token, and the first sample wholly inside its tail.
  std::vector<uint64_t> unit_ends_;
  std::vector<uint64_t> tail_ends_;
  std::vector<uint64_t> first_token_;
  std::vector<uint64_t> tail_first_sample_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_WINDOW_ORDER_H_
