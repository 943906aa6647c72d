// Packer inputs in object storage (s3://, gs://, http(s)://): listing a
// prefix or glob, an object's size, a sequential stream over one object and
// random access for formats that need it (Parquet footers). All go through
// HttpStore, so credentials, endpoints and retries are the reader's, taken
// from the caller's StorageOptions.
// Thread-safe (no shared state beyond HttpStore's own).
#ifndef TOKPACK_SRC_INPUTS_REMOTE_INPUT_H_
#define TOKPACK_SRC_INPUTS_REMOTE_INPUT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inputs/input_stream.h"
#include "inputs/parquet/parquet_plugin.h"
#include "tokpack/cancel.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

struct RemoteObject {
  std::string url;  // scheme://bucket/key
  uint64_t bytes = 0;
};

// Expands one remote input spec, sorted by key (byte order):
// - "s3://b/prefix/**/*.parquet": keys under the part before the first
//   wildcard that match the pattern ('*' and '?' within one '/'-separated
//   component, "**" across any number of them);
// - "s3://b/prefix/" (trailing slash): every key under the prefix;
// - "s3://b/key" or "https://host/file": that one object (its size by HEAD).
// NotFound naming the spec when it matches nothing.
StatusOr<std::vector<RemoteObject>> ExpandRemoteInput(const std::string& spec,
                                                      const StorageOptions& storage);

// Streams the object at `url` from the start, in ranged GETs of a few MiB
// with the next one fetched while the current one is consumed; each byte is
// fetched once. Adds bytes fetched to `*raw_bytes_read` (may be null); fails
// with Cancelled soon after `*cancel` turns true.
StatusOr<std::unique_ptr<ByteStream>> OpenRemoteStream(const std::string& url,
                                                       const StorageOptions& storage,
                                                       std::atomic<uint64_t>* raw_bytes_read,
                                                       const CancelFlag& cancel);

// Random access to the object at `url` (ranged GETs), for the Parquet plugin.
StatusOr<std::unique_ptr<parquet_plugin::Input>> OpenRemoteRandomAccess(
    const std::string& url, const StorageOptions& storage);

}  // namespace tokpack

#endif  // TOKPACK_SRC_INPUTS_REMOTE_INPUT_H_
