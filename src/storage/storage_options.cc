// StorageOptions' table: the one declaration of each storage setting, its
// checks and the environment variables that set it. FromEnvironment() (the
// only reader of the environment in the library), the Python attributes and
// stubs, and the table of docs/remote.md follow from it.
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/option_table.h"
#include "storage/http_store.h"
#include "storage/object_url.h"
#include "tokpack/storage.h"

namespace tokpack {
namespace {

using O = StorageOptions;

// `e` read from the environment as `sources` say (OptionInfo::env).
OptionTable<O>::Entry FromEnv(OptionTable<O>::Entry e, std::vector<std::string> sources) {
  e.info.env = std::move(sources);
  return e;
}

// A count of at least one.
template <typename Ref>
OptionTable<O>::Entry Count(std::string name, std::string doc, Ref ref, const char* variable) {
  return FromEnv(
      IntOption<O>(std::move(name), std::move(doc), ref, 1, std::numeric_limits<int>::max()),
      {variable});
}

template <typename Ref>
OptionTable<O>::Entry Text(std::string name, std::string doc, Ref ref,
                           std::vector<std::string> sources) {
  return FromEnv(StringOption<O>(std::move(name), std::move(doc), ref), std::move(sources));
}

// The value of variable `name`; empty when unset (an empty value counts as unset).
std::string Env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::string(v) : std::string();
}

// The first value `sources` give (see OptionInfo::env) and the source that
// gave it (for errors), or an empty value.
std::pair<std::string, std::string> FirstFromEnvironment(const std::vector<std::string>& sources) {
  for (const std::string& source : sources) {
    if (source.rfind("~/", 0) == 0) {
      if (const std::string home = Env("HOME"); !home.empty()) {
        return {home + source.substr(1), source};
      }
    } else if (source.rfind('/', 0) == 0) {
      return {source, source};
    } else if (std::string v = Env(source); !v.empty()) {
      return {v, source};
    }
  }
  return {};
}

}  // namespace

template <>
const OptionTable<O>& OptionTableOf<O>() {
  static const OptionTable<O>* table = new OptionTable<O>({
      Text("cache_dir",
           "Directory of the chunk cache shared by the processes of a node (empty: remote "
           "datasets cannot be opened)",
           [](auto& o) -> auto& { return o.cache_dir; },
           {"TOKPACK_CACHE_DIR", "~/.cache/tokpack", "/tmp/tokpack-cache"}),
      FromEnv(UIntOption<O>(
                  "cache_bytes", "Bytes the cache's chunks may take on disk",
                  [](auto& o) -> auto& { return o.cache_bytes; }, 1),
              {"TOKPACK_CACHE_BYTES"}),
      Count(
          "http_attempts", "HTTP attempts per request before it fails as Unavailable",
          [](auto& o) -> auto& { return o.http_attempts; }, "TOKPACK_HTTP_ATTEMPTS"),
      Count(
          "http_stall_seconds",
          "Seconds without a byte after which a transfer is abandoned and retried",
          [](auto& o) -> auto& { return o.http_stall_seconds; }, "TOKPACK_HTTP_STALL_SECONDS"),
      Count(
          "http_concurrency",
          "HTTP requests in flight at once, shared by the remote datasets of a process opened "
          "with the same settings, or per build input (prefetches take at most three quarters)",
          [](auto& o) -> auto& { return o.http_concurrency; }, "TOKPACK_HTTP_CONCURRENCY"),
      Count(
          "prefetch_threads",
          "Threads filling the cache ahead of reads, shared by the remote datasets of a process "
          "opened with the same settings",
          [](auto& o) -> auto& { return o.prefetch_threads; }, "TOKPACK_PREFETCH_THREADS"),
      Text("temp_dir", "Where `build --output URL` builds before pushing",
           [](auto& o) -> auto& { return o.temp_dir; }, {"TMPDIR"}),
      Text("s3_endpoint",
           "S3 endpoint for S3-compatible stores, path-style (empty: "
           "https://BUCKET.s3.REGION.amazonaws.com)",
           [](auto& o) -> auto& { return o.s3_endpoint; },
           {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}),
      Text("aws_region", "S3 region (empty: the profile's in aws_config_file, else us-east-1)",
           [](auto& o) -> auto& { return o.aws_region; }, {"AWS_REGION", "AWS_DEFAULT_REGION"}),
      Text("aws_access_key_id",
           "S3 access key (empty: the profile's in aws_shared_credentials_file, else anonymous)",
           [](auto& o) -> auto& { return o.aws_access_key_id; }, {"AWS_ACCESS_KEY_ID"}),
      Text("aws_secret_access_key", "S3 secret key (empty: the profile's)",
           [](auto& o) -> auto& { return o.aws_secret_access_key; }, {"AWS_SECRET_ACCESS_KEY"}),
      Text("aws_session_token", "S3 session token (empty: the profile's)",
           [](auto& o) -> auto& { return o.aws_session_token; }, {"AWS_SESSION_TOKEN"}),
      Text("aws_profile", "Profile read from the AWS files",
           [](auto& o) -> auto& { return o.aws_profile; }, {"AWS_PROFILE"}),
      Text("aws_shared_credentials_file", "AWS credentials file (empty: none)",
           [](auto& o) -> auto& { return o.aws_shared_credentials_file; },
           {"AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"}),
      Text("aws_config_file", "AWS config file, for the region (empty: none)",
           [](auto& o) -> auto& { return o.aws_config_file; },
           {"AWS_CONFIG_FILE", "~/.aws/config"}),
      Text("gcs_endpoint", "GCS XML API endpoint", [](auto& o) -> auto& { return o.gcs_endpoint; },
           {"TOKPACK_GCS_ENDPOINT"}),
      Text("gs_access_key_id", "GCS HMAC access key (empty: anonymous)",
           [](auto& o) -> auto& { return o.gs_access_key_id; }, {"GS_ACCESS_KEY_ID"}),
      Text("gs_secret_access_key", "GCS HMAC secret (empty: anonymous)",
           [](auto& o) -> auto& { return o.gs_secret_access_key; }, {"GS_SECRET_ACCESS_KEY"}),
  });
  return *table;
}

template class OptionSet<O>;

StatusOr<StorageOptions> StorageOptions::FromEnvironment() {
  StorageOptions o;
  for (const OptionInfo& info : Describe()) {
    const auto [value, variable] = FirstFromEnvironment(info.env);
    if (value.empty()) continue;
    if (Status s = o.SetText(info.name, value); !s.ok()) {
      const bool count = info.type == OptionType::kInt || info.type == OptionType::kUInt;
      return InvalidArgumentError(variable + "='" + value + "' is " +
                                  (count ? "not a positive integer" : "refused") + ": " +
                                  s.message());
    }
  }
  return o;
}

Status StorageOptions::Validate() const { return CheckFields(); }

StatusOr<std::string> ReadObject(const std::string& dataset_url, const std::string& name,
                                 const StorageOptions& options, uint64_t max_bytes) {
  TOKPACK_RETURN_IF_ERROR(options.Validate());
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation location, ResolveObjectUrl(dataset_url, options));
  return HttpStore(std::move(location), HttpOptions::From(options)).Get(name, max_bytes);
}

}  // namespace tokpack
