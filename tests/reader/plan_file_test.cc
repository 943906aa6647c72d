// Plan files on real datasets: the packing plan tiles the stream, files are
// byte-identical for any thread count, damaged or stale ones are rebuilt
// (or refused) and never used, read-only and remote datasets keep theirs in
// the cache, split parts get their own, and of two processes one builds
// while the other waits and loads.
#include "reader/plan_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>

#include "base/chunk_hasher.h"
#include "base/file_system.h"
#include "tests/reader/synthetic_dataset.h"
#include "tests/storage/http_test_server.h"
#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::TempDir;

// Lengths 0..149 cycling (empty documents and ones longer than L = 64), in
// shards of about 2000 tokens.
std::vector<uint32_t> Lengths() {
  std::vector<uint32_t> out;
  for (int i = 0; i < 300; ++i) out.push_back(static_cast<uint32_t>(i * 37 % 150));
  return out;
}

std::shared_ptr<Dataset> Open(const std::string& path, const DatasetOptions& o = {}) {
  auto ds = Dataset::Open(path, StorageOptions(), o);
  EXPECT_TRUE(ds.ok()) << ds.status().message();
  return ds.ok() ? *ds : nullptr;
}

std::shared_ptr<const PackingPlan> Plan(const Dataset& ds, const StorageOptions& storage = {},
                                        PackingSettings s = {64, 0}, int threads = 2,
                                        std::vector<PlanProgress>* events = nullptr) {
  auto view = LoadOrBuildPackingPlan(ds, s, storage, threads, [events](const PlanProgress& p) {
    if (events) events->push_back(p);
  });
  EXPECT_TRUE(view.ok()) << view.status().message();
  return view.ok() ? *view : nullptr;
}

size_t Built(const std::vector<PlanProgress>& events) {
  return std::count_if(events.begin(), events.end(), [](const PlanProgress& p) {
    return p.stage == PlanProgress::Stage::kBuilding;
  });
}

// Every non-empty document's tokens are covered once, by pieces in order.
void ExpectTilesTheStream(const Dataset& ds, const PackingPlan& v) {
  std::vector<std::pair<uint64_t, uint64_t>> all;
  std::vector<PackingPlan::Range> bin;
  const uint64_t L = v.settings().seq_len;
  for (uint64_t b = 0; b < v.num_bins(); ++b) {
    v.Bin(b, &bin);
    uint64_t tokens = 0;
    for (const PackingPlan::Range& r : bin) {
      all.emplace_back(r.begin, r.length);
      tokens += r.length;
    }
    ASSERT_LE(tokens, L);
    ASSERT_FALSE(bin.empty());
  }
  std::sort(all.begin(), all.end());
  uint64_t at = 0;
  for (const auto& [begin, length] : all) {
    ASSERT_EQ(begin, at);
    at += length;
  }
  EXPECT_EQ(at, ds.num_tokens());
  EXPECT_EQ(v.counts().tokens, ds.num_tokens());
  EXPECT_EQ(v.counts().documents, ds.num_documents());
}

TEST(PlanFileTest, BuildsBesideTheShardsThenLoadsTheSameView) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), Lengths(), 1, 2000);
  auto ds = Open(dir.Join("ds"));
  ASSERT_GT(ds->num_shards(), 3u);
  std::vector<PlanProgress> events;
  auto view = Plan(*ds, {}, {64, 0}, 2, &events);
  EXPECT_EQ(Built(events), ds->num_shards());
  ASSERT_EQ(view->plan_files().size(), ds->num_shards());
  for (const std::string& f : view->plan_files()) {
    EXPECT_EQ(f.rfind(dir.Join("ds/packing/s0"), 0), 0u) << f;
  }
  ExpectTilesTheStream(*ds, *view);
  events.clear();
  auto again = Plan(*ds, {}, {64, 0}, 1, &events);
  EXPECT_EQ(Built(events), 0u);
  ASSERT_EQ(again->num_bins(), view->num_bins());
  std::vector<PackingPlan::Range> a, b;
  for (uint64_t i = 0; i < view->num_bins(); ++i) {
    view->Bin(i, &a);
    again->Bin(i, &b);
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) EXPECT_EQ(a[j].begin, b[j].begin);
  }
  // Other settings are another plan, beside this one.
  auto capped = Plan(*ds, {}, {64, 2});
  EXPECT_NE(capped->plan_files()[0], view->plan_files()[0]);
  EXPECT_LE(capped->counts().max_pieces_per_bin, 2u);
  ExpectTilesTheStream(*ds, *capped);
}

