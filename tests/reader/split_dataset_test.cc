// A Dataset opened with DatasetOptions::split: a view of its part's runs of
// documents, checked against the parent dataset read as a whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "reader/split_ranges.h"
#include "tests/reader/synthetic_dataset.h"
#include "tests/storage/http_test_server.h"
#include "tests/test_util.h"
#include "tokpack/dataset.h"
#include "tokpack/loader.h"

namespace tokpack {
namespace {

using testing::TempDir;

class SplitDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    // Shards of about 100 documents (3000 tokens), chunks of 256 bytes.
    testing::WriteSyntheticDataset(dir_.Join("ds"), testing::CyclingLengths(700, 60), 3, 3000);
    parent_ = *Dataset::Open(dir_.Join("ds"));
    ASSERT_GT(parent_->num_shards(), 5u);
  }

  StatusOr<std::shared_ptr<Dataset>> Open(const std::string& split, int64_t index) {
    DatasetOptions o;
    TOKPACK_RETURN_IF_ERROR(o.Set("split", split));
    TOKPACK_RETURN_IF_ERROR(o.Set("split_index", index));
    return Dataset::Open(dir_.Join("ds"), StorageOptions(), o);
  }

  // The parent's documents of part j, in stream order: each shard cut into
  // runs of R documents, numbered over the shards, run g in the part that
  // SplitRuns::PartOfRun deals it to (split_ranges_test checks the dealing).
  std::vector<uint64_t> ExpectedDocuments(const std::string& split, size_t j) {
    std::vector<uint64_t> sizes;
    for (const ShardInfo& shard : parent_->manifest().shards) sizes.push_back(shard.documents);
    const SplitRuns runs(*ParseSplit(split), sizes);
    std::vector<uint64_t> docs;
    uint64_t first = 0, g = 0;
    for (uint64_t d : sizes) {
      for (uint64_t i = 0; i < d; i += runs.run_documents(), ++g) {
        if (runs.PartOfRun(g) != j) continue;
        for (uint64_t e = i; e < std::min(d, i + runs.run_documents()); ++e)
          docs.push_back(first + e);
      }
      first += d;
    }
    EXPECT_EQ(g, runs.runs());
    return docs;
  }

  std::vector<int64_t> ParentDocument(uint64_t i) {
    uint64_t offset = 0, length = 0;
    EXPECT_TRUE(parent_->DocumentExtent(i, &offset, &length).ok());
    std::vector<int64_t> tokens(length);
    EXPECT_TRUE(parent_->ReadTokens(offset, length, tokens.data()).ok());
    return tokens;
  }

  TempDir dir_;
  std::shared_ptr<Dataset> parent_;
};

TEST_F(SplitDataset, PartsHoldTheFormulasDocumentsAndReadAsTheParent) {
  const std::vector<std::pair<std::string, std::vector<uint64_t>>> splits = {
      {"949,50,1", {949, 50, 1}}, {"0.8,0.1,0.1", {8, 1, 1}}, {"2,0,3,5", {2, 0, 3, 5}}};
  for (const auto& [split, weights] : splits) {
    std::map<uint64_t, int> times;  // Parent document -> parts holding it.
    for (size_t j = 0; j < weights.size(); ++j) {
      const std::vector<uint64_t> expected = ExpectedDocuments(split, j);
      if (expected.empty()) continue;  // The weight-0 part: refused (below).
      auto opened = Open(split, static_cast<int64_t>(j));
      ASSERT_TRUE(opened.ok()) << split << " " << j << ": " << opened.status().ToString();
      const Dataset& view = **opened;
      ASSERT_EQ(view.num_documents(), expected.size()) << split << " part " << j;
      std::vector<int64_t> stream;        // The parts' documents, concatenated.
      std::vector<uint64_t> view_starts;  // Their view offsets.
      for (uint64_t i = 0; i < expected.size(); ++i) {
        ++times[expected[i]];
        const std::vector<int64_t> want = ParentDocument(expected[i]);
        uint64_t offset = 0, length = 0;
        ASSERT_TRUE(view.DocumentExtent(i, &offset, &length).ok());
        ASSERT_EQ(offset, stream.size()) << "documents follow each other in the view";
        ASSERT_EQ(length, want.size());
        std::vector<int64_t> got(length);
        ASSERT_TRUE(view.ReadTokens(offset, length, got.data()).ok());
        ASSERT_EQ(got, want) << split << " part " << j << " document " << i;
        auto doc_view = view.DocumentView(i);
        ASSERT_TRUE(doc_view.ok());
        const uint16_t* stored = static_cast<const uint16_t*>(doc_view->data);
        for (uint64_t t = 0; t < length; ++t) ASSERT_EQ(stored[t], want[t]);
        view_starts.push_back(offset);
        stream.insert(stream.end(), want.begin(), want.end());
      }
      ASSERT_EQ(view.num_tokens(), stream.size());
      std::vector<int64_t> all(stream.size());
      ASSERT_TRUE(view.ReadTokens(0, all.size(), all.data()).ok()) << "reads across shards";
      EXPECT_EQ(all, stream);
      std::vector<int64_t> past(2);
      EXPECT_EQ(view.ReadTokens(stream.size() - 1, 2, past.data()).code(), StatusCode::kOutOfRange);
      std::vector<uint64_t> starts;
      view.DocumentStarts(0, view.num_tokens(), &starts);
      EXPECT_EQ(starts, view_starts);
      const uint64_t lo = view.num_tokens() / 3, hi = 2 * view.num_tokens() / 3;
      starts.clear();
      view.DocumentStarts(lo, hi, &starts);
      std::vector<uint64_t> inside;
      for (uint64_t s : view_starts) {
        if (s >= lo && s < hi) inside.push_back(s);
      }
      EXPECT_EQ(starts, inside);
      uint64_t tokens = 0, documents = 0;
      for (const ShardInfo& shard : view.manifest().shards) {
        tokens += shard.tokens;
        documents += shard.documents;
      }
      EXPECT_EQ(tokens, view.num_tokens());
      EXPECT_EQ(documents, view.num_documents());
      EXPECT_EQ(view.DocumentExtent(expected.size(), nullptr, nullptr).code(),
                StatusCode::kOutOfRange);
    }
    // Every document in exactly one part (the weight-0 part holds none).
    ASSERT_EQ(times.size(), parent_->num_documents()) << split;
    for (const auto& [doc, n] : times) ASSERT_EQ(n, 1) << split << ": document " << doc;
  }
}

