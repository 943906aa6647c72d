// DeviceLoader with CUDA: pinned host ring (the host Loader's HostMemory),
// one copy thread and stream, a ring of device buffers, events per batch.
// See include/tokpack/device_loader.h and docs/gpu.md.
#include "tokpack/device_loader.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "cuda/widen.h"
#include "reader/wait_window.h"

namespace tokpack {
namespace {

using Clock = std::chrono::steady_clock;

Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  const StatusCode code =
      e == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted : StatusCode::kInternal;
  return Status(code, std::string(what) + ": " + cudaGetErrorString(e));
}

#define TOKPACK_CUDA_OK(expr) TOKPACK_RETURN_IF_ERROR(CudaStatus((expr), #expr))

// Page-locked host memory, so that copies to the device are DMA.
class PinnedMemory : public HostMemory {
 public:
  void* Allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocPortable) != cudaSuccess) {
      return nullptr;
    }
    return p;
  }
  void Free(void* p, size_t) override { cudaFreeHost(p); }
};

// A device buffer and what orders its reuse.
struct DeviceSlot {
  enum class State { kFree, kCopying, kReady, kHeld };
  State state = State::kFree;
  uint64_t generation = 0;
  int64_t seq = 0;  // Order within a generation.
  int64_t step = 0;
  int64_t num_cu = 0;
  Status status;
  std::string cursor;  // The host loader's cursor after this batch.
  char* memory = nullptr;
  void* windows = nullptr;
  void* inputs = nullptr;
  void* targets = nullptr;
  int32_t* position_ids = nullptr;
  int32_t* cu_seqlens = nullptr;
  cudaEvent_t copied = nullptr;  // The host buffer may be reused.
  cudaEvent_t ready = nullptr;   // The batch is on the device.
  // Recorded on each consumer stream when the batch was released.
  std::vector<cudaEvent_t> released;
  size_t num_released = 0;
};

// Shared by the loader and its batches, so batches outlive the loader.
struct DeviceRing {
  int device = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<DeviceSlot> slots;

  ~DeviceRing() {
    int previous = 0;
    const bool restore = cudaGetDevice(&previous) == cudaSuccess;
    cudaSetDevice(device);
    for (DeviceSlot& s : slots) {
      cudaFree(s.memory);
      if (s.copied) cudaEventDestroy(s.copied);
      if (s.ready) cudaEventDestroy(s.ready);
      for (cudaEvent_t e : s.released) cudaEventDestroy(e);
    }
    if (restore) cudaSetDevice(previous);
  }
};

class DeviceBatchImpl : public DeviceBatch {
 public:
  DeviceBatchImpl(std::shared_ptr<DeviceRing> ring, DeviceSlot* slot, const LoaderOptions& o)
      : ring_(std::move(ring)), slot_(slot), o_(o) {}

  ~DeviceBatchImpl() override {
    // The slot is held by this batch alone until it is marked free.
    std::vector<cudaEvent_t>& events = slot_->released;
    size_t n = 0;
    for (void* stream : streams_) {
      if (n == events.size()) {
        cudaEvent_t e = nullptr;
        if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
          cudaStreamSynchronize(static_cast<cudaStream_t>(stream));  // Safe, if slow.
          continue;
        }
        events.push_back(e);
      }
      if (cudaEventRecord(events[n], static_cast<cudaStream_t>(stream)) == cudaSuccess) {
        ++n;
      } else {
        cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
      }
    }
    std::lock_guard<std::mutex> lock(ring_->mu);
    slot_->num_released = n;
    slot_->state = DeviceSlot::State::kFree;
    ring_->cv.notify_all();
  }

  int device() const override { return ring_->device; }
  int64_t batch_size() const override { return o_.batch_size; }
  int64_t seq_len() const override { return o_.seq_len; }
  OutputDtype dtype() const override { return o_.dtype; }
  int64_t step() const override { return slot_->step; }
  const void* inputs() const override { return slot_->inputs; }
  const void* targets() const override { return slot_->targets; }
  const int32_t* position_ids() const override { return slot_->position_ids; }
  const int32_t* cu_seqlens() const override { return slot_->cu_seqlens; }
  int64_t num_cu_seqlens() const override { return slot_->num_cu; }

  Status UseOn(void* stream) const override {
    TOKPACK_CUDA_OK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), slot_->ready, 0));
    std::lock_guard<std::mutex> lock(streams_mu_);
    if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) {
      streams_.push_back(stream);
    }
    return Status::Ok();
  }

 private:
  std::shared_ptr<DeviceRing> ring_;
  DeviceSlot* slot_;
  LoaderOptions o_;
  mutable std::mutex streams_mu_;
  mutable std::vector<void*> streams_;
};