TEST(PlanFileTest, FilesAreByteIdenticalForAnyThreadCount) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("a"), Lengths(), 1, 2000);
  testing::WriteSyntheticDataset(dir.Join("b"), Lengths(), 1, 2000);
  auto a = Plan(*Open(dir.Join("a")), {}, {48, 3}, 1);
  auto b = Plan(*Open(dir.Join("b")), {}, {48, 3}, 4);
  ASSERT_EQ(a->plan_files().size(), b->plan_files().size());
  for (size_t k = 0; k < a->plan_files().size(); ++k) {
    EXPECT_EQ(testing::ReadFileOrDie(a->plan_files()[k]),
              testing::ReadFileOrDie(b->plan_files()[k]));
  }
}

TEST(PlanFileTest, DamagedStaleOrOtherSettingsAreRebuiltNeverUsed) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), Lengths(), 1, 2000);
  testing::WriteSyntheticDataset(dir.Join("other"), testing::CyclingLengths(300, 90), 1, 2000);
  auto ds = Open(dir.Join("ds"));
  const std::string file = Plan(*ds)->plan_files()[1];
  const std::string good = testing::ReadFileOrDie(file);
  const std::string other = Plan(*Open(dir.Join("other")))->plan_files()[1];
  const std::string wide = Plan(*ds, {}, {65, 0})->plan_files()[1];
  std::string flipped = good;
  flipped[kPlanHeaderBytes + 20] ^= 1;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"flipped byte", flipped},
      {"truncated", good.substr(0, good.size() - 9)},
      {"empty", ""},
      {"stale", testing::ReadFileOrDie(other)},
      {"other settings", testing::ReadFileOrDie(wide)},
  };
  const std::vector<uint64_t> lengths = ShardDocumentLengths(*ds, 1);
  for (const auto& [what, bytes] : cases) {
    SCOPED_TRACE(what);
    EXPECT_EQ(DecodePlanFile(bytes, file, {64, 0}, lengths).status().code(), StatusCode::kDataLoss);
    testing::WriteStringToFile(file, bytes);
    std::vector<PlanProgress> events;
    auto view = Plan(*ds, {}, {64, 0}, 2, &events);
    EXPECT_EQ(Built(events), 1u);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events[0].stage, PlanProgress::Stage::kRebuilding);
    EXPECT_NE(events[0].detail.find(file), std::string::npos) << events[0].detail;
    EXPECT_EQ(testing::ReadFileOrDie(file), good);
    ExpectTilesTheStream(*ds, *view);
  }
}

