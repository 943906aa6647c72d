#include "format/staging_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

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
  auto staging = StagingDir::Create(out, false, {});
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
    auto staging = StagingDir::Create(root.Join("ds"), false, {});
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
    auto staging = StagingDir::Create(out, false, {});
    if (!staging.ok()) _exit(2);
    testing::WriteStringToFile((*staging)->path() + "/shard-00000.bin", "partial");
    _exit(0);  // Dies without cleaning up, as after SIGKILL.
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(CountEntries(root.path()), 1);         // The dead writer's staging directory.
  auto live = StagingDir::Create(out, false, {});  // Removes it; is itself live.
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(CountEntries(root.path()), 1);
  auto another = StagingDir::Create(out, false, {});  // Must not touch the live one.
  ASSERT_TRUE(another.ok());
  EXPECT_EQ(CountEntries(root.path()), 2);
  EXPECT_TRUE(Exists((*live)->path()));
}

TEST(StagingDir, RefusesExistingOutputUnlessForcedAndADataset) {
  TempDir root;
  const std::string out = root.Join("ds");
  ::mkdir(out.c_str(), 0755);
  testing::WriteStringToFile(out + "/precious.txt", "keep");
  auto s = StagingDir::Create(out, false, {});
  EXPECT_EQ(s.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(s.status().message().find("--force"), std::string::npos);
  s = StagingDir::Create(out, true, {});
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(testing::ReadFileOrDie(out + "/precious.txt"), "keep");
}

TEST(StagingDir, ForceReplacesADatasetWhosePublishingWasInterrupted) {
  TempDir root;
  const std::string out = root.Join("ds");
  ::mkdir(out.c_str(), 0755);
  testing::WriteStringToFile(out + "/manifest.json.pending", "{}");
  EXPECT_EQ(StagingDir::Create(out, false, {}).status().code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(StagingDir::Create(out, true, {}).ok());
}

TEST(StagingDir, ForceReplacesAnExistingDatasetOnlyOnCommit) {
  TempDir root;
  const std::string out = root.Join("ds");
  ::mkdir(out.c_str(), 0755);
  testing::WriteStringToFile(out + "/manifest.json", "old");
  auto staging = StagingDir::Create(out, true, {});
  ASSERT_TRUE(staging.ok());
  EXPECT_EQ(testing::ReadFileOrDie(out + "/manifest.json"), "old");
  ASSERT_TRUE((*staging)->Commit(PosixFileSystem(), "new").ok());
  EXPECT_EQ(testing::ReadFileOrDie(out + "/manifest.json"), "new");
  EXPECT_EQ(CountEntries(root.path()), 1);
}

// Two writers of one new output: both pass the start check; the second to
// commit must not replace the first one's dataset.
TEST(StagingDir, CommitRefusesAnOutputThatAppearedMeanwhile) {
  TempDir root;
  const std::string out = root.Join("ds");
  auto first = StagingDir::Create(out, false, {});
  auto second = StagingDir::Create(out, false, {});
  ASSERT_TRUE(first.ok() && second.ok());
  testing::WriteStringToFile((*first)->path() + "/shard-00000.bin", "first");
  testing::WriteStringToFile((*second)->path() + "/shard-00000.bin", "second");
  ASSERT_TRUE((*first)->Commit(PosixFileSystem(), "one").ok());
  Status s = (*second)->Commit(PosixFileSystem(), "two");
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  EXPECT_NE(s.message().find("'" + out + "'"), std::string::npos) << s.message();
  EXPECT_EQ(testing::ReadFileOrDie(out + "/manifest.json"), "one");
  EXPECT_EQ(testing::ReadFileOrDie(out + "/shard-00000.bin"), "first");
  second->reset();
  EXPECT_EQ(CountEntries(root.path()), 1);
}

TEST(StagingDir, RefusesAnOutputThatIsContainsOrLiesInsideAnInput) {
  TempDir root;
  const std::string out = root.Join("ds");
  ::mkdir(out.c_str(), 0755);
  testing::WriteStringToFile(out + "/manifest.json", "{}");
  testing::WriteStringToFile(out + "/shard-00000.bin", "data");
  ASSERT_EQ(::symlink(out.c_str(), root.Join("alias").c_str()), 0);
  for (const std::string& input :
       {out + "/shard-00000.bin", root.Join("alias/shard-00000.bin"), out + "/../ds/x.bin"}) {
    auto s = StagingDir::Create(out, true, {"elsewhere.bin", input});
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << input;
    EXPECT_NE(s.status().message().find("contains the input '" + input + "'"), std::string::npos)
        << s.status().message();
  }
  EXPECT_NE(StagingDir::Create(out, true, {root.Join("alias")}).status().message().find(" is the "),
            std::string::npos);
  auto inside = StagingDir::Create(root.Join("alias/sub"), false, {out});
  EXPECT_NE(inside.status().message().find("lies inside the input"), std::string::npos)
      << inside.status().message();
  EXPECT_TRUE(StagingDir::Create(root.Join("ds2"), false, {out + "/shard-00000.bin"}).ok());
  EXPECT_EQ(testing::ReadFileOrDie(out + "/shard-00000.bin"), "data");
}

// An input reached through a symlink that is re-pointed into the output
// after the start: the commit must see it.
TEST(StagingDir, CommitRechecksThatTheOutputIsNoInput) {
  TempDir root;
  const std::string out = root.Join("ds");
  ::mkdir(out.c_str(), 0755);
  ::mkdir(root.Join("src").c_str(), 0755);
  testing::WriteStringToFile(out + "/manifest.json", "old");
  testing::WriteStringToFile(out + "/a.bin", "in output");
  testing::WriteStringToFile(root.Join("src/a.bin"), "elsewhere");
  ASSERT_EQ(::symlink(root.Join("src").c_str(), root.Join("link").c_str()), 0);
  auto staging = StagingDir::Create(out, true, {root.Join("link/a.bin")});
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  ASSERT_EQ(::unlink(root.Join("link").c_str()), 0);
  ASSERT_EQ(::symlink(out.c_str(), root.Join("link").c_str()), 0);
  Status s = (*staging)->Commit(PosixFileSystem(), "new");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(testing::ReadFileOrDie(out + "/manifest.json"), "old");
  EXPECT_EQ(testing::ReadFileOrDie(out + "/a.bin"), "in output");
}

// A --force commit killed while deleting the dataset it replaced leaves that
// one in a hidden directory; the next writer of the output removes it unless
// its writer still lives, or it is the only copy (the output is missing).
TEST(StagingDir, LeftoversOfAKilledForceCommitAreRemovedByTheNextWriter) {
  TempDir root;
  const std::string out = root.Join("ds");
  ::mkdir(out.c_str(), 0755);
  testing::WriteStringToFile(out + "/manifest.json", "current");
  const auto leftover = [&](const std::string& name, bool lock) {
    const std::string dir = root.Join(name);
    ::mkdir(dir.c_str(), 0755);
    testing::WriteStringToFile(dir + "/manifest.json", "replaced");
    testing::WriteStringToFile(dir + "/shard-00000.bin", "old tokens");
    if (lock) testing::WriteStringToFile(dir + "/.tokpack-build.lock", "");
    return dir;
  };
  const std::string moved = leftover(".ds.tokpack-tmp-Ab12Cd-old", true);  // Two renames.
  const std::string swapped = leftover(".ds.tokpack-tmp-Ef34Gh", true);    // Lock free.
  const std::string live = leftover(".ds.tokpack-tmp-Ij56Kl", true);
  const int held = ::open((live + "/.tokpack-build.lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  auto staging = StagingDir::Create(out, true, {});
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  EXPECT_FALSE(Exists(moved));
  EXPECT_FALSE(Exists(swapped));
  EXPECT_TRUE(Exists(live + "/shard-00000.bin"));
  ASSERT_TRUE((*staging)->Commit(PosixFileSystem(), "new").ok());
  EXPECT_EQ(testing::ReadFileOrDie(out + "/manifest.json"), "new");
  ::close(held);
  EXPECT_EQ(CountEntries(root.path()), 2);  // The output and the live writer's directory.

  // With the output missing, a replaced dataset is the only copy: kept.
  RemoveAllQuietly(out);
  const std::string only_copy = leftover(".ds.tokpack-tmp-Mn78Op-old", true);
  EXPECT_TRUE(StagingDir::Create(out, false, {}).ok());
  EXPECT_TRUE(Exists(only_copy + "/shard-00000.bin"));
}

// A symlinked output: replacing it would swap the link and then delete what
// it points to. Refused at the start and again at the commit.
TEST(StagingDir, RefusesASymlinkedOutputAndLeavesItsTargetAlone) {
  TempDir root;
  const std::string v1 = root.Join("v1");
  ::mkdir(v1.c_str(), 0755);
  testing::WriteStringToFile(v1 + "/manifest.json", "v1");
  testing::WriteStringToFile(v1 + "/shard-00000.bin", "tokens");
  ASSERT_EQ(::symlink("v1", root.Join("latest").c_str()), 0);
  for (bool force : {false, true}) {
    auto s = StagingDir::Create(root.Join("latest"), force, {});
    EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition) << s.status().ToString();
    EXPECT_NE(s.status().message().find("'" + root.Join("latest") + "' is a symbolic link"),
              std::string::npos)
        << s.status().message();
  }
  auto staging = StagingDir::Create(root.Join("next"), true, {});
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  ASSERT_EQ(::symlink("v1", root.Join("next").c_str()), 0);
  Status s = (*staging)->Commit(PosixFileSystem(), "new");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(testing::ReadFileOrDie(v1 + "/manifest.json"), "v1");
  EXPECT_EQ(testing::ReadFileOrDie(v1 + "/shard-00000.bin"), "tokens");
  staging->reset();
  EXPECT_EQ(CountEntries(root.path()), 3);  // v1 and the two links.
}

// Only what tokpack names and locks is a leftover: a user's copy beside the
// output, or another output's leftovers that share the prefix, are kept.
TEST(StagingDir, LeftoversAreMatchedByExactNameAndALockFile) {
  TempDir root;
  const std::string out = root.Join("a");
  ::mkdir(out.c_str(), 0755);
  testing::WriteStringToFile(out + "/manifest.json", "current");
  const auto dir = [&](const std::string& name, bool lock) {
    const std::string d = root.Join(name);
    ::mkdir(d.c_str(), 0755);
    testing::WriteStringToFile(d + "/manifest.json", "kept");
    if (lock) testing::WriteStringToFile(d + "/.tokpack-build.lock", "");
    return d;
  };
  const std::vector<std::string> kept = {
      dir(".a.tokpack-tmp-backup", false),                   // cp -r a .a.tokpack-tmp-backup
      dir(".a.tokpack-tmp-mybackup", true),                  // Not mkdtemp's six characters.
      dir(".a.tokpack-tmp-x.tokpack-tmp-Ab12Cd-old", true),  // Output ".a.tokpack-tmp-x"'s.
  };
  auto staging = StagingDir::Create(out, true, {});
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  for (const std::string& d : kept) {
    EXPECT_EQ(testing::ReadFileOrDie(d + "/manifest.json"), "kept") << d;
  }
}

}  // namespace
}  // namespace tokpack
