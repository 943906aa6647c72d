// A dataset's removed documents (removed.json, docs/format.md 17): every read
// of their tokens gives the pad token and no loss, across shard and checksum
// chunk boundaries, as stored and widened, in split views; nothing else
// about the dataset changes; and a bad list is refused at open, naming it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "base/file_system.h"
#include "format/idx_file.h"
#include "format/removed_list.h"
#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"
#include "tokpack/dataset.h"
#include "tokpack/files.h"

namespace tokpack {
namespace {

using testing::LossAt;
using testing::TempDir;
using testing::TokenAt;

constexpr uint64_t kSalt = 3;
constexpr int64_t kEos = 59999;  // TokenAt never gives it for these streams.

class RemovedDocuments : public ::testing::TestWithParam<TokenDtype> {
 protected:
  // 300 documents of 1..40 tokens in shards of about 900 tokens (the
  // checksum chunks, 256 bytes, do not line up with documents).
  void Write(bool masked = false) {
    RemoveAllQuietly(dir_.Join("ds"));
    manifest_ = testing::WriteSyntheticDataset(dir_.Join("ds"), testing::CyclingLengths(300, 40),
                                               kSalt, 900, GetParam(), 256, masked);
    manifest_.tokenizer.eos_id = kEos;  // The pad token without a pad id.
    ASSERT_TRUE(manifest_.Save(dir_.Join("ds")).ok());
  }

  void Remove(const std::vector<uint64_t>& docs) {
    testing::WriteStringToFile(dir_.Join("ds/removed.json"),
                               RemovedListJson({manifest_.Fingerprint(), docs}));
  }

  std::shared_ptr<Dataset> Open(const std::string& split = "", int64_t index = 0) {
    DatasetOptions o;
    EXPECT_TRUE(o.Set("split", split).ok());
    EXPECT_TRUE(o.Set("split_index", index).ok());
    StatusOr<std::shared_ptr<Dataset>> ds = Dataset::Open(dir_.Join("ds"), StorageOptions(), o);
    EXPECT_TRUE(ds.ok()) << ds.status().ToString();
    return ds.ok() ? *ds : nullptr;
  }

  // The stream as it must read: TokenAt, but kEos on removed documents'
  // tokens; `loss`: their loss bits (LossAt with masks, else 1), 0 there.
  std::vector<int64_t> Expected(const Dataset& whole, const std::set<uint64_t>& removed,
                                bool masked, std::vector<uint8_t>* loss) {
    std::vector<int64_t> tokens(whole.num_tokens());
    loss->assign(whole.num_tokens(), 1);
    for (uint64_t t = 0; t < tokens.size(); ++t) {
      tokens[t] = TokenAt(t, kSalt);
      if (masked) (*loss)[t] = LossAt(t, kSalt) ? 1 : 0;
    }
    for (uint64_t d : removed) {
      uint64_t offset = 0, length = 0;
      EXPECT_TRUE(whole.DocumentExtent(d, &offset, &length).ok());
      std::fill_n(tokens.begin() + offset, length, kEos);
      std::fill_n(loss->begin() + offset, length, 0);
    }
    return tokens;
  }