TEST_F(SplitDataset, IsStableUnderReopenWithAFingerprintPerPart) {
  std::set<uint64_t> fingerprints = {parent_->fingerprint()};
  for (int64_t j = 0; j < 3; ++j) {
    auto a = Open("949,50,1", j), b = Open("949,50,1", j), c = Open(" 94.9, 5, 0.1", j);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ((*a)->fingerprint(), (*b)->fingerprint());
    EXPECT_EQ((*a)->fingerprint(), (*c)->fingerprint()) << "the same split, written otherwise";
    EXPECT_TRUE(fingerprints.insert((*a)->fingerprint()).second) << "part " << j;
    for (uint64_t k = 0; k < (*a)->num_shards(); ++k) {
      EXPECT_EQ((*a)->shard_token_offset(k), (*b)->shard_token_offset(k));
    }
    std::vector<int64_t> x((*a)->num_tokens()), y((*b)->num_tokens());
    ASSERT_TRUE((*a)->ReadTokens(0, x.size(), x.data()).ok());
    ASSERT_TRUE((*b)->ReadTokens(0, y.size(), y.data()).ok());
    EXPECT_EQ(x, y);
  }
  auto other = Open("949,49,2", 0);
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(fingerprints.insert((*other)->fingerprint()).second);
  // The whole dataset is the same as before splits existed.
  EXPECT_EQ(parent_->fingerprint(), parent_->manifest().Fingerprint());
  EXPECT_EQ(parent_->shard_token_offset(1), 0u);
}

