#include "storage/object_url.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::TempDir;

// Sets environment variables for one test and restores them after.
class Env {
 public:
  void Set(const char* name, const char* value) {
    const char* old = getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~Env() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

void ClearAws(Env& env) {
  for (const char* v :
       {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
        "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE",
        "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "GS_ACCESS_KEY_ID",
        "GS_SECRET_ACCESS_KEY", "TOKPACK_GCS_ENDPOINT"}) {
    env.Set(v, nullptr);
  }
}

TEST(ObjectUrl, S3UsesTheEndpointAndKeysFromTheEnvironment) {
  Env env;
  ClearAws(env);
  env.Set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  env.Set("AWS_ACCESS_KEY_ID", "AK");
  env.Set("AWS_SECRET_ACCESS_KEY", "SK");
  env.Set("AWS_SESSION_TOKEN", "TOKEN");
  env.Set("AWS_DEFAULT_REGION", "eu-west-1");
  auto loc = ResolveObjectUrl("s3://bucket/data/web/");
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->UrlOf("shard-00000.bin"), "http://127.0.0.1:9000/bucket/data/web/shard-00000.bin");
  EXPECT_EQ(loc->region, "eu-west-1");
  EXPECT_EQ(loc->session_token, "TOKEN");
  EXPECT_TRUE(loc->signed_requests());
  EXPECT_EQ(loc->url, "s3://bucket/data/web");
}

TEST(ObjectUrl, S3ReadsTheProfileFromTheCredentialsFiles) {
  Env env;
  ClearAws(env);
  TempDir dir;
  std::ofstream(dir.Join("credentials")) << "[default]\naws_access_key_id = D\n"
                                            "aws_secret_access_key = DS\n\n[train]\n"
                                            "aws_access_key_id = T\naws_secret_access_key = TS\n";
  std::ofstream(dir.Join("config")) << "[profile train]\nregion = ap-south-1\n";
  env.Set("AWS_SHARED_CREDENTIALS_FILE", dir.Join("credentials").c_str());
  env.Set("AWS_CONFIG_FILE", dir.Join("config").c_str());
  env.Set("AWS_PROFILE", "train");
  auto loc = ResolveObjectUrl("s3://b/p");
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->access_key, "T");
  EXPECT_EQ(loc->secret_key, "TS");
  EXPECT_EQ(loc->region, "ap-south-1");
  EXPECT_EQ(loc->UrlOf("manifest.json"), "https://b.s3.ap-south-1.amazonaws.com/p/manifest.json");
}

TEST(ObjectUrl, GcsHttpAndErrors) {
  Env env;
  ClearAws(env);
  auto gs = ResolveObjectUrl("gs://public-bucket/corpus");
  ASSERT_TRUE(gs.ok());
  EXPECT_FALSE(gs->signed_requests());  // Anonymous: public data.
  EXPECT_EQ(gs->UrlOf("a b.bin"), "https://storage.googleapis.com/public-bucket/corpus/a%20b.bin");
  auto http = ResolveObjectUrl("https://example.org/data/");
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->UrlOf("manifest.json"), "https://example.org/data/manifest.json");
  EXPECT_EQ(ResolveObjectUrl("ftp://x/y").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveObjectUrl("s3:///key").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tokpack
