// WindowOrder: the sample order of shuffle="window", which reads each fetch
// chunk of a source in one window per epoch, so a node streaming data far
// larger than its cache fetches each byte about once per epoch.
//
// Samples are the loader's (sample i = stream tokens [i*L, i*L + L]). A
// *unit* is G consecutive fetch chunks of one shard's .bin (G =
// unit_chunks(): the fewest whole chunks, of whole tokens, holding at least
// kUnitSamples samples), U tokens, on the .bin's grid of units (its tokens
// [mU, (m+1)U)). Shard k's part of the stream is tokens [a_k, a_k + T_k) of
// its .bin (a_k = 0 but for a split), from stream token F_k. Its *head*,
// [a_k, h_k) with h_k = min(ceil(a_k / U) * U, a_k + T_k), is a tail piece
// when not empty; then come floor((a_k + T_k - h_k) / U) full units, unit j
// covering .bin tokens [h_k + jU, h_k + (j+1)U); the tokens after the last
// are the shard's tail piece (always one, maybe empty). Every piece lies in
// one cell of the grid, so it reads no more chunks than a unit. Every unit
// serves exactly S = floor(U / L) - 1 samples: the first S samples lying
// wholly inside it (at least S do, whatever the phase of the sample grid).
// The samples wholly inside tail pieces, in stream order, form the tail
// pool. Samples crossing a unit or piece boundary (and a unit's (S+1)-th
// sample, when it has one) are not served: left_out() counts them.
//
// Invariant: for each epoch e, Sample(e*n + i) for i in [0, n) is a bijection
// of [0, n) onto the served samples (n = size()). Positions [0, M*S) (M: all
// full units) are the unit windows: the units permuted by a Feistel
// permutation keyed by the epoch, window w = permuted units [wW, wW + W), its
// positions shuffled among themselves; so each unit's samples all lie in one
// window, and a window reads only its W units. Positions [M*S, n) are the
// tail pool: tail pieces [wW, wW + W) (in stream order) form tail window w,
// its positions shuffled among themselves (a piece is under one unit, so a
// tail window reads at most W units' bytes, like a unit window). Without
// heads (every a_k = 0) the pieces are the shards' tails, one per shard.
// Deterministic in (seed, stream, epoch), independent of ranks. Memory
// O(shards); Sample() is O(log shards). Immutable; thread-safe.
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

  // A shard's part of the stream: `tokens` tokens from .bin token `first`.
  struct ShardRange {
    uint64_t first = 0;
    uint64_t tokens = 0;
  };

  // `shards`: each shard's range, in stream order. W = max(1,
  // window_units). `stream` distinguishes sources sharing a seed.
  WindowOrder(const std::vector<ShardRange>& shards, uint64_t chunk_bytes, uint64_t item,
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
  // Per shard: the full units up to and including it, and the stream token
  // of its first unit. Per tail piece: the tail-pool samples up to and
  // including it, and its first sample.
  std::vector<uint64_t> unit_ends_;
  std::vector<uint64_t> first_unit_token_;
  std::vector<uint64_t> tail_ends_;
  std::vector<uint64_t> tail_first_sample_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_WINDOW_ORDER_H_
