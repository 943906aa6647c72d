// StorageOptions: how remote datasets and inputs (s3://, gs://, http(s)://)
// are reached and cached, as a plain value passed to Dataset::Open, the
// packer (BuildOptions::storage) and the dataset operations. Nothing in the
// library reads the environment except StorageOptions::FromEnvironment(), so
// two datasets or loaders in one process can use different settings. The
// settings are declared once, in the table behind Describe() (names, checks,
// documentation and the environment variables of each), from which
// FromEnvironment(), the Python attributes and stubs and docs/remote.md follow.
// StorageOptions is a value (copy it freely); ReadStats is thread-safe.
#ifndef TOKPACK_STORAGE_H_
#define TOKPACK_STORAGE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tokpack/cancel.h"
#include "tokpack/files.h"
#include "tokpack/options.h"
#include "tokpack/status.h"

namespace tokpack {

struct StorageOptions : OptionSet<StorageOptions> {
  // Directory of the chunk cache shared by the processes of a node; remote
  // datasets cannot be opened while it is empty.
  std::string cache_dir;
  // Bytes the cache's chunks may take on disk.
  uint64_t cache_bytes = uint64_t{64} << 30;
  // HTTP attempts per request before it fails as Unavailable.
  int http_attempts = 8;
  // Seconds without a byte after which a transfer is abandoned and retried;
  // so a server that accepts and never answers fails a request after about
  // http_attempts * (http_stall_seconds + a 4 s backoff at most).
  int http_stall_seconds = 20;
  // HTTP requests in flight at once, shared by the remote datasets of a
  // process opened with equal settings (per build input otherwise);
  // prefetches take at most three quarters of them (all of one) and reads go
  // before waiting prefetches.
  int http_concurrency = 16;
  // Background threads filling the cache ahead of reads, shared by the remote
  // datasets of a process opened with equal settings: the most prefetches in
  // flight, each taking the queued chunk whose step comes first across them.
  int prefetch_threads = 8;
  // Where `build --output URL` builds before pushing.
  std::string temp_dir = "/tmp";

  // S3 endpoint for S3-compatible stores (path-style requests); empty:
  // https://BUCKET.s3.REGION.amazonaws.com.
  std::string s3_endpoint;
  // S3 region; empty: the profile's region in aws_config_file, else
  // us-east-1.
  std::string aws_region;
  // S3 keys; empty: the profile's keys in aws_shared_credentials_file, else
  // anonymous.
  std::string aws_access_key_id;
  std::string aws_secret_access_key;
  std::string aws_session_token;
  // Profile read from the AWS files.
  std::string aws_profile = "default";
  // AWS credentials file; empty: none.
  std::string aws_shared_credentials_file;
  // AWS config file (for the region); empty: none.
  std::string aws_config_file;
  // GCS XML API endpoint.
  std::string gcs_endpoint = "https://storage.googleapis.com";
  // GCS HMAC keys; empty: anonymous.
  std::string gs_access_key_id;
  std::string gs_secret_access_key;

  // When set and true, every request made through these options stops: a
  // transfer within about a second, a wait between retries or for another
  // process's cache lock at once, a local verify_on_open after its current
  // chunk, failing as Cancelled. Null: never. The CLI points it at its
  // SIGINT flag; the Python binding sets it on Ctrl-C while it opens a
  // dataset.
  CancelFlag cancel;

  // The defaults above overridden from the environment as each option's
  // OptionInfo::env says (an empty variable counts as unset; docs/remote.md
  // lists them). InvalidArgument naming the variable for a value its option
  // refuses (a count that is not a positive integer).
  static StatusOr<StorageOptions> FromEnvironment();
  // CheckFields(): InvalidArgument naming the first field out of range
  // (counts must be positive).
  Status Validate() const;
};

// One reader's remote traffic, for LoaderStats: pass it to the Dataset's
// reads and prefetches, and only their cache hits and downloads are counted
// here. Thread-safe (relaxed atomics; each counter is exact, a snapshot of
// several is not).
struct ReadStats {
  std::atomic<uint64_t> cache_hits{0};
  std::atomic<uint64_t> cache_misses{0};  // Chunks downloaded (each verified).
  std::atomic<uint64_t> bytes_fetched{0};
  std::atomic<uint64_t> fetch_micros{0};  // Summed over fetching threads.
  // Downloads served from memory because the cache could not store them
  // (disk full, read-only, a chunk over the limit); included in cache_misses.
  std::atomic<uint64_t> uncached_reads{0};
};

// True for "scheme://..." paths, which name remote storage.
bool IsRemoteUrl(std::string_view path);

// The whole object `name` of the remote dataset at `dataset_url` (e.g. its
// tokenizer file), fetched once, not cached, of at most `max_bytes` (the caps
// of tokpack/files.h: kMaxTokenizerBytes, kMaxInputListBytes). NotFound naming
// the URL if it does not exist; a larger object, whether its Content-Length
// says so or its body runs on, fails as ResourceExhausted naming its URL and
// the cap, without being read further.
StatusOr<std::string> ReadObject(const std::string& dataset_url, const std::string& name,
                                 const StorageOptions& options, uint64_t max_bytes);

}  // namespace tokpack

#endif  // TOKPACK_STORAGE_H_
