// Internal entry points of the packer that take the FileSystem to write
// through, so tests can inject write faults. See tokpack/builder.h.
#ifndef TOKPACK_SRC_PACKER_BUILDER_INTERNAL_H_
#define TOKPACK_SRC_PACKER_BUILDER_INTERNAL_H_

#include "io/file_system.h"
#include "tokpack/builder.h"

namespace tokpack {

StatusOr<BuildSummary> BuildWithFileSystem(const BuildOptions& options, FileSystem* fs);

// Build() for an s3:// or gs:// `options.output`: builds in a local
// temporary directory through `fs`, then pushes the dataset.
StatusOr<BuildSummary> BuildAndPush(const BuildOptions& options, FileSystem* fs);

}  // namespace tokpack

#endif  // TOKPACK_SRC_PACKER_BUILDER_INTERNAL_H_
