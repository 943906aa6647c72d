// HttpStore: reads (and writes) the objects of one ObjectLocation over HTTP(S)
// with libcurl: SigV4-signed for S3 and GCS HMAC keys, retried with
// exponential backoff and full jitter on 5xx, 429, timeouts, stalls,
// connection resets and short bodies. Requests take their slot and
// connection from a ConnectionPool, which the stores of one process's
// remote datasets share (StoragePools): a reader never waits behind
// prefetches for a connection. Thread-safe.
//
// What a server says is untrusted: redirects are followed only within the
// origin (scheme, host and port) of the request, at most kMaxRedirects of
// them; no body is kept past what the caller allows (a whole object's cap, a
// range's length, a little of an error's text), checked as it arrives; a
// ranged GET's 206 reply must carry the Content-Range asked for.
#ifndef TOKPACK_SRC_STORAGE_HTTP_STORE_H_
#define TOKPACK_SRC_STORAGE_HTTP_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_system.h"
#include "storage/connection_pool.h"
#include "storage/object_url.h"
#include "tokpack/cancel.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

struct HttpOptions {
  int max_attempts = 8;
  double backoff_initial_seconds = 0.05;
  double backoff_max_seconds = 4.0;
  long connect_timeout_seconds = 10;
  // A transfer that moves no byte for this long is abandoned and retried.
  long stall_seconds = 20;
  int max_concurrency = 16;
  // See StorageOptions::cancel.
  CancelFlag cancel;

  // Defaults with the attempts, stall timeout, concurrency and cancel flag of `storage`.
  static HttpOptions From(const StorageOptions& storage);
};

class HttpStore {
 public:
  // Requests go through `pool`; null: a pool of its own, of
  // options.max_concurrency slots.
  HttpStore(ObjectLocation location, HttpOptions options,
            std::shared_ptr<ConnectionPool> pool = nullptr);
  HttpStore(const HttpStore&) = delete;
  HttpStore& operator=(const HttpStore&) = delete;

  static constexpr int kMaxRedirects = 5;

  using Priority = ConnectionPool::Priority;

  const ObjectLocation& location() const { return location_; }
  // The attempts a request makes before it fails (HttpOptions::max_attempts).
  int max_attempts() const { return options_.max_attempts; }

  // The whole object `name`, of at most `max_bytes` (else ResourceExhausted
  // naming the URL and the cap, as soon as the size is announced or passed).
  // NotFound (naming the URL) if it does not exist; FailedPrecondition when
  // access is denied or a redirect leaves the origin; Cancelled once
  // options.cancel is set; Unavailable once retries are exhausted, with the
  // last error.
  StatusOr<std::string> Get(const std::string& name, uint64_t max_bytes) const;
  // The attempts of one request that several calls share (a chunk's
  // prefetch and the read that waited for it): a call makes at most `left`
  // more, each taken from it, and once none are left it fails naming all
  // `made` so far and the last one's error, without a request.
  struct Attempts {
    int left = 0;
    int made = 0;
    std::string last_error;
  };
  // Exactly `n` bytes of `name` at `offset` into *out. A 206 reply whose
  // Content-Range is not that range (or that has none) is retried as a short
  // body is, and named, with both ranges, in the error once retries run out.
  // Retries come out of *attempts when given, else options.max_attempts.
  Status GetRange(const std::string& name, uint64_t offset, uint64_t n, std::string* out,
                  Priority priority = Priority::kForeground, Attempts* attempts = nullptr) const;
  // The size of object `name` (a HEAD request); NotFound if it does not exist.
  StatusOr<uint64_t> Size(const std::string& name) const;
  struct Listed {
    std::string key;  // The full key in the bucket.
    uint64_t bytes = 0;
  };
  // Every object whose key starts with `key_prefix`, in the store's order
  // (S3 ListObjectsV2, page by page). For a location that names a bucket
  // (s3://bucket, gs://bucket); at most `max_keys` keys, else
  // ResourceExhausted.
  StatusOr<std::vector<Listed>> List(const std::string& key_prefix,
                                     size_t max_keys = size_t{1} << 24) const;
  // Writes `data` as object `name` in one PUT.
  Status Put(const std::string& name, const std::string& data) const;
  // Deletes object `name`; OK also when it does not exist.
  Status Delete(const std::string& name) const;
  // Sees each piece of a file as it is read for its upload, in order, before
  // the piece is sent; a non-OK status stops the upload and is returned.
  using PieceCheck = std::function<Status(uint64_t offset, std::string_view piece)>;
  // Writes open local file `file` as object `name`: one PUT up to
  // `part_bytes`, else an S3 multipart upload (also GCS's XML API) of
  // `part_bytes` parts, aborted on failure so no partial object remains.
  // `check` (may be empty) sees every piece, the empty one of an empty file
  // too, so that what goes up is what it checked, read once.
  Status PutFile(const std::string& name, const ReadOnlyFile& file,
                 uint64_t part_bytes = uint64_t{64} << 20, const PieceCheck& check = nullptr) const;

 private:
  struct Response;
  // Replies that are not object data (listings, multipart replies) are small.
  static constexpr uint64_t kMaxReplyBytes = uint64_t{16} << 20;

  // `query` is appended to the object's URL as is (e.g. "?uploads"). n >= 0:
  // a ranged GET of bytes [offset, offset + n); else the body is the whole
  // reply, of at most `max_bytes`. `attempts` as for GetRange().
  Status Request(const std::string& name, const char* method, const std::string* upload,
                 int64_t offset, int64_t n, std::string* out, const std::string& query = "",
                 std::string* etag = nullptr, int64_t* content_length = nullptr,
                 uint64_t max_bytes = kMaxReplyBytes, Priority priority = Priority::kForeground,
                 Attempts* attempts = nullptr) const;
  // One attempt, following redirects within the origin.
  Status Once(const std::string& url, const char* method, const std::string* upload, int64_t offset,
              int64_t n, uint64_t max_bytes, Priority priority, Response* r) const;
  // One transfer of `url` on `curl`.
  void Transfer(void* curl, const std::string& url, const char* method, const std::string* upload,
                int64_t offset, int64_t n, uint64_t max_bytes, Response* r) const;
  bool Cancelled() const { return options_.cancel && options_.cancel->load(); }
  // Sleeps `seconds`, or less when cancelled.
  void Pause(double seconds) const;

  ObjectLocation location_;
  HttpOptions options_;
  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_HTTP_STORE_H_
