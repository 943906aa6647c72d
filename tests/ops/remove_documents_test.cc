// RemoveDocuments and the operations that carry a removal list (docs/format.md
// 17): ids and indices go on and come off the list, a failed edit writes
// nothing, concurrent local edits keep every document, merge renumbers the
// parts' lists, and verify finds a tampered one.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "format/removed_list.h"
#include "tests/test_util.h"
#include "tokpack/builder.h"
#include "tokpack/dataset.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {
namespace {

using testing::ReadFileOrDie;
using testing::TempDir;
using testing::WriteStringToFile;

// `n` JSONL records with ids doc-<first + i>, the text of each its own; the
// records first + 5 and first + 9 share the id "dup".
std::string Records(int n, int first) {
  std::string out;
  for (int i = first; i < first + n; ++i) {
    const std::string id = i == first + 5 || i == first + 9 ? "dup" : "doc-" + std::to_string(i);
    out += R"({"id": ")" + id + R"(", "text": ")" + testing::RandomText(i, 5 + i % 40) + "\"}\n";
  }
  return out;
}

class RemoveDocumentsTest : public ::testing::Test {
 protected:
  // A dataset of `n` documents at dir_/name, from records doc-<first>...
  std::string BuildDataset(const std::string& name, int n, int first, int part_index = 0,
                           int part_count = 1) {
    const std::string input = dir_.Join(name + ".jsonl");
    WriteStringToFile(input, Records(n, first));
    BuildOptions o;
    o.inputs = {input};
    o.output = dir_.Join(name);
    o.tokenizer_model = testing::TestModelPath();
    o.settings.shard_tokens = 2000;
    o.part_index = part_index;
    o.part_count = part_count;
    auto r = Build(o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return o.output;
  }

  static StatusOr<RemovalResult> Remove(const std::string& path, std::vector<uint64_t> documents,
                                        std::vector<std::string> ids = {}, bool restore = false) {
    RemovalRequest r;
    r.documents = std::move(documents);
    r.ids = std::move(ids);
    r.restore = restore;
    return RemoveDocuments(path, StorageOptions(), r);
  }

  static std::vector<uint64_t> Listed(const std::string& path) {
    return ParseRemovedList(ReadFileOrDie(path + "/removed.json"), "removed.json")->documents;
  }

  TempDir dir_;
};

TEST_F(RemoveDocumentsTest, IdsAndIndicesGoOnTheListAndComeOff) {
  const std::string ds = BuildDataset("ds", 200, 0);
  StatusOr<RemovalResult> r = Remove(ds, {150, 3}, {"doc-7", "dup"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->changed, 5u);  // 3, 150, doc-7 and both documents of "dup".
  EXPECT_EQ(r->unchanged, 0u);
  EXPECT_EQ(r->total, 5u);
  EXPECT_EQ(Listed(ds), (std::vector<uint64_t>{3, 5, 7, 9, 150}));
  const Manifest m = *Manifest::Load(ds);
  EXPECT_EQ(ParseRemovedList(ReadFileOrDie(ds + "/removed.json"), "")->fingerprint,
            m.Fingerprint());
  auto opened = Dataset::Open(ds);
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ((*opened)->num_removed(), 5u);
  EXPECT_TRUE((*opened)->is_removed(9));
  // Again, with one more: only that one is new.
  r = Remove(ds, {3, 4});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->changed, 1u);
  EXPECT_EQ(r->unchanged, 1u);
  EXPECT_EQ(r->total, 6u);
  r = Remove(ds, {4, 100}, {"dup"}, /*restore=*/true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->changed, 3u);    // 4, 5 and 9.
  EXPECT_EQ(r->unchanged, 1u);  // 100 was not on it.
  EXPECT_EQ(Listed(ds), (std::vector<uint64_t>{3, 7, 150}));
}

TEST_F(RemoveDocumentsTest, AFailedEditWritesNothing) {
  const std::string ds = BuildDataset("ds", 50, 0);
  ASSERT_TRUE(Remove(ds, {1}).ok());
  const std::string before = ReadFileOrDie(ds + "/removed.json");
  struct Case {
    std::vector<uint64_t> documents;
    std::vector<std::string> ids;
    StatusCode code;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{2, 50},
            {},
            StatusCode::kInvalidArgument,
            "document 50 is past the last of the 50 documents of " + ds + "; nothing was changed"},
           {{2},
            {"doc-3", "no-such-id"},
            StatusCode::kNotFound,
            "no document of " + ds + " has the id 'no-such-id'; nothing was changed"},
           {{}, {}, StatusCode::kInvalidArgument, "no document to remove given"}}) {
    const Status s = Remove(ds, c.documents, c.ids).status();
    EXPECT_EQ(s.code(), c.code) << s.ToString();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
    EXPECT_EQ(ReadFileOrDie(ds + "/removed.json"), before);
  }
  // A list made for another version of the dataset is not silently replaced.
  const std::string stale = RemovedListJson({12345, {1}});
  WriteStringToFile(ds + "/removed.json", stale);
  const Status s = Remove(ds, {2}).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("made for another version of the dataset"), std::string::npos);
  EXPECT_EQ(ReadFileOrDie(ds + "/removed.json"), stale);
  // A bare Megatron prefix has no manifest to lie beside.
  EXPECT_EQ(Remove(ds + "/shard-00000", {0}).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(RemoveDocumentsTest, ConcurrentLocalEditsKeepEveryDocument) {
  const std::string ds = BuildDataset("ds", 100, 0);
  std::vector<std::thread> threads;
  std::vector<Status> results(16);
  for (uint64_t k = 0; k < results.size(); ++k) {
    threads.emplace_back([&, k] { results[k] = Remove(ds, {k * 5}).status(); });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Listed(ds).size(), results.size());
}

TEST_F(RemoveDocumentsTest, MergeCarriesThePartsListsRenumbered) {
  const std::string a = BuildDataset("a", 60, 0), b = BuildDataset("b", 80, 1000);
  ASSERT_TRUE(Remove(a, {0, 59}).ok());
  ASSERT_TRUE(Remove(b, {}, {"doc-1000", "doc-1079"}).ok());
  const std::string merged = dir_.Join("merged");
  StatusOr<Manifest> m = MergeDatasets(merged, {a, b}, false, StorageOptions());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const StatusOr<RemovedList> list =
      ParseRemovedList(ReadFileOrDie(merged + "/removed.json"), "removed.json");
  EXPECT_EQ(list->fingerprint, m->Fingerprint());
  EXPECT_EQ(list->documents, (std::vector<uint64_t>{0, 59, 60, 139}));
  auto ds = Dataset::Open(merged);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(*(*ds)->FindById("doc-1079"), std::vector<uint64_t>{139});
  EXPECT_TRUE((*ds)->is_removed(139));
  EXPECT_TRUE(VerifyDataset(merged, StorageOptions())->ok());
  // Parts without lists make none; a part's stale list fails the merge.
  ASSERT_EQ(std::remove((a + "/removed.json").c_str()), 0);
  ASSERT_EQ(std::remove((b + "/removed.json").c_str()), 0);
  ASSERT_TRUE(MergeDatasets(dir_.Join("plain"), {a, b}, false, StorageOptions()).ok());
  EXPECT_FALSE(testing::Exists(dir_.Join("plain/removed.json")));
  WriteStringToFile(b + "/removed.json", RemovedListJson({1, {0}}));
  const Status s = MergeDatasets(dir_.Join("stale"), {a, b}, false, StorageOptions()).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find(b + "/removed.json was made for another version"), std::string::npos)
      << s.message();
  EXPECT_FALSE(testing::Exists(dir_.Join("stale")));
}

TEST_F(RemoveDocumentsTest, VerifyFindsATamperedList) {
  const std::string ds = BuildDataset("ds", 40, 0);
  ASSERT_TRUE(Remove(ds, {1, 2}).ok());
  StatusOr<VerifyReport> r = VerifyDataset(ds, StorageOptions());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok()) << r->problems[0];
  const std::string fingerprint = HashToHex(Manifest::Load(ds)->Fingerprint());
  for (const auto& [docs, problem] : std::vector<std::pair<std::string, std::string>>{
           {"[2, 1]", "'documents[1]' is 1, not above the one before it (2)"},
           {"[1, 40]", "'documents[1]' is 40, past the last of the dataset's 40 documents"}}) {
    WriteStringToFile(ds + "/removed.json",
                      R"({"format": "tokpack-removed", "version": 1, "fingerprint": ")" +
                          fingerprint + R"(", "documents": )" + docs + "}");
    r = VerifyDataset(ds, StorageOptions());
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->problems.size(), 1u);
    EXPECT_NE(r->problems[0].find(ds + "/removed.json: field " + problem), std::string::npos)
        << r->problems[0];
  }
}

}  // namespace
}  // namespace tokpack
