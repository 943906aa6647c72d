// The loader's constructor with its device stage given: Loader::Create makes
// the CUDA stage for a CUDA device; tests drive the same pipeline with a
// stand-in stage on the CPU (tests/reader/host_stage.h).
#ifndef TOKPACK_SRC_READER_LOADER_INTERNAL_H_
#define TOKPACK_SRC_READER_LOADER_INTERNAL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "reader/device_stage.h"
#include "tokpack/loader.h"

namespace tokpack {

// a * b, or UINT64_MAX where it would overflow.
inline uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

// The global positions the options allow in all, for sources of `samples`
// positions per epoch weighted by `phases`, when the batch of step `step`
// starts at `position`: UINT64_MAX when endless. An epoch counts the
// sources with a positive weight in some phase; max_steps ends where the
// step count (continuing across resumes) reaches it. epochs and max_steps
// may be up to 2^63 each, so the products are checked: a limit past
// Cursor::kMaxPosition is refused naming the option rather than taken for
// "endless" (or a wrapped step count).
StatusOr<uint64_t> PositionLimit(const LoaderOptions& o, const std::vector<uint64_t>& samples,
                                 const std::vector<MixturePhase>& phases, uint64_t position,
                                 int64_t step);

// `stage` null: batches stay on the CPU.
StatusOr<std::unique_ptr<Loader>> CreateLoader(std::vector<Loader::Source> sources,
                                               const LoaderOptions& options,
                                               std::shared_ptr<DeviceStage> stage);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_LOADER_INTERNAL_H_
