#include "reader/permutation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "reader/sample_order.h"

namespace tokpack {
namespace {

void ExpectBijection(uint64_t n, uint64_t key) {
  FeistelPermutation p(n, key);
  std::vector<bool> seen(n, false);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t y = p.Apply(i);
    ASSERT_LT(y, n) << "n=" << n;
    ASSERT_FALSE(seen[y]) << "n=" << n << " collision at " << i;
    seen[y] = true;
    ASSERT_EQ(p.Inverse(y), i);
  }
}

TEST(FeistelPermutation, IsAnExactBijectionForManySizes) {
  std::vector<uint64_t> sizes = {1, 2, 3, 5, 7, 13, 97, 1009, 65521, 100003};
  for (int k = 1; k <= 18; ++k) {
    for (int64_t d : {-1, 0, 1}) sizes.push_back((uint64_t{1} << k) + d);
  }
  for (uint64_t n : sizes) {
    for (uint64_t key : {0ull, 1ull, 0xdeadbeefull}) ExpectBijection(n, key);
  }
}

TEST(FeistelPermutation, LargeDomainsRoundTripBySampling) {
  for (uint64_t n : {uint64_t{1} << 40, (uint64_t{1} << 40) + 12345, uint64_t{999999999989}}) {
    FeistelPermutation p(n, 42);
    for (uint64_t i = 0; i < 20000; ++i) {
      const uint64_t x = Mix64(i) % n;
      const uint64_t y = p.Apply(x);
      ASSERT_LT(y, n);
      ASSERT_EQ(p.Inverse(y), x);
    }
  }
}

TEST(FeistelPermutation, DiffersAcrossKeys) {
  const uint64_t n = 1000;
  FeistelPermutation a(n, DeriveKey(1, 0, 0)), b(n, DeriveKey(1, 0, 1)), c(n, DeriveKey(2, 0, 0));
  int same_ab = 0, same_ac = 0;
  for (uint64_t i = 0; i < n; ++i) {
    same_ab += a.Apply(i) == b.Apply(i);
    same_ac += a.Apply(i) == c.Apply(i);
  }
  // Independent permutations agree on ~1 point in expectation.
  EXPECT_LT(same_ab, 10);
  EXPECT_LT(same_ac, 10);
}

// The 99.9th percentile of chi-square with `df` degrees of freedom
// (Wilson-Hilferty approximation).
double ChiSquare999(double df) {
  const double z = 3.0902, a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

TEST(FeistelPermutation, PositionsAreUniformOverKeys) {
  // Chi-square over the (i -> image) cells across many keys, for small n,
  // where a Feistel network's halves are narrowest and bias would show.
  for (uint64_t n : {3ull, 5ull, 10ull, 17ull, 37ull}) {
    const uint64_t trials = 10000 * n;
    std::vector<double> counts(n * n, 0);
    for (uint64_t k = 0; k < trials; ++k) {
      FeistelPermutation p(n, DeriveKey(7, n, k));
      for (uint64_t i = 0; i < n; ++i) counts[i * n + p.Apply(i)] += 1;
    }
    const double expected = static_cast<double>(trials) / n;
    double chi2 = 0;
    for (double c : counts) chi2 += (c - expected) * (c - expected) / expected;
    EXPECT_LT(chi2, ChiSquare999(static_cast<double>((n - 1) * (n - 1)))) << "n=" << n;
  }
}

TEST(SampleOrder, EveryModeIsABijectionPerEpoch) {
  for (uint64_t n : {1ull, 7ull, 64ull, 1000ull, 1037ull}) {
    for (ShuffleMode mode : {ShuffleMode::kNone, ShuffleMode::kFull, ShuffleMode::kBlock}) {
      SampleOrder order(n, mode, 3, 1, 16, 4);
      for (uint64_t epoch = 0; epoch < 3; ++epoch) {
        std::vector<bool> seen(n, false);
        for (uint64_t i = 0; i < n; ++i) {
          const uint64_t s = order.Sample(epoch * n + i);
          ASSERT_LT(s, n);
          ASSERT_FALSE(seen[s]) << "n=" << n << " mode=" << static_cast<int>(mode);
          seen[s] = true;
        }
      }
    }
  }
}

TEST(SampleOrder, FullShuffleChangesEachEpochAndBlockKeepsLocality) {
  const uint64_t n = 4096;
  SampleOrder full(n, ShuffleMode::kFull, 9, 0, 0, 0);
  int same = 0;
  for (uint64_t i = 0; i < n; ++i) same += full.Sample(i) == full.Sample(n + i);
  EXPECT_LT(same, 20);
  // Block mode: each window of 4 blocks of 64 draws from exactly 4 blocks.
  SampleOrder block(n, ShuffleMode::kBlock, 9, 0, 64, 4);
  for (uint64_t w = 0; w < n / 256; ++w) {
    std::vector<uint64_t> blocks;
    for (uint64_t i = 0; i < 256; ++i) {
      uint64_t b = block.Sample(w * 256 + i) / 64;
      if (std::find(blocks.begin(), blocks.end(), b) == blocks.end()) blocks.push_back(b);
    }
    EXPECT_EQ(blocks.size(), 4u);
  }
}

}  // namespace
}  // namespace tokpack
