#include "base/file_system.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::TempDir;
using testing::WriteStringToFile;

// A dataset directory `ds` beside a directory `outside` holding a secret.
class ReadOnlyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ds_ = dir_.Join("ds");
    ASSERT_TRUE(CreateDirs(ds_ + "/sub").ok());
    ASSERT_TRUE(CreateDirs(dir_.Join("outside")).ok());
    WriteStringToFile(ds_ + "/plain", "hello");
    WriteStringToFile(ds_ + "/sub/plain", "nested");
    WriteStringToFile(dir_.Join("outside/secret"), "secret");
  }
  TempDir dir_;
  std::string ds_;
};

TEST_F(ReadOnlyFileTest, ReadsRegularFiles) {
  auto f = ReadOnlyFile::Open(ds_, "sub/plain", Links::kRefuse);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->size(), 6u);
  EXPECT_EQ(f->path(), ds_ + "/sub/plain");
  EXPECT_EQ(*f->ReadAll(6), "nested");
  std::string seen;
  ASSERT_TRUE(f->ReadBlocks(4, [&](std::string_view b) {
                 seen += std::string(b) + "|";
                 return Status::Ok();
               }).ok());
  EXPECT_EQ(seen, "nest|ed|");
  EXPECT_EQ(*ReadDatasetFile(ds_, "plain", 100, Links::kFollow), "hello");
}

TEST_F(ReadOnlyFileTest, CapsWhatIsReadBeforeAllocating) {
  auto f = ReadOnlyFile::Open(ds_, "plain", Links::kFollow);
  ASSERT_TRUE(f.ok());
  StatusOr<std::string> all = f->ReadAll(4);
  EXPECT_EQ(all.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(all.status().message().find(ds_ + "/plain' is 5 bytes, more than the 4-byte cap"),
            std::string::npos)
      << all.status().message();
}

TEST_F(ReadOnlyFileTest, RefusesFifosWithoutBlocking) {
  ASSERT_EQ(::mkfifo((ds_ + "/fifo").c_str(), 0600), 0);
  for (Links links : {Links::kFollow, Links::kRefuse}) {
    auto f = ReadOnlyFile::Open(ds_, "fifo", links);  // Would block forever if opened plainly.
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(f.status().message().find("is a FIFO"), std::string::npos) << f.status().message();
  }
}

TEST_F(ReadOnlyFileTest, RefusesDevicesDirectoriesAndSockets) {
  ASSERT_EQ(::symlink("/dev/zero", (ds_ + "/zero").c_str()), 0);
  auto f = ReadOnlyFile::Open(ds_, "zero", Links::kFollow);
  EXPECT_NE(f.status().message().find("is a device"), std::string::npos) << f.status().message();
  f = ReadOnlyFile::Open(ds_, "sub", Links::kFollow);
  EXPECT_NE(f.status().message().find("is a directory"), std::string::npos);
  // A socket: bound in the directory, closed again (the entry stays).
  const std::string sock_path = ds_ + "/sock";
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock_path.size(), sizeof(addr.sun_path));
  sock_path.copy(addr.sun_path, sock_path.size());
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(sock);
  f = ReadOnlyFile::Open(ds_, "sock", Links::kFollow);
  EXPECT_NE(f.status().message().find("is a socket"), std::string::npos) << f.status().message();
  EXPECT_EQ(ReadOnlyFile::Open(ds_, "missing", Links::kFollow).status().code(),
            StatusCode::kNotFound);
}

// The symlink rule: followed under kFollow (shards a merge links to), refused
// on any component under kRefuse.
TEST_F(ReadOnlyFileTest, LinksAreFollowedOnlyWhenAsked) {
  ASSERT_EQ(::symlink("../outside/secret", (ds_ + "/tokenizer.model").c_str()), 0);
  ASSERT_EQ(::symlink("../outside", (ds_ + "/part-00000").c_str()), 0);
  for (const char* name : {"tokenizer.model", "part-00000/secret"}) {
    auto followed = ReadDatasetFile(ds_, name, 100, Links::kFollow);
    ASSERT_TRUE(followed.ok()) << followed.status().ToString();
    EXPECT_EQ(*followed, "secret");
    auto refused = ReadOnlyFile::Open(ds_, name, Links::kRefuse);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(refused.status().message().find("is a symbolic link"), std::string::npos)
        << refused.status().message();
  }
}

