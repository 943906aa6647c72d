// DeviceLoader in builds without CUDA (TOKPACK_ENABLE_CUDA=OFF): a clear
// error instead of a link failure, so callers need no build-time checks.
#include "tokpack/device_loader.h"

namespace tokpack {

bool DeviceLoader::Available(std::string* why) {
  if (why) *why = "tokpack was built without CUDA (TOKPACK_ENABLE_CUDA=OFF)";
  return false;
}

StatusOr<std::unique_ptr<DeviceLoader>> DeviceLoader::Create(std::vector<Loader::Source>,
                                                             const LoaderOptions&, int, int) {
  return FailedPreconditionError("tokpack was built without CUDA (TOKPACK_ENABLE_CUDA=OFF)");
}

}  // namespace tokpack
