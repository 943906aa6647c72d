#include "reader/sample_order.h"

#include <algorithm>
#include <utility>

#include "reader/permutation.h"

namespace tokpack {

SampleOrder::SampleOrder(uint64_t n, ShuffleMode mode, uint64_t seed, uint64_t stream,
                         uint64_t block, uint64_t window)
    : n_(n),
      mode_(mode),
      seed_(seed),
      stream_(stream),
      block_(std::max<uint64_t>(1, block)),
      window_(std::max<uint64_t>(1, window)) {}

SampleOrder::SampleOrder(std::shared_ptr<const WindowOrder> order)
    : n_(order->size()),
      mode_(ShuffleMode::kWindow),
      seed_(0),
      stream_(0),
      block_(1),
      window_(1),
      window_order_(std::move(order)) {}

uint64_t SampleOrder::Sample(uint64_t k) const {
  if (mode_ == ShuffleMode::kWindow) return window_order_->Sample(k);  // Keys its own epochs.
  const uint64_t epoch = k / n_, i = k % n_;
  const uint64_t key = DeriveKey(seed_, stream_, epoch);
  switch (mode_) {
    case ShuffleMode::kNone:
      return i;
    case ShuffleMode::kAuto:  // The loader resolves auto before it makes orders.
    case ShuffleMode::kFull:
      return FeistelPermutation(n_, key).Apply(i);
    case ShuffleMode::kBlock:
      return BlockSample(key, i);
    case ShuffleMode::kWindow:  // Returned above.
      break;
  }
  return i;
}

uint64_t SampleOrder::BlockSample(uint64_t key, uint64_t i) const {
  const uint64_t blocks = n_ / block_;
  const uint64_t body = blocks * block_;
  if (i >= body) {
    const uint64_t tail = n_ - body;
    return body + FeistelPermutation(tail, Mix64(key ^ 0x7a11)).Apply(i - body);
  }
  const uint64_t span = window_ * block_;
  const uint64_t w = i / span;
  const uint64_t first_block = w * window_;
  const uint64_t window_blocks = std::min(window_, blocks - first_block);
  const uint64_t t =
      FeistelPermutation(window_blocks * block_, DeriveKey(key, w, 0x3d)).Apply(i - w * span);
  const uint64_t block =
      FeistelPermutation(blocks, Mix64(key ^ 0xb10c)).Apply(first_block + t / block_);
  return block * block_ + t % block_;
}

}  // namespace tokpack