TEST_F(ReadOnlyFileTest, TheDatasetDirectoryItselfMayBeALink) {
  ASSERT_EQ(::symlink("ds", dir_.Join("ds-link").c_str()), 0);
  EXPECT_EQ(*ReadDatasetFile(dir_.Join("ds-link"), "sub/plain", 100, Links::kRefuse), "nested");
}

// ReadSmallFile: the rule for files read as configuration (a tokenizer, a
// cursor, a phases file). Paths are the user's, so links are followed.
class ReadSmallFileTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteStringToFile(dir_.Join("plain"), "hello"); }
  TempDir dir_;
};

TEST_F(ReadSmallFileTest, ReadsARegularFileThroughLinks) {
  EXPECT_EQ(*ReadSmallFile(dir_.Join("plain"), 5, "a test file"), "hello");
  ASSERT_EQ(::symlink("plain", dir_.Join("link").c_str()), 0);
  EXPECT_EQ(*ReadSmallFile(dir_.Join("link"), 5, "a test file"), "hello");
  WriteStringToFile(dir_.Join("empty"), "");
  EXPECT_EQ(*ReadSmallFile(dir_.Join("empty"), 0, "a test file"), "");
  auto missing = ReadSmallFile(dir_.Join("missing"), 5, "a test file");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir_.Join("missing")), std::string::npos);
}

// A FIFO used to block the reader until a writer came; a device (or a link to
// one) was read until memory ran out; a directory failed with a parser's
// complaint about its (empty) contents. Each is refused naming the path,
// what it is and the kind of file expected, without a read.
TEST_F(ReadSmallFileTest, RefusesWhatIsNotARegularFileWithoutBlocking) {
  ASSERT_EQ(::mkfifo(dir_.Join("fifo").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/zero", dir_.Join("zero").c_str()), 0);
  ASSERT_EQ(::mkdir(dir_.Join("dir").c_str(), 0700), 0);
  const std::pair<std::string, std::string> cases[] = {
      {dir_.Join("fifo"), "is a FIFO"},
      {dir_.Join("zero"), "is a device"},
      {"/dev/zero", "is a device"},
      {dir_.Join("dir"), "is a directory"},
  };
  for (const auto& [path, kind] : cases) {
    auto r = ReadSmallFile(path, kMaxCursorBytes, "a cursor file");
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << path;
    EXPECT_EQ(r.status().message(),
              "'" + path + "' " + kind + ", not a regular file (a cursor file must be one)");
  }
}

// The cap is checked against the size before anything is allocated or read:
// a sparse file far over it costs nothing.
TEST_F(ReadSmallFileTest, RefusesAFileOverTheCapNamingTheCap) {
  auto r = ReadSmallFile(dir_.Join("plain"), 4, "a test file");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "'" + dir_.Join("plain") + "' is 5 bytes, more than the 4-byte cap for a test file");
  const std::string sparse = dir_.Join("sparse");
  WriteStringToFile(sparse, "");
  ASSERT_EQ(::truncate(sparse.c_str(), static_cast<off_t>(kMaxTokenizerBytes + 1)), 0);
  r = ReadSmallFile(sparse, kMaxTokenizerBytes, "a tokenizer file");
  EXPECT_EQ(r.status().message(), "'" + sparse + "' is 1073741825 bytes, more than the " +
                                      "1073741824-byte cap for a tokenizer file");
}

// A file whose content outruns its size (as /proc's do: size 0) is refused
// rather than taken as the bytes that happened to be read.
TEST_F(ReadSmallFileTest, RefusesAFileThatGrowsWhileRead) {
  auto r = ReadSmallFile("/proc/self/status", 1 << 20, "a test file");
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("'/proc/self/status' grew while being read"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace tokpack
