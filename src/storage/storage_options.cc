#include <cstdlib>
#include <limits>

#include "base/option_table.h"
#include "storage/http_store.h"
#include "storage/object_url.h"
#include "tokpack/storage.h"

namespace tokpack {
namespace {

// The variable's value; empty when unset (an empty value counts as unset).
std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Sets *out from variable `name` when it is set: a positive integer no
// larger than `max`, else InvalidArgument naming the variable.
template <typename T>
Status PositiveFromEnv(const char* name, T max, T* out) {
  const std::string v = Env(name);
  if (v.empty()) return Status::Ok();
  // The option table's parser of unsigned text: digits only, no wrap-around.
  const StatusOr<OptionValue> parsed = ParseOptionText(name, OptionType::kUInt, v);
  const uint64_t n = parsed.ok() ? std::get<uint64_t>(*parsed) : 0;
  if (n == 0 || n > static_cast<uint64_t>(max)) {
    return InvalidArgumentError(std::string(name) + "='" + v +
                                "' is not a positive integer (at most " + std::to_string(max) +
                                ")");
  }
  *out = static_cast<T>(n);
  return Status::Ok();
}

Status PositiveInt(const char* name, int* out) {
  return PositiveFromEnv<int>(name, std::numeric_limits<int>::max(), out);
}

}  // namespace

StatusOr<StorageOptions> StorageOptions::FromEnvironment() {
  StorageOptions o;
  const std::string home = Env("HOME");
  o.cache_dir = Env("TOKPACK_CACHE_DIR");
  if (o.cache_dir.empty()) {
    o.cache_dir = home.empty() ? "/tmp/tokpack-cache" : home + "/.cache/tokpack";
  }
  TOKPACK_RETURN_IF_ERROR(PositiveFromEnv<uint64_t>(
      "TOKPACK_CACHE_BYTES", std::numeric_limits<uint64_t>::max(), &o.cache_bytes));
  TOKPACK_RETURN_IF_ERROR(PositiveInt("TOKPACK_HTTP_ATTEMPTS", &o.http_attempts));
  TOKPACK_RETURN_IF_ERROR(PositiveInt("TOKPACK_HTTP_STALL_SECONDS", &o.http_stall_seconds));
  TOKPACK_RETURN_IF_ERROR(PositiveInt("TOKPACK_HTTP_CONCURRENCY", &o.http_concurrency));
  TOKPACK_RETURN_IF_ERROR(PositiveInt("TOKPACK_PREFETCH_THREADS", &o.prefetch_threads));
  if (std::string tmp = Env("TMPDIR"); !tmp.empty()) o.temp_dir = tmp;

  o.s3_endpoint = Env("AWS_ENDPOINT_URL_S3");
  if (o.s3_endpoint.empty()) o.s3_endpoint = Env("AWS_ENDPOINT_URL");
  o.aws_region = Env("AWS_REGION");
  if (o.aws_region.empty()) o.aws_region = Env("AWS_DEFAULT_REGION");
  o.aws_access_key_id = Env("AWS_ACCESS_KEY_ID");
  o.aws_secret_access_key = Env("AWS_SECRET_ACCESS_KEY");
  o.aws_session_token = Env("AWS_SESSION_TOKEN");
  if (std::string profile = Env("AWS_PROFILE"); !profile.empty()) o.aws_profile = profile;
  const auto home_file = [&home](const char* name, const char* relative) {
    std::string p = Env(name);
    return !p.empty() || home.empty() ? p : home + "/" + relative;
  };
  o.aws_shared_credentials_file = home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
  o.aws_config_file = home_file("AWS_CONFIG_FILE", ".aws/config");
  if (std::string gcs = Env("TOKPACK_GCS_ENDPOINT"); !gcs.empty()) o.gcs_endpoint = gcs;
  o.gs_access_key_id = Env("GS_ACCESS_KEY_ID");
  o.gs_secret_access_key = Env("GS_SECRET_ACCESS_KEY");
  return o;
}

Status StorageOptions::Validate() const {
  if (cache_bytes == 0) return InvalidArgumentError("StorageOptions::cache_bytes must be positive");
  if (http_attempts < 1) {
    return InvalidArgumentError("StorageOptions::http_attempts must be positive");
  }
  if (http_stall_seconds < 1) {
    return InvalidArgumentError("StorageOptions::http_stall_seconds must be positive");
  }
  if (http_concurrency < 1) {
    return InvalidArgumentError("StorageOptions::http_concurrency must be positive");
  }
  if (prefetch_threads < 1) {
    return InvalidArgumentError("StorageOptions::prefetch_threads must be positive");
  }
  return Status::Ok();
}

StatusOr<std::string> ReadObject(const std::string& dataset_url, const std::string& name,
                                 const StorageOptions& options, uint64_t max_bytes) {
  TOKPACK_RETURN_IF_ERROR(options.Validate());
  TOKPACK_ASSIGN_OR_RETURN(ObjectLocation location, ResolveObjectUrl(dataset_url, options));
  return HttpStore(std::move(location), HttpOptions::From(options)).Get(name, max_bytes);
}

}  // namespace tokpack
