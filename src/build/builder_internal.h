// The build into a local directory, through the FileSystem to write through
// (tests inject write faults there). Build() itself (src/ops/build.cc) adds
// the push for object-store outputs, which is an op above this layer.
#ifndef TOKPACK_SRC_BUILD_BUILDER_INTERNAL_H_
#define TOKPACK_SRC_BUILD_BUILDER_INTERNAL_H_

#include "base/file_system.h"
#include "tokpack/builder.h"

namespace tokpack {

StatusOr<BuildSummary> BuildWithFileSystem(const BuildOptions& options, FileSystem* fs);

}  // namespace tokpack

#endif  // TOKPACK_SRC_BUILD_BUILDER_INTERNAL_H_
