#include <stdlib.h>

#include <cerrno>

#include "build/builder_internal.h"
#include "storage/http_store.h"
#include "storage/object_url.h"
#include "tokpack/builder.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {
namespace {

// The dataset is built in a local temporary directory and pushed from there
// (PushDataset: a new generation of objects, manifest.json last), so readers
// of the URL never see a partial dataset. PushDataset re-checks the URL
// before it publishes, as a local commit re-checks the output.
StatusOr<BuildSummary> BuildAndPush(const BuildOptions& options, FileSystem* fs) {
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation location,
                           ResolveObjectUrl(options.output, options.storage));
  if (location.kind == ObjectLocation::Kind::kHttp) {
    return InvalidArgumentError("--output " + options.output +
                                ": a dataset can be written to s3:// or gs://, not over HTTP");
  }
  // Refused before any work, as an existing local output is.
  if (!options.force) {
    HttpStore store(std::move(location), HttpOptions::From(options.storage));
    StatusOr<uint64_t> existing = store.Size(Manifest::kFileName);
    if (existing.ok()) {
      return AlreadyExistsError(options.output +
                                " already holds a dataset; use --force to replace it");
    }
    if (existing.status().code() != StatusCode::kNotFound) return existing.status();
  }
  std::string scratch = JoinPath(options.storage.temp_dir, "tokpack-build-XXXXXX");
  if (::mkdtemp(scratch.data()) == nullptr) return ErrnoToStatus(errno, "mkdtemp", scratch);

  BuildOptions local = options;
  local.output = JoinPath(scratch, "data");
  StatusOr<BuildSummary> summary = BuildWithFileSystem(local, fs);
  if (summary.ok()) {
    PushOptions push;
    push.dir = local.output;
    push.url = options.output;
    push.force = options.force;
    push.storage = options.storage;
    push.cancel = options.cancel;
    StatusOr<uint64_t> pushed = PushDataset(push);
    if (pushed.ok()) {
      summary->uploaded_bytes = *pushed;
    } else {
      summary = pushed.status();
    }
  }
  RemoveAllQuietly(scratch);
  return summary;
}

}  // namespace

// Here, above the build layer, because an object-store output is pushed (an op).
StatusOr<BuildSummary> Build(const BuildOptions& options) {
  BuildOptions o = options;
  // The build's flag also stops its remote reads, unless they have their own.
  if (o.storage.cancel == nullptr) o.storage.cancel = o.cancel;
  if (IsRemoteUrl(o.output)) return BuildAndPush(o, PosixFileSystem());
  return BuildWithFileSystem(o, PosixFileSystem());
}

}  // namespace tokpack
