#include "reader/slot_ring.h"

#include <new>

#include "reader/device_stage.h"

namespace tokpack {
namespace {

// Places a batch's shared_ptr control block in its slot. deallocate() is the
// last access to that block, so it is where the slot goes back to the ring;
// the allocator's own reference keeps the pipeline alive until then.
template <typename T>
struct SlotAllocator {
  using value_type = T;
  SlotAllocator(std::shared_ptr<Pipeline> p, SlotRing* r, Slot* s)
      : pipeline(std::move(p)), ring(r), slot(s) {}
  template <typename U>
  SlotAllocator(const SlotAllocator<U>& o)  // NOLINT: rebind
      : pipeline(o.pipeline), ring(o.ring), slot(o.slot) {}
  T* allocate(size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t));
    if (n * sizeof(T) > sizeof(slot->control_block)) throw std::bad_alloc();
    return reinterpret_cast<T*>(slot->control_block);
  }
  void deallocate(T*, size_t) {
    if (ring == &pipeline->device) pipeline->stage->Released(slot->index);
    std::lock_guard<std::mutex> lock(pipeline->mu);
    ring->Free(slot);
  }
  template <typename U>
  bool operator==(const SlotAllocator<U>& o) const {
    return slot == o.slot;
  }
  template <typename U>
  bool operator!=(const SlotAllocator<U>& o) const {
    return slot != o.slot;
  }
  std::shared_ptr<Pipeline> pipeline;
  SlotRing* ring;
  Slot* slot;
};

class BatchView : public Batch {
 public:
  BatchView(const Slot* slot, const Pipeline* pipeline, bool on_device)
      : slot_(slot), pipeline_(pipeline), on_device_(on_device) {}
  Device device() const override { return on_device_ ? options().device : Device{}; }
  int64_t batch_size() const override { return options().batch_size; }
  int64_t seq_len() const override { return options().seq_len; }
  OutputDtype dtype() const override { return options().dtype; }
  int64_t step() const override { return slot_->info.global_step; }
  const void* inputs() const override { return slot_->arrays.inputs; }
  const void* targets() const override { return slot_->arrays.targets; }
  const int32_t* position_ids() const override { return slot_->arrays.position_ids; }
  const int32_t* cu_seqlens() const override { return slot_->arrays.cu_seqlens; }
  const uint8_t* loss_mask() const override { return slot_->arrays.loss_mask; }
  int64_t num_cu_seqlens() const override { return slot_->arrays.num_cu; }
  Status UseOn(void* stream) const override {
    return on_device_ ? pipeline_->stage->UseOn(slot_->index, stream) : Status::Ok();
  }

  // The shared_ptr deleter: the object lives in its slot's storage.
  static void Destroy(BatchView* b) { b->~BatchView(); }

 private:
  const LoaderOptions& options() const { return pipeline_->options; }

  const Slot* slot_;
  const Pipeline* pipeline_;
  bool on_device_;
};

}  // namespace

Slot* SlotRing::FreeSlot() {
  for (Slot& s : slots_) {
    if (s.state == Slot::State::kFree) return &s;
  }
  return nullptr;
}

size_t SlotRing::Held() const {
  size_t n = 0;
  for (const Slot& s : slots_) n += s.state == Slot::State::kHeld;
  return n;
}

Slot* SlotRing::FindReady(int64_t seq, uint64_t generation) {
  for (Slot& s : slots_) {
    if (s.state == Slot::State::kReady && s.seq == seq && s.generation == generation) return &s;
  }
  return nullptr;
}

void SlotRing::Finish(Slot* slot, Status status, uint64_t generation, uint64_t current) {
  if (generation != current) {
    Free(slot);
    return;
  }
  slot->status = std::move(status);
  slot->state = Slot::State::kReady;
  if (ready_waiters_ > 0) ready_cv_.notify_all();
}

void SlotRing::Free(Slot* slot) {
  slot->state = Slot::State::kFree;
  if (free_waiters_ == 0) return;
  size_t free = 0, held = 0;
  for (const Slot& s : slots_) {
    free += s.state == Slot::State::kFree;
    held += s.state == Slot::State::kHeld;
  }
  // Wake at the watermark; or at once when fewer than `watermark_` batches
  // are ready or coming (a consumer holding many batches, or after a reset),
  // so the ring never runs dry for want of a wake-up.
  const size_t ahead = slots_.size() - free - held;
  if (free >= watermark_ || ahead < watermark_ || ready_waiters_ > 0) free_cv_.notify_all();
}

void SlotRing::Reset() {
  for (Slot& s : slots_) {
    if (s.state == Slot::State::kReady) s.state = Slot::State::kFree;
  }
  WakeAll();
}

void SlotRing::WakeAll() {
  free_cv_.notify_all();
  ready_cv_.notify_all();
}

std::shared_ptr<const Batch> HandOut(const std::shared_ptr<Pipeline>& pipeline, SlotRing* ring,
                                     Slot* slot) {
  static_assert(sizeof(BatchView) <= sizeof(Slot::view_storage));
  slot->state = Slot::State::kHeld;
  BatchView* view =
      new (slot->view_storage) BatchView(slot, pipeline.get(), ring == &pipeline->device);
  return std::shared_ptr<const Batch>(view, &BatchView::Destroy,
                                      SlotAllocator<char>(pipeline, ring, slot));
}

}  // namespace tokpack
