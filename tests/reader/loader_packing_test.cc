// packing="best_fit" through the loader: every document once per epoch in
// bins of at most L tokens, the labels, position_ids and cu_seqlens of each
// piece and of the padding in both labels modes, exact resumes (also onto
// another world size), phases over packed sources, the cursor's packing
// settings and the options' validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>

#include "reader/cursor.h"
#include "tests/reader/synthetic_dataset.h"
#include "tests/test_util.h"
#include "tokpack/loader.h"

namespace tokpack {
namespace {

constexpr int64_t kL = 16;
constexpr int64_t kPad = 1;  // TokenAt never makes it below stream offset 8570.

// One row cut into its segments (from cu_seqlens), with their arrays.
struct Segment {
  std::vector<int64_t> tokens, labels;
  std::vector<int32_t> positions;
};
using Row = std::vector<Segment>;

class LoaderPackingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Lengths 1..40 with L = 16: many documents are split into pieces.
    Write("a", testing::CyclingLengths(300, 40), 11, 3000);
    Write("b", testing::CyclingLengths(120, 25), 3, 2000);
  }
  void Write(const std::string& name, const std::vector<uint32_t>& docs, uint64_t salt,
             uint64_t shard_tokens) {
    Manifest m = testing::WriteSyntheticDataset(dir_.Join(name), docs, salt, shard_tokens);
    m.tokenizer.pad_id = kPad;
    ASSERT_TRUE(m.Save(dir_.Join(name)).ok());
    ds_.push_back(*Dataset::Open(dir_.Join(name)));
    salts_.push_back(salt);
    docs_.push_back(docs);
  }
  static LoaderOptions Opts(int64_t batch, int rank = 0, int world = 1) {
    LoaderOptions o;
    o.seq_len = kL;
    o.batch_size = batch;
    o.seed = 99;
    o.rank = rank;
    o.world_size = world;
    o.prefetch = 3;
    o.packing = Packing::kBestFit;
    return o;
  }
  std::unique_ptr<Loader> Make(const std::vector<size_t>& which, const LoaderOptions& o,
                               std::vector<MixturePhase> phases = {}) {
    std::vector<std::shared_ptr<Dataset>> ds;
    for (size_t i : which) ds.push_back(ds_[i]);
    if (phases.empty()) phases = {{0, std::vector<double>(ds.size(), 1.0)}};
    auto l = Loader::Create(ds, phases, o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(*l) : nullptr;
  }
  // The rows of the next `steps` batches, cut at cu_seqlens.
  static std::vector<Row> Take(Loader* l, int steps) {
    std::vector<Row> rows;
    for (int i = 0; i < steps; ++i) {
      auto b = l->Next();
      EXPECT_TRUE(b.ok() && *b) << (b.ok() ? "end" : b.status().ToString());
      if (!b.ok() || !*b) break;
      const Batch& batch = **b;
      EXPECT_NE(batch.position_ids(), nullptr);
      const auto* in = static_cast<const int64_t*>(batch.inputs());
      const auto* lab = static_cast<const int64_t*>(batch.targets());
      const int32_t* cu = batch.cu_seqlens();
      const int64_t n = batch.num_cu_seqlens();
      EXPECT_EQ(cu[n - 1], batch.batch_size() * kL);
      for (int64_t k = 0; k + 1 < n; ++k) {
        EXPECT_LT(cu[k], cu[k + 1]);
        if (cu[k] % kL == 0) rows.emplace_back();  // A row start is a segment start.
        EXPECT_LE(cu[k + 1], (cu[k] / kL + 1) * kL) << "a segment crosses a row";
        Segment s;
        s.tokens.assign(in + cu[k], in + cu[k + 1]);
        s.labels.assign(lab + cu[k], lab + cu[k + 1]);
        s.positions.assign(batch.position_ids() + cu[k], batch.position_ids() + cu[k + 1]);
        rows.back().push_back(std::move(s));
      }
    }
    return rows;
  }
  // Where a piece of source `src` starts in its stream, if its tokens are
  // that stream's (TokenAt is 7 t + salt mod 60000; 17143 = 7^-1).
  std::optional<uint64_t> Locate(size_t src, const std::vector<int64_t>& tokens) const {
    const uint64_t t = (static_cast<uint64_t>(tokens[0] + 60000 - salts_[src]) * 17143) % 60000;
    if (t + tokens.size() > ds_[src]->num_tokens()) return std::nullopt;
    for (size_t j = 0; j < tokens.size(); ++j) {
      if (tokens[j] != testing::TokenAt(t + j, salts_[src])) return std::nullopt;
    }
    return t;
  }
  // Checks a segment's arrays; true for the padding, else records the
  // piece's (start, length) into pieces[source].
  bool CheckSegment(const Segment& s, bool last, LabelsMode mode,
                    std::vector<std::map<uint64_t, uint64_t>>* pieces, size_t* source) {
    const size_t n = s.tokens.size();
    for (size_t j = 0; j < n; ++j) EXPECT_EQ(s.positions[j], static_cast<int32_t>(j));
    std::optional<uint64_t> at;
    for (size_t src = 0; src < ds_.size() && !at; ++src) {
      at = Locate(src, s.tokens);
      if (at) *source = src;
    }
    if (!at) {
      EXPECT_TRUE(last) << "padding before a piece";
      for (size_t j = 0; j < n; ++j) {
        EXPECT_EQ(s.tokens[j], kPad);
        EXPECT_EQ(s.labels[j], -100);
      }
      return true;
    }
    for (size_t j = 0; j < n; ++j) {
      const bool ignored = mode == LabelsMode::kNext ? j + 1 == n : j == 0;
      const int64_t want = mode == LabelsMode::kNext && j + 1 < n ? s.tokens[j + 1] : s.tokens[j];
      EXPECT_EQ(s.labels[j], ignored ? -100 : want) << "cell " << j << " of " << n;
    }
    EXPECT_TRUE((*pieces)[*source].emplace(*at, n).second) << "piece twice: " << *at;
    return false;
  }
  // The pieces of one epoch of source `src` tile its documents: each
  // non-empty document once, as pieces of L from its start in order.
  void ExpectDocumentsOnce(size_t src, const std::map<uint64_t, uint64_t>& pieces) const {
    std::map<uint64_t, uint64_t> want;
    uint64_t t = 0;
    for (uint32_t len : docs_[src]) {
      for (uint64_t p = 0; p * kL < len; ++p)
        want[t + p * kL] = std::min<uint64_t>(kL, len - p * kL);
      t += len;
    }
    EXPECT_EQ(pieces, want);
  }

  testing::TempDir dir_;
  std::vector<std::shared_ptr<Dataset>> ds_;
  std::vector<uint64_t> salts_;
  std::vector<std::vector<uint32_t>> docs_;
};

TEST_F(LoaderPackingTest, EveryDocumentOncePerEpochWithLabelsAtEveryBoundary) {
  for (LabelsMode mode : {LabelsMode::kNext, LabelsMode::kSame}) {
    // One row per step: the epoch is exactly the bins, of every shard of "a".
    LoaderOptions o = Opts(1);
    o.labels = mode;
    o.epochs = 1;
    auto l = Make({0}, o);
    ASSERT_TRUE(l);
    ASSERT_GT(ds_[0]->num_shards(), 1u);
    EXPECT_TRUE(l->options().document_boundaries);
    EXPECT_EQ(l->options().shuffle, ShuffleMode::kFull);  // auto, for packed data.
    const uint64_t bins = l->SamplesPerSource()[0];
    const std::vector<Row> rows = Take(l.get(), static_cast<int>(bins));
    EXPECT_EQ(*l->Next(), nullptr);
    std::vector<std::map<uint64_t, uint64_t>> pieces(ds_.size());
    uint64_t padding = 0;
    for (const Row& row : rows) {
      size_t tokens = 0;
      for (size_t k = 0; k < row.size(); ++k) {
        size_t src = 0;
        if (CheckSegment(row[k], k + 1 == row.size(), mode, &pieces, &src)) {
          padding += row[k].tokens.size();
        }
        tokens += row[k].tokens.size();
      }
      EXPECT_EQ(tokens, static_cast<size_t>(kL));
    }
    ExpectDocumentsOnce(0, pieces[0]);
    EXPECT_EQ(padding + ds_[0]->num_tokens(), bins * kL);
    EXPECT_LT(padding, bins * kL / 20) << "best fit wastes little here";
  }
}

TEST_F(LoaderPackingTest, BatchesOfSeveralRowsAndTheOtherSource) {
  LoaderOptions o = Opts(3);
  o.dtype = OutputDtype::kInt64;
  auto l = Make({1}, o);
  ASSERT_TRUE(l);
  std::vector<std::map<uint64_t, uint64_t>> pieces(ds_.size());
  for (const Row& row : Take(l.get(), static_cast<int>(l->SamplesPerSource()[0] / 3))) {
    for (size_t k = 0; k < row.size(); ++k) {
      size_t src = 0;
      CheckSegment(row[k], k + 1 == row.size(), LabelsMode::kNext, &pieces, &src);
    }
  }
  EXPECT_TRUE(pieces[0].empty());
  EXPECT_FALSE(pieces[1].empty());
}

TEST_F(LoaderPackingTest, MaxDocsPerSequenceCapsPieces) {
  LoaderOptions o = Opts(4);
  o.max_docs_per_sequence = 2;
  o.epochs = 1;
  auto l = Make({0}, o);
  ASSERT_TRUE(l);
  auto uncapped = Make({0}, Opts(4));
  EXPECT_GT(l->SamplesPerSource()[0], uncapped->SamplesPerSource()[0]);
  std::vector<std::map<uint64_t, uint64_t>> pieces(ds_.size());
  for (const Row& row : Take(l.get(), static_cast<int>(l->SamplesPerSource()[0] / 4))) {
    size_t docs = 0;
    for (size_t k = 0; k < row.size(); ++k) {
      size_t src = 0;
      docs += !CheckSegment(row[k], k + 1 == row.size(), LabelsMode::kNext, &pieces, &src);
    }
    EXPECT_LE(docs, 2u);
  }
}

// Rows as comparable values.
std::vector<std::vector<int64_t>> Flat(const std::vector<Row>& rows) {
  std::vector<std::vector<int64_t>> out;
  for (const Row& r : rows) {
    out.emplace_back();
    for (const Segment& s : r) {
      out.back().insert(out.back().end(), s.tokens.begin(), s.tokens.end());
      out.back().insert(out.back().end(), s.labels.begin(), s.labels.end());
      out.back().insert(out.back().end(), s.positions.begin(), s.positions.end());
    }
  }
  return out;
}

TEST_F(LoaderPackingTest, ResumesExactlyAlsoOnAnotherWorldSize) {
  auto whole = Make({0, 1}, Opts(4));
  const auto all = Flat(Take(whole.get(), 30));  // Past an epoch of "b".
  auto first = Make({0, 1}, Opts(4));
  EXPECT_EQ(Flat(Take(first.get(), 7)),
            std::vector<std::vector<int64_t>>(all.begin(), all.begin() + 28));
  const std::string state = first->SaveState();
  EXPECT_NE(state.find("\"packing\":\"best_fit\""), std::string::npos) << state;
  // Two ranks of two rows: each global step is rank 0's rows, then rank 1's.
  std::vector<std::unique_ptr<Loader>> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(Make({0, 1}, Opts(2, r, 2)));
    ASSERT_TRUE(ranks.back()->LoadState(state).ok());
  }
  std::vector<std::vector<int64_t>> resumed;
  for (int step = 0; step < 23; ++step) {
    for (auto& l : ranks) {
      for (auto& row : Flat(Take(l.get(), 1))) resumed.push_back(std::move(row));
    }
  }
  EXPECT_EQ(resumed, std::vector<std::vector<int64_t>>(all.begin() + 28, all.end()));
}