class DeviceLoaderImpl : public DeviceLoader {
 public:
  DeviceLoaderImpl(std::unique_ptr<Loader> host, const LoaderOptions& o, int device,
                   std::shared_ptr<DeviceRing> ring, cudaStream_t stream, size_t stored_item)
      : host_(std::move(host)),
        o_(o),
        device_(device),
        ring_(std::move(ring)),
        stream_(stream),
        stored_item_(stored_item) {
    cursor_ = host_->SaveState();
    step_ = host_->Step();
    thread_ = std::thread([this] { CopyLoop(); });
  }

  ~DeviceLoaderImpl() override {
    stopping_ = true;
    {
      std::lock_guard<std::mutex> lock(ring_->mu);
      stop_ = true;
    }
    ring_->cv.notify_all();
    thread_.join();
    host_.reset();
    cudaStreamDestroy(stream_);  // Pending work completes first.
  }

  StatusOr<std::shared_ptr<const DeviceBatch>> Next() override { return NextWithin(std::nullopt); }
  StatusOr<std::shared_ptr<const DeviceBatch>> Next(double timeout_seconds) override {
    return NextWithin(std::chrono::duration<double>(std::max(0.0, timeout_seconds)));
  }

  std::string SaveState() const override {
    std::lock_guard<std::mutex> lock(ring_->mu);
    return cursor_;
  }

  Status LoadState(const std::string& state) override {
    std::lock_guard<std::mutex> host_lock(host_mu_);  // No host batch is in flight.
    TOKPACK_RETURN_IF_ERROR(host_->LoadState(state));
    std::lock_guard<std::mutex> lock(ring_->mu);
    ++generation_;
    for (DeviceSlot& s : ring_->slots) {
      if (s.state == DeviceSlot::State::kReady) s.state = DeviceSlot::State::kFree;
    }
    next_seq_ = consume_seq_ = 0;
    ended_ = false;
    cursor_ = host_->SaveState();
    step_ = host_->Step();
    ring_->cv.notify_all();
    return Status::Ok();
  }

  int64_t Step() const override {
    std::lock_guard<std::mutex> lock(ring_->mu);
    return step_;
  }

  int64_t RemainingSteps() const override {
    std::lock_guard<std::mutex> host_lock(host_mu_);
    const int64_t host = host_->RemainingSteps();
    std::lock_guard<std::mutex> lock(ring_->mu);
    return host < 0 ? -1 : host + (next_seq_ - consume_seq_);
  }

  LoaderStats Stats() const override {
    LoaderStats s = host_->Stats();
    std::lock_guard<std::mutex> lock(ring_->mu);
    s.steps = waits_.steps;
    s.wait_seconds_total = waits_.wait_seconds_total;
    s.wait_seconds_last = waits_.wait_seconds_last;
    s.wait_seconds_max = waits_.wait_seconds_max;
    window_.Percentiles(&s);
    return s;
  }

 private:
  StatusOr<std::shared_ptr<const DeviceBatch>> NextWithin(
      std::optional<std::chrono::duration<double>> timeout) {
    std::unique_lock<std::mutex> lock(ring_->mu);
    size_t held = 0;
    for (const DeviceSlot& s : ring_->slots) held += s.state == DeviceSlot::State::kHeld;
    if (held == ring_->slots.size()) {
      return FailedPreconditionError("all " + std::to_string(held) +
                                     " device batch buffers are still held by the caller; "
                                     "release old batches (or raise device_prefetch)");
    }
    DeviceSlot* found = nullptr;
    const auto done = [&] {
      for (DeviceSlot& s : ring_->slots) {
        if (s.state == DeviceSlot::State::kReady && s.generation == generation_ &&
            s.seq == consume_seq_) {
          found = &s;
          return true;
        }
      }
      return ended_ && consume_seq_ == next_seq_;
    };
    const auto t0 = Clock::now();
    if (!timeout) {
      ring_->cv.wait(lock, done);
    } else if (!ring_->cv.wait_for(lock, *timeout, done)) {
      pending_wait_ += std::chrono::duration<double>(Clock::now() - t0).count();
      return Status(StatusCode::kDeadlineExceeded, "no device batch ready within the timeout");
    }
    if (found == nullptr) return std::shared_ptr<const DeviceBatch>();  // The end.
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count() + pending_wait_;
    pending_wait_ = 0;
    ++consume_seq_;
    if (!found->status.ok()) {
      found->state = DeviceSlot::State::kFree;
      ring_->cv.notify_all();
      return found->status;
    }
    found->state = DeviceSlot::State::kHeld;
    cursor_ = found->cursor;
    step_ = found->step + 1;
    window_.Record(waited, &waits_);
    return std::shared_ptr<const DeviceBatch>(std::make_shared<DeviceBatchImpl>(ring_, found, o_));
  }

