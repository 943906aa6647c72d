// The device stage in builds without CUDA (TOKPACK_ENABLE_CUDA=OFF): a clear
// error instead of a link failure, so callers need no build-time checks.
#include "reader/device_stage.h"

namespace tokpack {
namespace {
constexpr char kNoCuda[] = "tokpack was built without CUDA (TOKPACK_ENABLE_CUDA=OFF)";
}  // namespace

bool CudaAvailable(std::string* why) {
  if (why) *why = kNoCuda;
  return false;
}

StatusOr<std::shared_ptr<DeviceStage>> DeviceStage::Create(const LoaderOptions&, size_t, bool) {
  return FailedPreconditionError(kNoCuda);
}

}  // namespace tokpack
