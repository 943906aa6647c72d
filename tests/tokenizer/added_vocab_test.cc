// AddedVocab's matcher against a brute-force leftmost-longest search, on
// patterns that share prefixes and end inside each other's tails.
#include "tokenizer/added_vocab.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tokpack {
namespace {

// Splits of `text` by the leftmost-longest matches of `patterns` (the last
// of equal patterns wins), as AddedVocab::Split gives them without options.
std::vector<AddedSplit> BruteForce(const std::vector<std::string>& patterns,
                                   const std::string& text) {
  std::vector<AddedSplit> out;
  size_t done = 0;
  for (size_t pos = 0; pos < text.size();) {
    int best = -1;
    for (size_t k = 0; k < patterns.size(); ++k) {
      if (text.compare(pos, patterns[k].size(), patterns[k]) != 0) continue;
      if (best < 0 || patterns[k].size() >= patterns[best].size()) best = static_cast<int>(k);
    }
    if (best < 0) {
      ++pos;
      continue;
    }
    if (done < pos) out.push_back({done, pos, -1});
    out.push_back({pos, pos + patterns[best].size(), best});
    pos = done = pos + patterns[best].size();
  }
  if (done < text.size()) out.push_back({done, text.size(), -1});
  return out;
}

TEST(AddedVocabTest, LongestLeftmostMatchesAsABruteForceSearch) {
  std::mt19937 rng(5);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> patterns(1 + rng() % 12);
    for (std::string& p : patterns) {
      p.resize(1 + rng() % 9);
      for (char& c : p) c = static_cast<char>('a' + rng() % 3);
    }
    AddedVocab vocab;
    for (size_t k = 0; k < patterns.size(); ++k) {
      AddedToken token;
      token.content = patterns[k];
      token.id = static_cast<int>(k);
      vocab.Add(AddedVocab::Set::kRaw, patterns[k], token);
    }
    std::string text(rng() % 60, 'a');
    for (char& c : text) c = static_cast<char>('a' + rng() % 4);
    std::vector<AddedSplit> got;
    vocab.Split(AddedVocab::Set::kRaw, text, &got);
    const std::vector<AddedSplit> want = BruteForce(patterns, text);
    ASSERT_EQ(got.size(), want.size()) << "round " << round << " text " << text;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].start, want[i].start) << round;
      EXPECT_EQ(got[i].end, want[i].end) << round;
      // Equal patterns: the last added wins, as in tokenizers' map by content.
      const int want_id = want[i].id;
      EXPECT_EQ(got[i].id >= 0 ? patterns[got[i].id] : "", want_id >= 0 ? patterns[want_id] : "");
    }
  }
}

}  // namespace
}  // namespace tokpack
