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
};

// The served samples, found by walking every sample of every unit and tail:
// sample -> its unit (index in stream order) or, for tail samples, -1 - shard.
std::map<uint64_t, int64_t> Served(const Layout& l, uint64_t unit_tokens) {
  const uint64_t L = l.seq_len;
  const uint64_t per_unit = unit_tokens / L - 1;
  std::map<uint64_t, int64_t> served;
  uint64_t first = 0;
  int64_t unit = 0;
  for (size_t k = 0; k < l.shards.size(); ++k) {
    const uint64_t end = first + l.shards[k];
    uint64_t a = first;
    for (; a + unit_tokens <= end; a += unit_tokens, ++unit) {
      uint64_t taken = 0;
      for (uint64_t s = (a + L - 1) / L; s * L + L + 1 <= a + unit_tokens && taken < per_unit;
           ++s, ++taken) {
        served[s] = unit;
      }
      EXPECT_EQ(taken, per_unit) << "a unit always holds S samples";
    }
    for (uint64_t s = (a + L - 1) / L; s * L + L + 1 <= end; ++s) served[s] = -1 - int64_t(k);
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
    WindowOrder order(l.shards, l.chunk_bytes, l.item, l.seq_len, l.window_units, 11, 2);
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
    WindowOrder order(l.shards, l.chunk_bytes, l.item, l.seq_len, l.window_units, 5, 0);
    const std::map<uint64_t, int64_t> served = Served(l, order.unit_tokens());
    const uint64_t n = order.size(),
                   span = order.window_units() * (order.unit_tokens() / l.seq_len - 1);
    uint64_t tail = 0;  // Tail-pool samples.
    for (const auto& [sample, unit] : served) tail += unit < 0;
    const uint64_t body = n - tail;
    for (uint64_t epoch = 0; epoch < 2; ++epoch) {
      std::map<int64_t, uint64_t> window_of_unit;
      std::map<uint64_t, std::set<int64_t>> units_of_window;
      // Tail window (shard / W) -> its first and last position.
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
          ASSERT_GE(w, last_tail_window) << "tail windows come in shard order";
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

TEST(WindowOrder, IsDeterministicAndDiffersAcrossEpochsSeedsAndStreams) {
  const Layout& l = kLayouts[0];
  const auto make = [&](uint64_t seed, uint64_t stream) {
    return WindowOrder(l.shards, l.chunk_bytes, l.item, l.seq_len, l.window_units, seed, stream);
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
