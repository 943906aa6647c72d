// The CUDA device stage (src/reader/device_stage.h): page-locked host
// buffers, one stream, and per device slot one allocation, a "copied" and a
// "ready" event, and the events recorded on its users' streams at release.
#include "reader/device_stage.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "reader/cuda/widen.h"

namespace tokpack {
namespace {

Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  const StatusCode code =
      e == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted : StatusCode::kInternal;
  return Status(code, std::string(what) + ": " + cudaGetErrorString(e));
}

#define TOKPACK_CUDA_OK(expr) TOKPACK_RETURN_IF_ERROR(CudaStatus((expr), #expr))

// Sets the calling thread's device for a scope, then restores it.
class DeviceScope {
 public:
  // Switches only when the thread is on another device, so a scope on the
  // loader's device touches no other device's context.
  explicit DeviceScope(int device) {
    const bool known = cudaGetDevice(&previous_) == cudaSuccess;
    if (known && previous_ == device) return;
    restore_ = known;
    status_ = CudaStatus(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceScope() {
    if (restore_) cudaSetDevice(previous_);
  }
  const Status& status() const { return status_; }

 private:
  int previous_ = 0;
  bool restore_ = false;
  Status status_;
};

struct CudaSlot {
  char* memory = nullptr;
  BatchArrays arrays;
  void* windows = nullptr;            // The compact windows, copied in.
  uint8_t* bits = nullptr;            // The labels' loss mask bits, copied in (or null).
  cudaEvent_t copied = nullptr;       // The host buffer may be reused.
  cudaEvent_t ready = nullptr;        // The batch is on the device.
  std::mutex mu;                      // Guards the two lists below.
  std::vector<void*> users;           // Streams passed to UseOn since the last copy.
  std::vector<cudaEvent_t> released;  // Recorded on `users` at release.
  size_t num_released = 0;
};

class CudaStage : public DeviceStage {
 public:
  CudaStage(const LoaderOptions& o, size_t stored_item, bool masked)
      : o_(o),
        stored_item_(stored_item),
        has_bits_(masked || o.loss_mask),
        slots_(static_cast<size_t>(o.device_prefetch)) {}

  ~CudaStage() override {
    DeviceScope scope(o_.device.index);
    if (stream_) cudaStreamDestroy(stream_);  // Pending work completes first.
    for (CudaSlot& s : slots_) {
      cudaFree(s.memory);
      if (s.copied) cudaEventDestroy(s.copied);
      if (s.ready) cudaEventDestroy(s.ready);
      for (cudaEvent_t e : s.released) cudaEventDestroy(e);
    }
  }

  Status Init() {
    DeviceScope scope(o_.device.index);
    TOKPACK_RETURN_IF_ERROR(scope.status());
    const size_t cells = static_cast<size_t>(o_.batch_size * o_.seq_len);
    const size_t out_item = o_.dtype == OutputDtype::kInt64 ? 8 : 4;
    const auto round = [](size_t n) { return (n + 255) / 256 * 256; };
    const size_t windows =
        round(static_cast<size_t>(o_.batch_size * (o_.seq_len + 1)) * stored_item_);
    const size_t arrays = round(cells * out_item);
    const size_t boundaries =
        o_.document_boundaries ? round(cells * 4) + round((cells + 1) * 4) : 0;
    const size_t bits = has_bits_ ? round(cells) : 0;
    for (CudaSlot& s : slots_) {
      TOKPACK_CUDA_OK(cudaMalloc(&s.memory, windows + 2 * arrays + boundaries + bits));
      if (has_bits_) {
        s.bits = reinterpret_cast<uint8_t*>(s.memory + windows + 2 * arrays + boundaries);
        if (o_.loss_mask) s.arrays.loss_mask = s.bits;
      }
      s.windows = s.memory;
      s.arrays.inputs = s.memory + windows;
      s.arrays.targets = s.memory + windows + arrays;
      if (o_.document_boundaries) {
        s.arrays.position_ids = reinterpret_cast<int32_t*>(s.memory + windows + 2 * arrays);
        s.arrays.cu_seqlens =
            reinterpret_cast<int32_t*>(s.memory + windows + 2 * arrays + round(cells * 4));
      }
      TOKPACK_CUDA_OK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
      TOKPACK_CUDA_OK(cudaEventCreateWithFlags(&s.ready, cudaEventDisableTiming));
    }
    TOKPACK_CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return Status::Ok();
  }

  void* AllocateHost(size_t bytes) override {
    DeviceScope scope(o_.device.index);
    void* p = nullptr;
    if (cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocPortable) != cudaSuccess) {
      return nullptr;
    }
    return p;
  }
  void FreeHost(void* p) override {
    DeviceScope scope(o_.device.index);
    cudaFreeHost(p);
  }

  BatchArrays SlotArrays(size_t slot) const override { return slots_[slot].arrays; }

  Status Copy(const BatchArrays& host, size_t slot) override {
    if (!device_set_) {  // The copy thread's device, once.
      TOKPACK_CUDA_OK(cudaSetDevice(o_.device.index));
      device_set_ = true;
    }
    Status s = Enqueue(host, slot);
    // On an error part of the copy may be queued: the host buffer is reused
    // only once the stream has let go of it.
    if (!s.ok()) cudaStreamSynchronize(stream_);
    return s;
  }

  // Queues the copy and the widening of `host` into `slot`; returns once the
  // copy (not the widening) is done.
  Status Enqueue(const BatchArrays& host, size_t slot) {
    CudaSlot& s = slots_[slot];
    {
      std::lock_guard<std::mutex> lock(s.mu);
      for (size_t i = 0; i < s.num_released; ++i) {
        TOKPACK_CUDA_OK(cudaStreamWaitEvent(stream_, s.released[i], 0));
      }
      s.num_released = 0;
      s.users.clear();
    }
    const size_t rows = static_cast<size_t>(o_.batch_size);
    const size_t L = static_cast<size_t>(o_.seq_len);
    TOKPACK_CUDA_OK(cudaMemcpyAsync(s.windows, host.inputs, rows * (L + 1) * stored_item_,
                                    cudaMemcpyHostToDevice, stream_));
    if (host.position_ids != nullptr) {
      TOKPACK_CUDA_OK(cudaMemcpyAsync(s.arrays.position_ids, host.position_ids, rows * L * 4,
                                      cudaMemcpyHostToDevice, stream_));
      TOKPACK_CUDA_OK(cudaMemcpyAsync(s.arrays.cu_seqlens, host.cu_seqlens,
                                      static_cast<size_t>(host.num_cu) * 4, cudaMemcpyHostToDevice,
                                      stream_));
    }
    // The host batch has bits whenever this stage was made for them.
    if (host.loss_mask != nullptr) {
      TOKPACK_CUDA_OK(
          cudaMemcpyAsync(s.bits, host.loss_mask, rows * L, cudaMemcpyHostToDevice, stream_));
    }
    TOKPACK_CUDA_OK(cudaEventRecord(s.copied, stream_));
    TOKPACK_CUDA_OK(LaunchWidenWindows(
        s.windows, stored_item_, static_cast<int64_t>(rows), static_cast<int64_t>(L),
        o_.labels == LabelsMode::kNext ? 1 : 0, host.loss_mask ? s.bits : nullptr, s.arrays.inputs,
        s.arrays.targets, o_.dtype == OutputDtype::kInt64 ? 8 : 4, stream_));
    TOKPACK_CUDA_OK(cudaEventRecord(s.ready, stream_));
    TOKPACK_CUDA_OK(cudaEventSynchronize(s.copied));
    return Status::Ok();
  }

  Status UseOn(size_t slot, void* stream) override {
    // The per-thread default stream names another stream on each thread,
    // and the release event is recorded on whichever thread drops the batch.
    if (stream == static_cast<void*>(cudaStreamPerThread)) {
      return InvalidArgumentError(
          "the per-thread default stream cannot order a tokpack batch's reuse; pass an explicit "
          "stream or the legacy default stream");
    }
    // The legacy default stream is the current device's: make it the loader's.
    DeviceScope scope(o_.device.index);
    TOKPACK_RETURN_IF_ERROR(scope.status());
    CudaSlot& s = slots_[slot];
    TOKPACK_CUDA_OK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), s.ready, 0));
    std::lock_guard<std::mutex> lock(s.mu);
    if (std::find(s.users.begin(), s.users.end(), stream) == s.users.end()) {
      s.users.push_back(stream);
    }
    return Status::Ok();
  }

  void Released(size_t slot) override {
    DeviceScope scope(o_.device.index);  // Events are made on the current device.
    CudaSlot& s = slots_[slot];
    std::lock_guard<std::mutex> lock(s.mu);
    size_t n = 0;
    for (void* user : s.users) {
      cudaStream_t stream = static_cast<cudaStream_t>(user);
      if (n == s.released.size()) {
        cudaEvent_t e = nullptr;
        if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
          cudaStreamSynchronize(stream);  // Safe, if slow.
          continue;
        }
        s.released.push_back(e);
      }
      if (cudaEventRecord(s.released[n], stream) == cudaSuccess) {
        ++n;
      } else {
        cudaStreamSynchronize(stream);
      }
    }
    s.num_released = n;
    s.users.clear();
  }

 private:
  LoaderOptions o_;
  size_t stored_item_;
  bool has_bits_;  // Host batches carry label bits (masked sources, or o.loss_mask).
  std::vector<CudaSlot> slots_;
  cudaStream_t stream_ = nullptr;
  bool device_set_ = false;
};

}  // namespace

bool CudaAvailable(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    return false;
  }
  return true;
}

StatusOr<std::shared_ptr<DeviceStage>> DeviceStage::Create(const LoaderOptions& o,
                                                           size_t stored_item, bool masked) {
  std::string why;
  if (!CudaAvailable(&why)) return FailedPreconditionError("CUDA is not usable here: " + why);
  int count = 0;
  TOKPACK_CUDA_OK(cudaGetDeviceCount(&count));
  if (o.device.index >= count) {
    return FailedPreconditionError("no CUDA device " + std::to_string(o.device.index) +
                                   " (this machine has " + std::to_string(count) + ")");
  }
  auto stage = std::make_shared<CudaStage>(o, stored_item, masked);
  TOKPACK_RETURN_IF_ERROR(stage->Init());
  return std::shared_ptr<DeviceStage>(std::move(stage));
}

}  // namespace tokpack