  // Takes host batches in order and moves each into a free device slot.
  void CopyLoop() {
    cudaSetDevice(device_);
    while (true) {
      DeviceSlot* slot = nullptr;
      {
        std::unique_lock<std::mutex> lock(ring_->mu);
        ring_->cv.wait(lock, [&] {
          if (stop_) return true;
          if (ended_) return false;
          for (DeviceSlot& s : ring_->slots) {
            if (s.state == DeviceSlot::State::kFree) {
              slot = &s;
              return true;
            }
          }
          return false;
        });
        if (stop_) return;
        slot->state = DeviceSlot::State::kCopying;
      }
      uint64_t generation = 0;
      int64_t seq = -1;
      StatusOr<std::shared_ptr<const Batch>> host = std::shared_ptr<const Batch>();
      while (true) {
        std::unique_lock<std::mutex> host_lock(host_mu_);
        {
          std::lock_guard<std::mutex> lock(ring_->mu);
          generation = generation_;
        }
        host = host_->Next(0.05);
        if (host.status().code() == StatusCode::kDeadlineExceeded) {
          host_lock.unlock();
          if (stopping_) return;
          continue;
        }
        if (host.ok() && *host) slot->cursor = host_->SaveState();
        std::lock_guard<std::mutex> lock(ring_->mu);
        if (generation == generation_) {
          if (host.ok() && !*host) {
            ended_ = true;
          } else {
            seq = next_seq_++;
          }
        }
        break;
      }
      Status s = host.status();
      if (seq >= 0 && s.ok()) s = Copy(slot, **host);
      host = std::shared_ptr<const Batch>();  // Its pinned buffer is free again.
      std::lock_guard<std::mutex> lock(ring_->mu);
      if (seq < 0 || generation != generation_) {
        slot->state = DeviceSlot::State::kFree;
      } else {
        slot->status = s;
        slot->generation = generation;
        slot->seq = seq;
        slot->state = DeviceSlot::State::kReady;
      }
      ring_->cv.notify_all();
    }
  }

  // Waits for the slot's last users, copies the compact windows (and the
  // boundary arrays) in, widens them on the device, records the events.
  Status Copy(DeviceSlot* slot, const Batch& b) {
    for (size_t i = 0; i < slot->num_released; ++i) {
      TOKPACK_CUDA_OK(cudaStreamWaitEvent(stream_, slot->released[i], 0));
    }
    slot->num_released = 0;
    const int64_t rows = o_.batch_size, L = o_.seq_len;
    TOKPACK_CUDA_OK(cudaMemcpyAsync(slot->windows, b.inputs(), rows * (L + 1) * stored_item_,
                                    cudaMemcpyHostToDevice, stream_));
    slot->num_cu = b.num_cu_seqlens();
    if (b.position_ids()) {
      TOKPACK_CUDA_OK(cudaMemcpyAsync(slot->position_ids, b.position_ids(), rows * L * 4,
                                      cudaMemcpyHostToDevice, stream_));
      TOKPACK_CUDA_OK(cudaMemcpyAsync(slot->cu_seqlens, b.cu_seqlens(), slot->num_cu * 4,
                                      cudaMemcpyHostToDevice, stream_));
    }
    TOKPACK_CUDA_OK(cudaEventRecord(slot->copied, stream_));
    TOKPACK_CUDA_OK(LaunchWidenWindows(slot->windows, stored_item_, rows, L, slot->inputs,
                                       slot->targets, o_.dtype == OutputDtype::kInt64 ? 8 : 4,
                                       stream_));
    TOKPACK_CUDA_OK(cudaEventRecord(slot->ready, stream_));
    slot->step = b.step();
    TOKPACK_CUDA_OK(cudaEventSynchronize(slot->copied));
    return Status::Ok();
  }

