// ForEachTokenPair against cutting every token at every position, and its
// cost on vocabularies that made the old loader quadratic.
#include "tokenizer/token_pairs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace tokpack {
namespace {

using Triples = std::set<std::tuple<int32_t, int32_t, int32_t>>;

Triples Pairs(const std::vector<std::string>& tokens) {
  Triples out;
  ForEachTokenPair(tokens, [&](int32_t t, int32_t l, int32_t r) {
    EXPECT_TRUE(out.emplace(t, l, r).second) << "pair reported twice";
    return true;
  });
  return out;
}

Triples BruteForce(const std::vector<std::string>& tokens) {
  std::unordered_map<std::string, int32_t> index;
  for (size_t i = 0; i < tokens.size(); ++i) index[tokens[i]] = static_cast<int32_t>(i);
  Triples out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (size_t cut = 1; cut < tokens[i].size(); ++cut) {
      auto l = index.find(tokens[i].substr(0, cut));
      auto r = index.find(tokens[i].substr(cut));
      if (l != index.end() && r != index.end()) {
        out.emplace(static_cast<int32_t>(i), l->second, r->second);
      }
    }
  }
  return out;
}

TEST(TokenPairsTest, SameAsCuttingEveryTokenEverywhere) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    // Few letters and short tokens, so that cuts often land on tokens.
    const int letters = 2 + round % 3;
    std::set<std::string> distinct;
    const int count = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < count; ++i) {
      std::string s(1 + rng() % 7, 'a');
      for (char& c : s) c = static_cast<char>('a' + rng() % letters);
      distinct.insert(s);
    }
    if (round % 2 == 0) distinct.insert(std::string(1, '\0'));  // Byte 0 is a byte like others.
    std::vector<std::string> tokens(distinct.begin(), distinct.end());
    std::shuffle(tokens.begin(), tokens.end(), rng);
    ASSERT_EQ(Pairs(tokens), BruteForce(tokens)) << "round " << round;
  }
}

TEST(TokenPairsTest, RunsOfOneLetterGiveEveryCut) {
  // "a", "aa", ..., "a"*n: each token splits at every position.
  std::vector<std::string> tokens;
  for (size_t n = 1; n <= 40; ++n) tokens.push_back(std::string(n, 'a'));
  const Triples pairs = Pairs(tokens);
  EXPECT_EQ(pairs.size(), 39u * 40u / 2u);
  EXPECT_EQ(pairs, BruteForce(tokens));
}

TEST(TokenPairsTest, RunsOfAThousandBytesTakeAStepPerPair) {
  // 1.1 MB of tokens and a pair per byte: cutting every token everywhere
  // hashed 0.6 GB; the chains take a step per pair.
  std::vector<std::string> tokens;
  for (size_t n = 1; n <= 1500; ++n) tokens.push_back(std::string(n, 'a'));
  size_t pairs = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(ForEachTokenPair(tokens, [&](int32_t, int32_t, int32_t) { return ++pairs > 0; }));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(pairs, 1499u * 1500u / 2u);
  EXPECT_LT(seconds, 5.0);  // About 10 ms; seconds under sanitizers.
}

TEST(TokenPairsTest, StopsWhenAsked) {
  std::vector<std::string> tokens = {"a", "aa", "aaa", "aaaa"};
  size_t calls = 0;
  EXPECT_FALSE(ForEachTokenPair(tokens, [&](int32_t, int32_t, int32_t) { return ++calls < 2; }));
  EXPECT_EQ(calls, 2u);
}

}  // namespace
}  // namespace tokpack
