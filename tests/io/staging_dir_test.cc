#include "io/staging_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::Exists;
using testing::TempDir;

int CountEntries(const std::string& dir) {
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++n;
  }
  return n;
}

TEST(StagingDir, PublishesManifestLastAndCleansUp) {
  TempDir root;
  const std::string out = root.Join("nested/ds");
  auto staging = StagingDir::Create(out, false);
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  testing::WriteStringToFile((*staging)->path() + "/shard-00000.bin", "x");
  EXPECT_FALSE(Exists(out));
  ASSERT_TRUE((*staging)->Commit(PosixFileSystem(), "{}").ok());
  EXPECT_EQ(testing::ReadFileOrDie(out + "/manifest.json"), "{}");
  EXPECT_TRUE(Exists(out + "/shard-00000.bin"));
  EXPECT_FALSE(Exists(out + "/manifest.json.pending"));
  EXPECT_FALSE(Exists(out + "/.tokpack-build.lock"));
  EXPECT_EQ(CountEntries(root.Join("nested")), 1);  // No staging or old dirs left.
  struct stat st;
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IROTH) << "dataset dirs must be readable by others (umask)";
}

TEST(StagingDir, AbandonedStagingIsRemovedAndNothingAppears) {
  TempDir root;
  {
    auto staging = StagingDir::Create(root.Join("ds"), false);
    ASSERT_TRUE(staging.ok());
    testing::WriteStringToFile((*staging)->path() + "/x", "partial");
  }
  EXPECT_EQ(CountEntries(root.path()), 0);
}

TEST(StagingDir, AKilledWritersStagingIsRemovedByTheNextButALiveOneIsKept) {
  TempDir root;
  const std::string out = root.Join("ds");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto staging = StagingDir::Create(out, false);
    if (!staging.ok()) _exit(2);
    testing::WriteStringToFile((*staging)->path() + "/shard-00000.bin", "partial");
    _exit(0);  // Dies without cleaning up, as after SIGKILL.
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(CountEntries(root.path()), 1);     // The dead writer's staging directory.
  auto live = StagingDir::Create(out, false);  // Removes it; is itself live.
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(CountEntries(root.path()), 1);
  auto another = StagingDir::Create(out, false);  // Must not touch the live one.
  ASSERT_TRUE(another.ok());
  EXPECT_EQ(CountEntries(root.path()), 2);
  EXPECT_TRUE(Exists((*live)->path()));
}

TEST(StagingDir, RefusesExistingOutputUnlessForcedAndADataset) {
  TempDir root;
  const std::string out = root.Join("ds");
  ::mkdir(out.c_str(), 0755);
  testing::WriteStringToFile(out + "/precious.txt", "keep");
  auto s = StagingDir::Create(out, false);
  EXPECT_EQ(s.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(s.status().message().find("--force"), std::string::npos);
  s = StagingDir::Create(out, true);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(testing::ReadFileOrDie(out + "/precious.txt"), "keep");
}

TEST(StagingDir, ForceReplacesADatasetWhosePublishingWasInterrupted) {
  TempDir root;
  const std::string out = root.Join("ds");
  ::mkdir(out.c_str(), 0755);
  testing::WriteStringToFile(out + "/manifest.json.pending", "{}");
  EXPECT_EQ(StagingDir::Create(out, false).status().code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(StagingDir::Create(out, true).ok());
}

TEST(StagingDir, ForceReplacesAnExistingDatasetOnlyOnCommit) {
  TempDir root;
  const std::string out = root.Join("ds");
  ::mkdir(out.c_str(), 0755);
  testing::WriteStringToFile(out + "/manifest.json", "old");
  auto staging = StagingDir::Create(out, true);
  ASSERT_TRUE(staging.ok());
  EXPECT_EQ(testing::ReadFileOrDie(out + "/manifest.json"), "old");
  ASSERT_TRUE((*staging)->Commit(PosixFileSystem(), "new").ok());
  EXPECT_EQ(testing::ReadFileOrDie(out + "/manifest.json"), "new");
  EXPECT_EQ(CountEntries(root.path()), 1);
}

}  // namespace
}  // namespace tokpack
