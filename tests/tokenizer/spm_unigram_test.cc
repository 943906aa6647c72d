// SpmUnigram's certificate: the bound Certify() returns is the one below
// which the Viterbi, started from any score, takes the certified path; ties
// get none, and their winner does depend on the starting score (which is why
// a word cannot be encoded once and reused blindly). Also the lattice's
// unknown and user-defined edges. The Python tests (test_spm_exact.py) check
// the whole against PyPI sentencepiece.
#include "tokenizer/spm_unigram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace tokpack {
namespace {

// A small unigram vocabulary whose pieces split words of "l" and "e" many
// ways, some with equal scores ("l" + "ll" and "ll" + "l").
SpmModel TestModel() {
  SpmModel m;
  m.unk_id = 0;
  m.pieces = {{"<unk>", 0, SpmPieceType::kUnknown},
              {"<s>", 0, SpmPieceType::kControl},
              {"\xe2\x96\x81", -1.5f},
              {"l", -3.1f},
              {"ll", -4.7f},
              {"e", -2.9f},
              {"ee", -5.3f},
              {"le", -4.1f},
              {"el", -4.3f},
              {"\xe2\x96\x81l", -3.3f},
              {"lel", -7.0f},
              {"<u>", 0, SpmPieceType::kUserDefined},
              {"ell", -9.0f, SpmPieceType::kUnused}};
  return m;
}

std::vector<int> Ids(const std::vector<SpmUnigram::Edge>& path) {
  std::vector<int> ids;
  for (const auto& e : path) ids.push_back(e.id);
  return ids;
}

TEST(SpmUnigramTest, CertifiedPathHoldsBelowItsLimit) {
  std::unique_ptr<SpmUnigram> u = SpmUnigram::Create(TestModel());
  ASSERT_NE(u, nullptr);
  std::mt19937 rng(31);
  SpmUnigram::Scratch scratch;
  std::vector<SpmUnigram::Edge> best, path;
  int ties = 0, checked = 0, differ_past_limit = 0;
  for (int w = 0; w < 400; ++w) {
    std::string word = "\xe2\x96\x81";
    for (int n = 1 + static_cast<int>(rng() % 9); n > 0; --n) word += rng() % 2 ? "l" : "e";
    const double limit = u->Certify(word, &scratch, &best);
    ties += limit < 0;
    for (int b = 0; b < 60; ++b) {
      // Starting scores of every magnitude a text reaches before rescaling.
      const float base = -std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000, b % 17);
      float score = base;
      u->Viterbi(word, &score, &scratch, &path);
      if (std::fabs(base) >= limit) {
        differ_past_limit += Ids(path) != Ids(best);
        continue;
      }
      ++checked;
      ASSERT_EQ(Ids(path), Ids(best)) << word << " from " << base << ", limit " << limit;
      float chained = base;
      for (const auto& e : best) chained = u->Score(e.id) + chained;
      EXPECT_EQ(score, chained) << word;
    }
  }
  EXPECT_GT(ties, 0);
  EXPECT_GT(checked, 10000);
  // The Viterbi's choice among near-equal paths depends on the starting score.
  EXPECT_GT(differ_past_limit, 0);
}

TEST(SpmUnigramTest, PathHasUnknownAndUserDefinedEdges) {
  std::unique_ptr<SpmUnigram> u = SpmUnigram::Create(TestModel());
  ASSERT_NE(u, nullptr);
  SpmUnigram::Scratch scratch;
  std::vector<SpmUnigram::Edge> path;
  float score = 0;
  u->Viterbi("x<u>ell", &score, &scratch, &path);
  // "x": unknown, scored the lowest NORMAL score less 10; "<u>": 0.1 per
  // byte past the first, so it beats its characters; "ell" is UNUSED.
  ASSERT_GE(path.size(), 3u);
  EXPECT_EQ(path[0].id, 0);
  EXPECT_EQ(path[0].end, 1u);
  EXPECT_FLOAT_EQ(u->Score(0), -7.0f - 10.0f);
  EXPECT_EQ(path[1].id, 11);
  EXPECT_EQ(path[1].end, 4u);
  EXPECT_FLOAT_EQ(u->Score(11), 0.2f);
  for (const auto& e : path) EXPECT_NE(e.id, 12);
}

}  // namespace
}  // namespace tokpack