TEST(PlanFileTest, AChecksummedPlanThatBreaksTheInvariantIsRefused) {
  const std::vector<uint64_t> lengths = {5, 70, 3};
  ShardPlan plan = *PackShard(lengths, {64, 0}, "t");
  const uint64_t key = PlanShardKey(lengths);
  const auto decode = [&](const ShardPlan& p) {
    return DecodePlanFile(EncodePlanFile(p, {64, 0}, key, 3), "f", {64, 0}, lengths).status();
  };
  EXPECT_TRUE(decode(plan).ok());
  ShardPlan twice = plan;
  twice.items[1] = twice.items[0];
  EXPECT_NE(decode(twice).message().find("twice"), std::string::npos) << decode(twice).message();
  ShardPlan outside = plan;
  outside.items[0].document = 3;
  EXPECT_NE(decode(outside).message().find("not a piece"), std::string::npos);
  ShardPlan overfull;  // Every piece in one bin: 78 tokens > 64.
  overfull.items = plan.items;
  overfull.bin_offsets = {0, plan.items.size()};
  EXPECT_NE(decode(overfull).message().find("more than seq_len"), std::string::npos);
  // Header fields changed under a valid checksum: reserved flags, and bin
  // and item counts whose sizes would overflow or exceed the file.
  const std::string good = EncodePlanFile(plan, {64, 0}, key, 3);
  const auto with = [&](size_t at, uint64_t value, size_t bytes) {
    std::string b = good;
    std::memcpy(&b[at], &value, bytes);  // Little-endian, as the format.
    const uint64_t sum = Xxh3(std::string_view(b).substr(0, b.size() - 8));
    std::memcpy(&b[b.size() - 8], &sum, 8);
    return DecodePlanFile(b, "f", {64, 0}, lengths).status();
  };
  EXPECT_NE(with(12, 1, 4).message().find("flags 1"), std::string::npos)
      << with(12, 1, 4).ToString();
  for (const uint64_t huge : {uint64_t{1} << 61, ~uint64_t{0}, uint64_t{1} << 32}) {
    EXPECT_NE(with(48, huge, 8).message().find("bytes do not hold"), std::string::npos);
    EXPECT_NE(with(56, huge, 8).message().find("bytes do not hold"), std::string::npos);
  }
}

// Every piece of `plan` in a bin of its own: a valid packing (each piece
// once, no bin over L), but not best fit.
ShardPlan OnePiecePerBin(const ShardPlan& plan) {
  ShardPlan alone;
  alone.items = plan.items;
  alone.bin_offsets.clear();
  for (uint64_t i = 0; i <= plan.items.size(); ++i) alone.bin_offsets.push_back(i);
  return alone;
}

TEST(PlanFileTest, AChecksummedPlanThatIsValidButNotBestFitIsRefused) {
  // L = 64: bin 0 holds document 1's first piece (64 tokens); bin 1 its
  // remainder (6), then documents 0 (5) and 2 (3), longest first.
  const std::vector<uint64_t> lengths = {5, 70, 3};
  const ShardPlan plan = *PackShard(lengths, {64, 0}, "t");
  ASSERT_EQ(plan.bin_offsets, (std::vector<uint64_t>{0, 1, 4}));
  const uint64_t key = PlanShardKey(lengths);
  const auto decode = [&](const ShardPlan& p) {
    return DecodePlanFile(EncodePlanFile(p, {64, 0}, key, 3), "f", {64, 0}, lengths).status();
  };
  const auto expect_refused = [&](const ShardPlan& p, const std::string& why) {
    const Status s = decode(p);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << why;
    EXPECT_NE(
        s.message().find("f: not the best-fit-decreasing plan of the shard's documents: " + why),
        std::string::npos)
        << s.message();
  };
  expect_refused(OnePiecePerBin(plan), "bin 2 was opened for a piece of 5 tokens that bin 1");
  ShardPlan swapped_bins;  // The same bins, in the other order.
  swapped_bins.items = {plan.items[1], plan.items[2], plan.items[3], plan.items[0]};
  swapped_bins.bin_offsets = {0, 3, 4};
  expect_refused(swapped_bins, "bin 1 comes after bin 0 but was opened first");
  ShardPlan shuffled = plan;  // A bin's pieces in another order.
  std::swap(shuffled.items[1], shuffled.items[3]);
  expect_refused(shuffled, "bin 1's pieces are not in the order they are placed");
  // With a cap of 1 piece a bin, one piece per bin is the best fit.
  const ShardPlan capped = *PackShard(lengths, {64, 1}, "t");
  EXPECT_EQ(capped.bin_offsets, OnePiecePerBin(plan).bin_offsets);
  EXPECT_TRUE(DecodePlanFile(EncodePlanFile(capped, {64, 1}, key, 3), "f", {64, 1}, lengths).ok());
}

