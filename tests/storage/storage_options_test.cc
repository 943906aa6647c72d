#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <utility>
#include <vector>

#include "storage/object_url.h"
#include "tokpack/storage.h"

namespace tokpack {
namespace {

// Every variable FromEnvironment reads (docs/remote.md).
constexpr const char* kVariables[] = {"TOKPACK_CACHE_DIR",
                                      "TOKPACK_CACHE_BYTES",
                                      "TOKPACK_HTTP_ATTEMPTS",
                                      "TOKPACK_HTTP_STALL_SECONDS",
                                      "TOKPACK_HTTP_CONCURRENCY",
                                      "TOKPACK_PREFETCH_THREADS",
                                      "TMPDIR",
                                      "HOME",
                                      "AWS_ENDPOINT_URL_S3",
                                      "AWS_ENDPOINT_URL",
                                      "AWS_REGION",
                                      "AWS_DEFAULT_REGION",
                                      "AWS_ACCESS_KEY_ID",
                                      "AWS_SECRET_ACCESS_KEY",
                                      "AWS_SESSION_TOKEN",
                                      "AWS_PROFILE",
                                      "AWS_SHARED_CREDENTIALS_FILE",
                                      "AWS_CONFIG_FILE",
                                      "TOKPACK_GCS_ENDPOINT",
                                      "GS_ACCESS_KEY_ID",
                                      "GS_SECRET_ACCESS_KEY"};

// Clears the variables above for one test and restores them after.
class CleanEnvironment {
 public:
  CleanEnvironment() {
    for (const char* name : kVariables) {
      const char* old = getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      unsetenv(name);
    }
  }
  ~CleanEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  void Set(const char* name, const char* value) { setenv(name, value, 1); }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(StorageOptions, AnEmptyEnvironmentGivesTheDefaults) {
  CleanEnvironment env;
  auto o = StorageOptions::FromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const StorageOptions defaults;
  EXPECT_EQ(o->cache_dir, "/tmp/tokpack-cache");  // No HOME either.
  EXPECT_EQ(o->cache_bytes, defaults.cache_bytes);
  EXPECT_EQ(o->cache_bytes, uint64_t{64} << 30);
  EXPECT_EQ(o->http_attempts, 8);
  EXPECT_EQ(o->http_stall_seconds, 20);
  EXPECT_EQ(o->http_concurrency, 16);
  EXPECT_EQ(o->prefetch_threads, 8);
  EXPECT_EQ(o->temp_dir, "/tmp");
  EXPECT_EQ(o->aws_profile, "default");
  EXPECT_EQ(o->aws_shared_credentials_file, "");
  EXPECT_EQ(o->gcs_endpoint, "https://storage.googleapis.com");
  EXPECT_TRUE(o->Validate().ok());
  env.Set("HOME", "/home/u");
  o = StorageOptions::FromEnvironment();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->cache_dir, "/home/u/.cache/tokpack");
  EXPECT_EQ(o->aws_shared_credentials_file, "/home/u/.aws/credentials");
  EXPECT_EQ(o->aws_config_file, "/home/u/.aws/config");
}

TEST(StorageOptions, EachDocumentedVariableIsRead) {
  CleanEnvironment env;
  env.Set("HOME", "/home/u");
  env.Set("TOKPACK_CACHE_DIR", "/c");
  env.Set("TOKPACK_CACHE_BYTES", "12345");
  env.Set("TOKPACK_HTTP_ATTEMPTS", "3");
  env.Set("TOKPACK_HTTP_STALL_SECONDS", "4");
  env.Set("TOKPACK_HTTP_CONCURRENCY", "5");
  env.Set("TOKPACK_PREFETCH_THREADS", "6");
  env.Set("TMPDIR", "/scratch");
  env.Set("AWS_ENDPOINT_URL", "http://generic");
  env.Set("AWS_DEFAULT_REGION", "eu-west-1");
  env.Set("AWS_ACCESS_KEY_ID", "AK");
  env.Set("AWS_SECRET_ACCESS_KEY", "SK");
  env.Set("AWS_SESSION_TOKEN", "TOKEN");
  env.Set("AWS_PROFILE", "train");
  env.Set("AWS_SHARED_CREDENTIALS_FILE", "/creds");
  env.Set("AWS_CONFIG_FILE", "/config");
  env.Set("TOKPACK_GCS_ENDPOINT", "http://gcs");
  env.Set("GS_ACCESS_KEY_ID", "GK");
  env.Set("GS_SECRET_ACCESS_KEY", "GS");
  auto o = StorageOptions::FromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->cache_dir, "/c");
  EXPECT_EQ(o->cache_bytes, 12345u);
  EXPECT_EQ(o->http_attempts, 3);
  EXPECT_EQ(o->http_stall_seconds, 4);
  EXPECT_EQ(o->http_concurrency, 5);
  EXPECT_EQ(o->prefetch_threads, 6);
  EXPECT_EQ(o->temp_dir, "/scratch");
  EXPECT_EQ(o->s3_endpoint, "http://generic");
  EXPECT_EQ(o->aws_region, "eu-west-1");
  EXPECT_EQ(o->aws_access_key_id, "AK");
  EXPECT_EQ(o->aws_secret_access_key, "SK");
  EXPECT_EQ(o->aws_session_token, "TOKEN");
  EXPECT_EQ(o->aws_profile, "train");
  EXPECT_EQ(o->aws_shared_credentials_file, "/creds");
  EXPECT_EQ(o->aws_config_file, "/config");
  EXPECT_EQ(o->gcs_endpoint, "http://gcs");
  EXPECT_EQ(o->gs_access_key_id, "GK");
  EXPECT_EQ(o->gs_secret_access_key, "GS");
  // The specific S3 endpoint and region win over the generic ones.
  env.Set("AWS_ENDPOINT_URL_S3", "http://s3-only");
  env.Set("AWS_REGION", "ap-south-1");
  o = StorageOptions::FromEnvironment();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->s3_endpoint, "http://s3-only");
  EXPECT_EQ(o->aws_region, "ap-south-1");
  // As the options arrive at a request.
  auto loc = ResolveObjectUrl("s3://bucket/data/web/", *o);
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->UrlOf("shard-00000.bin"), "http://s3-only/bucket/data/web/shard-00000.bin");
  EXPECT_EQ(loc->session_token, "TOKEN");
  EXPECT_TRUE(loc->signed_requests());
}

