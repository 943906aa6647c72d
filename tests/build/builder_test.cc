#include "tokpack/builder.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <mutex>

#include "build/builder_internal.h"
#include "tests/test_util.h"
#include "tokpack/dataset.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/tokenizer.h"

namespace tokpack {
namespace {

using testing::Exists;
using testing::ReadFileOrDie;
using testing::TempDir;
using testing::WriteStringToFile;

// Fails every Append once `budget` bytes have been written in total, as a
// full disk does.
class FullDiskFileSystem : public FileSystem {
 public:
  explicit FullDiskFileSystem(uint64_t budget) : budget_(budget) {}
  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    TOKPACK_ASSIGN_OR_RETURN(auto inner, PosixFileSystem()->NewWritableFile(path));
    return std::unique_ptr<WritableFile>(new File(std::move(inner), this));
  }
  Status Rename(const std::string& a, const std::string& b) override {
    return PosixFileSystem()->Rename(a, b);
  }
  Status SyncDir(const std::string& d) override { return PosixFileSystem()->SyncDir(d); }

 private:
  class File : public WritableFile {
   public:
    File(std::unique_ptr<WritableFile> inner, FullDiskFileSystem* fs)
        : inner_(std::move(inner)), fs_(fs) {}
    Status Append(std::string_view data) override {
      {
        std::lock_guard<std::mutex> lock(fs_->mu_);
        if (fs_->written_ + data.size() > fs_->budget_) {
          return ErrnoToStatus(ENOSPC, "write", inner_->path());
        }
        fs_->written_ += data.size();
      }
      return inner_->Append(data);
    }
    Status Close() override { return inner_->Close(); }
    const std::string& path() const override { return inner_->path(); }

   private:
    std::unique_ptr<WritableFile> inner_;
    FullDiskFileSystem* fs_;
  };
  std::mutex mu_;
  uint64_t budget_;
  uint64_t written_ = 0;
};

class BuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Four inputs of different kinds, about 600 documents in all.
    WriteStringToFile(dir_.Join("a.jsonl"), testing::MakeJsonl(200, 1, &texts_));
    WriteStringToFile(dir_.Join("b.jsonl.zst"),
                      testing::ZstdCompress(testing::MakeJsonl(150, 500, &texts_)));
    WriteStringToFile(dir_.Join("c.jsonl.gz"),
                      testing::GzipCompress(testing::MakeJsonl(150, 900, &texts_)));
    WriteStringToFile(dir_.Join("d.jsonl"), testing::MakeJsonl(100, 1300, &texts_));
  }
  BuildOptions Options(const std::string& out, int threads = 2) {
    BuildOptions o;
    o.inputs = {dir_.Join("a.jsonl"), dir_.Join("b.jsonl.zst"), dir_.Join("c.jsonl.gz"),
                dir_.Join("d.jsonl")};
    o.output = out;
    o.tokenizer_model = testing::TestModelPath();
    o.threads = threads;
    o.chunk_bytes = 1024;
    o.settings.shard_tokens = 4000;
    return o;
  }
  // Every document's token ids, in stream order.
  std::vector<std::vector<int64_t>> Documents(const std::string& out) {
    auto ds = Dataset::Open(out);
    EXPECT_TRUE(ds.ok()) << ds.status().ToString();
    std::vector<std::vector<int64_t>> docs;
    for (uint64_t i = 0; i < (*ds)->num_documents(); ++i) {
      uint64_t offset = 0, length = 0;
      EXPECT_TRUE((*ds)->DocumentExtent(i, &offset, &length).ok());
      docs.emplace_back(length);
      EXPECT_TRUE((*ds)->ReadTokens(offset, length, docs.back().data()).ok());
    }
    return docs;
  }
  TempDir dir_;
  std::vector<std::string> texts_;
};