  std::unique_ptr<Loader> host_;
  mutable std::mutex host_mu_;  // Orders host_->Next() against LoadState().
  LoaderOptions o_;
  int device_;
  std::shared_ptr<DeviceRing> ring_;
  cudaStream_t stream_;
  size_t stored_item_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  // Under ring_->mu:
  bool stop_ = false;
  bool ended_ = false;  // The host loader ended in this generation.
  uint64_t generation_ = 0;
  int64_t next_seq_ = 0, consume_seq_ = 0;
  std::string cursor_;
  int64_t step_ = 0;
  LoaderStats waits_;
  WaitWindow window_;
  double pending_wait_ = 0;
};

// Sets the calling thread's device for a scope, then restores it.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    restore_ = cudaGetDevice(&previous_) == cudaSuccess;
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

Status AllocateSlots(DeviceRing* ring, int count, const LoaderOptions& o, size_t stored_item) {
  const size_t cells = static_cast<size_t>(o.batch_size * o.seq_len);
  const size_t out_item = o.dtype == OutputDtype::kInt64 ? 8 : 4;
  const auto round = [](size_t n) { return (n + 255) / 256 * 256; };
  const size_t windows = round(static_cast<size_t>(o.batch_size * (o.seq_len + 1)) * stored_item);
  const size_t arrays = round(cells * out_item);
  const size_t boundaries = o.document_boundaries ? round(cells * 4) + round((cells + 1) * 4) : 0;
  ring->slots = std::vector<DeviceSlot>(static_cast<size_t>(count));
  for (DeviceSlot& s : ring->slots) {
    TOKPACK_CUDA_OK(cudaMalloc(&s.memory, windows + 2 * arrays + boundaries));
    s.windows = s.memory;
    s.inputs = s.memory + windows;
    s.targets = s.memory + windows + arrays;
    if (o.document_boundaries) {
      s.position_ids = reinterpret_cast<int32_t*>(s.memory + windows + 2 * arrays);
      s.cu_seqlens = reinterpret_cast<int32_t*>(s.memory + windows + 2 * arrays + round(cells * 4));
    }
    TOKPACK_CUDA_OK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
    TOKPACK_CUDA_OK(cudaEventCreateWithFlags(&s.ready, cudaEventDisableTiming));
  }
  return Status::Ok();
}

}  // namespace

bool DeviceLoader::Available(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    return false;
  }
  return true;
}

StatusOr<std::unique_ptr<DeviceLoader>> DeviceLoader::Create(std::vector<Loader::Source> sources,
                                                             const LoaderOptions& options,
                                                             int device, int device_prefetch) {
  if (options.dtype == OutputDtype::kStoredWindows) {
    return InvalidArgumentError("a device loader's dtype must be int32 or int64");
  }
  if (device_prefetch < 1 || device_prefetch > 64) {
    return InvalidArgumentError("device_prefetch must be 1..64");
  }
  std::string why;
  if (!Available(&why)) return FailedPreconditionError("CUDA is not usable here: " + why);
  int count = 0;
  TOKPACK_CUDA_OK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count) {
    return FailedPreconditionError("no CUDA device " + std::to_string(device) +
                                   " (this machine has " + std::to_string(count) + ")");
  }
  if (sources.empty() || !sources[0].dataset) {
    return InvalidArgumentError("a loader needs at least one dataset");
  }
  const size_t stored_item = static_cast<size_t>(TokenDtypeSize(sources[0].dataset->dtype()));
  DeviceScope scope(device);
  TOKPACK_RETURN_IF_ERROR(scope.status());
  LoaderOptions host_options = options;
  host_options.dtype = OutputDtype::kStoredWindows;
  host_options.host_memory = std::make_shared<PinnedMemory>();
  TOKPACK_ASSIGN_OR_RETURN(std::unique_ptr<Loader> host,
                           Loader::Create(std::move(sources), host_options));
  auto ring = std::make_shared<DeviceRing>();
  ring->device = device;
  TOKPACK_RETURN_IF_ERROR(AllocateSlots(ring.get(), device_prefetch, options, stored_item));
  cudaStream_t stream = nullptr;
  TOKPACK_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return std::unique_ptr<DeviceLoader>(
      new DeviceLoaderImpl(std::move(host), options, device, std::move(ring), stream, stored_item));
}

}  // namespace tokpack
