#include "reader/window_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace tokpack {
namespace {

struct Layout {
  std::vector<uint64_t> shards;  // Tokens per shard.
  uint64_t chunk_bytes, item, seq_len, window_units;
  // Where each shard's range starts in its .bin (a split's); empty: all 0.
  std::vector<uint64_t> starts = {};

  std::vector<WindowOrder::ShardRange> Ranges() const {
    std::vector<WindowOrder::ShardRange> ranges;
    for (size_t k = 0; k < shards.size(); ++k) {
      ranges.push_back({starts.empty() ? 0 : starts[k], shards[k]});
    }
    return ranges;
  }
};

// Uneven shards (an empty one, one shorter than a sample), chunk tokens that
// are not a multiple of L, a single tiny shard with no full unit, G > 1
// with int32 tokens, chunks that split a token, L = 1, W past the units,
// and a long L.
const std::vector<Layout> kLayouts = {
    {{5000, 1234, 0, 900, 3001, 2}, 256, 2, 3, 2},
    {{500}, 256, 2, 3, 4},
    {{4000, 2600, 1296, 1295}, 64, 4, 5, 3},
    {{3000, 517, 1100}, 6, 4, 2, 1},
    {{2049, 7}, 1024, 2, 1, 5},
    {{400000, 200000, 150000}, 4096, 2, 700, 2},
    // Split ranges: starting off the unit grid (heads), on it, inside one
    // cell, straddling two cells without a full unit, and empty.
    {{5000, 1234, 0, 900, 3001, 2}, 256, 2, 3, 2, {77, 1152, 5, 1000, 1153, 9}},
    {{4000, 2600, 1296, 1295}, 64, 4, 5, 3, {17, 0, 1296, 3}},
    {{3000, 517, 1100}, 6, 4, 2, 1, {1, 2, 3}},
    {{400000, 200000, 150000}, 4096, 2, 700, 2, {123457, 1, 5}},
};

// The served samples, found by walking every sample of every unit and tail
// piece: sample -> its unit (index in stream order) or, for tail samples,
// -1 - piece. A shard's range is cut at the multiples of unit_tokens of its
// .bin: whole cells are units; the part before the first cut (the head) and
// the part after the last (the tail) are pieces, the tail one even if empty.
std::map<uint64_t, int64_t> Served(const Layout& l, uint64_t unit_tokens) {
  const uint64_t L = l.seq_len;
  const uint64_t per_unit = unit_tokens / L - 1;
  std::map<uint64_t, int64_t> served;
  uint64_t first = 0;
  int64_t unit = 0, piece = 0;
  for (size_t k = 0; k < l.shards.size(); ++k) {
    const uint64_t end = first + l.shards[k];
    const uint64_t start = l.starts.empty() ? 0 : l.starts[k];
    uint64_t a = first;
    if (start % unit_tokens != 0 && l.shards[k] > 0) {
      a = std::min(end, first + unit_tokens - start % unit_tokens);
      for (uint64_t s = (first + L - 1) / L; s * L + L + 1 <= a; ++s) served[s] = -1 - piece;
      ++piece;
    }
    for (; a + unit_tokens <= end; a += unit_tokens, ++unit) {
      uint64_t taken = 0;
      for (uint64_t s = (a + L - 1) / L; s * L + L + 1 <= a + unit_tokens && taken < per_unit;
           ++s, ++taken) {
        served[s] = unit;
      }
      EXPECT_EQ(taken, per_unit) << "a unit always holds S samples";
    }
    for (uint64_t s = (a + L - 1) / L; s * L + L + 1 <= end; ++s) served[s] = -1 - piece;
    ++piece;
    first = end;
  }
  return served;
}

TEST(WindowOrder, UnitsAreTheFewestWholeChunksHoldingEnoughSamples) {
  EXPECT_EQ(WindowOrder::UnitChunks(4 << 20, 2, 2048), 1u);  // 2047 samples.
  EXPECT_EQ(WindowOrder::UnitChunks(4 << 20, 4, 8192), 3u);  // 8 KiB samples of int32.
  EXPECT_EQ(WindowOrder::UnitChunks(256, 2, 4), 9u);         // 1152 tokens: 287 samples.
  EXPECT_EQ(WindowOrder::UnitChunks(3, 2, 4), 686u);         // Even: 1029 whole tokens.
  for (const Layout& l : kLayouts) {
    const uint64_t g = WindowOrder::UnitChunks(l.chunk_bytes, l.item, l.seq_len);
    EXPECT_EQ(g * l.chunk_bytes % l.item, 0u);
    EXPECT_GE(g * l.chunk_bytes / l.item / l.seq_len - 1, WindowOrder::kUnitSamples);
    if (g > 1) {  // One step fewer holds too few samples (or splits a token).
      const uint64_t fewer = g - 1;
      EXPECT_TRUE(fewer * l.chunk_bytes % l.item != 0 ||
                  fewer * l.chunk_bytes / l.item / l.seq_len - 1 < WindowOrder::kUnitSamples);
    }
  }
}

TEST(WindowOrder, EachEpochIsABijectionOntoTheSamplesWhollyInsideAUnitOrTail) {
  for (const Layout& l : kLayouts) {
    WindowOrder order(l.Ranges(), l.chunk_bytes, l.item, l.seq_len, l.window_units, 11, 2);
    const std::map<uint64_t, int64_t> served = Served(l, order.unit_tokens());
    const uint64_t n = order.size();
    ASSERT_EQ(n, served.size());
    uint64_t tokens = 0;
    for (uint64_t t : l.shards) tokens += t;
    EXPECT_EQ(order.left_out(), (tokens - 1) / l.seq_len - n);
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      std::set<uint64_t> seen;
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t s = order.Sample(epoch * n + i);
        ASSERT_TRUE(served.count(s)) << "sample " << s << " crosses a unit or tail edge";
        ASSERT_TRUE(seen.insert(s).second) << "sample " << s << " twice";
      }
    }
  }
}