TEST_F(BuilderTest, DocumentsAreSentencepieceIdsWithEos) {
  auto summary = Build(Options(dir_.Join("out")));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  auto tok = Tokenizer::Load(testing::TestModelPath());
  ASSERT_TRUE(tok.ok());
  auto docs = Documents(dir_.Join("out"));
  ASSERT_EQ(docs.size(), texts_.size());
  for (size_t i = 0; i < texts_.size(); ++i) {
    std::vector<int> ids;
    ASSERT_TRUE((*tok)->Encode(texts_[i], &ids).ok());
    ids.push_back(static_cast<int>((*tok)->info().eos_id));
    ASSERT_EQ(docs[i], std::vector<int64_t>(ids.begin(), ids.end())) << "document " << i;
  }
  EXPECT_GT(summary->manifest.shards.size(), 3u);
  EXPECT_TRUE(VerifyDataset(dir_.Join("out"), StorageOptions())->ok());
}

TEST_F(BuilderTest, OutputIsByteIdenticalForAnyThreadCount) {
  std::vector<std::string> outs;
  for (int threads : {1, 2, 5}) {
    outs.push_back(dir_.Join("t" + std::to_string(threads)));
    ASSERT_TRUE(Build(Options(outs.back(), threads)).ok());
  }
  for (const auto& entry : std::filesystem::directory_iterator(outs[0])) {
    const std::string name = entry.path().filename().string();
    const std::string want = ReadFileOrDie(outs[0] + "/" + name);
    for (size_t i = 1; i < outs.size(); ++i) {
      EXPECT_EQ(ReadFileOrDie(outs[i] + "/" + name), want) << name << " differs";
    }
  }
}

TEST_F(BuilderTest, MalformedLineFailsNamingFileAndLineUnlessSkipped) {
  WriteStringToFile(dir_.Join("bad.jsonl"),
                    "{\"text\": \"fine\"}\n\n{\"text\": \"broken\"\n{\"text\": \"fine again\"}\n");
  BuildOptions o = Options(dir_.Join("out"));
  o.inputs = {dir_.Join("bad.jsonl")};
  auto r = Build(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad.jsonl:3: malformed JSON"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(Exists(dir_.Join("out")));
  o.settings.skip_bad_lines = true;
  r = Build(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->manifest.provenance.counts.bad_lines, 1u);
  EXPECT_EQ(r->manifest.TotalDocuments(), 2u);
}

TEST_F(BuilderTest, RecordsOverMaxDocumentBytesAreBadRecordsNamingFileAndLine) {
  const std::string big(5000, 'x');
  WriteStringToFile(dir_.Join("big.jsonl"), "{\"text\": \"fine\"}\n{\"text\": \"" + big +
                                                "\"}\n{\"text\": \"fine again\"}\n");
  WriteStringToFile(dir_.Join("lines.txt"), "short\n" + big + "\nshort again\n");
  WriteStringToFile(dir_.Join("whole.txt"), big);
  WriteStringToFile(dir_.Join("small.txt"), "small");
  struct Case {
    std::vector<std::string> inputs;
    bool per_line;
    std::string error;
    uint64_t documents;  // With skip_bad_lines.
  };
  const std::vector<Case> cases = {
      {{"big.jsonl"},
       false,
       "big.jsonl:2: a record of 5012 bytes, over --max-document-bytes (1000)",
       2},
      {{"lines.txt"},
       true,
       "lines.txt:2: a record of 5000 bytes, over --max-document-bytes (1000)",
       2},
      {{"whole.txt", "small.txt"},
       false,
       "whole.txt: a document of more than 1000 bytes, over --max-document-bytes (1000)",
       1},
  };
  for (const Case& c : cases) {
    BuildOptions o = Options(dir_.Join("out"));
    o.inputs.clear();
    for (const auto& in : c.inputs) o.inputs.push_back(dir_.Join(in));
    o.settings.text_per_line = c.per_line;
    o.max_document_bytes = 1000;
    auto r = Build(o);
    ASSERT_FALSE(r.ok()) << c.error;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
    EXPECT_FALSE(Exists(dir_.Join("out")));
    o.settings.skip_bad_lines = true;
    r = Build(o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->manifest.provenance.counts.bad_lines, 1u) << c.error;
    EXPECT_EQ(r->manifest.TotalDocuments(), c.documents) << c.error;
    std::filesystem::remove_all(dir_.Join("out"));
  }
}

TEST_F(BuilderTest, MaxDocumentBytesIsCheckedBeforeWork) {
  BuildOptions o = Options(dir_.Join("out"));
  EXPECT_EQ(o.max_document_bytes, 256u << 20);
  EXPECT_EQ(o.Set("max_document_bytes", OptionValue(uint64_t{0})).code(),
            StatusCode::kInvalidArgument);
  o.max_document_bytes = (uint64_t{1} << 30) + 1;
  Status s = Build(o).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("max_document_bytes must be at most"), std::string::npos);
  EXPECT_FALSE(Exists(dir_.Join("out")));
}

