// Opens a Dataset through a caller-supplied ByteSource opener: the seam for
// remote storage and for tests that inject read faults. See tokpack/dataset.h.
#ifndef TOKPACK_SRC_READER_DATASET_INTERNAL_H_
#define TOKPACK_SRC_READER_DATASET_INTERNAL_H_

#include <functional>
#include <memory>
#include <string>

#include "storage/byte_source.h"
#include "tokpack/dataset.h"

namespace tokpack {

using ByteSourceOpener =
    std::function<StatusOr<std::unique_ptr<ByteSource>>(const std::string& path)>;

StatusOr<std::shared_ptr<Dataset>> OpenDatasetWith(const std::string& path,
                                                   const ByteSourceOpener& open);

class RemoteOpener;
// Opens a dataset stored remotely (manifest required) through `remote`.
StatusOr<std::shared_ptr<Dataset>> OpenRemoteDataset(const std::string& url,
                                                     const RemoteOpener& remote);
// The manifest.json of the remote dataset `remote` reads; NotFound saying the
// URL is not a tokpack dataset when there is none.
StatusOr<Manifest> LoadRemoteManifest(const RemoteOpener& remote);

// The file `name` of the remote dataset at `url`, of at most `max_bytes`.
StatusOr<std::string> ReadRemoteDatasetFile(const std::string& url, const StorageOptions& storage,
                                            const std::string& name, uint64_t max_bytes);

}  // namespace tokpack

#endif  // TOKPACK_SRC_READER_DATASET_INTERNAL_H_