TEST(WindowOrder, AUnitIsReadInOneWindowAndATailWindowReadsWShardsTails) {
  for (const Layout& l : kLayouts) {
    WindowOrder order(l.Ranges(), l.chunk_bytes, l.item, l.seq_len, l.window_units, 5, 0);
    const std::map<uint64_t, int64_t> served = Served(l, order.unit_tokens());
    const uint64_t n = order.size(),
                   span = order.window_units() * (order.unit_tokens() / l.seq_len - 1);
    uint64_t tail = 0;  // Tail-pool samples.
    for (const auto& [sample, unit] : served) tail += unit < 0;
    const uint64_t body = n - tail;
    for (uint64_t epoch = 0; epoch < 2; ++epoch) {
      std::map<int64_t, uint64_t> window_of_unit;
      std::map<uint64_t, std::set<int64_t>> units_of_window;
      // Tail window (piece / W) -> its first and last position.
      std::map<uint64_t, std::pair<uint64_t, uint64_t>> tail_windows;
      uint64_t last_tail_window = 0;
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t s = order.Sample(epoch * n + i);
        const int64_t unit = served.at(s);
        if (i < body) {
          ASSERT_GE(unit, 0) << "a unit position drew a tail sample";
          const auto it = window_of_unit.emplace(unit, i / span).first;
          ASSERT_EQ(it->second, i / span) << "unit " << unit << " spans two windows";
          units_of_window[i / span].insert(unit);
        } else {
          ASSERT_LT(unit, 0);
          const uint64_t w = static_cast<uint64_t>(-1 - unit) / order.window_units();
          ASSERT_GE(w, last_tail_window) << "tail windows come in stream order";
          last_tail_window = w;
          auto it = tail_windows.emplace(w, std::make_pair(i, i)).first;
          ASSERT_EQ(it->second.second + (it->second.second == i ? 0 : 1), i)
              << "tail window " << w << " is not contiguous";
          it->second.second = i;
        }
      }
      for (const auto& [w, units] : units_of_window) {
        EXPECT_LE(units.size(), order.window_units());
      }
    }
  }
}