TEST_F(BuilderTest, ATokenizerFailureNamesFileAndLine) {
  // Without a rank for "z", encoding a "z" fails: the build stops naming it
  // (not just "no rank"), whatever the bad-line policy.
  const std::string ranks = dir_.Join("no-z.tiktoken");
  WriteStringToFile(ranks, testing::TiktokenRanks({"ab"}, 'z'));
  WriteStringToFile(dir_.Join("z.jsonl"), "{\"text\": \"ab\"}\n{\"text\": \"ab z\"}\n");
  BuildOptions o = Options(dir_.Join("out"));
  o.inputs = {dir_.Join("z.jsonl")};
  o.tokenizer_model = ranks;
  o.tokenizer_options.pattern = "gpt2";
  o.settings.add_eos = false;
  o.settings.skip_bad_lines = true;
  Status s = Build(o).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("z.jsonl:2: the tiktoken file has no rank for byte 0x7a"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(Exists(dir_.Join("out")));
}

TEST_F(BuilderTest, FullDiskFailsClearlyAndLeavesNothing) {
  FullDiskFileSystem fs(3000);
  auto r = BuildWithFileSystem(Options(dir_.Join("out")), &fs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("No space left on device"), std::string::npos);
  EXPECT_NE(r.status().message().find("shard-0000"), std::string::npos);
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_EQ(e.path().filename().string().find("out"), std::string::npos)
        << "left behind: " << e.path();
  }
}

TEST_F(BuilderTest, FailedForcedRebuildKeepsTheOldDataset) {
  ASSERT_TRUE(Build(Options(dir_.Join("out"))).ok());
  const std::string before = ReadFileOrDie(dir_.Join("out/manifest.json"));
  FullDiskFileSystem fs(3000);
  BuildOptions o = Options(dir_.Join("out"));
  o.force = true;
  EXPECT_FALSE(BuildWithFileSystem(o, &fs).ok());
  EXPECT_EQ(ReadFileOrDie(dir_.Join("out/manifest.json")), before);
  EXPECT_TRUE(VerifyDataset(dir_.Join("out"), StorageOptions())->ok());
  EXPECT_EQ(Build(Options(dir_.Join("out"))).status().code(), StatusCode::kAlreadyExists);
}

TEST_F(BuilderTest, CancelStopsTheBuildWithoutOutput) {
  std::atomic<bool> cancel{true};
  BuildOptions o = Options(dir_.Join("out"));
  o.cancel = UnownedCancelFlag(&cancel);
  auto r = Build(o);
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_FALSE(Exists(dir_.Join("out")));
}

TEST_F(BuilderTest, PartsMergedEqualASingleBuild) {
  ASSERT_TRUE(Build(Options(dir_.Join("single"))).ok());
  std::vector<std::string> parts;
  for (int i = 2; i >= 0; --i) {  // Any order: merge sorts by part index.
    BuildOptions o = Options(dir_.Join("part" + std::to_string(i)));
    o.part_index = i;
    o.part_count = 3;
    ASSERT_TRUE(Build(o).ok());
    parts.push_back(o.output);
  }
  auto merged = MergeDatasets(dir_.Join("merged"), parts, false, StorageOptions());
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(Documents(dir_.Join("merged")), Documents(dir_.Join("single")));
  EXPECT_TRUE(VerifyDataset(dir_.Join("merged"), StorageOptions())->ok());
  EXPECT_EQ(merged->provenance.inputs.size(), 4u);

  parts.pop_back();
  auto incomplete = MergeDatasets(dir_.Join("m2"), parts, false, StorageOptions());
  EXPECT_NE(incomplete.status().message().find("part 0/3 is missing"), std::string::npos)
      << incomplete.status().message();
}

