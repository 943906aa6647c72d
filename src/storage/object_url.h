// Object-store locations (s3://, gs://, http(s)://) and how to reach them:
// the HTTP URL of an object, and whether and how requests are signed.
#ifndef TOKPACK_SRC_STORAGE_OBJECT_URL_H_
#define TOKPACK_SRC_STORAGE_OBJECT_URL_H_

#include <string>
#include <string_view>

#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

// RFC 3986 percent-encoding of everything but unreserved characters (and
// '/' when `keep_slash`), as SigV4's canonical requests want it.
std::string PercentEncode(std::string_view s, bool keep_slash);

// Where a dataset lives remotely. Objects are named relative to `prefix`.
struct ObjectLocation {
  enum class Kind { kHttp, kS3, kGcs };
  Kind kind = Kind::kHttp;
  std::string url;     // As given, without a trailing '/'.
  std::string base;    // HTTP(S) URL that object names are appended to, ending in '/'.
  std::string bucket;  // S3 and GCS.
  std::string region;  // For SigV4 ("auto" for GCS).
  std::string access_key, secret_key, session_token;  // Empty: anonymous.

  // The HTTP(S) URL of `name` (e.g. "shard-00000.bin"), percent-encoded.
  std::string UrlOf(std::string_view name) const;
  bool signed_requests() const { return !access_key.empty(); }
};

// Whether `path` starts with a scheme ResolveObjectUrl reads (s3://, gs://,
// http://, https://). Narrower than IsRemoteUrl (any "scheme://"): a text
// that merely contains "://" is no URL.
bool HasObjectStoreScheme(std::string_view path);

// Resolves `url` with the credentials and endpoints of `options`:
// - s3://bucket/prefix: options.s3_endpoint (path-style requests to an
//   S3-compatible store), else https://bucket.s3.REGION.amazonaws.com; region
//   options.aws_region, else the profile's in aws_config_file, else
//   us-east-1; keys from options, else the aws_profile section of
//   aws_shared_credentials_file; none: anonymous.
// - gs://bucket/prefix: GCS's XML API at options.gcs_endpoint, signed with
//   the gs_* HMAC keys, else anonymous (public data).
// - http(s)://host/path: plain ranged GETs.
// InvalidArgument for other schemes or a missing bucket.
StatusOr<ObjectLocation> ResolveObjectUrl(std::string_view url, const StorageOptions& options);

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_OBJECT_URL_H_
