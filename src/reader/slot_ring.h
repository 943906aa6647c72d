// The loader's rings of batch buffers. One SlotRing type serves both stages
// of a Loader: the host ring the assembler threads fill, and (with a CUDA
// device) the device ring the copy stage fills from it. Internal to the
// loader (loader.cc).
//
// Invariant: a slot goes kFree -> kFilling (claimed by a producer for local
// step `seq` of `generation`) -> kReady -> kHeld (handed to the consumer) ->
// kFree. A consumer takes exactly the slot of the step it wants, so any
// free slot can take the next step and a batch held for long blocks only its
// own buffer. LoadState starts a new generation: ready slots are dropped and
// slots still filling for the old one are dropped when they finish.
//
// Wake-ups: producers sleep while no slot is free and are woken once
// `watermark` slots are free, or fewer than `watermark` batches are ready or
// filling, or the consumer waits; so a consumer that runs behind does not
// cost a wake-up per batch. A consumer is woken only when it waits.
#ifndef TOKPACK_SRC_READER_SLOT_RING_H_
#define TOKPACK_SRC_READER_SLOT_RING_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "reader/phase_schedule.h"
#include "tokpack/loader.h"

namespace tokpack {

// Where a batch's arrays lie (host or device memory).
struct BatchArrays {
  char* inputs = nullptr;   // On a host ring feeding a device: the compact windows.
  char* targets = nullptr;  // Null on a host ring feeding a device.
  int32_t* position_ids = nullptr;
  int32_t* cu_seqlens = nullptr;
  int64_t num_cu = 0;
  // LoaderOptions::loss_mask's array; on a host ring feeding a device, the
  // rows' label bits whenever a source has masks (the device applies them).
  uint8_t* loss_mask = nullptr;
};

// What a step's batch carries besides its arrays: the cursor after it.
struct StepInfo {
  int64_t global_step = 0;
  uint64_t position_after = 0;
  MixtureState state_after;
  // Per row: its source and its labels that carry loss.
  std::vector<std::pair<uint32_t, uint64_t>> trainable;
};

struct Slot {
  enum class State { kFree, kFilling, kReady, kHeld };
  State state = State::kFree;
  uint64_t generation = 0;
  int64_t seq = 0;  // Local step index (rises across resets).
  size_t index = 0;
  Status status;
  BatchArrays arrays;
  StepInfo info;
  std::vector<std::pair<uint32_t, uint64_t>> rows;  // Host ring: (source, sample) per row.
  std::shared_ptr<char> memory;                     // Host ring: the arrays' allocation.
  // Storage for the Batch handed out and its shared_ptr control block, so
  // handing out a batch allocates nothing and outlives the loader.
  alignas(std::max_align_t) unsigned char view_storage[128];
  alignas(std::max_align_t) unsigned char control_block[128];
};

class DeviceStage;

class SlotRing {
 public:
  SlotRing(size_t slots, size_t watermark) : slots_(slots), watermark_(watermark) {
    for (size_t i = 0; i < slots; ++i) slots_[i].index = i;
  }
  std::vector<Slot>& slots() { return slots_; }

  // Every method below runs under the pipeline's mutex, held by `lock`.
  Slot* FreeSlot();
  size_t Held() const;
  // Waits until `until()` holds.
  template <typename Pred>
  void WaitForFree(std::unique_lock<std::mutex>& lock, Pred until) {
    ++free_waiters_;
    free_cv_.wait(lock, until);
    --free_waiters_;
  }
  // Waits until `until()` holds or `timeout` (seconds; < 0: none) passes;
  // false on timeout. Wakes idle producers first.
  template <typename Pred>
  bool WaitForReady(std::unique_lock<std::mutex>& lock, double timeout, Pred until) {
    if (free_waiters_ > 0 && FreeSlot() != nullptr) free_cv_.notify_all();
    ++ready_waiters_;
    bool ok = true;
    if (timeout < 0) {
      ready_cv_.wait(lock, until);
    } else {
      ok = ready_cv_.wait_for(lock, std::chrono::duration<double>(timeout), until);
    }
    --ready_waiters_;
    return ok;
  }
  // The kReady slot of step `seq` in `generation`, or null.
  Slot* FindReady(int64_t seq, uint64_t generation);
  // A producer finished `slot` for `generation`: ready if that is still
  // `current`, else free again.
  void Finish(Slot* slot, Status status, uint64_t generation, uint64_t current);
  // The consumer is done with `slot` (also for a stale one).
  void Free(Slot* slot);
  // Drops ready slots (a new generation began) and wakes everyone.
  void Reset();
  void WakeAll();

 private:
  std::vector<Slot> slots_;
  size_t watermark_;
  std::condition_variable free_cv_, ready_cv_;
  int free_waiters_ = 0, ready_waiters_ = 0;
};

// The state shared by a loader and the batches it handed out, so a batch
// stays valid (and its release safe) after the loader is gone.
struct Pipeline {
  Pipeline(size_t host_slots, size_t device_slots, size_t watermark)
      : host(host_slots, watermark), device(device_slots, 1) {}
  std::mutex mu;
  SlotRing host;
  SlotRing device;  // Empty without a device stage.
  std::shared_ptr<DeviceStage> stage;
  LoaderOptions options;
};

// Hands out the slot of `ring` as a Batch that returns it to the ring when
// the last reference goes. Under the pipeline's mutex.
std::shared_ptr<const Batch> HandOut(const std::shared_ptr<Pipeline>& pipeline, SlotRing* ring,
                                     Slot* slot);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_SLOT_RING_H_
