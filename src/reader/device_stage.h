// DeviceStage: the CUDA half of a Loader whose device is "cuda:N" — the
// page-locked memory of the host ring, the device memory and events of the
// device ring, and the copy of one batch between them. The loader's copy
// thread drives it; everything about order, generations and the cursor stays
// in the loader. Implemented in src/reader/cuda/device_stage.cc (CUDA builds) or
// src/reader/cuda/no_cuda.cc (Create fails, saying why).
//
// Thread-safety: Copy() is called from the copy thread only; UseOn() and
// Released() from any thread, for distinct slots or under the caller's
// ordering (a slot is released once per hand-out).
#ifndef TOKPACK_SRC_READER_DEVICE_STAGE_H_
#define TOKPACK_SRC_READER_DEVICE_STAGE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "reader/slot_ring.h"
#include "tokpack/loader.h"
#include "tokpack/status.h"

namespace tokpack {

class DeviceStage {
 public:
  // A stage for `o.device` with `o.device_prefetch` device slots for batches
  // of `o` whose compact tokens are `stored_item` bytes each; `masked`: some
  // source has loss masks, so host batches carry their label bits.
  // FailedPrecondition without CUDA or without that device (saying why);
  // ResourceExhausted if device memory runs out.
  static StatusOr<std::shared_ptr<DeviceStage>> Create(const LoaderOptions& o, size_t stored_item,
                                                       bool masked);
  virtual ~DeviceStage() = default;

  // Page-locked host memory for the host ring (null if refused) and its release.
  virtual void* AllocateHost(size_t bytes) = 0;
  virtual void FreeHost(void* p) = 0;
  // The device arrays of device slot `slot` (fixed for the stage's life).
  virtual BatchArrays SlotArrays(size_t slot) const = 0;
  // Copies the host batch `host` (compact windows [rows, L + 1], the
  // boundary arrays, and the label bits [rows, L] when host.loss_mask is
  // set) into device slot `slot` and widens it there, labels -100 where a
  // bit is 0, after the slot's previous users are done; returns once `host`
  // may be reused. The slot's loss_mask (with o.loss_mask) is the bits.
  virtual Status Copy(const BatchArrays& host, size_t slot) = 0;
  // See Batch::UseOn.
  virtual Status UseOn(size_t slot, void* stream) = 0;
  // The batch in `slot` was released: the next Copy into it waits for the
  // streams registered by UseOn since the last Copy.
  virtual void Released(size_t slot) = 0;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_DEVICE_STAGE_H_
