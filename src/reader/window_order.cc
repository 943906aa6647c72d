#include "reader/window_order.h"

#include <algorithm>
#include <numeric>

#include "reader/permutation.h"

namespace tokpack {
namespace {

// Tags keeping the epoch's sub-keys apart.
constexpr uint64_t kUnitTag = 0x0417;
constexpr uint64_t kWindowTag = 0x3d3d;
constexpr uint64_t kTailTag = 0x7a11;

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

// Samples wholly inside stream tokens [a, b) at sequence length L.
uint64_t SamplesInside(uint64_t a, uint64_t b, uint64_t L) {
  const uint64_t first = CeilDiv(a, L);
  if (first * L + L + 1 > b) return 0;
  return (b - L - 1 - first * L) / L + 1;
}

// The index of the first entry of the running totals `ends` above `x`.
size_t Find(const std::vector<uint64_t>& ends, uint64_t x) {
  return std::upper_bound(ends.begin(), ends.end(), x) - ends.begin();
}

}  // namespace

uint64_t WindowOrder::UnitChunks(uint64_t chunk_bytes, uint64_t item, uint64_t seq_len) {
  const uint64_t step = item / std::gcd(chunk_bytes, item);
  const uint64_t need = (kUnitSamples + 1) * seq_len * item;
  return CeilDiv(CeilDiv(need, chunk_bytes), step) * step;
}

WindowOrder::WindowOrder(const std::vector<ShardRange>& shards, uint64_t chunk_bytes, uint64_t item,
                         uint64_t seq_len, uint64_t window_units, uint64_t seed, uint64_t stream)
    : seq_len_(seq_len),
      unit_chunks_(UnitChunks(chunk_bytes, item, seq_len)),
      unit_tokens_(unit_chunks_ * chunk_bytes / item),
      unit_samples_(unit_tokens_ / seq_len - 1),
      window_(std::max<uint64_t>(1, window_units)),
      seed_(seed),
      stream_(stream) {
  uint64_t first = 0, tail = 0;  // In the stream.
  const auto add_piece = [&](uint64_t begin, uint64_t end) {
    tail += SamplesInside(begin, end, seq_len);
    tail_ends_.push_back(tail);
    tail_first_sample_.push_back(CeilDiv(begin, seq_len));
  };
  for (const ShardRange& r : shards) {
    // In tokens from the range's start: the head, then the units.
    const uint64_t head =
        std::min(CeilDiv(r.first, unit_tokens_) * unit_tokens_ - r.first, r.tokens);
    const uint64_t units = (r.tokens - head) / unit_tokens_;
    if (head > 0) add_piece(first, first + head);
    units_ += units;
    unit_ends_.push_back(units_);
    first_unit_token_.push_back(first + head);
    add_piece(first + head + units * unit_tokens_, first + r.tokens);
    first += r.tokens;
  }
  n_ = units_ * unit_samples_ + tail;
  left_out_ = (first > 0 ? (first - 1) / seq_len : 0) - n_;
}

uint64_t WindowOrder::Sample(uint64_t k) const {
  const uint64_t epoch = k / n_, i = k % n_;
  const uint64_t key = DeriveKey(seed_, stream_, epoch);
  const uint64_t span = window_ * unit_samples_;
  const uint64_t body = units_ * unit_samples_;
  if (i < body) {
    const uint64_t w = i / span;
    const uint64_t first_slot = w * window_;
    const uint64_t units = std::min(window_, units_ - first_slot);
    const uint64_t t = FeistelPermutation(units * unit_samples_, DeriveKey(key, w, kWindowTag))
                           .Apply(i - w * span);
    const uint64_t unit =
        FeistelPermutation(units_, Mix64(key ^ kUnitTag)).Apply(first_slot + t / unit_samples_);
    const size_t shard = Find(unit_ends_, unit);
    const uint64_t j = unit - (shard > 0 ? unit_ends_[shard - 1] : 0);
    return CeilDiv(first_unit_token_[shard] + j * unit_tokens_, seq_len_) + t % unit_samples_;
  }
  // Tail window w: tail pieces [wW, wW + W), each under one unit, so a tail
  // window reads no more than a unit window does.
  const uint64_t q = i - body;
  const uint64_t w = Find(tail_ends_, q) / window_;
  const uint64_t lo = w == 0 ? 0 : tail_ends_[w * window_ - 1];
  const uint64_t hi = tail_ends_[std::min<uint64_t>((w + 1) * window_, tail_ends_.size()) - 1];
  const uint64_t t = lo + FeistelPermutation(hi - lo, DeriveKey(key, w, kTailTag)).Apply(q - lo);
  const size_t piece = Find(tail_ends_, t);
  return tail_first_sample_[piece] + t - (piece > 0 ? tail_ends_[piece - 1] : 0);
}

}  // namespace tokpack
