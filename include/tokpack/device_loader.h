// DeviceLoader: a Loader whose batches arrive in GPU memory, copied ahead of
// need so the training step does not wait for data (docs/gpu.md).
//
// Pipeline: the host loader assembles each row's window of seq_len + 1
// tokens in the dataset's compact dtype (uint16 for most vocabularies) into
// page-locked ring buffers; a copy thread moves them to the GPU on its own
// CUDA stream and a kernel widens them there into inputs and targets
// (int32 or int64), then records an event per batch. A consumer makes its
// stream wait on that event (UseOn); a device buffer is refilled only after
// every stream that used it has passed the point where the batch was
// released.
//
// Available only in builds with TOKPACK_ENABLE_CUDA; elsewhere Create()
// returns FailedPrecondition. Next(), SaveState() and LoadState() must be
// called from one thread at a time; batches may be released from any thread.
#ifndef TOKPACK_DEVICE_LOADER_H_
#define TOKPACK_DEVICE_LOADER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokpack/loader.h"
#include "tokpack/status.h"

namespace tokpack {

// One rank's batch in GPU memory: arrays as in Batch, on device device().
class DeviceBatch {
 public:
  virtual ~DeviceBatch() = default;
  virtual int device() const = 0;
  virtual int64_t batch_size() const = 0;
  virtual int64_t seq_len() const = 0;
  virtual OutputDtype dtype() const = 0;  // kInt32 or kInt64.
  virtual int64_t step() const = 0;
  // Device pointers, valid while this batch is alive. Read them only from
  // streams passed to UseOn().
  virtual const void* inputs() const = 0;
  virtual const void* targets() const = 0;
  virtual const int32_t* position_ids() const = 0;  // Null without boundaries.
  virtual const int32_t* cu_seqlens() const = 0;    // Null without boundaries.
  virtual int64_t num_cu_seqlens() const = 0;

  // Makes work queued on `stream` (a cudaStream_t; nullptr is the default
  // stream) after this call wait until the batch is on the device, and
  // registers the stream as a user: when the batch is released, the buffer
  // is reused only after the work queued on `stream` by then has finished.
  // Thread-safe. Internal if CUDA refuses (e.g. an invalid stream).
  virtual Status UseOn(void* stream) const = 0;
};

class DeviceLoader {
 public:
  // True if this build has CUDA and a device is usable; else false and, if
  // `why` is given, the reason (no CUDA in the build, no driver, no device).
  static bool Available(std::string* why);

  // A host Loader over `sources` with `options` (its dtype is the output
  // dtype on the device, int32 or int64) feeding device `device`, with
  // `device_prefetch` device buffers. FailedPrecondition without CUDA or
  // without that device; ResourceExhausted if memory runs out; otherwise
  // the errors of Loader::Create.
  static StatusOr<std::unique_ptr<DeviceLoader>> Create(std::vector<Loader::Source> sources,
                                                        const LoaderOptions& options, int device,
                                                        int device_prefetch = 3);
  // Stops the copy thread. Outstanding batches stay valid.
  virtual ~DeviceLoader() = default;

  // The next batch; nullptr at the end; DeadlineExceeded (nothing changed)
  // if none is on the device within `timeout_seconds`. Errors of the host
  // loader or of CUDA surface here.
  virtual StatusOr<std::shared_ptr<const DeviceBatch>> Next(double timeout_seconds) = 0;
  virtual StatusOr<std::shared_ptr<const DeviceBatch>> Next() = 0;

  // The cursor after the last batch Next() returned (as Loader::SaveState).
  virtual std::string SaveState() const = 0;
  // Drops batches copied ahead and continues from `state` (as
  // Loader::LoadState).
  virtual Status LoadState(const std::string& state) = 0;
  virtual int64_t Step() const = 0;
  virtual int64_t RemainingSteps() const = 0;
  // The host loader's statistics, with wait times measured at this Next().
  virtual LoaderStats Stats() const = 0;
};

}  // namespace tokpack

#endif  // TOKPACK_DEVICE_LOADER_H_