TEST(PlanFileTest, APlanFileThatIsNotBestFitIsRebuiltSayingWhy) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), Lengths(), 1, 2000);
  auto ds = Open(dir.Join("ds"));
  const std::string file = Plan(*ds)->plan_files()[0];
  const std::string good = testing::ReadFileOrDie(file);
  const std::vector<uint64_t> lengths = ShardDocumentLengths(*ds, 0);
  const ShardPlan plan = *DecodePlanFile(good, file, {64, 0}, lengths);
  testing::WriteStringToFile(
      file, EncodePlanFile(OnePiecePerBin(plan), {64, 0}, PlanShardKey(lengths), lengths.size()));
  std::vector<PlanProgress> events;
  auto view = Plan(*ds, {}, {64, 0}, 2, &events);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].stage, PlanProgress::Stage::kRebuilding);
  EXPECT_NE(events[0].detail.find(file + ": not the best-fit-decreasing plan"), std::string::npos)
      << events[0].detail;
  EXPECT_EQ(testing::ReadFileOrDie(file), good);
  ExpectTilesTheStream(*ds, *view);
}

TEST(PlanFileTest, APlanThatIsAFifoOrTooLargeIsRefusedUnreadAndRebuilt) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), Lengths(), 1, 2000);
  auto ds = Open(dir.Join("ds"));
  const std::string file = Plan(*ds)->plan_files()[0];
  const std::string good = testing::ReadFileOrDie(file);
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      // Read with a plain open(), a FIFO blocked the load for good.
      {"not a regular file", [&] { ASSERT_EQ(::mkfifo(file.c_str(), 0644), 0); }},
      {"-byte cap for a packing plan file",
       [&] { testing::WriteStringToFile(file, good + std::string(1 << 20, '\0')); }},
  };
  for (const auto& [why, replace] : cases) {
    SCOPED_TRACE(why);
    ASSERT_EQ(::unlink(file.c_str()), 0);
    replace();
    std::vector<PlanProgress> events;
    auto view = Plan(*ds, {}, {64, 0}, 2, &events);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events[0].stage, PlanProgress::Stage::kRebuilding);
    EXPECT_NE(events[0].detail.find(why), std::string::npos) << events[0].detail;
    EXPECT_EQ(testing::ReadFileOrDie(file), good);
  }
}

// Runs `fn` in a child process that cannot write the dataset: as another
// user when this one is root (which ignores permissions), else after
// chmod. Returns the child's exit code.
int AsReader(TempDir& dir, const std::string& dataset, const std::function<int()>& fn) {
  ::chmod(dir.path().c_str(), 0755);
  ::chmod(dataset.c_str(), 0555);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(90);
    ::_exit(fn());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::chmod(dataset.c_str(), 0755);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST(PlanFileTest, AReadOnlyDatasetKeepsItsPlanInTheCache) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), Lengths(), 1, 2000);
  ASSERT_TRUE(CreateDirs(dir.Join("cache")).ok());
  ::chmod(dir.Join("cache").c_str(), 0777);
  StorageOptions storage;
  storage.cache_dir = dir.Join("cache");
  const int code = AsReader(dir, dir.Join("ds"), [&] {
    auto ds = Dataset::Open(dir.Join("ds"));
    if (!ds.ok()) return 2;
    auto view = LoadOrBuildPackingPlan(**ds, {64, 0}, storage, 2);
    if (!view.ok()) return 3;
    const std::string want = dir.Join("cache/packing/" + HashToHex((*ds)->fingerprint()) + "/");
    for (const std::string& f : (*view)->plan_files()) {
      if (f.rfind(want, 0) != 0) return 4;
    }
    // Without a cache directory there is nowhere to build: refused.
    auto refused = LoadOrBuildPackingPlan(**ds, {32, 0}, StorageOptions(), 2);
    return refused.status().code() == StatusCode::kFailedPrecondition ? 0 : 5;
  });
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(testing::Exists(dir.Join("ds/packing")));
}