TEST_F(BuilderTest, MergeRefusesDatasetsWithDifferentEosSettings) {
  ASSERT_TRUE(Build(Options(dir_.Join("eos"))).ok());
  BuildOptions o = Options(dir_.Join("noeos"));
  o.settings.add_eos = false;
  ASSERT_TRUE(Build(o).ok());
  auto m = MergeDatasets(dir_.Join("m"), {dir_.Join("eos"), dir_.Join("noeos")}, false,
                         StorageOptions());
  EXPECT_NE(m.status().message().find("different BOS/EOS settings"), std::string::npos)
      << m.status().message();
}

TEST_F(BuilderTest, RepairedCountsOnlyDocumentsWritten) {
  WriteStringToFile(dir_.Join("u.jsonl"),
                    "{\"text\": \"caf\xe9 ok\"}\n{\"text\": \"bad \xff\", oops}\n");
  BuildOptions o = Options(dir_.Join("out"));
  o.inputs = {dir_.Join("u.jsonl")};
  o.settings.skip_bad_lines = true;
  auto r = Build(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->manifest.provenance.counts.utf8_repaired, 1u);
  EXPECT_EQ(r->manifest.provenance.counts.bad_lines, 1u);
}

TEST_F(BuilderTest, EmptyDocumentsAreSkippedAndCounted) {
  WriteStringToFile(dir_.Join("e.jsonl"),
                    "{\"text\": \"\"}\n{\"text\": \"words here\"}\n{\"text\": \"   \"}\n");
  BuildOptions o = Options(dir_.Join("out"));
  o.inputs = {dir_.Join("e.jsonl")};
  auto r = Build(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->manifest.TotalDocuments(), 1u);
  EXPECT_EQ(r->manifest.provenance.counts.skipped_empty, 2u);
}

TEST_F(BuilderTest, TextInputsOnePerFileOrPerLine) {
  WriteStringToFile(dir_.Join("t1.txt"), "first line\nsecond line\n");
  WriteStringToFile(dir_.Join("t2.txt"), "another document");
  BuildOptions o = Options(dir_.Join("files"));
  o.inputs = {dir_.Join("t1.txt"), dir_.Join("t2.txt")};
  auto r = Build(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->manifest.TotalDocuments(), 2u);
  o.output = dir_.Join("lines");
  o.settings.text_per_line = true;
  r = Build(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->manifest.TotalDocuments(), 3u);
}

TEST_F(BuilderTest, RejectsBadOptionsBeforeWork) {
  BuildOptions o = Options(dir_.Join("out"));
  o.inputs.push_back(dir_.Join("missing.jsonl"));
  EXPECT_EQ(Build(o).status().code(), StatusCode::kNotFound);
  o = Options(dir_.Join("out"));
  o.tokenizer_model = dir_.Join("a.jsonl");  // JSON, but not a tokenizer.json
  Status bad_tokenizer = Build(o).status();
  EXPECT_EQ(bad_tokenizer.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_tokenizer.message().find(o.tokenizer_model), std::string::npos);
  o.tokenizer_model = dir_.Join("out-of-nowhere.bin");
  WriteStringToFile(o.tokenizer_model, std::string("\x01\x02 binary"));
  EXPECT_NE(Build(o).status().message().find("not a tokenizer file tokpack reads"),
            std::string::npos);
  EXPECT_FALSE(Exists(dir_.Join("out")));
}

}  // namespace
}  // namespace tokpack