TEST(WindowOrder, EachChunkOfABinIsReadInOneWindowPerEpoch) {
  for (const Layout& l : kLayouts) {
    WindowOrder order(l.Ranges(), l.chunk_bytes, l.item, l.seq_len, l.window_units, 9, 1);
    const std::map<uint64_t, int64_t> served = Served(l, order.unit_tokens());
    const uint64_t n = order.size(), L = l.seq_len,
                   span = order.window_units() * (order.unit_tokens() / L - 1);
    uint64_t body = n;
    for (const auto& [sample, unit] : served) body -= unit < 0;
    std::vector<uint64_t> firsts = {0};  // Stream offset of each shard's range.
    for (uint64_t t : l.shards) firsts.push_back(firsts.back() + t);
    // (shard, chunk of its .bin) -> the window that read it.
    std::map<std::pair<size_t, uint64_t>, uint64_t> window_of_chunk;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t s = order.Sample(n + i);
      const int64_t unit = served.at(s);
      const uint64_t window =
          i < body ? i / span : (uint64_t{1} << 40) + uint64_t(-1 - unit) / order.window_units();
      // A served sample lies in one shard's range: its bytes in that .bin.
      const size_t k = std::upper_bound(firsts.begin(), firsts.end(), s * L) - firsts.begin() - 1;
      const uint64_t start = l.starts.empty() ? 0 : l.starts[k];
      const uint64_t b0 = (start + s * L - firsts[k]) * l.item, b1 = b0 + (L + 1) * l.item;
      for (uint64_t c = b0 / l.chunk_bytes; c <= (b1 - 1) / l.chunk_bytes; ++c) {
        const auto it = window_of_chunk.emplace(std::make_pair(k, c), window).first;
        ASSERT_EQ(it->second, window) << "chunk " << c << " of shard " << k << " read twice";
      }
    }
  }
}

// Ranges from each .bin's start give the order of the whole-dataset window
// shuffle as it was before ranges existed (these values were recorded from
// it), so a cursor saved then resumes identically.
TEST(WindowOrder, WholeShardsKeepTheOrderOfCursorsSavedBeforeSplits) {
  struct Golden {
    Layout layout;
    uint64_t n, hash;
    std::vector<uint64_t> samples;  // At k = 0, 1, 7, n - 1, n, 2n + 5.
  };
  const std::vector<Golden> golden = {
      {kLayouts[0], 3357, 11605815950983130276ull, {1417, 1309, 1244, 3309, 274, 2546}},
      {kLayouts[2], 1827, 17310522461521335590ull, {1282, 1174, 1109, 1601, 315, 207}},
      {kLayouts[5], 1065, 5577590008614288330ull, {480, 372, 307, 955, 45, 467}},
  };
  for (const Golden& g : golden) {
    const Layout& l = g.layout;
    ASSERT_TRUE(l.starts.empty());
    WindowOrder order(l.Ranges(), l.chunk_bytes, l.item, l.seq_len, l.window_units, 17, 1);
    const uint64_t n = order.size();
    ASSERT_EQ(n, g.n);
    uint64_t hash = 0;
    for (uint64_t k = 0; k < 2 * n; ++k) hash = hash * 1000003 + order.Sample(k);
    EXPECT_EQ(hash, g.hash);
    const std::vector<uint64_t> ks = {0, 1, 7, n - 1, n, 2 * n + 5};
    for (size_t j = 0; j < ks.size(); ++j) EXPECT_EQ(order.Sample(ks[j]), g.samples[j]) << ks[j];
  }
}

TEST(WindowOrder, IsDeterministicAndDiffersAcrossEpochsSeedsAndStreams) {
  const Layout& l = kLayouts[0];
  const auto make = [&](uint64_t seed, uint64_t stream) {
    return WindowOrder(l.Ranges(), l.chunk_bytes, l.item, l.seq_len, l.window_units, seed, stream);
  };
  const WindowOrder a = make(3, 0), again = make(3, 0), seed = make(4, 0), stream = make(3, 1);
  const uint64_t n = a.size();
  int same_epoch = 0, same_seed = 0, same_stream = 0;
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(a.Sample(i), again.Sample(i));
    ASSERT_EQ(a.Sample(5 * n + i), again.Sample(5 * n + i));
    same_epoch += a.Sample(i) == a.Sample(n + i);
    same_seed += a.Sample(i) == seed.Sample(i);
    same_stream += a.Sample(i) == stream.Sample(i);
  }
  // Chance agreement of two shuffles of windows of ~600: a handful.
  EXPECT_LT(same_epoch, 30);
  EXPECT_LT(same_seed, 30);
  EXPECT_LT(same_stream, 30);
}

}  // namespace
}  // namespace tokpack