TEST(PlanFileTest, ADamagedPlanInAReadOnlyDatasetIsRefusedWithoutACache) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), Lengths(), 1, 2000);
  const std::string file = Plan(*Open(dir.Join("ds")))->plan_files()[0];
  std::string bytes = testing::ReadFileOrDie(file);
  bytes[bytes.size() / 2] ^= 1;
  testing::WriteStringToFile(file, bytes);
  ::chmod(dir.Join("ds/packing").c_str(), 0555);
  const int code = AsReader(dir, dir.Join("ds"), [&] {
    auto ds = Dataset::Open(dir.Join("ds"));
    if (!ds.ok()) return 2;
    auto view = LoadOrBuildPackingPlan(**ds, {64, 0}, StorageOptions(), 2);
    return view.status().code() == StatusCode::kFailedPrecondition ? 0 : 3;
  });
  ::chmod(dir.Join("ds/packing").c_str(), 0755);
  EXPECT_EQ(code, 0);
}

TEST(PlanFileTest, ARemoteDatasetKeepsItsPlanInTheCache) {
  TempDir root, cache;
  testing::WriteSyntheticDataset(root.Join("ds"), Lengths(), 1, 2000);
  testing::HttpTestServer server(root.path());
  StorageOptions storage;
  storage.cache_dir = cache.path();
  storage.http_attempts = 2;
  auto ds = Dataset::Open(server.url() + "/ds", storage);
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  auto view = Plan(**ds, storage);
  for (const std::string& f : view->plan_files()) {
    EXPECT_EQ(f.rfind(cache.Join("packing/" + HashToHex((*ds)->fingerprint())), 0), 0u) << f;
  }
  ExpectTilesTheStream(**ds, *view);
  EXPECT_FALSE(testing::Exists(root.Join("ds/packing")));
}

TEST(PlanFileTest, SplitPartsHaveTheirOwnPlans) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), Lengths(), 1, 2000);
  DatasetOptions o;
  o.split = "3,1";
  auto train = Open(dir.Join("ds"), o);
  o.split_index = 1;
  auto held_out = Open(dir.Join("ds"), o);
  auto a = Plan(*train);
  auto b = Plan(*held_out);
  ExpectTilesTheStream(*train, *a);
  ExpectTilesTheStream(*held_out, *b);
  EXPECT_NE(a->plan_files()[0], b->plan_files()[0]);
  EXPECT_EQ(a->counts().documents + b->counts().documents, Open(dir.Join("ds"))->num_documents());
}

TEST(PlanFileTest, OfTwoProcessesOneBuildsAndTheOtherWaitsThenLoads) {
  TempDir dir;
  testing::WriteSyntheticDataset(dir.Join("ds"), Lengths(), 1, 2000);
  ASSERT_TRUE(CreateDirs(dir.Join("ds/packing")).ok());
  // This process holds the lock until both children say they wait on it.
  const int lock = ::open(dir.Join("ds/packing/plan.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(::flock(lock, LOCK_EX), 0);
  int pipes[2][2];
  pid_t pids[2];
  for (int c = 0; c < 2; ++c) {
    ASSERT_EQ(::pipe(pipes[c]), 0);
    pids[c] = ::fork();
    if (pids[c] == 0) {
      ::close(lock);
      auto ds = Dataset::Open(dir.Join("ds"));
      if (!ds.ok()) ::_exit(100);
      int built = 0;
      auto view =
          LoadOrBuildPackingPlan(**ds, {64, 0}, StorageOptions(), 2, [&](const PlanProgress& p) {
            if (p.stage == PlanProgress::Stage::kWaiting) {
              (void)!::write(pipes[c][1], "w", 1);
            }
            built += p.stage == PlanProgress::Stage::kBuilding;
          });
      ::_exit(view.ok() ? built : 101);
    }
    char w = 0;
    ASSERT_EQ(::read(pipes[c][0], &w, 1), 1);
  }
  ::close(lock);
  int built[2];
  for (int c = 0; c < 2; ++c) {
    int status = 0;
    ::waitpid(pids[c], &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    built[c] = WEXITSTATUS(status);
  }
  const int shards = static_cast<int>(Open(dir.Join("ds"))->num_shards());
  EXPECT_EQ(std::max(built[0], built[1]), shards);
  EXPECT_EQ(std::min(built[0], built[1]), 0);
}

}  // namespace
}  // namespace tokpack
