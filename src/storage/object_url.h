// Object-store locations (s3://, gs://, http(s)://) and how to reach them:
// the HTTP URL of an object, and whether and how requests are signed.
#ifndef TOKPACK_SRC_STORAGE_OBJECT_URL_H_
#define TOKPACK_SRC_STORAGE_OBJECT_URL_H_

#include <string>
#include <string_view>

#include "tokpack/status.h"

namespace tokpack {

// RFC 3986 percent-encoding of everything but unreserved characters (and
// '/' when `keep_slash`), as SigV4's canonical requests want it.
std::string PercentEncode(std::string_view s, bool keep_slash);

// True for "scheme://..." paths that name remote storage.
bool IsRemoteUrl(std::string_view path);

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

// Resolves `url` with credentials and endpoints from the environment:
// - s3://bucket/prefix: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (path-style
//   requests to an S3-compatible store), else https://bucket.s3.REGION.
//   amazonaws.com; region from AWS_REGION, AWS_DEFAULT_REGION, the profile's
//   config, else us-east-1; keys from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
//   AWS_SESSION_TOKEN, else the AWS_PROFILE (default "default") section of
//   AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials); none: anonymous.
// - gs://bucket/prefix: GCS's XML API at TOKPACK_GCS_ENDPOINT (default
//   https://storage.googleapis.com), signed with HMAC keys from
//   GS_ACCESS_KEY_ID and GS_SECRET_ACCESS_KEY, else anonymous (public data).
// - http(s)://host/path: plain ranged GETs.
// InvalidArgument for other schemes or a missing bucket.
StatusOr<ObjectLocation> ResolveObjectUrl(std::string_view url);

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_OBJECT_URL_H_
