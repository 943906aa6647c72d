// SampleOrder: which sample of one source is drawn k-th. Draw k falls in
// epoch e = k / n at position i = k % n; the sample is perm_e(i), where perm_e
// is the identity (no shuffle), a keyed Feistel permutation of [0, n) (full
// shuffle), or a block shuffle: the n / block full blocks are permuted, then
// samples are shuffled within each window of `window` consecutive blocks of
// that order; the n % block tail samples come last, shuffled among
// themselves; or the window order of shuffle="window" (window_order.h),
// whose n leaves out the samples crossing unit boundaries. Immutable;
// thread-safe.
#ifndef TOKPACK_SRC_READER_SAMPLE_ORDER_H_
#define TOKPACK_SRC_READER_SAMPLE_ORDER_H_

#include <cstdint>
#include <memory>

#include "reader/window_order.h"
#include "tokpack/loader.h"

namespace tokpack {

class SampleOrder {
 public:
  // n >= 1 samples; `stream` distinguishes sources sharing a seed. `mode`
  // is kNone, kFull or kBlock.
  SampleOrder(uint64_t n, ShuffleMode mode, uint64_t seed, uint64_t stream, uint64_t block,
              uint64_t window);
  // shuffle="window": n = order->size() >= 1.
  explicit SampleOrder(std::shared_ptr<const WindowOrder> order);

  uint64_t Sample(uint64_t k) const;
  uint64_t size() const { return n_; }

 private:
  uint64_t BlockSample(uint64_t epoch_key, uint64_t i) const;

  uint64_t n_;
  ShuffleMode mode_;
  uint64_t seed_;
  uint64_t stream_;
  uint64_t block_;
  uint64_t window_;
  std::shared_ptr<const WindowOrder> window_order_;  // kWindow only.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_SAMPLE_ORDER_H_
