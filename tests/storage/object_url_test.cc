#include "storage/object_url.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::TempDir;

TEST(ObjectUrl, S3UsesTheEndpointAndKeysOfTheOptions) {
  StorageOptions o;
  o.s3_endpoint = "http://127.0.0.1:9000";
  o.aws_access_key_id = "AK";
  o.aws_secret_access_key = "SK";
  o.aws_session_token = "TOKEN";
  o.aws_region = "eu-west-1";
  auto loc = ResolveObjectUrl("s3://bucket/data/web/", o);
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->UrlOf("shard-00000.bin"), "http://127.0.0.1:9000/bucket/data/web/shard-00000.bin");
  EXPECT_EQ(loc->region, "eu-west-1");
  EXPECT_EQ(loc->session_token, "TOKEN");
  EXPECT_TRUE(loc->signed_requests());
  EXPECT_EQ(loc->url, "s3://bucket/data/web");
}

TEST(ObjectUrl, S3ReadsTheProfileFromTheCredentialsFiles) {
  TempDir dir;
  std::ofstream(dir.Join("credentials")) << "[default]\naws_access_key_id = D\n"
                                            "aws_secret_access_key = DS\n\n[train]\n"
                                            "aws_access_key_id = T\naws_secret_access_key = TS\n";
  std::ofstream(dir.Join("config")) << "[profile train]\nregion = ap-south-1\n";
  StorageOptions o;
  o.aws_shared_credentials_file = dir.Join("credentials");
  o.aws_config_file = dir.Join("config");
  o.aws_profile = "train";
  auto loc = ResolveObjectUrl("s3://b/p", o);
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->access_key, "T");
  EXPECT_EQ(loc->secret_key, "TS");
  EXPECT_EQ(loc->region, "ap-south-1");
  EXPECT_EQ(loc->UrlOf("manifest.json"), "https://b.s3.ap-south-1.amazonaws.com/p/manifest.json");
}

// The credentials files are configuration like any other (tokpack/files.h):
// missing is anonymous, as before; a FIFO (which blocked the first request
// forever) or a device (read without end) is an error naming it.
TEST(ObjectUrl, CredentialsFilesThatAreNotFilesAreRefusedNamingThem) {
  TempDir dir;
  ASSERT_EQ(::mkfifo(dir.Join("credentials").c_str(), 0600), 0);
  StorageOptions o;
  o.aws_shared_credentials_file = dir.Join("credentials");
  auto loc = ResolveObjectUrl("s3://b/p", o);
  EXPECT_EQ(loc.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loc.status().message().find("'" + dir.Join("credentials") +
                                        "' is a FIFO, not a regular file (an AWS shared "
                                        "credentials file must be one)"),
            std::string::npos)
      << loc.status().message();
  o.aws_shared_credentials_file = dir.Join("missing");
  o.aws_config_file = "/dev/zero";
  loc = ResolveObjectUrl("s3://b/p", o);
  EXPECT_NE(loc.status().message().find("'/dev/zero' is a device"), std::string::npos)
      << loc.status().message();
  o.aws_config_file = dir.Join("missing");
  loc = ResolveObjectUrl("s3://b/p", o);
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_FALSE(loc->signed_requests());
}

TEST(ObjectUrl, DefaultOptionsAreAnonymousAndReadNoFiles) {
  auto loc = ResolveObjectUrl("s3://b/p", StorageOptions());
  ASSERT_TRUE(loc.ok());
  EXPECT_FALSE(loc->signed_requests());
  EXPECT_EQ(loc->region, "us-east-1");
  EXPECT_EQ(loc->UrlOf("m"), "https://b.s3.us-east-1.amazonaws.com/p/m");
}

TEST(ObjectUrl, GcsHttpAndErrors) {
  const StorageOptions o;
  auto gs = ResolveObjectUrl("gs://public-bucket/corpus", o);
  ASSERT_TRUE(gs.ok());
  EXPECT_FALSE(gs->signed_requests());  // Anonymous: public data.
  EXPECT_EQ(gs->UrlOf("a b.bin"), "https://storage.googleapis.com/public-bucket/corpus/a%20b.bin");
  auto http = ResolveObjectUrl("https://example.org/data/", o);
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->UrlOf("manifest.json"), "https://example.org/data/manifest.json");
  EXPECT_EQ(ResolveObjectUrl("ftp://x/y", o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveObjectUrl("s3:///key", o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tokpack
