#include <stdlib.h>

#include "io/file_system.h"
#include "storage/http_store.h"
#include "storage/object_url.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {

StatusOr<uint64_t> PushDataset(const PushOptions& options) {
  if (IsRemoteUrl(options.dir)) {
    return InvalidArgumentError("push uploads a local dataset, and " + options.dir +
                                " is remote already; copy it with the store's own tools");
  }
  StatusOr<Manifest> loaded = Manifest::Load(options.dir);
  if (!loaded.ok()) {
    // A bare prefix has no chunk checksums, which every remote read verifies.
    return loaded.status().WithContext(
        "push needs a tokpack dataset (its checksums guard remote reads)");
  }
  Manifest m = std::move(*loaded);
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation location, ResolveObjectUrl(options.url, options.storage));
  if (location.kind == ObjectLocation::Kind::kHttp) {
    return InvalidArgumentError("push needs an object store (s3:// or gs://), not " + options.url);
  }
  // Files in upload order; manifest.json last, so a reader never finds a
  // manifest whose files are not all there yet.
  std::vector<std::pair<std::string, uint64_t>> files;
  for (const ShardInfo& s : m.shards) {
    if (s.path.find("..") != std::string::npos || (!s.path.empty() && s.path[0] == '/')) {
      return InvalidArgumentError(
          options.dir + " refers to shards outside itself (" + s.path +
          "; a merged or imported dataset); push its parts, or copy them into one directory");
    }
    files.push_back({s.path + ".bin", s.bin.bytes});
    files.push_back({s.path + ".idx", s.idx.bytes});
  }
  if (!m.tokenizer.file.empty()) files.push_back({m.tokenizer.file, 0});
  if (m.provenance.inputs_in_file) files.push_back({Provenance::kInputsFileName, 0});
  for (auto& [name, bytes] : files) {
    TOKPACK_ASSIGN_OR_RETURN(uint64_t size, FileSize(JoinPath(options.dir, name)));
    if (name != m.tokenizer.file && name != Provenance::kInputsFileName && size != bytes) {
      return DataLossError(JoinPath(options.dir, name) + " has " + std::to_string(size) +
                           " bytes but manifest.json says " + std::to_string(bytes) +
                           "; run tokpack verify");
    }
    bytes = size;
  }
  files.push_back({Manifest::kFileName, 0});

  HttpStore store(location, HttpOptions::From(options.storage));
  if (!options.force) {
    StatusOr<std::string> existing = store.Get(Manifest::kFileName, Manifest::kMaxJsonBytes);
    if (existing.ok()) {
      return AlreadyExistsError(options.url +
                                " already holds a dataset; use --force to replace it");
    }
    if (existing.status().code() != StatusCode::kNotFound) return existing.status();
  }
  uint64_t total = 0;
  for (const auto& [name, bytes] : files) {
    if (options.cancel && options.cancel->load()) return CancelledError("push interrupted");
    const std::string path = JoinPath(options.dir, name);
    TOKPACK_RETURN_IF_ERROR(
        store.PutFile(name, path, options.part_bytes).WithContext("uploading " + path));
    TOKPACK_ASSIGN_OR_RETURN(uint64_t size, FileSize(path));
    total += size;
    if (options.on_file) options.on_file(name, size);
  }
  return total;
}

}  // namespace tokpack