TEST(StorageOptions, ABadNumberIsRejectedNamingItsVariable) {
  for (const char* name :
       {"TOKPACK_CACHE_BYTES", "TOKPACK_HTTP_ATTEMPTS", "TOKPACK_HTTP_STALL_SECONDS",
        "TOKPACK_HTTP_CONCURRENCY", "TOKPACK_PREFETCH_THREADS"}) {
    for (const char* bad : {"0", "-3", "12abc", "lots", "99999999999999999999999"}) {
      CleanEnvironment env;
      env.Set(name, bad);
      auto o = StorageOptions::FromEnvironment();
      ASSERT_FALSE(o.ok()) << name << "=" << bad;
      EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(o.status().message().find(name), std::string::npos) << o.status().ToString();
      EXPECT_NE(o.status().message().find(bad), std::string::npos) << o.status().ToString();
    }
  }
  CleanEnvironment env;
  env.Set("TOKPACK_HTTP_ATTEMPTS", "");  // Empty counts as unset.
  EXPECT_TRUE(StorageOptions::FromEnvironment().ok());
}

TEST(StorageOptions, ValidateNamesTheField) {
  StorageOptions o;
  o.prefetch_threads = 0;
  EXPECT_NE(o.Validate().message().find("prefetch_threads"), std::string::npos);
  o = StorageOptions();
  o.cache_bytes = 0;
  EXPECT_NE(o.Validate().message().find("cache_bytes"), std::string::npos);
}

}  // namespace
}  // namespace tokpack