TEST_F(LoaderPackingTest, PhasesDrawFromPackedSources) {
  // Steps 0-4 from "a" only, then from "b" only.
  auto l = Make({0, 1}, Opts(2), {{0, {1, 0}}, {5, {0, 1}}});
  ASSERT_TRUE(l);
  std::vector<std::map<uint64_t, uint64_t>> pieces(ds_.size());
  const std::vector<Row> rows = Take(l.get(), 10);
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t k = 0; k < rows[r].size(); ++k) {
      size_t src = 9;
      if (!CheckSegment(rows[r][k], k + 1 == rows[r].size(), LabelsMode::kNext, &pieces, &src)) {
        EXPECT_EQ(src, r < 10 ? 0u : 1u) << "row " << r;
      }
    }
  }
  const LoaderStats stats = l->Stats();
  EXPECT_EQ(stats.sources[0].samples, 10u);
  EXPECT_EQ(stats.sources[1].samples, 10u);
}

TEST_F(LoaderPackingTest, CursorRefusesOtherPackingSettings) {
  auto packed = Make({0}, Opts(2));
  Take(packed.get(), 2);
  const std::string state = packed->SaveState();
  LoaderOptions concat = Opts(2);
  concat.packing = Packing::kConcat;
  auto plain = Make({0}, concat);
  Status s = plain->LoadState(state);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("packing=\"best_fit\", max_docs_per_sequence=0"), std::string::npos)
      << s.message();
  LoaderOptions capped = Opts(2);
  capped.max_docs_per_sequence = 3;
  s = Make({0}, capped)->LoadState(state);
  EXPECT_NE(s.message().find("max_docs_per_sequence=3"), std::string::npos) << s.message();
  // A concat cursor (no packing fields, as before packing existed) is concat.
  ASSERT_TRUE(plain->Next().ok());
  const std::string old = plain->SaveState();
  EXPECT_EQ(old.find("packing"), std::string::npos) << old;
  ASSERT_TRUE(Cursor::Parse(old).ok());
  EXPECT_EQ(Cursor::Parse(old)->packing, "concat");
  s = packed->LoadState(old);
  EXPECT_NE(s.message().find("packing=\"concat\""), std::string::npos) << s.message();
  EXPECT_TRUE(packed->LoadState(state).ok());
  // A packed state is version 3, so a tokpack from before packing (which
  // reads versions 1 and 2 and ignores unknown fields) refuses it; the
  // version and the packing fields must agree.
  EXPECT_EQ(state.rfind("{\"tokpack_cursor\":3,", 0), 0u) << state;
  EXPECT_EQ(old.rfind("{\"tokpack_cursor\":2,", 0), 0u) << old;
  std::string as_v2 = state;
  as_v2.replace(as_v2.find(":3,"), 3, ":2,");
  EXPECT_FALSE(Cursor::Parse(as_v2).ok());
  std::string concat_v3 = old;
  concat_v3.replace(concat_v3.find(":2,"), 3, ":3,");
  EXPECT_FALSE(Cursor::Parse(concat_v3).ok());
  // Untrusted fields.
  std::string bad = state;
  bad.replace(bad.find("best_fit"), 8, "best_fix");
  EXPECT_FALSE(Cursor::Parse(bad).ok());
}

TEST_F(LoaderPackingTest, OptionsAreValidatedNamingTheOption) {
  LoaderOptions o = Opts(2);
  o.packing = Packing::kConcat;
  o.max_docs_per_sequence = 4;
  Status s = o.Validate();
  EXPECT_NE(s.message().find("max_docs_per_sequence"), std::string::npos) << s.message();
  o = Opts(2);
  o.shuffle = ShuffleMode::kWindow;
  s = o.Validate();
  EXPECT_NE(s.message().find("shuffle=\"window\""), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("packing=\"best_fit\""), std::string::npos) << s.message();
  EXPECT_TRUE(o.Set("packing", std::string("first_fit")).message().find("packing") !=
              std::string::npos);
  o = Opts(2);
  o.device = Device{Device::Kind::kCuda, 0};
  EXPECT_FALSE(o.Validate().ok());
}

}  // namespace
}  // namespace tokpack
