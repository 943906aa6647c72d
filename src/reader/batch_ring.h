// The loader's ring of batch buffers: slots, the memory behind them, and the
// Batch view handed out of a slot. Internal to the loader (loader.cc).
#ifndef TOKPACK_SRC_READER_BATCH_RING_H_
#define TOKPACK_SRC_READER_BATCH_RING_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "tokpack/loader.h"

namespace tokpack {

// Where the arrays of a batch sit inside one slot allocation.
struct SlotLayout {
  size_t inputs = 0, targets = 0, position_ids = 0, cu_seqlens = 0;  // Offsets.
  size_t inputs_bytes = 0, targets_bytes = 0;
  size_t total = 0;

  // `stored_item`: the datasets' token size, for OutputDtype::kStoredWindows.
  static SlotLayout For(const LoaderOptions& o, size_t stored_item) {
    const size_t cells = static_cast<size_t>(o.batch_size * o.seq_len);
    SlotLayout l;
    size_t at = 0;
    const auto take = [&at](size_t bytes) {
      const size_t offset = at;
      at += (bytes + 63) / 64 * 64;  // Each array on its own cache line.
      return offset;
    };
    if (o.dtype == OutputDtype::kStoredWindows) {
      l.inputs_bytes = static_cast<size_t>(o.batch_size * (o.seq_len + 1)) * stored_item;
    } else {
      l.inputs_bytes = l.targets_bytes = cells * (o.dtype == OutputDtype::kInt32 ? 4 : 8);
    }
    l.inputs = take(l.inputs_bytes);
    l.targets = take(l.targets_bytes);
    if (o.document_boundaries) {
      l.position_ids = take(cells * 4);
      l.cu_seqlens = take((cells + 1) * 4);
    }
    l.total = at;
    return l;
  }
};

// One ring buffer and the plan of the step it holds.
struct Slot {
  enum class State { kFree, kAssembling, kReady, kHeld };
  State state = State::kFree;
  uint64_t generation = 0;
  int64_t step = 0;  // Local step index (since the last reset).
  int64_t global_step = 0;
  std::shared_ptr<char> memory;  // SlotLayout::total bytes from the HostMemory.
  char* inputs = nullptr;
  char* targets = nullptr;  // Null for kStoredWindows.
  int32_t* position_ids = nullptr;
  int32_t* cu_seqlens = nullptr;
  int64_t num_cu = 0;
  std::vector<std::pair<uint32_t, uint64_t>> rows;  // (source, sample) per row.
  std::vector<uint64_t> counts_after;               // Cursor after this step.
  uint64_t position_after = 0;
  Status status;
  // Storage for the Batch handed out and its shared_ptr control block, so
  // handing out a batch allocates nothing and outlives the loader.
  alignas(std::max_align_t) unsigned char view_storage[128];
  alignas(std::max_align_t) unsigned char control_block[128];

  // Allocates the slot's arrays; false if the HostMemory refused.
  bool Allocate(const std::shared_ptr<HostMemory>& host, const SlotLayout& l, bool boundaries) {
    char* p = static_cast<char*>(host->Allocate(l.total));
    if (p == nullptr) return false;
    memory = std::shared_ptr<char>(p, [host, n = l.total](char* q) { host->Free(q, n); });
    inputs = p + l.inputs;
    targets = l.targets_bytes ? p + l.targets : nullptr;
    if (boundaries) {
      position_ids = reinterpret_cast<int32_t*>(p + l.position_ids);
      cu_seqlens = reinterpret_cast<int32_t*>(p + l.cu_seqlens);
    }
    return true;
  }
};

// State shared by the loader and the batches it handed out, so a batch stays
// valid after the loader is gone.
struct Ring {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Slot> slots;
};

// Places a batch's shared_ptr control block in its slot. deallocate() is the
// last access to that block, so it is where the slot goes back to the ring;
// the allocator's own reference keeps the ring alive until then.
template <typename T>
struct SlotAllocator {
  using value_type = T;
  SlotAllocator(std::shared_ptr<Ring> r, Slot* s) : ring(std::move(r)), slot(s) {}
  template <typename U>
  SlotAllocator(const SlotAllocator<U>& o) : ring(o.ring), slot(o.slot) {}  // NOLINT: rebind
  T* allocate(size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t));
    if (n * sizeof(T) > sizeof(slot->control_block)) throw std::bad_alloc();
    return reinterpret_cast<T*>(slot->control_block);
  }
  void deallocate(T*, size_t) {
    std::lock_guard<std::mutex> lock(ring->mu);
    slot->state = Slot::State::kFree;
    ring->cv.notify_all();
  }
  template <typename U>
  bool operator==(const SlotAllocator<U>& o) const {
    return slot == o.slot;
  }
  template <typename U>
  bool operator!=(const SlotAllocator<U>& o) const {
    return slot != o.slot;
  }
  std::shared_ptr<Ring> ring;
  Slot* slot;
};

class BatchView : public Batch {
 public:
  BatchView(const Slot* slot, const LoaderOptions& o)
      : slot_(slot),
        b_(o.batch_size),
        l_(o.seq_len),
        dtype_(o.dtype),
        boundaries_(o.document_boundaries) {}
  int64_t batch_size() const override { return b_; }
  int64_t seq_len() const override { return l_; }
  OutputDtype dtype() const override { return dtype_; }
  int64_t step() const override { return slot_->global_step; }
  const void* inputs() const override { return slot_->inputs; }
  const void* targets() const override { return slot_->targets; }
  const int32_t* position_ids() const override {
    return boundaries_ ? slot_->position_ids : nullptr;
  }
  const int32_t* cu_seqlens() const override { return boundaries_ ? slot_->cu_seqlens : nullptr; }
  int64_t num_cu_seqlens() const override { return boundaries_ ? slot_->num_cu : 0; }

  // The shared_ptr deleter: the object lives in its slot's storage.
  static void Destroy(BatchView* b) { b->~BatchView(); }

 private:
  const Slot* slot_;
  int64_t b_, l_;
  OutputDtype dtype_;
  bool boundaries_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_BATCH_RING_H_
