// A stand-in for the CUDA device stage that runs on the CPU: "device"
// buffers are host memory and the copy widens the compact windows with a
// loop (applying the label bits as the CUDA kernel does). It drives the loader's copy stage (order,
// generations, release, errors) where no GPU is present; the CUDA stage differs only in the calls
// it makes inside Copy/UseOn/Released.
#ifndef TOKPACK_TESTS_READER_HOST_STAGE_H_
#define TOKPACK_TESTS_READER_HOST_STAGE_H_

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "reader/device_stage.h"

namespace tokpack::testing {

class HostStage : public DeviceStage {
 public:
  // Refuses host allocations after `host_budget` of them.
  HostStage(const LoaderOptions& o, size_t stored_item, int host_budget = 1 << 20)
      : o_(o), item_(stored_item), budget_(host_budget) {
    const size_t cells = static_cast<size_t>(o.batch_size * o.seq_len);
    for (int i = 0; i < o.device_prefetch; ++i) {
      Buffers& b = slots_.emplace_back();
      b.inputs.resize(cells * 8);
      b.targets.resize(cells * 8);
      b.position_ids.resize(cells);
      b.cu_seqlens.resize(cells + 1);
      b.loss_mask.resize(cells);
    }
  }

  void* AllocateHost(size_t bytes) override {
    if (allocations_ >= budget_) return nullptr;
    ++allocations_;
    live_ += 1;
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  }
  void FreeHost(void* p) override {
    live_ -= 1;
    std::free(p);
  }
  BatchArrays SlotArrays(size_t slot) const override {
    Buffers& b = const_cast<Buffers&>(slots_[slot]);
    BatchArrays a;
    a.inputs = b.inputs.data();
    a.targets = b.targets.data();
    if (o_.document_boundaries) {
      a.position_ids = b.position_ids.data();
      a.cu_seqlens = b.cu_seqlens.data();
    }
    if (o_.loss_mask) a.loss_mask = b.loss_mask.data();
    return a;
  }
  Status Copy(const BatchArrays& host, size_t slot) override {
    ++copies_;
    const BatchArrays out = SlotArrays(slot);
    const int64_t L = o_.seq_len;
    const int64_t shift = o_.labels == LabelsMode::kNext ? 1 : 0;
    const uint8_t* bits = host.loss_mask;
    for (int64_t r = 0; r < o_.batch_size; ++r) {
      for (int64_t j = 0; j < L; ++j) {
        const int64_t in = Token(host.inputs, r * (L + 1) + j);
        const int64_t label = Token(host.inputs, r * (L + 1) + j + shift);
        Put(out.inputs, r * L + j, in);
        Put(out.targets, r * L + j, bits == nullptr || bits[r * L + j] ? label : -100);
      }
    }
    if (out.loss_mask != nullptr) {
      std::memcpy(out.loss_mask, bits, static_cast<size_t>(o_.batch_size * L));
    }
    if (host.position_ids != nullptr) {
      std::memcpy(out.position_ids, host.position_ids, static_cast<size_t>(o_.batch_size * L) * 4);
      std::memcpy(out.cu_seqlens, host.cu_seqlens, static_cast<size_t>(host.num_cu) * 4);
    }
    return Status::Ok();
  }
  Status UseOn(size_t, void*) override { return Status::Ok(); }
  void Released(size_t) override { ++releases_; }

  int allocations() const { return allocations_; }
  int live() const { return live_; }
  int copies() const { return copies_; }

 private:
  struct Buffers {
    std::vector<char> inputs, targets;
    std::vector<int32_t> position_ids, cu_seqlens;
    std::vector<uint8_t> loss_mask;
  };
  int64_t Token(const char* p, int64_t i) const {
    if (item_ == 2) return reinterpret_cast<const uint16_t*>(p)[i];
    return reinterpret_cast<const int32_t*>(p)[i];
  }
  void Put(char* p, int64_t i, int64_t v) const {
    if (o_.dtype == OutputDtype::kInt64) {
      reinterpret_cast<int64_t*>(p)[i] = v;
    } else {
      reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
    }
  }

  LoaderOptions o_;
  size_t item_;
  int budget_;
  std::vector<Buffers> slots_;
  std::atomic<int> allocations_{0}, live_{0}, copies_{0}, releases_{0};
};

}  // namespace tokpack::testing

#endif  // TOKPACK_TESTS_READER_HOST_STAGE_H_
