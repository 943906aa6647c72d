// The loader's constructor with its device stage given: Loader::Create makes
// the CUDA stage for a CUDA device; tests drive the same pipeline with a
// stand-in stage on the CPU (tests/reader/host_stage.h).
#ifndef TOKPACK_SRC_READER_LOADER_INTERNAL_H_
#define TOKPACK_SRC_READER_LOADER_INTERNAL_H_

#include <memory>
#include <vector>

#include "reader/device_stage.h"
#include "tokpack/loader.h"

namespace tokpack {

// `stage` null: batches stay on the CPU.
StatusOr<std::unique_ptr<Loader>> CreateLoader(std::vector<Loader::Source> sources,
                                               const LoaderOptions& options,
                                               std::shared_ptr<DeviceStage> stage);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_LOADER_INTERNAL_H_