  TempDir dir_;
  Manifest manifest_;
};

// Every read of [begin, begin + n) for many ranges, each way the API reads.
void ExpectReads(const Dataset& ds, const std::vector<int64_t>& tokens,
                 const std::vector<uint8_t>& loss) {
  ASSERT_EQ(ds.num_tokens(), tokens.size());
  const int item = TokenDtypeSize(ds.dtype());
  for (uint64_t begin = 0; begin < tokens.size(); begin += 37) {
    for (uint64_t n : {uint64_t{1}, uint64_t{50}, uint64_t{1000}, uint64_t{3000}}) {
      n = std::min<uint64_t>(n, tokens.size() - begin);
      std::vector<int64_t> wide(n);
      std::vector<int32_t> narrow(n);
      std::vector<uint8_t> bits(n);
      std::string stored(n * item, '\0');
      ASSERT_TRUE(ds.ReadTokens(begin, n, wide.data()).ok());
      ASSERT_TRUE(ds.ReadTokens(begin, n, narrow.data()).ok());
      ASSERT_TRUE(ds.ReadLossMask(begin, n, bits.data()).ok());
      ASSERT_TRUE(ds.ReadStoredTokens(begin, n, stored.data()).ok());
      for (uint64_t j = 0; j < n; ++j) {
        ASSERT_EQ(wide[j], tokens[begin + j]) << begin << "+" << j;
        ASSERT_EQ(narrow[j], tokens[begin + j]) << begin << "+" << j;
        ASSERT_EQ(LoadToken(stored.data() + j * item, ds.dtype()), tokens[begin + j]);
        ASSERT_EQ(bits[j], loss[begin + j]) << begin << "+" << j;
      }
    }
  }
}

TEST_P(RemovedDocuments, RemovedTokensReadAsPadWithNoLossAndNothingElseChanges) {
  for (bool masked : {false, true}) {
    Write(masked);
    const std::shared_ptr<Dataset> before = Open();
    ASSERT_GT(before->num_shards(), 5u);
    // Documents at the start and end of shards, adjacent ones, single ones.
    std::set<uint64_t> removed = {0, 1, 2, 57, 120, 121, 299};
    uint64_t first = 0;
    for (const ShardInfo& s : manifest_.shards) {
      removed.insert(first + s.documents - 1);  // A shard's last document...
      if (first + s.documents < 300) removed.insert(first + s.documents);  // ...the next's first.
      first += s.documents;
    }
    Remove(std::vector<uint64_t>(removed.begin(), removed.end()));
    const std::shared_ptr<Dataset> ds = Open();
    EXPECT_EQ(ds->num_removed(), removed.size());
    EXPECT_EQ(ds->pad_token(), kEos);
    for (uint64_t i = 0; i < 301; ++i) EXPECT_EQ(ds->is_removed(i), removed.count(i) == 1) << i;
    std::vector<uint8_t> loss;
    const std::vector<int64_t> tokens = Expected(*ds, removed, masked, &loss);
    ExpectReads(*ds, tokens, loss);
    // What a cursor, a sample or a packing plan depends on is as it was.
    EXPECT_EQ(ds->fingerprint(), before->fingerprint());
    EXPECT_EQ(ds->num_documents(), before->num_documents());
    std::vector<uint64_t> starts, starts_before;
    ds->DocumentStarts(0, ds->num_tokens(), &starts);
    before->DocumentStarts(0, before->num_tokens(), &starts_before);
    EXPECT_EQ(starts, starts_before);
    for (uint64_t i = 0; i < ds->num_documents(); ++i) {
      uint64_t offset = 0, length = 0, offset_before = 0, length_before = 0;
      ASSERT_TRUE(ds->DocumentExtent(i, &offset, &length).ok());
      ASSERT_TRUE(before->DocumentExtent(i, &offset_before, &length_before).ok());
      EXPECT_EQ(offset, offset_before);
      EXPECT_EQ(length, length_before);
      // A removed document's bytes are not handed out in place.
      StatusOr<Dataset::TokenView> view = ds->DocumentView(i);
      if (removed.count(i)) {
        EXPECT_EQ(view.status().code(), StatusCode::kFailedPrecondition);
        EXPECT_NE(view.status().message().find("is removed (removed.json); use ReadTokens"),
                  std::string::npos);
      } else {
        ASSERT_TRUE(view.ok());
        EXPECT_EQ(LoadToken(static_cast<const char*>(view->data), ds->dtype()),
                  TokenAt(offset, kSalt));
      }
    }
  }
}

TEST_P(RemovedDocuments, SplitViewsReadTheirPartOfTheList) {
  Write();
  std::set<uint64_t> removed;
  for (uint64_t d = 0; d < 300; d += 7) removed.insert(d);
  for (uint64_t d = 100; d < 130; ++d) removed.insert(d);  // A long run of them.
  Remove(std::vector<uint64_t>(removed.begin(), removed.end()));
  const std::shared_ptr<Dataset> whole = Open();
  std::vector<uint8_t> whole_loss;
  const std::vector<int64_t> whole_tokens = Expected(*whole, removed, false, &whole_loss);
  // Where each shard starts in the whole stream.
  std::vector<uint64_t> shard_first;
  uint64_t t = 0;
  for (const ShardInfo& s : manifest_.shards) {
    shard_first.push_back(t);
    t += s.tokens;
  }
  uint64_t removed_in_parts = 0;
  for (int64_t part = 0; part < 3; ++part) {
    const std::shared_ptr<Dataset> view = Open("5,3,2", part);
    // The part's stream is its segments' tokens of the whole stream.
    std::vector<int64_t> tokens;
    std::vector<uint8_t> loss;
    for (size_t k = 0; k < view->num_shards(); ++k) {
      const ShardInfo& seg = view->manifest().shards[k];
      const size_t shard =
          static_cast<size_t>(std::find_if(manifest_.shards.begin(), manifest_.shards.end(),
                                           [&](const ShardInfo& s) { return s.path == seg.path; }) -
                              manifest_.shards.begin());
      const uint64_t from = shard_first[shard] + view->shard_token_offset(k);
      tokens.insert(tokens.end(), whole_tokens.begin() + from,
                    whole_tokens.begin() + from + seg.tokens);
      loss.insert(loss.end(), whole_loss.begin() + from, whole_loss.begin() + from + seg.tokens);
    }
    ExpectReads(*view, tokens, loss);
    // Its documents are removed as the whole's same documents are.
    uint64_t count = 0;
    for (uint64_t i = 0; i < view->num_documents(); ++i) {
      uint64_t offset = 0, length = 0;
      ASSERT_TRUE(view->DocumentExtent(i, &offset, &length).ok());
      const bool blank = std::all_of(tokens.begin() + offset, tokens.begin() + offset + length,
                                     [](int64_t v) { return v == kEos; });
      EXPECT_EQ(view->is_removed(i), blank) << part << " " << i;
      count += view->is_removed(i);
    }
    EXPECT_EQ(view->num_removed(), count);
    removed_in_parts += count;
  }
  EXPECT_EQ(removed_in_parts, removed.size());
}

TEST_P(RemovedDocuments, ThePadIdComesFirstAndAnEmptyListChangesNothing) {
  Write();
  manifest_.tokenizer.pad_id = 11;
  ASSERT_TRUE(manifest_.Save(dir_.Join("ds")).ok());
  Remove({4});
  const std::shared_ptr<Dataset> ds = Open();
  uint64_t offset = 0, length = 0;
  ASSERT_TRUE(ds->DocumentExtent(4, &offset, &length).ok());
  std::vector<int64_t> tokens(length);
  ASSERT_TRUE(ds->ReadTokens(offset, length, tokens.data()).ok());
  EXPECT_EQ(tokens, std::vector<int64_t>(length, 11));
  Remove({});
  EXPECT_EQ(Open()->num_removed(), 0u);
  ASSERT_TRUE(Open()->ReadTokens(offset, length, tokens.data()).ok());
  EXPECT_EQ(tokens[0], TokenAt(offset, kSalt));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RemovedDocuments,
                         ::testing::Values(TokenDtype::kUInt16, TokenDtype::kInt32));

class BadRemovedList : public ::testing::Test {
 protected:
  void SetUp() override {
    manifest_ = testing::WriteSyntheticDataset(dir_.Join("ds"), testing::CyclingLengths(50, 20), 1);
  }
  Status OpenError() {
    StatusOr<std::shared_ptr<Dataset>> ds = Dataset::Open(dir_.Join("ds"));
    return ds.status();
  }
  TempDir dir_;
  Manifest manifest_;
};

TEST_F(BadRemovedList, IsRefusedAtOpenNamingTheFile) {
  const std::string path = dir_.Join("ds/removed.json");
  const std::string fingerprint = HashToHex(manifest_.Fingerprint());
  const auto list = [&](const std::string& docs) {
    return R"({"format": "tokpack-removed", "version": 1, "fingerprint": ")" + fingerprint +
           R"(", "documents": )" + docs + "}";
  };
  const struct {
    std::string text;
    StatusCode code;
    std::string message;
  } cases[] = {
      {"{oops", StatusCode::kInvalidArgument, "not valid JSON"},
      {list("[3, 1]"), StatusCode::kInvalidArgument, "'documents[1]' is 1, not above"},
      {list("[1, 1]"), StatusCode::kInvalidArgument, "'documents[1]' is 1, not above"},
      {list("[1, 50]"), StatusCode::kInvalidArgument, "past the last of the dataset's 50"},
      {RemovedListJson({manifest_.Fingerprint() ^ 1, {1}}), StatusCode::kFailedPrecondition,
       "was made for another version of the dataset"},
  };
  for (const auto& c : cases) {
    testing::WriteStringToFile(path, c.text);
    const Status s = OpenError();
    EXPECT_EQ(s.code(), c.code) << c.text << "\n" << s.ToString();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
  }
}

TEST_F(BadRemovedList, TooLargeALinkOrNotAFileIsRefusedUnread) {
  const std::string path = dir_.Join("ds/removed.json");
  // A sparse file past the cap: refused before anything is allocated.
  testing::WriteStringToFile(path, "");
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kMaxRemovedListBytes + 1)), 0);
  Status s = OpenError();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(std::to_string(kMaxRemovedListBytes)), std::string::npos)
      << s.ToString();
  ASSERT_EQ(::unlink(path.c_str()), 0);
  // A link (a list must lie in the dataset), and a directory.
  testing::WriteStringToFile(dir_.Join("elsewhere.json"),
                             RemovedListJson({manifest_.Fingerprint(), {1}}));
  ASSERT_EQ(::symlink(dir_.Join("elsewhere.json").c_str(), path.c_str()), 0);
  s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("removed.json"), std::string::npos) << s.ToString();
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("removed.json"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace tokpack