TEST_F(SplitDataset, ErrorsNameTheOptionTheValueAndThePart) {
  DatasetOptions o;
  Status bad = o.Set("split", "949,x,1");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("split '949,x,1': 'x' is not a non-negative number"),
            std::string::npos)
      << bad.message();
  EXPECT_NE(o.Set("split", "0,0").message().find("every weight is 0"), std::string::npos);
  EXPECT_EQ(o.Set("split_index", int64_t{-1}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(o.split, "");  // Nothing changed.

  auto out_of_range = Open("949,50,1", 3);
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_EQ(out_of_range.status().message(),
            "split_index 3 is out of range for split '949,50,1' (parts 0 to 2)");
  auto no_split = Open("", 1);
  ASSERT_FALSE(no_split.ok());
  EXPECT_NE(no_split.status().message().find("split_index 1 needs a split"), std::string::npos);

  // Assigned directly, not through Set: Open checks it as well.
  DatasetOptions direct;
  direct.split = "1;2";
  auto unparsed = Dataset::Open(dir_.Join("ds"), StorageOptions(), direct);
  ASSERT_FALSE(unparsed.ok());
  EXPECT_NE(unparsed.status().message().find("split '1;2'"), std::string::npos);

  auto empty = Open("1,0,1", 1);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = empty.status().message();
  EXPECT_NE(m.find(dir_.Join("ds") + ": split '1,0,1' part 1 holds no documents"),
            std::string::npos)
      << m;
}

// shuffle="window" over a split whose ranges start off the .bin's unit grid:
// an epoch serves distinct samples of the view, each as the view reads it.
TEST_F(SplitDataset, AWindowShuffledLoaderServesTheViewsSamplesOncePerEpoch) {
  for (int64_t j = 0; j < 2; ++j) {
    auto view = Open("8,1,1", j);
    ASSERT_TRUE(view.ok());
    LoaderOptions o;
    o.seq_len = 4;
    o.batch_size = 5;
    o.shuffle = ShuffleMode::kWindow;
    o.window_chunks = 18;  // 256-byte chunks: units of 9 chunks (1152 tokens), 2 per window.
    o.epochs = 1;
    o.seed = 5;
    auto loader = Loader::Create({{*view, 1.0}}, o);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    // Every sample of the view, by its tokens (unique: TokenAt never repeats here).
    std::map<std::vector<int64_t>, uint64_t> samples;
    const uint64_t n = ((*view)->num_tokens() - 1) / 4;
    for (uint64_t s = 0; s < n; ++s) {
      std::vector<int64_t> row(4);
      ASSERT_TRUE((*view)->ReadTokens(s * 4, 4, row.data()).ok());
      samples[row] = s;
    }
    std::set<uint64_t> served;
    while (true) {
      auto batch = (*loader)->Next();
      ASSERT_TRUE(batch.ok()) << batch.status().ToString();
      if (!*batch) break;
      const int64_t* in = static_cast<const int64_t*>((*batch)->inputs());
      for (int64_t r = 0; r < (*batch)->batch_size(); ++r) {
        const std::vector<int64_t> row(in + r * 4, in + r * 4 + 4);
        const auto it = samples.find(row);
        ASSERT_NE(it, samples.end()) << "part " << j << ": a row not of the view";
        ASSERT_TRUE(served.insert(it->second).second) << "sample " << it->second << " twice";
      }
    }
    // Samples crossing a piece's edge (a segment's head or tail) are left
    // out: at most two per segment.
    EXPECT_GE(served.size() + 2 * (*view)->num_shards(), n) << "part " << j;
    if (j == 1) {
      EXPECT_GT((*view)->shard_token_offset(1) % 1152, 0u) << "a range starts off the grid";
    }
  }
}

// Over HTTP, a part reads (and prefetches) the chunks of its own ranges and
// no others: the offsets of its stream in each .bin are its segments'.
TEST_F(SplitDataset, ARemotePartFetchesOnlyTheChunksOfItsRanges) {
  testing::HttpTestServer server(dir_.path());
  auto local = Open("9,1", 1);
  ASSERT_TRUE(local.ok());
  std::vector<int64_t> want((*local)->num_tokens());
  ASSERT_TRUE((*local)->ReadTokens(0, want.size(), want.data()).ok());
  // The 256-byte chunks under the part's segments (uint16 tokens).
  std::map<std::string, std::set<uint64_t>> chunks;
  for (size_t k = 0; k < (*local)->num_shards(); ++k) {
    const ShardInfo& segment = (*local)->manifest().shards[k];
    const uint64_t a = (*local)->shard_token_offset(k) * 2, b = a + segment.tokens * 2;
    for (uint64_t c = a / 256; b > a && c <= (b - 1) / 256; ++c) chunks[segment.path].insert(c);
  }
  uint64_t bound = 0, bin_bytes = 0;
  for (const auto& [path, set] : chunks) bound += 256 * set.size();
  for (const ShardInfo& shard : parent_->manifest().shards) bin_bytes += shard.bin.bytes;
  ASSERT_LT(bound, bin_bytes) << "some chunks hold none of the part's documents";
  for (bool prefetch : {false, true}) {
    StorageOptions storage;
    storage.cache_dir = dir_.Join(prefetch ? "cache-prefetch" : "cache-read");
    storage.cache_bytes = uint64_t{1} << 30;
    storage.prefetch_threads = 2;
    DatasetOptions o;
    ASSERT_TRUE(o.Set("split", "9,1").ok() && o.Set("split_index", int64_t{1}).ok());
    auto remote = Dataset::Open(server.url() + "/ds", storage, o);
    ASSERT_TRUE(remote.ok()) << remote.status().ToString();
    EXPECT_EQ((*remote)->fingerprint(), (*local)->fingerprint());
    auto prefetched = std::make_shared<ReadStats>();
    if (prefetch) (*remote)->Prefetch(0, want.size(), 0, prefetched);
    ReadStats read;
    std::vector<int64_t> got(want.size());
    ASSERT_TRUE((*remote)->ReadTokens(0, got.size(), got.data(), &read).ok());
    EXPECT_EQ(got, want);
    remote->reset();  // Waits for the prefetches in flight.
    EXPECT_LE(read.bytes_fetched.load() + prefetched->bytes_fetched.load(), bound);
  }
}

}  // namespace
}  // namespace tokpack
